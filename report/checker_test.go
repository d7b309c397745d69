package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/score/checker"
	"github.com/agentrace/agentrace/score/curve"
)

// checkerLayoutTree copies testdata/submission-tree into a submission root in
// the layout the checker reads (results/<system>/..., result_summary.json and
// accuracy_results.json in each point, docs/, src/<impl>/README.md), applying
// edit to each point's result_summary.json document.
func checkerLayoutTree(t *testing.T, edit func(point string, doc map[string]any)) string {
	t.Helper()
	tree, root := filepath.Join(t.TempDir(), "tree"), filepath.Join(t.TempDir(), "sub")
	if err := os.CopyFS(tree, os.DirFS(submissionTree(t))); err != nil {
		t.Fatal(err)
	}
	testenv.CheckerLayout(t, tree, root)
	points, _ := filepath.Glob(filepath.Join(root, "results", "*", "*", "r*"))
	for _, d := range points {
		b, err := os.ReadFile(filepath.Join(d, "result_summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(filepath.Base(d), doc)
		}
		out, _ := json.Marshal(doc)
		os.Remove(filepath.Join(d, "mlperf_endpoints_log_detail.json"))
		if err := os.WriteFile(filepath.Join(d, "result_summary.json"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestReportMetricConsistencyAsTheChecker: on a tree in the checker's layout the
// report's metric consistency is the checker's (score/checker): a count given as
// the string "11" is read, interactivity is derived from the OSL and latency
// totals when the named sums are absent and nothing failed, and a summary
// without n_samples_completed is result-file-valid alone, not an accounting error.
func TestReportMetricConsistencyAsTheChecker(t *testing.T) {
	d, err := checker.LoadData(checker.DataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(string, map[string]any)
		want []string // substrings of the metric consistency check's reason, none: it passes
		not  []string
	}{
		{"completed-numeric-string", func(p string, m map[string]any) {
			if p == "r64" {
				m["n_samples_completed"] = "11"
			}
		}, nil, []string{"c=64"}},
		{"interactivity-totals-absent", func(p string, m map[string]any) {
			if p == "r64" {
				delete(m, "output_tokens_per_turn_total")
				delete(m, "e2e_turn_time_seconds_total")
			}
		}, nil, []string{"c=64"}},
		{"completed-absent", func(p string, m map[string]any) {
			if p == "r64" {
				delete(m, "n_samples_completed")
			}
		}, []string{"c=64: result-file-valid"}, []string{"c=64: metric-consistency-accounting"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := checkerLayoutTree(t, tc.edit)
			r, err := Build(context.Background(), Options{Out: filepath.Join(t.TempDir(), "rep"), Runs: []string{filepath.Join(root, "results", "h200-sim")}, Checker: checker.NewCache(d)})
			if err != nil {
				t.Fatal(err)
			}
			var reason string
			var found bool
			for _, c := range r.Systems[0].Checks {
				if strings.HasPrefix(c.Name, "metric consistency") {
					reason, found = c.Reason, true
				}
			}
			if !found {
				t.Fatal("no metric consistency check")
			}
			for _, w := range tc.want {
				if !strings.Contains(reason, w) {
					t.Errorf("metric consistency %q lacks %q", reason, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(reason, w) {
					t.Errorf("metric consistency %q has %q", reason, w)
				}
			}
			for _, p := range r.Systems[0].Points {
				if p.CheckerFindings == nil {
					t.Errorf("c=%d was not judged by the checker", p.Concurrency)
				}
			}
		})
	}
}

// TestPublishedConsistencyReadsAsTheChecker: a published summary is read as the
// checker's schema reads it: a count written "11" is 11, a summary that does not
// validate (no n_samples_completed, a percentile that is text) is
// result-file-valid alone, and interactivity falls back to the reference
// client's own sums when the named ones are absent and nothing failed.
func TestPublishedConsistencyReadsAsTheChecker(t *testing.T) {
	base := `"duration_ns": 1e9, "output_sequence_lengths": {"total": 100}, "latency": {"total": 4e9}, "tpot": {"percentiles": {"90.0": 2e6}}`
	for _, tc := range []struct {
		name, doc string
		want      string // a substring of the one problem, "" for none
	}{
		{"numeric-string", `{"n_samples_issued": 11, "n_samples_completed": "11", "n_samples_failed": 0, ` + base + `}`, ""},
		{"completed-absent", `{"n_samples_issued": 11, "n_samples_failed": 0, ` + base + `}`, "result-file-valid: no n_samples_completed"},
		{"percentile-text", `{"n_samples_completed": 11, "ttft": {"percentiles": {"90.0": "high"}}, ` + base + `}`, "result-file-valid"},
		{"interactivity-fallback", `{"n_samples_completed": 11, "e2e_avg_interactivity": 25, ` + base + `}`, ""},
		{"interactivity-differs", `{"n_samples_completed": 11, "e2e_avg_interactivity": 30, ` + base + `}`, "agentic-metric-consistency"},
		{"accounting", `{"n_samples_issued": 12, "n_samples_completed": 11, ` + base + `}`, "completed 11 + failed 0 != issued 12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := curve.PublishedConsistency(64, []byte(tc.doc), 0.01)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("problems %v, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("problems %v, want one with %q", got, tc.want)
			}
		})
	}
}
