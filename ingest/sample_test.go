package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"golang.org/x/crypto/blake2b"
)

func ingestFiles(t *testing.T, files ...string) *datasets.Dataset {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ds")
	if err := Files(context.Background(), out, files...); err != nil {
		t.Fatalf("ingest %v: %v", files, err)
	}
	d, err := datasets.Open(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSampleCounts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		file   func(testing.TB) string
		format string
	}{{"flat", testenv.SampleFlat, FormatFlat}, {"snapshot", testenv.SampleSnapshot, FormatSnapshot}} {
		t.Run(tc.name, func(t *testing.T) {
			d := ingestFiles(t, tc.file(t))
			c := d.Manifest.Counts
			want := schemas.DatasetCounts{Conversations: 20, Coding: 20, Rows: 2014, ClientTurns: 1007, AssistantTurns: 1007, Messages: 2019}
			if c != want || len(d.Turns) != 1007 || len(d.Conversations) != 20 {
				t.Errorf("counts %+v (%d turns); want %+v", c, len(d.Turns), want)
			}
			in := d.Manifest.Inputs
			if len(in) != 1 || in[0].Format != tc.format || len(in[0].SHA256) != 64 || in[0].Bytes == 0 {
				t.Errorf("inputs %+v", in)
			}
			data, err := os.ReadFile(tc.file(t))
			if err != nil {
				t.Fatal(err)
			}
			// The sha256 is the file's as given; a sample is not the official dataset.
			if sum := sha256.Sum256(data); in[0].SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("input sha256 %s, the file's %x", in[0].SHA256, sum)
			}
			if o := d.Manifest.OfficialDataset; o == nil || *o {
				t.Errorf("official_dataset %v, want false", o)
			}
			if in[0].Bytes != int64(len(data)) || in[0].Lines != int64(bytes.Count(data, []byte{'\n'})) {
				t.Errorf("input bytes %d lines %d; file has %d bytes, %d lines", in[0].Bytes, in[0].Lines, len(data), bytes.Count(data, []byte{'\n'}))
			}
			for i := range d.Conversations {
				for _, m := range d.Messages(i) {
					if w := datasets.AppendWire(nil, &m); !bytes.Equal(w, m.Wire) {
						t.Fatalf("%s seq %d: stored wire %s, AppendWire %s", m.ConversationID, m.Seq, m.Wire, w)
					}
				}
			}
		})
	}
}

// TestFlatEqualsSnapshot: both forms of the sample give the same dataset: the same
// content hash and the same rows, conversation by conversation (the snapshot file
// is shuffled, so conversations come in another order).
func TestFlatEqualsSnapshot(t *testing.T) {
	flat := ingestFiles(t, testenv.SampleFlat(t))
	snap := ingestFiles(t, testenv.SampleSnapshot(t))
	if flat.Manifest.ContentHash != snap.Manifest.ContentHash {
		t.Errorf("content hash: flat %s, snapshot %s", flat.Manifest.ContentHash, snap.Manifest.ContentHash)
	}
	if flat.Manifest.Counts != snap.Manifest.Counts {
		t.Errorf("counts: flat %+v, snapshot %+v", flat.Manifest.Counts, snap.Manifest.Counts)
	}
	for fi := range flat.Conversations {
		fc := flat.Conversations[fi]
		sc, ok := snap.Conversation(fc.ConversationID)
		if !ok {
			t.Fatalf("snapshot lacks %q", fc.ConversationID)
		}
		si := int(sc.Index)
		if sc.Metadata != `{"source":"deepswe-sample-20"}` {
			t.Errorf("%s: snapshot metadata %q", fc.ConversationID, sc.Metadata)
		}
		a, b := fc, *sc
		a.Index, a.Source, a.Metadata = 0, "", ""
		b.Index, b.Source, b.Metadata = 0, "", ""
		if !reflect.DeepEqual(a, b) {
			t.Errorf("conversation %s:\nflat     %+v\nsnapshot %+v", fc.ConversationID, a, b)
		}
		if !reflect.DeepEqual(flat.Messages(fi), snap.Messages(si)) {
			t.Errorf("conversation %s: messages differ", fc.ConversationID)
		}
		ft, st := flat.ConversationTurns(fi), snap.ConversationTurns(si)
		if len(ft) != len(st) {
			t.Fatalf("conversation %s: %d turns flat, %d snapshot", fc.ConversationID, len(ft), len(st))
		}
		for k := range ft {
			x, y := ft[k], st[k]
			x.ConvIndex, y.ConvIndex = 0, 0
			if !reflect.DeepEqual(x, y) {
				t.Errorf("conversation %s turn %d:\nflat     %+v\nsnapshot %+v", fc.ConversationID, x.Turn, x, y)
			}
		}
	}
}

