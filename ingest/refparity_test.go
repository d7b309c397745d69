package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/testenv"
)

// The reference parity corpus (testdata/refparity, see its README): mutated flat
// trace files, each with the verdict of the reference client's own code
// (mlcommons/endpoints at ea332753, run by the refrun engineer: its loader,
// AgenticInferenceDataset, its agentic strategy and its msgspec OpenAI adapter),
// and for accepted files every client turn's exact request body in three
// variants: qwen_salt (the Qwen3.6 example config: profile settings, streaming,
// salt, repeat 1), qwen_nosalt (the same without salt, where the salted start
// was refused) and bare (the loader without model params, salt off).

type refVerdict struct {
	Accept            bool                            `json:"accept"`
	Error             *struct{ Type, Message string } `json:"error"`
	ConversationOrder []string                        `json:"conversation_order"`
	DelaySecondsByKey map[string]refFloat             `json:"delay_seconds_by_key"`
	Variants          map[string]refVariant           `json:"variants"`
}

// refFloat is a float of a verdict: a JSON number, or "NaN", "Infinity" or
// "-Infinity" (the oracle writes non-finite floats as those strings).
type refFloat float64

func (f *refFloat) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"NaN"`:
		*f = refFloat(math.NaN())
	case `"Infinity"`:
		*f = refFloat(math.Inf(1))
	case `"-Infinity"`:
		*f = refFloat(math.Inf(-1))
	default:
		var x float64
		if err := json.Unmarshal(b, &x); err != nil {
			return err
		}
		*f = refFloat(x)
	}
	return nil
}

// refWarnings: corpus files the reference accepts without a check on something
// agentrace warns about (every such problem is a warning with file, line,
// conversation and turn, and --strict refuses the file). The test
// requires each warning substring and a refusal under Options.Strict.
var refWarnings = map[string][]string{
	// A tool call that the tool row after it does not answer.
	"10-unanswered-tool-call-id.jsonl": {`10-unanswered-tool-call-id.jsonl:2: conversation "demo__calc-101" turn 2 : tool call "call_a9" has no result in the tool row after it (turn 3)`},
	// Not JSON, but pandas' reader takes it (cases 83-94, 98).
	"83-nan-delay.jsonl":                        {`83-nan-delay.jsonl:3: conversation "demo__calc-101" turn 3 : NaN (1 on this line) is not JSON`},
	"84-infinity-delay.jsonl":                   {`84-infinity-delay.jsonl:3: conversation "demo__calc-101" turn 3 : Infinity or -Infinity (1 on this line) is not JSON`, "is more than 3600 s: replay waits 3600 s"},
	"85-neg-infinity-delay.jsonl":               {"Infinity or -Infinity (1 on this line) is not JSON", "delay_seconds -1e999 is negative"},
	"86-nan-max-new-tokens.jsonl":               {`86-nan-max-new-tokens.jsonl:1: conversation "demo__calc-101" turn 1 : NaN (1 on this line) is not JSON`},
	"87-infinity-max-new-tokens.jsonl":          {"Infinity or -Infinity (1 on this line) is not JSON", "max_new_tokens 1e999 is infinite: the reference takes it as set and sends null"},
	"88-nonfinite-sampling-params.jsonl":        {"NaN (1 on this line) is not JSON", "Infinity or -Infinity (2 on this line) is not JSON"},
	"89-nonfinite-in-tools.jsonl":               {`89-nonfinite-in-tools.jsonl:5: conversation "sim_000001" turn 1 : NaN (1 on this line)`, "Infinity or -Infinity (2 on this line)"},
	"90-nonfinite-in-tool-call-arguments.jsonl": {`90-nonfinite-in-tool-call-arguments.jsonl:6: conversation "sim_000001" turn 2 : NaN (1 on this line)`, "Infinity or -Infinity (2 on this line)"},
	"91-nonfinite-in-tool-results.jsonl":        {`91-nonfinite-in-tool-results.jsonl:3: conversation "demo__calc-101" turn 3 : NaN (1 on this line)`, "Infinity or -Infinity (2 on this line)"},
	"92-control-chars-in-content.jsonl":         {`92-control-chars-in-content.jsonl:8: conversation "sim_000001" turn 4 : raw control character U+0001, U+0009 in a string is not JSON`, `92-control-chars-in-content.jsonl:9: conversation "sim_000001" turn 5 : raw control character U+0001, U+0009, U+001F in a string is not JSON`},
	"93-control-chars-in-names.jsonl":           {`93-control-chars-in-names.jsonl:5: conversation "sim_000001" turn 1 : raw control character U+0009, U+001F`, `93-control-chars-in-names.jsonl:6: conversation "sim_000001" turn 2 : raw control character U+0001, U+0009`, `93-control-chars-in-names.jsonl:7: conversation "sim_000001" turn 3 : raw control character U+0009`},
	"94-control-chars-in-tool-results.jsonl":    {`94-control-chars-in-tool-results.jsonl:3: conversation "demo__calc-101" turn 3 : raw control character U+0001, U+0009, U+001F`},
	// A raw newline inside a string: pandas' reader joins the stripped pieces of
	// the split line with a comma ("Yes", newline, "please." is sent as
	// "Yes,please."); so does agentrace, with a warning.
	"97-raw-newline-in-content.jsonl": {`97-raw-newline-in-content.jsonl:9: conversation "sim_000001" turn 5 : a raw newline inside a string splits this record over lines 9-10`},
	"98-raw-cr-in-content.jsonl":      {`98-raw-cr-in-content.jsonl:9: conversation "sim_000001" turn 5 : raw control character U+000D`},
}

// refRefusals: corpus files the reference accepts and agentrace refuses, on
// purpose (docs/reference-differences.md), with the error the
// test requires. None today.
var refRefusals = map[string]string{}

type refVariant struct {
	StartError *struct{ Type, Message string } `json:"start_error"`
	Turns      []struct {
		ConversationID string            `json:"conversation_id"`
		Turn           int               `json:"turn"`
		Headers        map[string]string `json:"headers"`
		IsStreaming    bool              `json:"is_streaming"`
		Body           string            `json:"body"`
	} `json:"turns"`
}

// refDeviation is a deliberate difference from the reference's bytes on one
// corpus file: where the reference's value comes from pandas' column typing
// rather than from the file, agentrace sends the file's own value and warns at
// ingest (docs/reference-differences.md). The test applies
// the replacements to the reference's bodies and session ids, requires the
// result to equal agentrace's bytes, and requires the warning.
type refDeviation struct {
	replace []string // old, new pairs applied to the reference's body and session id
	warning string   // a substring of the ingest warning that announces it
}

var refDeviations = map[string]refDeviation{
	// Every id is a numeric string: pandas reads "000101" as 101.
	"05-numeric-string-conversation-id-zeros-all.jsonl": {
		replace: []string{`"101"`, `"000101"`, `"202"`, `"000202"`,
			"[salt: " + datasets.SaltHex("101") + "]", "[salt: " + datasets.SaltHex("000101") + "]",
			"[salt: " + datasets.SaltHex("202") + "]", "[salt: " + datasets.SaltHex("000202") + "]"},
		warning: `uses "101" as this conversation's id`,
	},
	// An integer column with gaps becomes floats.
	"18-int-column-gaps.jsonl": {
		replace: []string{`"max_completion_tokens":256.0`, `"max_completion_tokens":256`},
		warning: "max_new_tokens is set on 1 of",
	},
	// A boolean column with gaps becomes floats.
	"19-bool-column-gaps.jsonl": {
		replace: []string{`"stream":1.0`, `"stream":true`},
		warning: "stream is set on 1 of",
	},
	"20-bool-column-gaps-false.jsonl": {
		replace: []string{`"stream":0.0`, `"stream":false`},
		warning: "stream is set on 1 of",
	},
	// A max_completion_tokens column with gaps: its values and the profile's
	// default filled into it become floats.
	"22-propagate-model-max-completion.jsonl": {
		replace: []string{`"max_completion_tokens":8192.0`, `"max_completion_tokens":8192`, `"max_completion_tokens":300.0`, `"max_completion_tokens":300`},
		warning: "max_completion_tokens is set on",
	},
	// A numeric string max_new_tokens on one row: pandas makes the column
	// numeric, floats for its gaps.
	"16-max-new-tokens-string.jsonl": {
		replace: []string{`"max_completion_tokens":300.0`, `"max_completion_tokens":"300"`},
		warning: "max_new_tokens is set on 1 of",
	},
	// stream on every user row but no assistant row: a boolean column with gaps.
	"21-stream-all-user-rows.jsonl": {
		replace: []string{`"stream":1.0`, `"stream":true`, `"stream":0.0`, `"stream":false`},
		warning: "stream is set on",
	},
	// max_tokens on one row: an integer column with gaps.
	"23-max-tokens-alias.jsonl": {
		replace: []string{`"max_completion_tokens":77.0`, `"max_completion_tokens":77`},
		warning: "max_tokens is set on 1 of",
	},
	// A name column with gaps: 7 is sent as 7.0.
	"31-name-not-string.jsonl": {
		replace: []string{`"name":7.0`, `"name":7`},
		warning: "name is set on",
	},
	// pandas' JSON reader parses decimal fractions the fast, imprecise way
	// (precise_float off): 0.95 is read as 0.9500000000000001 and sent so; digits
	// past the 15th are dropped (0.12345678901234567 is read as
	// 0.12345678901234501). agentrace sends the file's value (as the correctly
	// rounded double, written as msgspec writes it) and warns.
	"79-floats-in-tools.jsonl": {
		replace: []string{`"v0":0.9500000000000001`, `"v0":0.95`, `"v2":0.7000000000000001`, `"v2":0.7`,
			`"v3":0.30000000000000004`, `"v3":0.3`, `"v6":0.6000000000000001`, `"v6":0.6`,
			`"v8":-0.9500000000000001`, `"v8":-0.95`, `"v11":0.12345678901234501`, `"v11":0.12345678901234566`,
			`"v12":0.9500000000000001`, `"v12":0.95`, `"v13":0.000015000000000000002`, `"v13":0.000015`,
			`"v16":0.9500000000000001`, `"v16":0.95`, `"v17":0.9500000000000001`, `"v17":0.95`},
		warning: "tools: the reference's JSON reader (pandas, fast float mode) reads 0.95 as 0.9500000000000001 and sends that",
	},
	"80-floats-in-tool-results-and-arguments.jsonl": {
		replace: []string{`"load":[0.9500000000000001,0.7000000000000001,0.30000000000000004,0.1]`, `"load":[0.95,0.7,0.3,0.1]`,
			`"weight":0.9500000000000001,"score":0.7000000000000001`, `"weight":0.95,"score":0.7`},
		warning: "tool_results: the reference's JSON reader (pandas, fast float mode) reads 0.95 as 0.9500000000000001 and sends that",
	},
	"81-float-sampling-params.jsonl": {
		replace: []string{`"temperature":0.7000000000000001`, `"temperature":0.7`, `"top_p":0.9500000000000001`, `"top_p":0.95`,
			`"presence_penalty":0.30000000000000004`, `"presence_penalty":0.3`, `"frequency_penalty":0.6000000000000001`, `"frequency_penalty":0.6`},
		warning: "top_p: the reference's JSON reader (pandas, fast float mode) reads 0.95 as 0.9500000000000001 and sends that",
	},
}

