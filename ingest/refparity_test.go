package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
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
	DelaySecondsByKey map[string]float64              `json:"delay_seconds_by_key"`
	Variants          map[string]refVariant           `json:"variants"`
}

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
// ingest (README, "Differences from the reference client"). The test applies
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
	accepted, refused, bodies, deviated := 0, 0, 0, 0
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
			d, err := datasets.Open(out)
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
			// Delays: the reference keeps float(value) > 0.
			for _, tr := range d.Turns {
				key := tr.ConversationID + "/" + itoa(int(tr.Turn))
				refKey := key
				for k := range v.DelaySecondsByKey {
					if strings.Trim(fix.Replace(`"`+strings.Split(k, "/")[0]+`"`), `"`)+"/"+strings.Split(k, "/")[1] == key {
						refKey = k
					}
				}
				if got, want := tr.DelaySeconds, v.DelaySecondsByKey[refKey]; got != want {
					t.Errorf("%s: delay %v, the reference's %v", key, got, want)
				}
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
						i := diffAt(got, want)
						t.Errorf("%s: %s turn %d body differs at byte %d:\n  agentrace: %s\n  reference: %s", vn, id, rt.Turn, i, around(got, i), around(want, i))
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
	t.Logf("%d files: %d accepted (%d bodies equal to the reference's, %d of them after the documented pandas-typing replacements), %d refused, as the reference", len(files), accepted, bodies, deviated, refused)
}

func diffAt(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func around(s string, i int) string {
	lo, hi := max(0, i-80), min(len(s), i+80)
	return s[lo:hi]
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
		d, err := datasets.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		check(t, d, rec.SnapshotConverted.ConversationOrder, rec.SnapshotConverted.Bodies, true)
	})
	t.Run("flat", func(t *testing.T) {
		check(t, ingestFiles(t, flatPath), rec.Flat.ConversationOrder, rec.Flat.Bodies, true)
	})
}