// TestExportRoundTrip: export, re-ingest, same content hash, for every source form;
// the exported file passes the reference loader's checks (restated below).
func TestExportRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		file func(testing.TB) string
	}{
		{"flat", testenv.SampleFlat}, {"snapshot", testenv.SampleSnapshot},
		{"rich", func(testing.TB) string { return filepath.Join(testenv.RepoRoot(t), "testdata/ingest/rich.jsonl") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ingestFiles(t, tc.file(t))
			out := filepath.Join(t.TempDir(), "export.jsonl")
			if err := Export(context.Background(), ExportOptions{Dataset: d.Dir, Out: out}); err != nil {
				t.Fatal(err)
			}
			referenceAccepts(t, out)
			again := ingestFiles(t, out)
			if again.Manifest.ContentHash != d.Manifest.ContentHash {
				t.Errorf("re-ingested hash %s, original %s", again.Manifest.ContentHash, d.Manifest.ContentHash)
			}
			// The export's own record comes first, then the original records.
			md, want := again.Manifest.Inputs[0].Metadata, d.Manifest.Inputs[0].Metadata
			if len(md) == 0 || !isExportRecord(md[0]) {
				t.Errorf("the export's first line is not its own metadata record: %s", md)
			} else if len(md[1:])+len(want) > 0 && !reflect.DeepEqual(md[1:], want) {
				t.Errorf("metadata records: %s, then %s", want, md[1:])
			}
			// A second export is byte-identical to the first.
			out2 := filepath.Join(t.TempDir(), "export2.jsonl")
			if err := Export(context.Background(), ExportOptions{Dataset: again.Dir, Out: out2}); err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(out)
			b, _ := os.ReadFile(out2)
			if !bytes.Equal(a, b) {
				t.Error("export of the re-ingested dataset differs from the first export")
			}
		})
	}
}

