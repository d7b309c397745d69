package score

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/tokens"
)

func fixtureDir(t *testing.T) string {
	return filepath.Join(testenv.RepoRoot(t), "testdata", "reference-run")
}

// lenCounter counts one token per byte of content, reasoning and arguments.
type lenCounter struct{}

func (lenCounter) Name() string { return "bytes" }
func (lenCounter) CountOSL(r schemas.Response) (int, error) {
	n := len(r.Content) + len(r.Reasoning)
	for _, c := range r.ToolCalls {
		n += len(c.Function.Name) + len(c.Function.Arguments)
	}
	return n, nil
}

// TestReferenceRunFixture scores testdata/reference-run (a reference-format report
// directory written by hand: streamed chunks, tool-call deltas, a failed and an
// aborted turn, a repeat, out-of-order and malformed lines) and compares the
// reference's fields with expected-scores.json, worked out from spec §8.
func TestReferenceRunFixture(t *testing.T) {
	dir := fixtureDir(t)
	s, err := ScoreRun(context.Background(), Options{Run: dir, Counter: lenCounter{}})
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Score         float64                        `json:"score"`
		Turns         schemas.TurnCounts             `json:"turns"`
		Domains       map[string]schemas.DomainScore `json:"domains"`
		PerTurn       []map[string]any               `json:"per_turn"`
		ExcludedTurns []schemas.ExcludedTurn         `json:"excluded_turns"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "expected-scores.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	if s.Score != want.Score || s.Turns != want.Turns || !reflect.DeepEqual(s.Domains, want.Domains) {
		t.Errorf("got score %v turns %+v domains %+v\nwant %v %+v %+v", s.Score, s.Turns, s.Domains, want.Score, want.Turns, want.Domains)
	}
	if !reflect.DeepEqual(s.ExcludedTurns, want.ExcludedTurns) {
		t.Errorf("excluded %+v, want %+v", s.ExcludedTurns, want.ExcludedTurns)
	}
	// per_turn: our JSON rows carry the reference's keys (plus our own).
	b, _ := json.Marshal(s.PerTurn)
	var got []map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want.PerTurn) {
		t.Fatalf("%d per_turn rows, want %d", len(got), len(want.PerTurn))
	}
	for i := range got {
		for k, v := range want.PerTurn[i] {
			if !reflect.DeepEqual(got[i][k], v) {
				t.Errorf("per_turn[%d].%s = %v, want %v", i, k, got[i][k], v)
			}
		}
		if _, ok := want.PerTurn[i]["missing"]; !ok && got[i]["missing"] != nil {
			t.Errorf("per_turn[%d] has missing, the reference has none", i)
		}
	}
	// What the run says about itself (config.yaml).
	if s.Run.Kind != KindReference || s.Run.Model != "Qwen/Qwen3.6-35B-A3B" || s.Run.Concurrency != 4 {
		t.Errorf("run identity %+v", s.Run)
	}
	// The window: only the repeat-2 turn issued after stop_performance_tracking is out.
	for _, p := range s.PerTurn {
		out := p.ConversationID == "sim_000001" && p.Repeat == 2 && p.ClientTurn == 3
		if p.InWindow == out {
			t.Errorf("%s repeat %d turn %d: in_window %v", p.ConversationID, p.Repeat, p.ClientTurn, p.InWindow)
		}
	}
	// OSL over all 13 completed samples (expected or not; the malformed line and
	// the null complete excluded).
	// The test's counter is not the model's tokenizer: a stand-in, unofficial.
	if s.OSL == nil || s.OSL.Turns != 13 || !s.OSL.Unofficial || s.OSL.Source != "tokenizer:bytes" || s.OSL.Tokenizer == nil || !s.OSL.Tokenizer.StandIn {
		t.Errorf("osl %+v", s.OSL)
	}
	if len(s.Warnings) != 2 || !strings.Contains(s.Warnings[0], schemas.StandInLabel) || !strings.Contains(s.Warnings[1], "skipped 1 malformed") {
		t.Errorf("warnings %q", s.Warnings)
	}
}

// TestMalformedToolCallReported: a complete event whose tool calls hold a
// malformed delta is scored with the delta left out, and the run says which line.
func TestMalformedToolCallReported(t *testing.T) {
	truth := &Truth{byKey: map[turnKey]*Expectation{{"c", 1}: {ConversationID: "c", ClientTurn: 1}}}
	log := `{"event_type":"sample.issued","timestamp_ns":1,"sample_uuid":"u","conversation_id":"c","turn":1}
{"event_type":"sample.complete","timestamp_ns":2,"sample_uuid":"u","conversation_id":"c","turn":1,"data":["TextModelOutput",["ok"],null,[[{"index":0,"function":{"name":"bash","arguments":"{}"}},"junk"]]]}
`
	run, err := readReferenceEvents(context.Background(), strings.NewReader(log), truth)
	if err != nil {
		t.Fatal(err)
	}
	if run.Malformed != 1 || run.FirstMalformed != "line 2: tool_calls[0][1]: not an object" {
		t.Errorf("malformed %d, first %q", run.Malformed, run.FirstMalformed)
	}
	if len(run.Completed) != 1 || len(run.Completed[0].ToolCalls) != 1 || run.Completed[0].ToolCalls[0].Function.Name != "bash" {
		t.Errorf("completed %+v", run.Completed)
	}
}

func FuzzReferenceEvents(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "reference-run", "events.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		f.Add(l)
	}
	truth := NewTruth(specRunDataset(f))
	f.Fuzz(func(t *testing.T, line string) {
		// Any input reads without panicking, and the result is well formed.
		run, err := readReferenceEvents(context.Background(), strings.NewReader(line+"\n"+line), truth)
		if err != nil {
			t.Fatal(err)
		}
		acc := ScoreAccuracy(truth, run.Attempts)
		if acc.Turns.Scored > 0 && (acc.Score < 0 || acc.Score > 1) {
			t.Fatalf("score %v", acc.Score)
		}
	})
}

// TestReferenceRunWithTokenizer scores the fixture with the real Qwen3 tokenizer
// (--tokenizer): the OSL is the mean of the tokenizer's count of each completed
// response, and a plain-content response counts as its text's tokens. Qwen3's
// tokenizer is not Qwen3.6's: scores.json names it with its digest, says it is
// a stand-in and marks the OSL gate unofficial.
func TestReferenceRunWithTokenizer(t *testing.T) {
	dir := testenv.Tokenizer(t)
	tok, err := tokens.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(run, os.DirFS(fixtureDir(t))); err != nil {
		t.Fatal(err)
	}
	s, err := ScoreRun(context.Background(), Options{Run: run, Tokenizer: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteScores(context.Background(), run, s); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(filepath.Join(run, schemas.ScoresFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"stand_in": true`, tok.Identity().TokenizerSHA256, "unofficial: " + schemas.StandInLabel} {
		if !strings.Contains(strings.ReplaceAll(string(written), "\u0027", "'"), want) {
			t.Errorf("%s lacks %q", schemas.ScoresFile, want)
		}
	}
	_, truth := fixtureTruth(t)
	ref, err := ReadReferenceEvents(t.Context(), filepath.Join(fixtureDir(t), archive.EventsFile), truth)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, r := range ref.Completed {
		n, err := tok.CountOSL(r)
		if err != nil {
			t.Fatal(err)
		}
		if r.Reasoning == "" && len(r.ToolCalls) == 0 && n != len(tok.Encode(r.Content, false)) {
			t.Errorf("plain response %q: %d tokens, text has %d", r.Content, n, len(tok.Encode(r.Content, false)))
		}
		total += n
	}
	// Qwen3's tokenizer stands in for Qwen3.6's: exact counts, unofficial.
	if s.OSL == nil || !s.OSL.Unofficial || s.OSL.Tokenizer == nil || !s.OSL.Tokenizer.StandIn || s.OSL.Total != int64(total) || s.OSL.Turns != len(ref.Completed) ||
		s.OSL.Source != "tokenizer:"+tok.Name() {
		t.Errorf("osl %+v, want total %d over %d", s.OSL, total, len(ref.Completed))
	}
	// Per-turn OSL is carried to the scored turns that completed.
	for _, p := range s.PerTurn {
		if (p.OSL != nil) == p.Missing {
			t.Errorf("%s turn %d: osl %v missing %v", p.ConversationID, p.Turn, p.OSL, p.Missing)
		}
	}
}

