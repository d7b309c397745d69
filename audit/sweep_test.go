package audit

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/tour"
)

// TestAuditAgentraceSweep runs the demo (synthetic traces, the embedded sim, a
// two-point sweep, score, report and publish) and audits its sweep: the files
// publish wrote into each run folder (result_summary.json, accuracy_results.json,
// point.yaml) and the sweep's sweep_summary.csv agree with what the audit
// re-derives from the turn logs and the dataset; a tampered figure is caught.
func TestAuditAgentraceSweep(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	if _, err := tour.Run(context.Background(), tour.Options{Out: out, CodingScale: 0.01, WorkflowScale: 0.01,
		Concurrencies: []int{1, 4}, Speedup: 400, Fidelity: 0.9, Seed: 3, Progress: io.Discard}); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(out, "runs")
	for _, f := range []string{"c1/performance/result_summary.json", "c4/accuracy/accuracy_results.json", "c4/point.yaml", "sweep_summary.csv"} {
		if _, err := os.Stat(filepath.Join(runs, f)); err != nil {
			t.Errorf("the demo's sweep lacks %s: %v", f, err)
		}
	}
	res := runAudit(t, Options{Inputs: []string{runs}})
	if bad := failedFields(res); len(bad) > 0 {
		t.Fatalf("the demo's own sweep fails its audit on %v", bad)
	}
	expectAgree(t, res, 2, "n_samples_completed", "system_tps", "ttft.percentiles.90.0", "tpot.percentiles.90.0",
		"output_sequence_lengths_full_run.output_sequence_lengths.avg", "accuracy.performance.score", "scores.score",
		"point.region", "sweep_summary.system_tps", "sweep_summary.inline_accuracy", "sweep_summary.curve_verdict")
	if r := rowsOf(res, "", "curve.verdict"); len(r) != 1 || r[0].Status != Agree || r[0].PublishedText != "fail" {
		t.Errorf("curve verdict rows: %+v", r)
	}
	sum := filepath.Join(runs, "c4", "performance", "result_summary.json")
	editJSON(t, sum, func(m map[string]any) { scale(m, 1.1, "ttft", "percentiles", "90.0") })
	res = runAudit(t, Options{Inputs: []string{runs}})
	if got := failedFields(res); strings.Join(got, ",") != "ttft.percentiles.90.0" {
		t.Errorf("tampered TTFT P90: failing %v", got)
	}

	// The demo counted with the server's usage (no tokenizer beside this
	// package). Audited with a tokenizer, every token figure is another
	// counting's: not comparable, unchecked for that one reason, never a
	// disagreement; the TTFT, counted the same either way, still fails.
	res = runAudit(t, Options{Inputs: []string{runs}, Tokenizer: testenv.Tokenizer(t)})
	if got := failedFields(res); strings.Join(got, ",") != "ttft.percentiles.90.0" {
		t.Errorf("audited with another tokenizer: failing %v, want only the tampered TTFT P90", got)
	}
	for _, f := range []string{"system_tps", "tpot.percentiles.90.0", "input_sequence_lengths.avg", "sweep_summary.osl_mean"} {
		rows := rowsOf(res, "", f)
		if len(rows) != 2 {
			t.Errorf("%s: %d rows, want 2", f, len(rows))
		}
		for _, r := range rows {
			if r.Status != Unchecked || !strings.HasPrefix(r.Note, schemas.NotComparableLabel) {
				t.Errorf("%s %s: %s (%s), want unchecked: %s", r.Run, f, r.Status, r.Note, schemas.NotComparableLabel)
			}
		}
	}
}