func TestGzipInput(t *testing.T) {
	src, err := os.ReadFile(testenv.SampleSnapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(t.TempDir(), "sample.snapshot.jsonl.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(src)
	zw.Close()
	if err := os.WriteFile(gz, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	d := ingestFiles(t, gz)
	plain := ingestFiles(t, testenv.SampleFlat(t))
	if d.Manifest.ContentHash != plain.Manifest.ContentHash || d.Manifest.Inputs[0].Format != FormatSnapshot {
		t.Errorf("gzipped snapshot: hash %s format %s; flat hash %s", d.Manifest.ContentHash, d.Manifest.Inputs[0].Format, plain.Manifest.ContentHash)
	}
	if d.Manifest.Inputs[0].Bytes != int64(buf.Len()) {
		t.Errorf("input bytes %d, the .gz has %d", d.Manifest.Inputs[0].Bytes, buf.Len())
	}
}

// readRows reads a flat JSONL file with encoding/json, independently of the
// ingest parser.
func readRows(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r["_type"] == "dataset_metadata" {
			continue
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// specSalt is spec §4's salt, computed here independently of datasets.SaltHex.
func specSalt(s string) string {
	h, _ := blake2b.New(2, nil)
	h.Write([]byte(s))
	return hex.EncodeToString(h.Sum(nil))
}

type turnKey struct {
	conv string
	turn int
}

// specMessages restates spec §3–4 on decoded rows: the messages of every client
// turn of every conversation, for trajectory instance repeat, salted.
func specMessages(rows []map[string]any, repeat int) map[turnKey][]any {
	out := map[turnKey][]any{}
	byConv := map[string][]map[string]any{}
	var order []string
	for _, r := range rows {
		id := r["conversation_id"].(string)
		if _, ok := byConv[id]; !ok {
			order = append(order, id)
		}
		byConv[id] = append(byConv[id], r)
	}
	for _, id := range order {
		var history []any
		for _, r := range byConv[id] {
			if s, ok := r["system"].(string); ok && s != "" {
				salted := "[salt: " + specSalt(itoa(repeat)) + "]\n\n" + s + "\n\n[salt: " + specSalt(id) + "]"
				history = append(history, map[string]any{"role": "system", "content": salted})
				break
			}
		}
		for _, r := range byConv[id] {
			var msgs []any
			role := r["role"].(string)
			if role == "tool" {
				for _, res := range r["tool_results"].([]any) {
					m := res.(map[string]any)
					msgs = append(msgs, map[string]any{"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"]})
				}
			} else {
				m := map[string]any{"role": role}
				for _, k := range []string{"content", "name", "tool_calls", "reasoning_content"} {
					if v, ok := r[k]; ok && v != nil {
						m[k] = v
					}
				}
				msgs = append(msgs, m)
			}
			if role == "user" || role == "tool" {
				turn := append(append([]any(nil), history...), msgs...)
				out[turnKey{id, int(r["turn"].(float64))}] = turn
			}
			history = append(history, msgs...)
		}
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestMessagesMatchSpec compares the messages of every client turn of the sample,
// salted for the first and second pass, with the spec restated above. (The
// snapshot form gives the same messages: TestFlatEqualsSnapshot.)
func TestMessagesMatchSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		file func(testing.TB) string
	}{{"flat", testenv.SampleFlat}} {
		t.Run(tc.name, func(t *testing.T) {
			d := ingestFiles(t, tc.file(t))
			rows := readRows(t, testenv.SampleFlat(t))
			for _, repeat := range []int{1, 2} {
				want := specMessages(rows, repeat)
				if len(want) != len(d.Turns) {
					t.Fatalf("spec gives %d client turns, dataset %d", len(want), len(d.Turns))
				}
				for i := range d.Turns {
					tr := &d.Turns[i]
					var got []any
					raw := d.RequestMessages(tr, datasets.BodyOptions{Salt: true, Repeat: repeat})
					if err := json.Unmarshal(raw, &got); err != nil {
						t.Fatalf("%s turn %d: %v", tr.ConversationID, tr.Turn, err)
					}
					w := want[turnKey{tr.ConversationID, int(tr.Turn)}]
					if !reflect.DeepEqual(got, w) {
						t.Fatalf("%s turn %d repeat %d: messages differ from the spec's\n got %.600s\nwant %.600v", tr.ConversationID, tr.Turn, repeat, raw, w)
					}
				}
			}
		})
	}
}

// TestRichFixture checks what the reference converter drops and agentrace keeps.
func TestRichFixture(t *testing.T) {
	d := ingestFiles(t, filepath.Join(testenv.RepoRoot(t), "testdata/ingest/rich.jsonl"))
	if md := d.Manifest.Inputs[0].Metadata; len(md) != 1 || !strings.Contains(string(md[0]), `"license":"Apache-2.0"`) {
		t.Errorf("metadata records %s", md)
	}
	sim, ok := d.Conversation("sim_000001")
	if !ok || sim.Domain != schemas.DomainWorkflow || sim.ToolCallCount != 2 || sim.DelaySeconds != 4.75 || sim.Rows != 5 {
		t.Fatalf("sim_000001: %+v", sim)
	}
	if c, _ := d.Conversation("django__django-1"); c.Domain != schemas.DomainCoding {
		t.Errorf("django__django-1 domain %q", c.Domain)
	}
	msgs := d.Messages(int(sim.Index))
	if len(msgs) != 6 {
		t.Fatalf("%d messages", len(msgs))
	}
	if msgs[0].Extra != `{"x_trace":{"k":[1,2]},"temperature":0.6,"max_new_tokens":512,"seed":7}` {
		t.Errorf("user extra %s", msgs[0].Extra)
	}
	if msgs[1].IntentCodesJSON != `["i042","I043"]` || *msgs[1].ReasoningContent != "The user wants a booking. intent: I042" || *msgs[1].Content != "" {
		t.Errorf("assistant %+v", msgs[1])
	}
	if msgs[3].Part != 1 || !msgs[3].ContentJSON || *msgs[3].Content != `{"ok":false,"reason":"full"}` || msgs[3].Extra != `{"tool_result_extra":{"elapsed_ms":12}}` {
		t.Errorf("second tool result %+v", msgs[3])
	}
	ts := d.ConversationTurns(int(sim.Index))
	// The first user row passes its tools and max_new_tokens on to every later
	// client row (Inherited), as the reference's loader does; its temperature and
	// seed stay its own.
	if len(ts) != 3 || ts[1].DelaySeconds != 1.25 || ts[1].MaxTokens != 512 || ts[1].Params != "" ||
		ts[1].Inherited != `{"max_new_tokens":512}` || ts[0].Params != `{"max_new_tokens":512,"temperature":0.6,"seed":7}` ||
		ts[1].Tools == "" || ts[0].ExpectedTurn != 2 || ts[2].ExpectedTurn != 0 || ts[2].Tools != ts[0].Tools || ts[2].Params != "" {
		t.Errorf("turns %+v", ts)
	}
	if *msgs[0].Content != "Book a table for two at 7pm. Café \"Le Nord\" \u2028 please" {
		t.Errorf("user content %q", *msgs[0].Content)
	}
}

// TestPrompt checks `agentrace prompt` output for a few client turns of the sample
// against expectations written from the spec.
func TestPrompt(t *testing.T) {
	d := ingestFiles(t, testenv.SampleFlat(t))
	const id = "django__django-16899"
	rows := readRows(t, testenv.SampleFlat(t))
	var conv []map[string]any
	for _, r := range rows {
		if r["conversation_id"] == id {
			conv = append(conv, r)
		}
	}
	system := conv[0]["system"].(string)
	salted := func(repeat string) map[string]any {
		return map[string]any{"role": "system", "content": "[salt: " + specSalt(repeat) + "]\n\n" + system + "\n\n[salt: " + specSalt(id) + "]"}
	}
	user := map[string]any{"role": "user", "content": conv[0]["content"]}
	assistant := map[string]any{"role": "assistant", "tool_calls": conv[1]["tool_calls"], "reasoning_content": conv[1]["reasoning_content"]}
	res := conv[2]["tool_results"].([]any)[0].(map[string]any)
	tool := map[string]any{"role": "tool", "tool_call_id": res["tool_call_id"], "content": res["content"]}
	for _, tc := range []struct {
		name string
		o    PromptOptions
		want map[string]any
		head string
	}{
		{"turn 1, qwen profile", PromptOptions{Turn: 1, Profile: "qwen3.6-35b-a3b"}, map[string]any{
			"model": "Qwen/Qwen3.6-35B-A3B", "messages": []any{salted("1"), user}, "temperature": 1.0, "top_k": 20.0, "top_p": 0.95,
			"repetition_penalty": 1.0, "presence_penalty": 1.5, "max_completion_tokens": 8192.0, "stream": true,
			"chat_template_kwargs": map[string]any{"preserve_thinking": true},
			"tools":                conv[0]["tools"]}, ""},
		{"turn 1, --stream-usage", PromptOptions{Turn: 1, Profile: "qwen3.6-35b-a3b", StreamUsage: true}, map[string]any{
			"model": "Qwen/Qwen3.6-35B-A3B", "messages": []any{salted("1"), user}, "temperature": 1.0, "top_k": 20.0, "top_p": 0.95,
			"repetition_penalty": 1.0, "presence_penalty": 1.5, "max_completion_tokens": 8192.0, "stream": true,
			"stream_options": map[string]any{"include_usage": true}, "chat_template_kwargs": map[string]any{"preserve_thinking": true},
			"tools": conv[0]["tools"]}, ""},
		{"turn 3 repeat 2, kimi, verbose", PromptOptions{Turn: 3, Repeat: 2, Profile: "kimi-k3", Verbose: true, APIKey: true}, map[string]any{
			"model": "moonshotai/Kimi-K3", "messages": []any{salted("2"), user, assistant, tool}, "temperature": 1.0, "top_p": 1.0,
			"max_completion_tokens": 8192.0, "stream": true, "tools": conv[0]["tools"]},
			"POST /v1/chat/completions\nContent-Type: application/json\nAccept: text/event-stream\nAuthorization: Bearer <redacted>\nX-Session-ID: " + id + "__repeat_2\n"},
		{"turn 3 unsalted, no stream, model", PromptOptions{Turn: 3, NoSalt: true, NoStream: true, Model: "m", MaxTokens: 99}, map[string]any{
			"model": "m", "messages": []any{map[string]any{"role": "system", "content": system}, user, assistant, tool},
			"max_completion_tokens": 99.0, "stream": false, "tools": conv[0]["tools"]}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Dataset, o.Conversation = d.Dir, id
			var out bytes.Buffer
			if err := Prompt(context.Background(), &out, o); err != nil {
				t.Fatal(err)
			}
			body := out.Bytes()
			if tc.head != "" {
				if !bytes.HasPrefix(body, []byte(tc.head)) {
					t.Errorf("headers:\n%s\nwant prefix\n%s", body[:min(len(body), 300)], tc.head)
				}
				body = body[bytes.Index(body, []byte("\n\n"))+2:]
			}
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("%v: %.300s", err, body)
			}
			if !reflect.DeepEqual(got, tc.want) {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(tc.want)
				t.Errorf("body\n got %.1500s\nwant %.1500s", gj, wj)
			}
		})
	}
	var out bytes.Buffer
	if err := Prompt(context.Background(), &out, PromptOptions{Dataset: d.Dir, Conversation: id, Turn: 2}); err == nil {
		t.Error("prompt for an assistant row succeeded")
	}
}

// TestDuckDBReadsTables reads the Parquet tables with DuckDB (an independent reader)
// and checks row counts and a few values.
func TestDuckDBReadsTables(t *testing.T) {
	js, node := testenv.JS(t)
	d := ingestFiles(t, testenv.SampleFlat(t))
	cmd := exec.Command(node, filepath.Join(js, "duckdb-read.mjs"), d.Dir)
	cmd.Dir = js
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb-read.mjs: %v", err)
	}
	var got struct {
		Conversations, Messages, Turns         int
		First                                  string
		ClientTurns                            int
		NullContent                            int
		WireBytes                              int64
		Delay                                  float64
		MaxMsgEnd                              int
		ToolMessages                           int
		FirstUserContentPrefix, SystemEscaped0 string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var wire int64
	var nullContent, toolMsgs int
	for i := range d.Conversations {
		for _, m := range d.Messages(i) {
			wire += int64(len(m.Wire))
			if m.Content == nil {
				nullContent++
			}
			if m.Role == "tool" {
				toolMsgs++
			}
		}
	}
	var delay float64
	maxEnd := 0
	for _, tr := range d.Turns {
		delay += tr.DelaySeconds
		maxEnd = max(maxEnd, int(tr.MsgEnd))
	}
	first := d.Conversations[0]
	if got.Conversations != 20 || got.Messages != 2019 || got.Turns != 1007 || got.First != first.ConversationID ||
		got.ClientTurns != 1007 || got.NullContent != nullContent || got.WireBytes != wire || got.MaxMsgEnd != maxEnd ||
		got.ToolMessages != toolMsgs || got.FirstUserContentPrefix != (*d.Messages(0)[0].Content)[:40] || got.SystemEscaped0 != first.SystemEscaped {
		t.Errorf("DuckDB read %+v;\nwant 20/2019/1007 rows, first %s, null content %d, wire %d, max msg_end %d, tool messages %d",
			got, first.ConversationID, nullContent, wire, maxEnd, toolMsgs)
	}
	if diff := got.Delay - delay; diff > 1e-6 || diff < -1e-6 {
		t.Errorf("DuckDB delay sum %v, want %v", got.Delay, delay)
	}
}

// TestSnapshotFixture: a hand-written snapshot (merged user messages, a tool
// batch with its delay on the first message, null and empty assistant content,
// checkpoints out of order) gives the same dataset as its hand-written flat form.
func TestSnapshotFixture(t *testing.T) {
	root := testenv.RepoRoot(t)
	snap := ingestFiles(t, filepath.Join(root, "testdata/ingest/small.snapshot.jsonl"))
	flat := ingestFiles(t, filepath.Join(root, "testdata/ingest/small.flat.jsonl"))
	if snap.Manifest.ContentHash != flat.Manifest.ContentHash {
		for ci := range snap.Conversations {
			t.Logf("snapshot %+v\n%+v\n%+v", snap.Conversations[ci], snap.Messages(ci), snap.ConversationTurns(ci))
		}
		for ci := range flat.Conversations {
			t.Logf("flat %+v\n%+v\n%+v", flat.Conversations[ci], flat.Messages(ci), flat.ConversationTurns(ci))
		}
		t.Fatalf("snapshot hash %s, flat %s", snap.Manifest.ContentHash, flat.Manifest.ContentHash)
	}
	c, _ := snap.Conversation("sim_000007")
	if c.Metadata != `{"split":"test"}` || c.Rows != 7 || c.DelaySeconds != 3.75 || snap.Manifest.Inputs[0].Format != FormatSnapshot ||
		len(snap.Manifest.Inputs[0].Metadata) != 1 {
		t.Errorf("conversation %+v, inputs %+v", c, snap.Manifest.Inputs)
	}
	if c, _ := snap.Conversation("code-1"); c.HasSystem || snap.CheckSaltable() == nil {
		t.Errorf("code-1 has a system prompt? %+v", c)
	}
}

// TestReadsDatasetVersion2 opens a dataset that agentrace wrote with schema
// version 2 (testdata/dataset-v2, testdata/ingest/rich.jsonl ingested: "" and 0
// for missing values, the system prompt in system, the tool call count in
// tool_calls) and the same file ingested now (version 3, nulls, system_prompt,
// tool_call_count): both read into the same rows, with the same content hash.
func TestReadsDatasetVersion2(t *testing.T) {
	old, err := datasets.Open(context.Background(), "testdata/dataset-v2")
	if err != nil {
		t.Fatal(err)
	}
	now := ingestFiles(t, filepath.Join(testenv.RepoRoot(t), "testdata/ingest/rich.jsonl"))
	if old.Manifest.SchemaVersion != schemas.DatasetVersionPrevious || now.Manifest.SchemaVersion != schemas.DatasetVersion {
		t.Fatalf("schema versions %q and %q", old.Manifest.SchemaVersion, now.Manifest.SchemaVersion)
	}
	if old.Manifest.ContentHash != now.Manifest.ContentHash {
		t.Errorf("content hash %s, version 2 %s", now.Manifest.ContentHash, old.Manifest.ContentHash)
	}
	if len(old.Conversations) != len(now.Conversations) {
		t.Fatalf("%d conversations, version 2 %d", len(now.Conversations), len(old.Conversations))
	}
	for i := range now.Conversations {
		o, n := old.Conversations[i], now.Conversations[i]
		o.Source = n.Source
		if o != n {
			t.Errorf("conversation %d: %+v\nversion 2: %+v", i, n, o)
		}
		if !reflect.DeepEqual(old.Messages(i), now.Messages(i)) {
			t.Errorf("conversation %d messages: %+v\nversion 2: %+v", i, now.Messages(i), old.Messages(i))
		}
	}
	if !reflect.DeepEqual(old.Turns, now.Turns) {
		t.Errorf("turns: %+v\nversion 2: %+v", now.Turns, old.Turns)
	}
	if sim, _ := old.Conversation("sim_000001"); sim.ToolCallCount != 2 || sim.System == "" {
		t.Errorf("version 2 sim_000001: %+v", sim)
	}
}
