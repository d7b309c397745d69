package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/datasets/tokens"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/score/archive"
)

// TestResultSummaryMatchesReferenceRuns re-derives result_summary.json from the
// events of every genuine reference run folder in testdata/refruns (seven sweep
// points and one with injected faults: HTTP 500s, skipped turns) and compares it
// with the summary the reference client wrote: every count, the duration, qps,
// tps, finish_reason_counts and every figure of the TTFT, TPOT, latency and OSL
// blocks (percentiles, early-stopping estimates, histogram counts) exactly, the
// histogram edges to within an ulp. Not compared: input_sequence_lengths (the
// reference counts ISL from the prompt its events carry; agentrace counts it from
// the dataset, which these runs name by a path of the machine that ran them),
// run_config's random seeds (agentrace draws none), version and git_sha.
func TestResultSummaryMatchesReferenceRuns(t *testing.T) {
	tk, err := tokens.Load(testenv.Tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(testenv.RepoRoot(t), "testdata", "refruns")
	dirs, err := filepath.Glob(filepath.Join(root, "c*"))
	if err != nil || len(dirs) < 8 {
		t.Fatalf("testdata/refruns holds %d run folders (%v), want 8", len(dirs), err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			run, err := archive.OpenRun(dir, archive.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			defer run.Source.Close()
			p, err := LoadRun(context.Background(), run, tk, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			gotB, err := json.Marshal(p.Summary)
			if err != nil {
				t.Fatal(err)
			}
			wantB, err := os.ReadFile(filepath.Join(dir, "performance", "result_summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var got, want map[string]any
			if err := json.Unmarshal(gotB, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(wantB, &want); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"version", "git_sha", "input_sequence_lengths", "run_config"} {
				delete(want, k)
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					delete(got, k) // agentrace's additions: the agentic fields, its notes
				}
			}
			compareJSON(t, "result_summary", got, want)
		})
	}
}