func TestReferenceParityCorpus(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(t), "testdata", "refparity")
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("%d corpus files in %s, want at least 30", len(files), dir)
	}
	qwen, err := datasets.LookupProfile("qwen3.6-35b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	variants := map[string]datasets.BodyOptions{
		"qwen_salt":   {Profile: &qwen, Stream: true, Salt: true, Repeat: 1},
		"qwen_nosalt": {Profile: &qwen, Stream: true, Repeat: 1},
		"bare":        {MaxTokens: -1, Repeat: 1},
	}
	accepted, refused, bodies, deviated, fastDelays, warned, refusedOnPurpose := 0, 0, 0, 0, 0, 0, 0
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".jsonl"), func(t *testing.T) {
			var v refVerdict
			b, err := os.ReadFile(strings.TrimSuffix(path, ".jsonl") + ".verdict.json")
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "ds")
			m, err := Run(context.Background(), Options{Out: out, Inputs: []string{path}})
			if want, ok := refRefusals[name]; ok {
				var ve *ValidationError
				if !v.Accept || !errors.As(err, &ve) || !strings.Contains(err.Error(), want) {
					t.Fatalf("a deliberate refusal of a file the reference accepts (accept %v): want an error with %q; ingest: %v", v.Accept, want, err)
				}
				refusedOnPurpose++
				return
			}
			if ws, ok := refWarnings[name]; ok {
				if err != nil {
					t.Fatalf("the reference accepts it; ingest: %v", err)
				}
				all := strings.Join(m.Warnings, "\n")
				for _, w := range ws {
					if !strings.Contains(all, w) {
						t.Errorf("no warning %q; warnings:\n%s", w, all)
					}
				}
				var ve *ValidationError
				_, err := Run(context.Background(), Options{Out: filepath.Join(t.TempDir(), "strict"), Inputs: []string{path}, Strict: true})
				if !errors.As(err, &ve) || !strings.Contains(err.Error(), ws[0]) {
					t.Errorf("--strict: want a refusal with %q; ingest: %v", ws[0], err)
				}
				warned++
			}
			if !v.Accept {
				refused++
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("the reference refuses it (%s: %s); ingest: %v", v.Error.Type, v.Error.Message, err)
				}
				return
			}
			accepted++
			if err != nil {
				t.Fatalf("the reference accepts it; ingest: %v", err)
			}
			dev := refDeviations[name]
			if dev.warning != "" && !strings.Contains(strings.Join(m.Warnings, "\n"), dev.warning) {
				t.Errorf("no warning %q; warnings:\n%s", dev.warning, strings.Join(m.Warnings, "\n"))
			}
			fix := strings.NewReplacer(dev.replace...)
			d, err := datasets.Open(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			for _, c := range d.Conversations {
				order = append(order, c.ConversationID)
			}
			var want []string
			for _, id := range v.ConversationOrder {
				want = append(want, strings.Trim(fix.Replace(`"`+id+`"`), `"`))
			}
			if strings.Join(order, " ") != strings.Join(want, " ") {
				t.Errorf("conversation order %q, the reference's %q", order, want)
			}
			// Delays: the reference keeps float(value) > 0, as pandas' fast float
			// reader reads it (0.95 as 0.9500000000000001); agentrace keeps the
			// file's value, without a warning: the two never differ by more than
			// a nanosecond of sleep (file 82;
			// docs/reference-differences.md).
			for _, tr := range d.Turns {
				key := tr.ConversationID + "/" + itoa(int(tr.Turn))
				refKey := key
				for k := range v.DelaySecondsByKey {
					if strings.Trim(fix.Replace(`"`+strings.Split(k, "/")[0]+`"`), `"`)+"/"+strings.Split(k, "/")[1] == key {
						refKey = k
					}
				}
				got, want := tr.DelaySeconds, float64(v.DelaySecondsByKey[refKey])
				if got == want {
					continue
				}
				if math.IsInf(want, 1) && got == MaxDelaySeconds {
					// The reference never issues the turn (asyncio's call_later(inf));
					// replay waits the cap, with a warning (file 84).
					continue
				}
				fast, _, _ := pandasNumber(strconv.AppendFloat(nil, got, 'g', -1, 64))
				ns := func(s float64) int64 { return int64(s * 1e9) }
				if fast != want || ns(got)-ns(want) > 1 || ns(want)-ns(got) > 1 {
					t.Errorf("%s: delay %v, the reference's %v (pandas' fast reading of ours: %v)", key, got, want, fast)
					continue
				}
				fastDelays++
			}
			names := make([]string, 0, len(v.Variants))
			for k := range v.Variants {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, vn := range names {
				rv := v.Variants[vn]
				o, ok := variants[vn]
				if !ok {
					t.Fatalf("unknown variant %q", vn)
				}
				if rv.StartError != nil {
					// The reference refuses the salted run before issuing anything;
					// so do replay and prompt (CheckSaltable), naming the conversation.
					err := d.CheckSaltable()
					if !o.Salt || !errors.Is(err, datasets.ErrNoSystemPrompt) {
						t.Errorf("%s: the reference refuses to start (%s); CheckSaltable: %v", vn, rv.StartError.Message, err)
					}
					continue
				}
				if o.Salt {
					if err := d.CheckSaltable(); err != nil {
						t.Errorf("%s: the reference starts; CheckSaltable: %v", vn, err)
					}
				}
				n := 0
				for _, rt := range rv.Turns {
					id := strings.Trim(fix.Replace(`"`+rt.ConversationID+`"`), `"`)
					tr, err := d.Turn(id, rt.Turn)
					if err != nil {
						t.Fatalf("%s: %v", vn, err)
					}
					got := string(d.AppendBody(nil, tr, o))
					if want := fix.Replace(rt.Body); got != want {
						i := testenv.DiffAt(got, want)
						t.Errorf("%s: %s turn %d body differs at byte %d:\n  agentrace: %s\n  reference: %s", vn, id, rt.Turn, i, testenv.Around(got, i), testenv.Around(want, i))
						continue
					}
					if sid := datasets.SessionID(id, 1); fix.Replace(`"`+rt.Headers["X-Session-ID"]+`"`) != `"`+sid+`"` {
						t.Errorf("%s: %s turn %d session id %q, the reference's %q", vn, id, rt.Turn, sid, rt.Headers["X-Session-ID"])
					}
					if s := d.Streams(tr, o); s != rt.IsStreaming {
						t.Errorf("%s: %s turn %d streams %v, the reference %v", vn, id, rt.Turn, s, rt.IsStreaming)
					}
					n++
				}
				if n != len(d.Turns) {
					t.Errorf("%s: %d client turns, the reference issued %d", vn, len(d.Turns), len(rv.Turns))
				}
				bodies += n
				if len(dev.replace) > 0 {
					deviated += n
				}
			}
		})
	}
	t.Logf("%d files: %d accepted (%d bodies equal to the reference's, %d of them after the documented pandas replacements; %d delays equal to pandas' fast reading of ours; %d with the required warnings and refused by --strict), %d refused, as the reference; %d refused on purpose",
		len(files), accepted, bodies, deviated, fastDelays, warned, refused, refusedOnPurpose)
	if fastDelays == 0 {
		t.Error("no delay read differently by pandas' fast float reader: the corpus lost its float-delay file")
	}
}

