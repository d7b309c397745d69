package card

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/tokens"
)

func ingestFile(t testing.TB, file string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ds")
	if err := ingest.Files(context.Background(), dir, file); err != nil {
		t.Fatalf("ingest %s: %v", file, err)
	}
	return dir
}

func total(c *Card) Domain { return c.Domains[len(c.Domains)-1] }

func byName(c *Card, name string) (Domain, bool) {
	for _, d := range c.Domains {
		if d.Domain == name {
			return d, true
		}
	}
	return Domain{}, false
}

// rawCounts counts a flat JSONL file directly, as the counting rules say, without
// agentrace's ingest: the oracle of the counting tests.
type rawCounts struct {
	trajectories, coding, workflow                                    int
	rows, user, tool, toolResults, assistant, toolCalls, endsOnClient int
	delay                                                             float64
}

func countRaw(t *testing.T, path string) rawCounts {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rc rawCounts
	last := map[string]string{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	sim := regexp.MustCompile(`^sim_\d+$`)
	for sc.Scan() {
		var row struct {
			ID      string            `json:"conversation_id"`
			Role    string            `json:"role"`
			Results []json.RawMessage `json:"tool_results"`
			Calls   []json.RawMessage `json:"tool_calls"`
			Delay   float64           `json:"delay_seconds"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		if _, seen := last[row.ID]; !seen {
			order = append(order, row.ID)
		}
		last[row.ID] = row.Role
		rc.rows++
		switch row.Role {
		case "user":
			rc.user++
		case "tool":
			rc.tool++
			rc.toolResults += len(row.Results)
		case "assistant":
			rc.assistant++
			rc.toolCalls += len(row.Calls)
		}
		rc.delay += row.Delay
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range order {
		rc.trajectories++
		if sim.MatchString(id) {
			rc.workflow++
		} else {
			rc.coding++
		}
		if last[id] != "assistant" {
			rc.endsOnClient++
		}
	}
	return rc
}

func checkAgainstRaw(t *testing.T, c *Card, rc rawCounts) {
	t.Helper()
	tot := total(c)
	got := []int{tot.Trajectories, tot.Rows, tot.ClientTurns, tot.UserTurns, tot.ToolTurns, tot.ToolMessages, tot.AssistantTurns, tot.ToolCalls, tot.EndOnClientTurn}
	want := []int{rc.trajectories, rc.rows, rc.user + rc.tool, rc.user, rc.tool, rc.toolResults, rc.assistant, rc.toolCalls, rc.endsOnClient}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("trajectories, rows, client, user, tool, tool messages, assistant, tool calls, ending on a client turn:\n got %v\nwant %v", got, want)
	}
	cod, _ := byName(c, schemas.DomainCoding)
	wf, _ := byName(c, schemas.DomainWorkflow)
	if cod.Trajectories != rc.coding || wf.Trajectories != rc.workflow {
		t.Errorf("coding %d, workflow %d; want %d, %d", cod.Trajectories, wf.Trajectories, rc.coding, rc.workflow)
	}
	if d := tot.DelayTotal - rc.delay; d > 1e-6 || d < -1e-6 {
		t.Errorf("total delay %v, want %v", tot.DelayTotal, rc.delay)
	}
	if tot.Delay.N != tot.ClientTurns || tot.TurnsPerTrajectory.N != tot.Trajectories {
		t.Errorf("delay n %d, turns/trajectory n %d", tot.Delay.N, tot.TurnsPerTrajectory.N)
	}
}

// The counting rules on the shared sample, checked against the file itself.
func TestCardCountsSample(t *testing.T) {
	sample := testenv.SampleFlat(t)
	c, err := Build(context.Background(), Options{Dataset: ingestFile(t, sample)})
	if err != nil {
		t.Fatal(err)
	}
	rc := countRaw(t, sample)
	checkAgainstRaw(t, c, rc)
	// The sample's known figures (shared/data/README.md): 20 trajectories, 2014 rows,
	// 1007 client turns; every conversation alternates and ends on an answer.
	tot := total(c)
	if tot.Trajectories != 20 || tot.Rows != 2014 || tot.ClientTurns != 1007 || tot.AssistantTurns != 1007 || tot.EndOnClientTurn != 0 || tot.UserTurns != 20 {
		t.Errorf("sample: %+v", tot)
	}
	if len(c.Domains) != 2 || c.Domains[0].Domain != schemas.DomainCoding || c.Published.Matches {
		t.Errorf("domains %v, published match %v", len(c.Domains), c.Published.Matches)
	}
}

// writeShaped writes a flat JSONL file of `coding` coding and `workflow` workflow
// trajectories with exactly clientTurns client turns, of which `open` trajectories
// end on a tool row (no answer): assistant turns = clientTurns - open. Every
// assistant row but the last of a trajectory calls a tool, one tool row in seven
// answers two calls, and workflow answers carry intent codes.
func writeShaped(t *testing.T, path string, coding, workflow, codingTurns, workflowTurns, open int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	n := coding + workflow
	for i := range n {
		id := fmt.Sprintf("repo__task-%d", i)
		// each domain's client turns spread evenly over its trajectories
		k, in, total := i, coding, codingTurns
		if i >= coding {
			id = fmt.Sprintf("sim_%06d", i)
			k, in, total = i-coding, workflow, workflowTurns
		}
		turns := total / in
		if k < total%in {
			turns++
		}
		endsOpen := i >= n-open
		row := func(m map[string]any) {
			m["conversation_id"] = id
			b, _ := json.Marshal(m)
			w.Write(append(b, '\n'))
		}
		turn := 1
		row(map[string]any{"turn": turn, "role": "user", "content": "task " + id, "system": "sys", "delay_seconds": 0.5})
		for k := 1; k < turns; k++ {
			turn++
			calls := []map[string]any{{"id": fmt.Sprintf("c%d", k), "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command": "ls"}`}}}
			results := []map[string]any{{"tool_call_id": fmt.Sprintf("c%d", k), "content": "out"}}
			if k%7 == 0 {
				calls = append(calls, map[string]any{"id": fmt.Sprintf("d%d", k), "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command": "pwd"}`}})
				results = append(results, map[string]any{"tool_call_id": fmt.Sprintf("d%d", k), "content": "/"})
			}
			a := map[string]any{"turn": turn, "role": "assistant", "content": "step", "tool_calls": calls}
			if i >= coding {
				a["intent_codes"] = []string{"I001"}
			}
			row(a)
			turn++
			row(map[string]any{"turn": turn, "role": "tool", "tool_results": results, "delay_seconds": 0.25})
		}
		if !endsOpen {
			turn++
			a := map[string]any{"turn": turn, "role": "assistant", "content": "done"}
			if i >= coding {
				a["intent_codes"] = []string{"I002"}
			}
			row(a)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// A synthetic dataset shaped like the official one: the card's counting gives the
// published table's figures exactly (113 coding trajectories with 15,981 client
// turns, 500 workflow with 4,316) and says it matches.
func TestCardReproducesPublishedFigures(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shaped.jsonl")
	writeShaped(t, path, 113, 500, 15981, 4316, 7)
	c, err := Build(context.Background(), Options{Dataset: ingestFile(t, path)})
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstRaw(t, c, countRaw(t, path))
	tot := total(c)
	if tot.Trajectories != 613 || tot.ClientTurns != 20297 || tot.AssistantTurns != 20290 || tot.EndOnClientTurn != 7 {
		t.Errorf("%+v", tot)
	}
	if !c.Published.Matches || len(c.Published.Figures) != 6 {
		t.Errorf("published comparison %+v", c.Published)
	}
	// One workflow client turn more: the comparison names it.
	path2 := filepath.Join(t.TempDir(), "off.jsonl")
	writeShaped(t, path2, 113, 500, 15981, 4317, 7)
	c2, err := Build(context.Background(), Options{Dataset: ingestFile(t, path2)})
	if err != nil {
		t.Fatal(err)
	}
	var wrong []string
	for _, f := range c2.Published.Figures {
		if !f.Match {
			wrong = append(wrong, f.Name)
		}
	}
	if c2.Published.Matches || strings.Join(wrong, ",") != "client_turns,workflow_client_turns" {
		t.Errorf("off by one turn: mismatches %v", wrong)
	}
}

// Small hand-made traces with every counting case: a tool row with three results,
// a conversation ending on a user row and one on a tool row, ids that look like
// workflow ids but are not, known delays and a known percentile.
const handMade = `{"conversation_id": "sim_000001", "turn": 1, "role": "user", "content": "a", "system": "S1", "delay_seconds": 1}
{"conversation_id": "sim_000001", "turn": 2, "role": "assistant", "content": "b", "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}, {"id": "y", "type": "function", "function": {"name": "f", "arguments": "{}"}}, {"id": "z", "type": "function", "function": {"name": "f", "arguments": "{}"}}], "intent_codes": ["I001"]}
{"conversation_id": "sim_000001", "turn": 3, "role": "tool", "tool_results": [{"tool_call_id": "x", "content": "1"}, {"tool_call_id": "y", "content": "2"}, {"tool_call_id": "z", "content": "3"}], "delay_seconds": 2}
{"conversation_id": "sim_000001", "turn": 4, "role": "assistant", "content": "c", "intent_codes": ["I002"]}
{"conversation_id": "sim_000001", "turn": 5, "role": "user", "content": "bye", "delay_seconds": 3}
{"conversation_id": "sim_12a", "turn": 1, "role": "user", "content": "fix", "system": "S2"}
{"conversation_id": "sim_12a", "turn": 2, "role": "assistant", "content": "ok", "tool_calls": [{"id": "q", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]}
{"conversation_id": "sim_12a", "turn": 3, "role": "tool", "tool_results": [{"tool_call_id": "q", "content": "file"}], "delay_seconds": 4}
{"conversation_id": "sim_000002x", "turn": 1, "role": "user", "content": "hello", "system": "S2"}
{"conversation_id": "sim_000002x", "turn": 2, "role": "assistant", "content": "hi"}
`

type lenCounter struct{}

func (lenCounter) Name() string { return "len" }
func (lenCounter) CountOSL(r schemas.Response) (int, error) {
	n := len(r.Content) + len(r.Reasoning)
	for _, c := range r.ToolCalls {
		n += len(c.Function.Name) + len(c.Function.Arguments)
	}
	return n, nil
}

func TestCardHandMade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hand.jsonl")
	if err := os.WriteFile(path, []byte(handMade), 0o644); err != nil {
		t.Fatal(err)
	}
	ds := ingestFile(t, path)
	c, err := Build(context.Background(), Options{Dataset: ds, OSL: lenCounter{}, Now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstRaw(t, c, countRaw(t, path))
	wf, _ := byName(c, schemas.DomainWorkflow)
	cod, _ := byName(c, schemas.DomainCoding)
	if wf.Trajectories != 1 || wf.ClientTurns != 3 || wf.UserTurns != 2 || wf.ToolTurns != 1 || wf.ToolMessages != 3 ||
		wf.AssistantTurns != 2 || wf.EndOnClientTurn != 1 || wf.ToolCalls != 3 || wf.DelayTotal != 6 {
		t.Errorf("workflow %+v", wf)
	}
	if cod.Trajectories != 2 || cod.ClientTurns != 3 || cod.AssistantTurns != 2 || cod.EndOnClientTurn != 1 || cod.SystemPrompts != 1 {
		t.Errorf("coding %+v", cod)
	}
	// Delays of the 6 client turns: 1, 2, 3, 0, 4, 0 -> sorted 0 0 1 2 3 4; lower p50
	// is v[floor(0.5*5)] = v[2] = 1, p90 v[4] = 3.
	if d := total(c).Delay; d.N != 6 || d.Median != 1 || d.P90 != 3 || d.Max != 4 || d.Mean != 10.0/6 {
		t.Errorf("delays %+v", d)
	}
	// OSL by the counter: workflow answers "b"+3 calls of f{} (1+3*3=10) and "c" (1).
	if wf.OSL == nil || wf.OSL.N != 2 || wf.OSL.Min != 1 || wf.OSL.Max != 10 || c.Provenance.OSLTokenizer != "len" {
		t.Errorf("workflow OSL %+v", wf.OSL)
	}
	if c.Provenance.CardWrittenAt != "2026-11-30T12:00:00Z" || c.Dataset.ContentHash == "" || len(c.Provenance.Inputs) != 1 ||
		c.Provenance.Inputs[0].SHA256 == "" {
		t.Errorf("provenance %+v %+v", c.Provenance, c.Dataset)
	}
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "ISL was not counted") {
		t.Errorf("notes %v", c.Notes)
	}

	// Write it; then the output rules.
	out := filepath.Join(t.TempDir(), "card")
	o := WriteOptions{Out: out, Inputs: []string{ds}}
	if err := Write(context.Background(), c, o); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{MarkdownFile, JSONFile, "plots/isl_by_turn.png", "plots/isl_by_turn.svg", "plots/osl_histogram.png", "plots/osl_histogram.svg"} {
		st, err := os.Stat(filepath.Join(out, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, MarkdownFile))
	for _, want := range []string{"# Dataset card: ds", "| trajectories ending on a client turn | 1 | 1 | 2 |",
		"| client turns (user + tool rows) | 3 | 3 | 6 |", "![Request bytes by client turn", "## Counting rules", c.Dataset.ContentHash,
		c.Provenance.Inputs[0].SHA256} {
		if !strings.Contains(string(md), want) {
			t.Errorf("CARD.md lacks %q", want)
		}
	}
	var back Card
	js, _ := os.ReadFile(filepath.Join(out, JSONFile))
	if err := json.Unmarshal(js, &back); err != nil || back.Version != Version || len(back.Plots) != 2 || total(&back).ClientTurns != 6 {
		t.Errorf("card.json: %v %+v", err, back.Plots)
	}
	if err := Write(context.Background(), c, o); !errors.Is(err, outguard.ErrExists) {
		t.Errorf("second write without overwrite: %v", err)
	}
	o.Overwrite = true
	if err := Write(context.Background(), c, o); err != nil {
		t.Errorf("overwrite: %v", err)
	}
	if err := Write(context.Background(), c, WriteOptions{Out: filepath.Join(ds, "card"), Inputs: []string{ds}}); !errors.Is(err, outguard.ErrOverlap) {
		t.Errorf("card inside the dataset: %v", err)
	}
	if err := Write(context.Background(), c, WriteOptions{Out: ds, Overwrite: true, Inputs: []string{}}); !errors.Is(err, outguard.ErrNotOurs) {
		t.Errorf("card over a dataset: %v", err)
	}
}

// With the real tokenizer, the card's OSL of every recorded turn of the sample is
// the tokenizer's count of that turn as a response.
func TestCardOSLWithTokenizer(t *testing.T) {
	tok, err := tokens.Load(context.Background(), testenv.Tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	ds := ingestFile(t, testenv.SampleFlat(t))
	c, err := Build(context.Background(), Options{Dataset: ds, OSL: tok})
	if err != nil {
		t.Fatal(err)
	}
	cod, _ := byName(c, schemas.DomainCoding)
	if cod.OSL == nil || cod.OSL.N != 1007 || cod.OSL.Min <= 0 || cod.OSL.Mean < 50 || cod.OSL.Mean > 1000 {
		t.Fatalf("OSL %+v", cod.OSL)
	}
	// Cross-check with the independent JS Qwen3 tokenizer (testdata/js/synth-osl.mjs
	// renders the assistant part of the template by hand): same turns, same mean.
	dir, node := testenv.JS(t)
	cmd := exec.Command(node, filepath.Join(dir, "synth-osl.mjs"), testenv.SampleFlat(t), "1")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("synth-osl.mjs: %v", err)
	}
	var js map[string]struct {
		N    int
		Mean float64
	}
	if err := json.Unmarshal(out, &js); err != nil {
		t.Fatalf("synth-osl.mjs output %q: %v", out, err)
	}
	if js["coding"].N != cod.OSL.N || math.Abs(js["coding"].Mean-cod.OSL.Mean) > 1e-9 {
		t.Errorf("card OSL n %d mean %v; JS tokenizer n %d mean %v", cod.OSL.N, cod.OSL.Mean, js["coding"].N, js["coding"].Mean)
	}
	t.Logf("sample OSL of the recorded turns: mean %.2f (JS %.2f), p50 %.0f, p90 %.0f, max %.0f", cod.OSL.Mean, js["coding"].Mean, cod.OSL.Median, cod.OSL.P90, cod.OSL.Max)
}

func TestPublishedFigures(t *testing.T) {
	c := compare(nil)
	want := map[string]int{"trajectories": 613, "client_turns": 20297, "coding_trajectories": 113, "coding_client_turns": 15981,
		"workflow_trajectories": 500, "workflow_client_turns": 4316}
	if len(c.Figures) != len(want) || c.Source == "" || c.Matches {
		t.Fatalf("%+v", c)
	}
	for _, f := range c.Figures {
		if want[f.Name] != f.Published || f.Dataset != 0 {
			t.Errorf("%s = %d, want %d", f.Name, f.Published, want[f.Name])
		}
	}
}
