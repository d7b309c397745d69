package synth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/tokens"
)

// flatRow is a flat JSONL row as the reference loader reads it.
type flatRow struct {
	Type           string             `json:"_type"`
	ConversationID *string            `json:"conversation_id"`
	Turn           json.Number        `json:"turn"`
	Role           string             `json:"role"`
	Content        *string            `json:"content"`
	System         *string            `json:"system"`
	Tools          json.RawMessage    `json:"tools"`
	Reasoning      *string            `json:"reasoning_content"`
	ToolCalls      []schemas.ToolCall `json:"tool_calls"`
	ToolResults    []struct {
		ToolCallID string  `json:"tool_call_id"`
		Content    *string `json:"content"`
	} `json:"tool_results"`
	IntentCodes []string `json:"intent_codes"`
	Delay       *float64 `json:"delay_seconds"`
}

// conv is one parsed conversation.
type conv struct {
	id   string
	rows []flatRow
}

func (c conv) workflow() bool { return workflowID.MatchString(c.id) }

func (c conv) clientTurns() int {
	n := 0
	for _, r := range c.rows {
		if r.Role != "assistant" {
			n++
		}
	}
	return n
}

var workflowID = regexp.MustCompile(`^sim_\d+$`)

func generate(t testing.TB, o Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := Generate(context.Background(), &b, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// parse reads flat JSONL and checks every rule of spec §1 the reference loader
// enforces, plus the ones it does not (tool_call_id answers a call of the preceding
// assistant row; ids unique).
// With strict, it also wants what the generator promises: tools on every client row
// and a positive delay on every tool row.
func parse(t testing.TB, data []byte, strict bool) []conv {
	t.Helper()
	var convs []conv
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		var r flatRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		if r.Type == "dataset_metadata" {
			if line != 1 {
				t.Errorf("line %d: metadata record not first", line)
			}
			continue
		}
		if r.ConversationID == nil || *r.ConversationID == "" || *r.ConversationID == "nan" {
			t.Fatalf("line %d: bad conversation_id", line)
		}
		id := *r.ConversationID
		for _, ch := range id {
			if ch < 32 || ch > 126 {
				t.Fatalf("line %d: id %q has a non-printable character", line, id)
			}
		}
		if len(convs) == 0 || convs[len(convs)-1].id != id {
			if seen[id] {
				t.Fatalf("line %d: conversation %q not contiguous or duplicated", line, id)
			}
			seen[id] = true
			convs = append(convs, conv{id: id})
		}
		c := &convs[len(convs)-1]
		turn, err := r.Turn.Int64()
		if err != nil || int(turn) != len(c.rows)+1 {
			t.Fatalf("line %d: conversation %q: turn %q, want %d", line, id, r.Turn, len(c.rows)+1)
		}
		var prev *flatRow
		if len(c.rows) > 0 {
			prev = &c.rows[len(c.rows)-1]
		}
		where := fmt.Sprintf("line %d (%s turn %d)", line, id, turn)
		switch r.Role {
		case "user":
			if r.Content == nil || *r.Content == "" {
				t.Fatalf("%s: user row without content", where)
			}
			if prev != nil && (prev.Role != "assistant" || len(prev.ToolCalls) > 0) {
				t.Fatalf("%s: user row after %s row with %d tool calls", where, prev.Role, len(prev.ToolCalls))
			}
			if strict && len(r.Tools) == 0 {
				t.Fatalf("%s: client row without tools", where)
			}
		case "assistant":
			if prev == nil || prev.Role == "assistant" {
				t.Fatalf("%s: assistant row not after a client row", where)
			}
			if (r.Content == nil || *r.Content == "") && len(r.ToolCalls) == 0 {
				t.Fatalf("%s: assistant row with neither content nor tool calls", where)
			}
			for _, tc := range r.ToolCalls {
				var args map[string]any
				if tc.ID == "" || tc.Type != "function" || tc.Function.Name == "" || json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil {
					t.Fatalf("%s: bad tool call %+v", where, tc)
				}
			}
		case "tool":
			if prev == nil || prev.Role != "assistant" || len(prev.ToolCalls) != len(r.ToolResults) || len(r.ToolResults) == 0 {
				t.Fatalf("%s: tool row does not answer the previous assistant row", where)
			}
			for i, res := range r.ToolResults {
				if res.ToolCallID != prev.ToolCalls[i].ID || res.Content == nil {
					t.Fatalf("%s: tool result %d answers %q, want %q", where, i, res.ToolCallID, prev.ToolCalls[i].ID)
				}
			}
			if strict && (r.Delay == nil || *r.Delay <= 0 || len(r.Tools) == 0) {
				t.Fatalf("%s: tool row without a positive delay or tools", where)
			}
		default:
			t.Fatalf("%s: role %q", where, r.Role)
		}
		if (turn == 1) != (r.System != nil) {
			t.Fatalf("%s: system prompt must be on the first row only", where)
		}
		c.rows = append(c.rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return convs
}

func TestDeterministic(t *testing.T) {
	a := generate(t, Options{Scale: 0.05, Seed: 7})
	b := generate(t, Options{Scale: 0.05, Seed: 7})
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	c := generate(t, Options{Scale: 0.05, Seed: 8})
	if bytes.Equal(a, c) {
		t.Fatal("different seeds give the same output")
	}
}

func TestScale(t *testing.T) {
	for _, tc := range []struct {
		scale            float64
		coding, workflow int
	}{
		{1, 113, 500},
		{0.5, 57, 250},
		{0.1, 11, 50},
		{0.01, 1, 5},
		{0.0001, 1, 1},
		{2, 226, 1000},
	} {
		pl, err := NewPlan(Options{Scale: tc.scale, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(pl.CodingTurns) != tc.coding || len(pl.WorkflowTurns) != tc.workflow {
			t.Errorf("scale %v: %d coding, %d workflow; want %d, %d", tc.scale, len(pl.CodingTurns), len(pl.WorkflowTurns), tc.coding, tc.workflow)
		}
		wantC := 15981 * float64(tc.coding) / 113
		wantW := 4316 * float64(tc.workflow) / 500
		if got := sum(pl.CodingTurns); math.Abs(float64(got)-wantC) > 1 {
			t.Errorf("scale %v: %d coding client turns, want %.0f", tc.scale, got, wantC)
		}
		if got := sum(pl.WorkflowTurns); math.Abs(float64(got)-wantW) > 1 {
			t.Errorf("scale %v: %d workflow client turns, want %.0f", tc.scale, got, wantW)
		}
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1), 1000} {
		if _, err := NewPlan(Options{Scale: bad}); err == nil {
			t.Errorf("scale %v accepted", bad)
		}
	}
	if _, err := NewPlan(Options{Scale: 1, Shape: "nope"}); err == nil {
		t.Error("unknown shape accepted")
	}
	pl, err := NewPlan(Options{Scale: 1, CodingScale: 0.02, WorkflowScale: 0.1})
	if err != nil || len(pl.CodingTurns) != 2 || len(pl.WorkflowTurns) != 50 {
		t.Errorf("per-domain scales: %d coding, %d workflow, %v", len(pl.CodingTurns), len(pl.WorkflowTurns), err)
	}
	pl, err = NewPlan(Options{Scale: 1, Domains: []string{"workflow"}})
	if err != nil || len(pl.CodingTurns) != 0 || len(pl.WorkflowTurns) != 500 {
		t.Errorf("--domain workflow: %d coding, %d workflow, %v", len(pl.CodingTurns), len(pl.WorkflowTurns), err)
	}
}

// A conversation's content depends only on the seed and its index, not on the
// scale: the first coding conversation of scale 0.02 and 0.05 start the same way.
func TestConversationStreamsIndependent(t *testing.T) {
	a := parse(t, generate(t, Options{Scale: 0.02, Seed: 3}), true)
	b := parse(t, generate(t, Options{Scale: 0.05, Seed: 3}), true)
	if a[0].id != b[0].id || *a[0].rows[0].Content != *b[0].rows[0].Content {
		t.Errorf("first conversation differs across scales: %q vs %q", a[0].id, b[0].id)
	}
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// lower is the rules' "lower" percentile.
func lower[T int | float64](xs []T, p float64) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(p/100*float64(len(s)-1))]
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

var scaleOne = sync.OnceValues(func() ([]byte, error) {
	var b bytes.Buffer
	_, err := Generate(context.Background(), &b, Options{Scale: 1, Seed: 1})
	return b.Bytes(), err
})

func scaleOneData(t *testing.T) []byte {
	t.Helper()
	data, err := scaleOne()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// scaleOneParsed holds the parsed scale-1 output, shared by the tests that read it.
var scaleOneParsed struct {
	sync.Mutex
	convs []conv
}

func scaleOneConvs(t *testing.T) []conv {
	t.Helper()
	scaleOneParsed.Lock()
	defer scaleOneParsed.Unlock()
	if scaleOneParsed.convs == nil {
		scaleOneParsed.convs = parse(t, scaleOneData(t), true)
	}
	return scaleOneParsed.convs
}

// TestPublishedShape checks a scale-1 output against the published dataset table:
// trajectories and client turns per domain within 10%, and each domain's turn-count
// shape (coding: dozens to hundreds per trajectory; workflow: about 8 to 9).
func TestPublishedShape(t *testing.T) {
	convs := scaleOneConvs(t)
	var coding, workflow []int
	cmds := map[string]int{}
	for _, c := range convs {
		if c.workflow() {
			workflow = append(workflow, c.clientTurns())
			checkWorkflow(t, c)
			continue
		}
		coding = append(coding, c.clientTurns())
		for _, r := range c.rows {
			for _, tc := range r.ToolCalls {
				var a struct{ Command string }
				_ = json.Unmarshal([]byte(tc.Function.Arguments), &a)
				cmds[commandClass(a.Command)]++
			}
		}
	}
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"coding trajectories", float64(len(coding)), 113},
		{"workflow trajectories", float64(len(workflow)), 500},
		{"coding client turns", float64(sum(coding)), 15981},
		{"workflow client turns", float64(sum(workflow)), 4316},
		{"coding mean turns per trajectory", float64(sum(coding)) / float64(len(coding)), 15981.0 / 113},
		{"workflow mean turns per trajectory", float64(sum(workflow)) / float64(len(workflow)), 4316.0 / 500},
	} {
		if !within(tc.got, tc.want, 0.10) {
			t.Errorf("%s: %.1f, published %.1f (more than 10%% off)", tc.name, tc.got, tc.want)
		}
	}
	// Shapes: coding trajectories run from dozens to hundreds of turns with a right
	// skew; workflow ones cluster around 8-9.
	if lo, med, p90, hi := lower(coding, 0), lower(coding, 50), lower(coding, 90), lower(coding, 100); lo < 20 || hi < 200 || hi > 400 || med < 100 || med > 150 || p90 < 3*med/2 {
		t.Errorf("coding turns per trajectory: min %d, median %d, p90 %d, max %d; want dozens to hundreds, right-skewed", lo, med, p90, hi)
	}
	if lo, med, p90, hi := lower(workflow, 0), lower(workflow, 50), lower(workflow, 90), lower(workflow, 100); lo < 3 || med < 7 || med > 10 || p90 > 14 || hi > 24 {
		t.Errorf("workflow turns per trajectory: min %d, median %d, p90 %d, max %d; want about 8-9", lo, med, p90, hi)
	}
	// The command mix holds every kind of bash call a coding trajectory makes,
	// each 1% to 35% of the calls.
	total := 0
	for _, n := range cmds {
		total += n
	}
	for _, c := range []string{"find", "grep", "cat", "sed -n", "sed -i", "python -m pytest", "git diff", "heredoc", "python"} {
		if f := float64(cmds[c]) / float64(total); f < 0.01 || f > 0.35 {
			t.Errorf("command %q is %.1f%% of the coding calls", c, 100*f)
		}
	}
	t.Logf("coding: %d trajectories, %d client turns, per trajectory min/median/p90/max %d/%d/%d/%d",
		len(coding), sum(coding), lower(coding, 0), lower(coding, 50), lower(coding, 90), lower(coding, 100))
	t.Logf("workflow: %d trajectories, %d client turns, per trajectory min/median/p90/max %d/%d/%d/%d",
		len(workflow), sum(workflow), lower(workflow, 0), lower(workflow, 50), lower(workflow, 90), lower(workflow, 100))
}

func commandClass(cmd string) string {
	cmd = strings.TrimPrefix(cmd, "cd /testbed && ")
	switch {
	case strings.Contains(cmd, "<<'EOF'"):
		return "heredoc"
	case strings.HasPrefix(cmd, "python -m pytest"):
		return "python -m pytest"
	}
	for _, p := range []string{"sed -n", "sed -i", "git diff"} {
		if strings.HasPrefix(cmd, p) {
			return p
		}
	}
	switch {
	case strings.HasPrefix(cmd, "git "):
		return "git"
	}
	first, _, _ := strings.Cut(cmd, " ")
	return first
}

var intentStated = regexp.MustCompile(`(?i)\bintent:\s*(I\d{3})\b`)

func checkWorkflow(t *testing.T, c conv) {
	t.Helper()
	if !regexp.MustCompile(`^sim_\d{6}$`).MatchString(c.id) {
		t.Errorf("workflow id %q", c.id)
	}
	if c.rows[0].System == nil || len(*c.rows[0].System) < 4000 || len(c.rows[0].Tools) < 4000 {
		t.Errorf("%s: want a large shared system prompt and many tools", c.id)
	}
	for _, r := range c.rows {
		if r.Role != "assistant" {
			continue
		}
		if len(r.IntentCodes) == 0 {
			t.Fatalf("%s turn %s: assistant row without intent codes", c.id, r.Turn)
		}
		m := intentStated.FindStringSubmatch(*r.Reasoning)
		if m == nil || !slices.Contains(r.IntentCodes, m[1]) {
			t.Fatalf("%s turn %s: reasoning states %v, codes %v", c.id, r.Turn, m, r.IntentCodes)
		}
	}
}

// sampleShape returns the delays of the client rows and the sizes of the tool
// outputs of a flat file.
func sampleShape(convs []conv, domain func(string) bool) (delays, outputs []float64) {
	for _, c := range convs {
		if !domain(c.id) {
			continue
		}
		for _, r := range c.rows {
			if r.Role == "tool" && r.Delay != nil {
				delays = append(delays, *r.Delay)
				for _, res := range r.ToolResults {
					outputs = append(outputs, float64(len(*res.Content)))
				}
			}
		}
	}
	return delays, outputs
}

// TestFollowsSample compares the coding domain's delays and tool-output sizes with
// the real coding sample: the same median delay (about 0.06 s) with a tail to two
// minutes, and heavy-tailed output sizes of the same scale.
func TestFollowsSample(t *testing.T) {
	real, err := os.ReadFile(testenv.SampleFlat(t))
	if err != nil {
		t.Fatal(err)
	}
	isCoding := func(id string) bool { return !workflowID.MatchString(id) }
	rd, ro := sampleShape(parse(t, real, false), isCoding)
	sd, so := sampleShape(scaleOneConvs(t), isCoding)
	for _, tc := range []struct {
		name      string
		real, syn []float64
		p, tol    float64
	}{
		{"delay p50", rd, sd, 50, 0.15},
		{"delay p75", rd, sd, 75, 0.35},
		{"delay p90", rd, sd, 90, 0.35},
		{"delay p99", rd, sd, 99, 0.6},
		{"output bytes p50", ro, so, 50, 0.3},
		{"output bytes p90", ro, so, 90, 0.3},
		{"output bytes p99", ro, so, 99, 0.4},
	} {
		g, w := lower(tc.syn, tc.p), lower(tc.real, tc.p)
		if !within(g, w, tc.tol) {
			t.Errorf("%s: synthetic %.3f, sample %.3f (tolerance %.0f%%)", tc.name, g, w, 100*tc.tol)
		}
		t.Logf("%s: synthetic %.3f, sample %.3f", tc.name, g, w)
	}
	if m := lower(sd, 100); m < 60 || m > 120 {
		t.Errorf("longest delay %.1f s, want a tail to about two minutes", m)
	}
}

// TestOSLWindowJS counts the recorded assistant turns' output length with the
// independent JS Qwen3 tokenizer (every 5th turn of a scale-0.25 output, about
// 1,000 turns, since the JS tokenizer is slow) and checks the per-turn mean lands inside the Qwen window [355, 434],
// near the calibration target 395.
func TestOSLWindowJS(t *testing.T) {
	dir, node := testenv.JS(t)
	path := filepath.Join(t.TempDir(), "synth.jsonl")
	if err := os.WriteFile(path, generate(t, Options{Scale: 0.25, Seed: 1}), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(dir, "synth-osl.mjs"), path, "5")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("synth-osl.mjs: %v\n%s", err, out)
	}
	var got map[string]struct {
		N    int
		Mean float64
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("synth-osl.mjs output %q: %v", out, err)
	}
	all := got["all"]
	if all.N < 1000 || all.Mean < 355 || all.Mean > 434 || !within(all.Mean, 395, 0.05) {
		t.Errorf("mean OSL %.1f over %d turns; want inside [355, 434], near 395", all.Mean, all.N)
	}
	for _, d := range []string{"coding", "workflow"} {
		if m := got[d].Mean; m < 355 || m > 434 {
			t.Errorf("%s mean OSL %.1f outside [355, 434]", d, m)
		}
	}
	t.Logf("JS tokenizer: mean OSL %.1f over %d turns (coding %.1f, workflow %.1f)", all.Mean, all.N, got["coding"].Mean, got["workflow"].Mean)
}

// TestOSLWindow counts every recorded assistant turn of a scale-1 output with the
// Qwen3 tokenizer (package tokens, as score counts OSL) and checks that the per-turn
// mean lands inside the Qwen window [355, 434], within 2% of the calibration target
// 395, and inside the window for each domain.
func TestOSLWindow(t *testing.T) {
	tok, err := tokens.Load(context.Background(), testenv.Tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]float64{}
	ns := map[string]int{}
	for _, c := range scaleOneConvs(t) {
		dom := schemas.DomainCoding
		if c.workflow() {
			dom = schemas.DomainWorkflow
		}
		for _, r := range c.rows {
			if r.Role != "assistant" {
				continue
			}
			resp := schemas.Response{Reasoning: *r.Reasoning}
			if r.Content != nil {
				resp.Content = *r.Content
			}
			for i, tc := range r.ToolCalls {
				resp.ToolCalls = append(resp.ToolCalls, schemas.ToolCall{Index: i, ID: tc.ID, Type: tc.Type,
					Function: schemas.ToolFunction{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
			}
			n, err := tok.CountOSL(resp)
			if err != nil {
				t.Fatalf("%s turn %s: %v", c.id, r.Turn, err)
			}
			sums[dom] += float64(n)
			ns[dom]++
		}
	}
	mean := (sums[schemas.DomainCoding] + sums[schemas.DomainWorkflow]) / float64(ns[schemas.DomainCoding]+ns[schemas.DomainWorkflow])
	if mean < 355 || mean > 434 || !within(mean, 395, 0.02) {
		t.Errorf("mean OSL %.1f; want inside [355, 434], within 2%% of 395", mean)
	}
	for _, d := range []string{schemas.DomainCoding, schemas.DomainWorkflow} {
		if m := sums[d] / float64(ns[d]); m < 355 || m > 434 {
			t.Errorf("%s: mean OSL %.1f over %d turns, outside [355, 434]", d, m, ns[d])
		}
	}
	t.Logf("Qwen3 tokenizer: mean OSL %.1f over %d turns (coding %.1f over %d, workflow %.1f over %d)", mean,
		ns[schemas.DomainCoding]+ns[schemas.DomainWorkflow], sums[schemas.DomainCoding]/float64(ns[schemas.DomainCoding]),
		ns[schemas.DomainCoding], sums[schemas.DomainWorkflow]/float64(ns[schemas.DomainWorkflow]), ns[schemas.DomainWorkflow])
}

// BenchmarkGenerate measures generation speed (bytes/s of JSONL) at scale 0.1.
func BenchmarkGenerate(b *testing.B) {
	var n int64
	for b.Loop() {
		s, err := Generate(context.Background(), io.Discard, Options{Scale: 0.1, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		n = s.Bytes
	}
	b.SetBytes(n)
}

// The dataset_metadata record says the scales each domain was drawn at and the
// domains written, as the demo draws them (coding 0.01, workflow 0.02), not a
// scale nobody asked for.
func TestMetadataRecordsTheScales(t *testing.T) {
	const head = `{"_type":"dataset_metadata","generator":"agentrace synth","version":"` + schemas.ToolVersion + `","shape":"mlperf-agentic",`
	const tail = `"seed":3,"license":"synthetic traces generated by agentrace; no third-party content"}`
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"one scale", Options{Scale: 0.01}, `"scale":0.01,`},
		{"a scale per domain", Options{Scale: 1, CodingScale: 0.01, WorkflowScale: 0.02}, `"coding_scale":0.01,"workflow_scale":0.02,`},
		{"one domain overridden", Options{Scale: 0.02, CodingScale: 0.01}, `"coding_scale":0.01,"workflow_scale":0.02,`},
		{"equal overrides", Options{Scale: 1, CodingScale: 0.01, WorkflowScale: 0.01}, `"scale":0.01,`},
		{"workflow only", Options{Scale: 0.01, Domains: []string{schemas.DomainWorkflow}}, `"workflow_scale":0.01,"domains":["workflow"],`},
	} {
		tc.o.Seed = 3
		var b bytes.Buffer
		if _, err := Generate(context.Background(), &b, tc.o); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		first, _, _ := strings.Cut(b.String(), "\n")
		if want := head + tc.want + tail; first != want {
			t.Errorf("%s: metadata\n%s\nwant\n%s", tc.name, first, want)
		}
	}
}