// TestReferenceSnapshotParity: the shared snapshot sample, converted by agentrace's
// snapshot reader, gives the reference converter's conversation order, and with
// --snapshot-as-reference the request bodies it gives (SHA-256 digests recorded
// in testdata/refparity/snapshot-sample20.json from the reference's converter
// and loader, Qwen3.6 profile, salt on, repeat 1); the flat sample gives the
// reference loader's bodies as they are.
func TestReferenceSnapshotParity(t *testing.T) {
	var rec struct {
		InputsSHA256      map[string]string `json:"inputs_sha256"`
		SnapshotConverted struct {
			ConversationOrder []string            `json:"conversation_order"`
			Bodies            map[string][][2]any `json:"qwen_salt_body_sha256"`
		} `json:"snapshot_converted"`
		Flat struct {
			ConversationOrder []string            `json:"conversation_order"`
			Bodies            map[string][][2]any `json:"qwen_salt_body_sha256"`
		} `json:"flat"`
	}
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", "refparity", "snapshot-sample20.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	qwen, _ := datasets.LookupProfile("qwen3.6-35b-a3b")
	o := datasets.BodyOptions{Profile: &qwen, Stream: true, Salt: true, Repeat: 1}
	check := func(t *testing.T, d *datasets.Dataset, order []string, bodies map[string][][2]any, wantBodies bool) {
		var got []string
		for _, c := range d.Conversations {
			got = append(got, c.ConversationID)
		}
		if strings.Join(got, " ") != strings.Join(order, " ") {
			t.Errorf("conversation order %q, the reference's %q", got, order)
		}
		if !wantBodies {
			return
		}
		n := 0
		for _, id := range order {
			for _, tb := range bodies[id] {
				tr, err := d.Turn(id, int(tb[0].(float64)))
				if err != nil {
					t.Fatal(err)
				}
				sum := sha256.Sum256(d.AppendBody(nil, tr, o))
				if hex.EncodeToString(sum[:]) != tb[1].(string) {
					t.Fatalf("%s turn %v: body digest differs from the reference's", id, tb[0])
				}
				n++
			}
		}
		if n != len(d.Turns) {
			t.Errorf("%d bodies compared, %d client turns", n, len(d.Turns))
		}
		t.Logf("%d conversations in the reference's order, %d bodies equal to the reference's", len(order), n)
	}
	snapPath, flatPath := testenv.SampleSnapshot(t), testenv.SampleFlat(t)
	for path, name := range map[string]string{snapPath: "deepswe-sample-20.snapshot.jsonl", flatPath: "deepswe-sample-20.jsonl"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != rec.InputsSHA256[name] {
			t.Fatalf("%s is not the file the digests were recorded from", path)
		}
	}
	t.Run("snapshot", func(t *testing.T) {
		d := ingestFiles(t, snapPath)
		check(t, d, rec.SnapshotConverted.ConversationOrder, nil, false)
	})
	t.Run("snapshot-as-reference", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "ds")
		if _, err := Run(context.Background(), Options{Out: out, Inputs: []string{snapPath}, SnapshotAsReference: true}); err != nil {
			t.Fatal(err)
		}
		d, err := datasets.Open(context.Background(), out)
		if err != nil {
			t.Fatal(err)
		}
		check(t, d, rec.SnapshotConverted.ConversationOrder, rec.SnapshotConverted.Bodies, true)
	})
	t.Run("flat", func(t *testing.T) {
		check(t, ingestFiles(t, flatPath), rec.Flat.ConversationOrder, rec.Flat.Bodies, true)
	})
}

