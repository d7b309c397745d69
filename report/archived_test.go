package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/agentrace/agentrace/score/rulesets"
)

// submissionTree is the testdata/submission-tree fixture.
func submissionTree(t testing.TB) string {
	return filepath.Join(testenv.RepoRoot(t), "testdata", "submission-tree")
}

// reportSubmissionTree reports testdata/submission-tree (no tokenizer) into a
// temporary folder and returns the report and that folder.
func reportSubmissionTree(t *testing.T) (*Report, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "rep")
	r, err := Build(context.Background(), Options{Out: out, Runs: []string{submissionTree(t)}})
	if err != nil {
		t.Fatal(err)
	}
	return r, out
}

// TestReportSubmissionTree draws the submission tree fixture (8 points, both
// domains, C_max 1024 declared, SWE-bench published at one point per mandatory
// region): the points come from their event logs (the one without is read from its
// published files), the region form is named, and the curve's SWE-bench gate is
// the mean of 4 (0.6975 >= 0.69 with the ultra-low point at 0.66). Lowering that
// point's result to 0.60 brings the mean to 0.6825: the curve fails.
func TestReportSubmissionTree(t *testing.T) {
	r, out := reportSubmissionTree(t)
	if len(r.Systems) != 1 {
		t.Fatalf("%d systems", len(r.Systems))
	}
	s := r.Systems[0]
	if len(s.Points) != 8 || s.CMax != 1024 || !strings.Contains(s.CMaxSource, "declared") || s.RegionForm != rulesets.RegionsCMin ||
		s.Regions == nil || s.Regions.Low.String() != "33-42" {
		t.Fatalf("system %s: %d points, C_max %d (%s), form %s, regions %+v", s.Name, len(s.Points), s.CMax, s.CMaxSource, s.RegionForm, s.Regions)
	}
	for _, p := range s.Points {
		if p.Kind != score.KindSubmission {
			t.Errorf("c=%d kind %q", p.Concurrency, p.Kind)
		}
		if p.Concurrency == 200 {
			if !strings.Contains(p.LogNote, "no event log") {
				t.Errorf("c=200 note %q", p.LogNote)
			}
			continue
		}
		if p.Issued == 0 || !p.TTFTP90Ms.Valid() || p.GatesPass == nil {
			t.Errorf("c=%d: issued %d, TTFT P90 %v, gates %v", p.Concurrency, p.Issued, p.TTFTP90Ms, p.GatesPass)
		}
		// Reference events carry no usage and no tokenizer was given: no output token
		// was counted, so the output rates are not re-derived: they are the published
		// ones, labelled as published (never 0 from uncounted tokens).
		if as := strings.Join(p.AsPublished, ","); p.MissingOSL == 0 || !strings.Contains(as, "system_tps") ||
			!strings.Contains(as, "e2e_avg_interactivity") || !strings.Contains(as, "tps_per_user") || !(p.SystemTPS > 0) {
			t.Errorf("c=%d without token counts (%d turns missing OSL): system_tps %v, e2e_avg_interactivity %v, tps_per_user %v, as published %v",
				p.Concurrency, p.MissingOSL, p.SystemTPS, p.E2EAvgInteractivity, p.TPSPerUser, p.AsPublished)
		}
		for name, d := range p.Domains {
			if d.Completed > 0 && d.E2EAvgInteractivity.Valid() {
				t.Errorf("c=%d domain %s: e2e_avg_interactivity %v without token counts; want null", p.Concurrency, name, d.E2EAvgInteractivity)
			}
		}
		if b, err := json.Marshal(NewPointJSON(p)); err != nil || !bytes.Contains(b, []byte(`"as_published":["e2e_avg_interactivity","system_tps"`)) {
			t.Errorf("c=%d points.json element: %s (%v)", p.Concurrency, b, err)
		}
	}
	if g := s.SWEBench; g == nil || !g.Pass || g.Value < 0.6974 || g.Value > 0.6976 || s.SWEBenchMean.N != 4 {
		t.Errorf("SWE-bench curve gate %+v %+v", g, s.SWEBenchMean)
	}
	got := map[string]curve.Check{}
	for _, c := range s.Checks {
		got[c.Name] = c
	}
	for name, want := range map[string]string{
		"SWE-bench mean of the 4 regions (agentic-accuracy-swebench)": curve.CheckPass,
		"accuracy at the 4 mandatory bands (accuracy-coverage)":       curve.CheckPass,
		"a point in low_concurrency (low-concurrency-coverage)":       curve.CheckPass,
		"at least 7 points (point-count)":                             curve.CheckPass,
		"one model (config-consistency-model)":                        curve.CheckPass,
	} {
		if got[name].Status != want {
			t.Errorf("check %q = %+v, want %s", name, got[name], want)
		}
	}
	// The published summaries count failed turns as completed too, as the reference
	// client does (testdata/refruns/c004-faults): the checker's accounting rule
	// (completed + failed = issued) fails on every point with a failure.
	if c := got["metric consistency within 1% (metric-consistency-*)"]; c.Status != curve.CheckFail || !strings.Contains(c.Reason, "c=100: published summary: completed 12 + failed 6 != issued 12") {
		t.Errorf("metric consistency %+v", c)
	}
	md, _ := os.ReadFile(filepath.Join(out, SummaryFile))
	for _, want := range []string{"points placed by region form cmin-v1.0", "SWE-bench (curve): 0.6975 >= 0.69 pass (mean of 4 region results)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q", want)
		}
	}

	// The same tree with the ultra-low point's SWE-bench result at 0.60.
	bad := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(bad, os.DirFS(submissionTree(t))); err != nil {
		t.Fatal(err)
	}
	acc := filepath.Join(bad, "h200-sim", "qwen3_6-35b-a3b", "r32", "accuracy", "accuracy_results.json")
	b, _ := os.ReadFile(acc)
	b2 := strings.Replace(string(b), `"score": 0.66`, `"score": 0.6`, 1)
	if b2 == string(b) {
		t.Fatal("fixture changed: no 0.66 SWE-bench score at r32")
	}
	os.WriteFile(acc, []byte(b2), 0o644)
	r, err := Build(context.Background(), Options{Out: filepath.Join(t.TempDir(), "rep2"), Runs: []string{bad}})
	if err != nil {
		t.Fatal(err)
	}
	if g := r.Systems[0].SWEBench; g == nil || g.Pass || g.Value < 0.6824 || g.Value > 0.6826 {
		t.Errorf("tampered SWE-bench curve gate %+v", g)
	}
	if r.Verdict() {
		t.Error("the report passes a curve whose SWE-bench mean is below the threshold")
	}

	// The fixed-32 ruleset form places the same points differently (low 33-42 is the
	// same at C_min 32 here) and says so.
	r, err = Build(context.Background(), Options{Out: filepath.Join(t.TempDir(), "rep3"), Runs: []string{submissionTree(t)}, Ruleset: "readme-2026-08-qwen3.6"})
	if err != nil || r.Systems[0].RegionForm != rulesets.RegionsFixed32 {
		t.Errorf("v0.7 form: %v %+v", err, r)
	}
}
