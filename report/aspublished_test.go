package report

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/score/curve"
)

// publishedField reads one number of a point's published summary.
func publishedField(t *testing.T, p *curve.Point, field string) float64 {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal(p.PublishedSummary, &s); err != nil {
		t.Fatal(err)
	}
	f, ok := s[field].(float64)
	if !ok {
		t.Fatalf("c=%d: no published %s", p.Concurrency, field)
	}
	return f
}

// TestPublishedFiguresWithoutTokenizer reports the submission tree without a
// tokenizer: nothing can count output tokens, so each point shows its published
// system_tps, interactivity and tps_per_user (and its TPOT percentiles) labelled
// "as published", and the Pareto curve is drawn from them (8 points, not an
// empty plot).
func TestPublishedFiguresWithoutTokenizer(t *testing.T) {
	r, out := reportSubmissionTree(t)
	s := r.Systems[0]
	for _, p := range s.Points {
		for _, f := range []string{"system_tps", "e2e_avg_interactivity", "tps_per_user"} {
			if !strings.Contains(strings.Join(p.AsPublished, ","), f) {
				t.Errorf("c=%d: %s not labelled as published (%v)", p.Concurrency, f, p.AsPublished)
			}
		}
		if got, want := float64(p.SystemTPS), publishedField(t, p, "system_tps"); got != want {
			t.Errorf("c=%d: system_tps %v, published %v", p.Concurrency, got, want)
		}
		if got, want := float64(p.E2EAvgInteractivity), publishedField(t, p, "e2e_avg_interactivity"); got != want {
			t.Errorf("c=%d: e2e_avg_interactivity %v, published %v", p.Concurrency, got, want)
		}
	}
	if n := len(stepXY(s.Points)); n != len(s.Points) {
		t.Errorf("the Pareto curve draws %d of %d points", n, len(s.Points))
	}
	md, _ := os.ReadFile(filepath.Join(out, SummaryFile))
	if !strings.Contains(string(md), "(as published)") || !strings.Contains(string(md), "as published (not re-derived): e2e_avg_interactivity") {
		t.Errorf("summary.md does not label the published figures")
	}
	var pts []map[string]any
	b, _ := os.ReadFile(filepath.Join(out, PointsFile))
	if err := json.Unmarshal(b, &pts); err != nil || len(pts) != 8 || pts[0]["system_tps"] == nil || pts[0]["as_published"] == nil {
		t.Errorf("points.json: %v %v", err, pts[0]["system_tps"])
	}
}

// TestPublishedFiguresBesideRederived reports the submission tree with the
// reference tokenizer, r64's published output tokens total (so its system_tps)
// raised by half: every figure
// is re-derived, none is labelled as published, and r64's system_tps (more than
// 1% from the published one) is shown beside its published value.
func TestPublishedFiguresBesideRederived(t *testing.T) {
	tok := testenv.Tokenizer(t)
	var raised float64
	tree := editedTree(t, func(doc map[string]any) {
		// The checker takes system_tps from the totals: raise the output tokens
		// total by half (and the stored field with it, so the summary agrees
		// with itself).
		osl := doc["output_sequence_lengths"].(map[string]any)
		osl["total"] = math.Trunc(osl["total"].(float64) * 1.5)
		raised = osl["total"].(float64) / (doc["duration_ns"].(float64) / 1e9)
		doc["system_tps"] = raised
	})
	out := filepath.Join(t.TempDir(), "rep")
	r, err := Build(context.Background(), Options{Out: out, Runs: []string{tree}, TokenizerDir: tok})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Systems[0].Points {
		if p.Concurrency == 200 {
			continue // ships no event log: its figures are as published
		}
		if len(p.AsPublished) != 0 {
			t.Errorf("c=%d: as published with a tokenizer: %v", p.Concurrency, p.AsPublished)
		}
		pub, differs := p.PublishedDiffers["system_tps"]
		if differs != (p.Concurrency == 64) || (differs && pub != raised) {
			t.Errorf("c=%d: published_differs %v (system_tps %v)", p.Concurrency, p.PublishedDiffers, p.SystemTPS)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, SummaryFile))
	if !strings.Contains(string(md), "(published ") {
		t.Error("summary.md does not show the published system_tps beside the re-derived one")
	}
}