// TestReferenceSummaryOSL: without a tokenizer, a reference run's OSL comes from
// its result_summary.json (the reference's own full-run figure), noted as such.
func TestReferenceSummaryOSL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(fixtureDir(t))); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "performance"), 0o755)
	os.WriteFile(filepath.Join(dir, "performance", ReferenceSummaryFile),
		[]byte(`{"n_samples_completed": 13, "output_sequence_lengths_full_run": {"total": 4810, "avg": 370.0}}`), 0o644)
	s, err := ScoreRun(context.Background(), Options{Run: dir})
	if err != nil {
		t.Fatal(err)
	}
	if s.OSL == nil || s.OSL.Mean != 370 || s.OSL.Source != OSLSourceSummary || s.OSL.Unofficial || s.OSL.Turns != 13 {
		t.Fatalf("osl %+v", s.OSL)
	}
	if g := s.Verdict.Gates[1]; !g.Pass || !strings.Contains(g.Note, "result_summary") {
		t.Errorf("gate %+v", g)
	}
}

// BenchmarkReadReferenceEvents reads an event log whose issued events carry
// 100 KB prompts, as the reference writes them.
func BenchmarkReadReferenceEvents(b *testing.B) {
	truth := NewTruth(specRunDataset(b))
	prompt, _ := json.Marshal(strings.Repeat("def f(x):\n    return x  # a \"quoted\" line\n", 2500))
	var buf bytes.Buffer
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&buf, `{"event_type":"sample.issued","timestamp_ns":%d,"sample_uuid":"u%d","conversation_id":"code1__repeat_%d","turn":1,"data":["PromptData",null,null,[{"role":"user","content":%s}],null,null,null,null]}`+"\n", i, i, i+1, prompt)
		fmt.Fprintf(&buf, `{"event_type":"sample.complete","timestamp_ns":%d,"sample_uuid":"u%d","conversation_id":"code1__repeat_%d","turn":1,"data":["TextModelOutput",["ok"],null,[[{"index":0,"id":"c","type":"function","function":{"name":"bash","arguments":"{\"command\":\"python -m pytest\"}"}}]]]}`+"\n", i, i, i+1)
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		run, err := readReferenceEvents(context.Background(), bytes.NewReader(data), truth)
		if err != nil || len(run.Attempts) != 2000 {
			b.Fatal(err, len(run.Attempts))
		}
	}
}
