package report

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/metrics/metricstest"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/scoretest"
)

// writeRun writes a run directory.
func writeRun(t testing.TB, dir string, m schemas.RunManifest, recs []schemas.TurnRecord) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	scoretest.WriteLog(t, filepath.Join(dir, schemas.TurnLogFile), recs, 0)
	if err := runlog.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

// fakeSweepConcurrencies covers all four regions of C_max 128, C_min 1.
func fakeSweepConcurrencies() []int { return []int{1, 2, 4, 8, 16, 32, 64, 128} }

// writeFakeSweep writes a sweep folder with c<N>/ run folders and returns it.
func writeFakeSweep(t testing.TB, root string, o metricstest.RunOptions) string {
	t.Helper()
	for _, c := range fakeSweepConcurrencies() {
		oo := o
		oo.Concurrency = c
		oo.Trajectories = o.DatasetSize * max(1, 2*c/o.DatasetSize)
		m, recs := metricstest.Run(oo)
		writeRun(t, filepath.Join(root, fmt.Sprintf("c%d", c)), m, recs)
	}
	return root
}

// writeScores writes sc as runDir's scores.json, recording the run's turn log
// as it is (what `agentrace score` records), so that readers take it as fresh.
func writeScores(t *testing.T, runDir string, sc schemas.Scores) {
	t.Helper()
	sc.Run.TurnLog = logIdentity(t, runDir)
	b, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, schemas.ScoresFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// logIdentity reads runDir's turn log as every reader does and returns what
// identifies it.
func logIdentity(t *testing.T, runDir string) *schemas.TurnLogIdentity {
	t.Helper()
	f, err := os.Open(filepath.Join(runDir, schemas.TurnLogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr, err := runlog.ScanRun(context.Background(), f, runlog.SizeOf(f), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &lr.Log
}
