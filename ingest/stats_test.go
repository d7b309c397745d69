package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/tokens"
)

func TestStatsSample(t *testing.T) {
	d := ingestFiles(t, testenv.SampleFlat(t))
	rows := readRows(t, testenv.SampleFlat(t))
	// Independent figures from the raw rows.
	perConv := map[string]int{}
	var delay float64
	calls := 0
	for _, r := range rows {
		switch r["role"] {
		case "user", "tool":
			perConv[r["conversation_id"].(string)]++
			if v, ok := r["delay_seconds"].(float64); ok {
				delay += v
			}
		case "assistant":
			if c, ok := r["tool_calls"].([]any); ok {
				calls += len(c)
			}
		}
	}
	var counts []float64
	for _, n := range perConv {
		counts = append(counts, float64(n))
	}
	sort.Float64s(counts)
	st, err := ComputeStats(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	tot := st.Total
	if len(st.Domains) != 1 || st.Domains[0].Domain != "coding" || st.Domains[0].Trajectories != 20 {
		t.Errorf("domains %+v", st.Domains)
	}
	if tot.Trajectories != 20 || tot.ClientTurns != 1007 || tot.AssistantTurns != 1007 || tot.ToolCalls != calls {
		t.Errorf("total %+v; want 20, 1007, 1007, %d tool calls", tot, calls)
	}
	lower := func(p float64) float64 { return counts[int(math.Floor(p/100*float64(len(counts)-1)))] }
	if tp := tot.TurnsPerTrajectory; tp.Min != counts[0] || tp.Max != counts[len(counts)-1] || tp.Median != lower(50) || tp.P90 != lower(90) {
		t.Errorf("turns per trajectory %+v; sorted counts %v", tp, counts)
	}
	if math.Abs(tot.Delay.Total-delay) > 1e-9 || tot.Delay.N != 1007 {
		t.Errorf("delay %+v, want total %v", tot.Delay, delay)
	}
	var maxHist float64
	for ci := range d.Conversations {
		ts := d.ConversationTurns(ci)
		n := float64(len(d.RequestMessages(&ts[len(ts)-1], datasets.BodyOptions{})))
		maxHist = max(maxHist, n)
	}
	if tot.HistoryBytes.Max != maxHist || tot.SystemPrompts != 1 || tot.SharedPrefixBytes <= int64(len(d.Conversations[0].System)) || tot.ISL != nil {
		t.Errorf("history %+v (max want %v), system prompts %d, shared prefix %d", tot.HistoryBytes, maxHist, tot.SystemPrompts, tot.SharedPrefixBytes)
	}
	var text bytes.Buffer
	if err := WriteStats(context.Background(), &text, StatsOptions{Dataset: d.Dir}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"trajectories", "1007", "total delay (s)", "distinct system prompts", "shared prefix (bytes)", "tool calls"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("stats table lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := WriteStats(context.Background(), &js, StatsOptions{Dataset: d.Dir, JSON: true}); err != nil {
		t.Fatal(err)
	}
	var back Stats
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Total.ClientTurns != 1007 {
		t.Errorf("stats JSON: %v %+v", err, back.Total)
	}
}

// TestISL: the ISL counter receives each client turn's salted (repeat 1) messages
// and its tools; stats then report ISL per domain.
func TestISL(t *testing.T) {
	fixture := filepath.Join(testenv.RepoRoot(t), "testdata/ingest/rich.jsonl")
	out := filepath.Join(t.TempDir(), "ds")
	count := func(msgs, tools []byte) (int, error) { return len(msgs) + len(tools), nil }
	if _, err := Run(context.Background(), Options{Out: out, Inputs: []string{fixture}, isl: count, islName: "bytes"}); err != nil {
		t.Fatal(err)
	}
	d, err := datasets.Open(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if d.Manifest.Tokenizer != "bytes" {
		t.Errorf("manifest tokenizer %q", d.Manifest.Tokenizer)
	}
	for i := range d.Turns {
		tr := &d.Turns[i]
		want := len(d.RequestMessages(tr, datasets.BodyOptions{Salt: true, Repeat: 1})) + len(tr.Tools)
		if tr.ISL == nil || int(*tr.ISL) != want {
			t.Errorf("%s turn %d: ISL %v, want %d", tr.ConversationID, tr.Turn, tr.ISL, want)
		}
	}
	st, err := ComputeStats(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Domains) != 2 || st.Domains[0].ISL == nil || st.Domains[1].ISL == nil || st.Total.ISL.N != 5 {
		t.Errorf("ISL stats %+v", st.Domains)
	}
}

// TestISLTokenizer ingests with the real Qwen3 tokenizer (--tokenizer): each ISL is
// the tokenizer's count over the salted messages and tools, rendered with the
// default profile's chat_template_kwargs.
func TestISLTokenizer(t *testing.T) {
	dir := testenv.Tokenizer(t)
	// The rich fixture without its structured (list) user content, which the Qwen3
	// template does not render.
	src, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata/ingest/rich.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(string(src)), "\n") {
		if !strings.Contains(l, `"content": [`) {
			keep = append(keep, l)
		}
	}
	fixture := filepath.Join(t.TempDir(), "text-only.jsonl")
	if err := os.WriteFile(fixture, []byte(strings.Join(keep, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ds")
	if _, err := Run(context.Background(), Options{Out: out, Inputs: []string{fixture}, Tokenizer: dir}); err != nil {
		t.Fatal(err)
	}
	d, err := datasets.Open(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokens.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := datasets.LookupProfile(DefaultISLProfile)
	if d.Manifest.Tokenizer != tok.Name() {
		t.Errorf("manifest tokenizer %q, want %q", d.Manifest.Tokenizer, tok.Name())
	}
	for i := range d.Turns {
		tr := &d.Turns[i]
		var tools []byte
		if tr.Tools != "" {
			tools = []byte(tr.Tools)
		}
		want, err := tok.CountISL(d.RequestMessages(tr, datasets.BodyOptions{Salt: true, Repeat: 1}), tools, p.ChatTemplateKwargs)
		if err != nil {
			t.Fatal(err)
		}
		if tr.ISL == nil || int(*tr.ISL) != want || want < 10 {
			t.Errorf("%s turn %d: ISL %v, want %d", tr.ConversationID, tr.Turn, tr.ISL, want)
		}
	}
}

// TestISLIncremental: ingest's incremental ISL (one tokens.ISLCounter per
// conversation) gives exactly the counts of the naive way (CountISL of each
// turn's whole history, Options.naiveISL) on every client turn of the shared
// sample (flat and snapshot) and of synthetic traces of both domains.
func TestISLIncremental(t *testing.T) {
	dir := testenv.Tokenizer(t)
	synthetic := filepath.Join(t.TempDir(), "synth.jsonl")
	if _, err := synth.WriteFile(context.Background(), synthetic, synth.Options{CodingScale: 0.01, WorkflowScale: 0.02, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	inputs := map[string]func(testing.TB) string{
		"synthetic": func(testing.TB) string { return synthetic },
		"sample":    testenv.SampleFlat,
		"snapshot":  testenv.SampleSnapshot,
	}
	for name, path := range inputs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			input := path(t)
			isl := map[bool][]*int32{}
			for _, naive := range []bool{false, true} {
				out := filepath.Join(t.TempDir(), "ds")
				if _, err := Run(context.Background(), Options{Out: out, Inputs: []string{input}, Tokenizer: dir, naiveISL: naive}); err != nil {
					t.Fatal(err)
				}
				d, err := datasets.Open(context.Background(), out)
				if err != nil {
					t.Fatal(err)
				}
				for i := range d.Turns {
					isl[naive] = append(isl[naive], d.Turns[i].ISL)
				}
			}
			if len(isl[true]) != len(isl[false]) || len(isl[true]) == 0 {
				t.Fatalf("%d turns incremental, %d naive", len(isl[false]), len(isl[true]))
			}
			for i := range isl[true] {
				if isl[true][i] == nil || isl[false][i] == nil || *isl[true][i] != *isl[false][i] {
					t.Errorf("turn %d: incremental ISL %v, naive %v", i, islValue(isl[false][i]), islValue(isl[true][i]))
				}
			}
			t.Logf("%s: %d client turns, ISL equal", name, len(isl[true]))
		})
	}
}

func islValue(p *int32) any {
	if p == nil {
		return nil
	}
	return *p
}