// TestPublishedParetoOfReferenceSweep reports a sweep of reference client run
// folders (testdata/reference-runfolder at three concurrencies, each with its own
// published totals, hence system_tps and interactivity) without a tokenizer: the events carry no
// token counts, so the Pareto curve is the published figures, one point per run.
func TestPublishedParetoOfReferenceSweep(t *testing.T) {
	src := filepath.Join(testenv.RepoRoot(t), "testdata", "reference-runfolder")
	sweep := filepath.Join(t.TempDir(), "sweep")
	want := map[int][2]float64{8: {400, 60}, 16: {700, 45}, 64: {900, 20}}
	for c, fig := range want {
		dir := filepath.Join(sweep, "c"+itoa(c))
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, "config.yaml")
		b, _ := os.ReadFile(cfg)
		if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), "target_concurrency: 64", "target_concurrency: "+itoa(c), 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		sum := filepath.Join(dir, "performance", "result_summary.json")
		b, _ = os.ReadFile(sum)
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		// The figures as the checker takes them: from the summary's totals (over
		// 10 s), its own fields agreeing.
		doc["duration_ns"] = 10e9
		doc["output_sequence_lengths"].(map[string]any)["total"] = fig[0] * 10
		doc["output_tokens_per_turn_total"], doc["e2e_turn_time_seconds_total"] = fig[1]*10, 10
		doc["system_tps"], doc["e2e_avg_interactivity"] = fig[0], fig[1]
		doc["run_config"].(map[string]any)["load_pattern"].(map[string]any)["target_concurrency"] = c
		b, _ = json.Marshal(doc)
		if err := os.WriteFile(sum, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Build(context.Background(), Options{Out: filepath.Join(t.TempDir(), "rep"), Runs: []string{sweep}})
	if err != nil {
		t.Fatal(err)
	}
	pts := r.Systems[0].Points
	if len(pts) != 3 {
		t.Fatalf("%d points", len(pts))
	}
	for _, p := range pts {
		fig := want[p.Concurrency]
		if float64(p.SystemTPS) != fig[0] || float64(p.E2EAvgInteractivity) != fig[1] || !strings.Contains(strings.Join(p.AsPublished, ","), "system_tps") {
			t.Errorf("c=%d: system_tps %v, interactivity %v, as published %v; want %v", p.Concurrency, p.SystemTPS, p.E2EAvgInteractivity, p.AsPublished, fig)
		}
	}
	xy := stepXY(pts)
	if len(xy) != 3 || xy[0].X != 20 || xy[2].Y != 400 {
		t.Errorf("Pareto points %v", xy)
	}
	found := false
	for _, f := range r.Figures {
		if f.Name == "pareto" {
			found = true
			if !strings.Contains(f.Caption, "As published (the result summary's figures, not re-derived: they need the reference tokenizer): c=") {
				t.Errorf("the Pareto caption does not say its points are as published: %s", f.Caption)
			}
		}
	}
	if !found {
		t.Error("no Pareto figure")
	}
}

// TestPublishedFiguresAreTheCheckers reports the submission tree without a
// tokenizer, r64's own system_tps raised by half and its own
// e2e_avg_interactivity doubled, its totals as they were: the figures shown as
// published are the submission checker's, derived from the totals
// (int(output_sequence_lengths.total) over duration_ns, output_tokens_per_turn_total
// over e2e_turn_time_seconds_total), and the metric consistency check fails with
// the checker's two errors (metric-consistency-system-tps,
// agentic-metric-consistency).
func TestPublishedFiguresAreTheCheckers(t *testing.T) {
	var wantTPS, wantInter float64
	tree := editedTree(t, func(doc map[string]any) {
		wantTPS = math.Trunc(doc["output_sequence_lengths"].(map[string]any)["total"].(float64)) / (doc["duration_ns"].(float64) / 1e9)
		wantInter = doc["output_tokens_per_turn_total"].(float64) / doc["e2e_turn_time_seconds_total"].(float64)
		doc["system_tps"] = doc["system_tps"].(float64) * 1.5
		doc["e2e_avg_interactivity"] = doc["e2e_avg_interactivity"].(float64) * 2
	})
	r, err := Build(context.Background(), Options{Out: filepath.Join(t.TempDir(), "rep"), Runs: []string{tree}})
	if err != nil {
		t.Fatal(err)
	}
	var p *curve.Point
	for _, q := range r.Systems[0].Points {
		if q.Concurrency == 64 {
			p = q
		}
	}
	if p == nil {
		t.Fatal("no point c=64")
	}
	if float64(p.SystemTPS) != wantTPS || float64(p.E2EAvgInteractivity) != wantInter || !p.IsAsPublished("system_tps") || !p.IsAsPublished("e2e_avg_interactivity") {
		t.Errorf("c=64: system_tps %v (want %v), interactivity %v (want %v), as published %v", p.SystemTPS, wantTPS, p.E2EAvgInteractivity, wantInter, p.AsPublished)
	}
	found := false
	for _, ch := range r.Systems[0].Checks {
		if !strings.Contains(ch.Name, "metric-consistency-*") {
			continue
		}
		found = true
		if ch.Status != curve.CheckFail || !strings.Contains(ch.Reason, "c=64: published summary: stored system_tps") ||
			!strings.Contains(ch.Reason, "(metric-consistency-system-tps)") || !strings.Contains(ch.Reason, "(agentic-metric-consistency)") {
			t.Errorf("metric consistency check %s: %s", ch.Status, ch.Reason)
		}
	}
	if !found {
		t.Error("no metric consistency check")
	}
}

// editedTree copies the submission tree and edits r64's result summary: edit
// gets the decoded summary and changes it in place.
func editedTree(t *testing.T, edit func(doc map[string]any)) string {
	t.Helper()
	tree := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(tree, os.DirFS(submissionTree(t))); err != nil {
		t.Fatal(err)
	}
	sum := filepath.Join(tree, "h200-sim", "qwen3_6-35b-a3b", "r64", "mlperf_endpoints_log_summary.json")
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	b, _ = json.Marshal(doc)
	if err := os.WriteFile(sum, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return tree
}