// TestPandasFastFloatOracle: ingest's model of pandas' fast float reader
// (pandasNumber, behind the "reads 0.95 as 0.9500000000000001" warning) against
// what the reference actually sent for each literal of corpus file 79 (19
// literals: fractions read imprecisely, exactly, past 15 digits, with exponents,
// negative): the model gives the reference's double for every one, and says it
// differs from the file's value exactly where it does.
func TestPandasFastFloatOracle(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(t), "testdata", "refparity")
	src, err := os.ReadFile(filepath.Join(dir, "79-floats-in-tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var v refVerdict
	b, err := os.ReadFile(filepath.Join(dir, "79-floats-in-tools.verdict.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	// The literals as the file writes them, and the numbers the reference sent.
	lits := map[string]string{}
	for _, m := range regexp.MustCompile(`"(v\d+)": ([-0-9.eE+]+)`).FindAllStringSubmatch(string(src), -1) {
		lits[m[1]] = m[2]
	}
	var sent map[string]json.Number
	for _, rt := range v.Variants["bare"].Turns {
		if rt.ConversationID != "sim_000001" {
			continue
		}
		i := strings.Index(rt.Body, `"examples":`)
		if i < 0 {
			t.Fatal("no examples in the reference's body")
		}
		dec := json.NewDecoder(strings.NewReader(rt.Body[i+len(`"examples":`):]))
		dec.UseNumber()
		if err := dec.Decode(&sent); err != nil {
			t.Fatal(err)
		}
		break
	}
	if len(lits) < 19 || len(sent) != len(lits) {
		t.Fatalf("%d literals in the file, %d numbers in the reference's body", len(lits), len(sent))
	}
	misread := 0
	for k, lit := range lits {
		ref, err := sent[k].Float64()
		if err != nil {
			t.Fatal(err)
		}
		exact, _ := strconv.ParseFloat(lit, 64)
		model, isInt, ok := pandasNumber([]byte(lit))
		f, differs := pandasFloatDiffers([]byte(lit))
		if isInt || !ok || model != ref || differs != (ref != exact) || (differs && f != ref) {
			t.Errorf("%s = %s: the reference sent %s; the model reads %v (differs %v), the file's value is %v", k, lit, sent[k], model, differs, exact)
		}
		if ref != exact {
			misread++
		}
	}
	t.Logf("%d literals: the model gives the reference's double for every one; %d are read differently from the file", len(lits), misread)
	if misread == 0 || misread == len(lits) {
		t.Errorf("%d of %d literals misread: the file no longer tells the two cases apart", misread, len(lits))
	}
}
