package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/metrics/metricstest"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/curve"
)

// TestLoadPointRefusesDisagreement: report refuses a run
// whose manifest counts rows its log does not hold.
func TestLoadPointRefusesDisagreement(t *testing.T) {
	m, recs := metricstest.Run(metricstest.RunOptions{Concurrency: 2, Trajectories: 4, DatasetSize: 4, Model: "Qwen/Qwen3.6-35B-A3B"})
	dir := filepath.Join(t.TempDir(), "c2")
	writeRun(t, dir, m, recs)
	if _, err := curve.LoadPoint(context.Background(), dir, nil, nil); err != nil {
		t.Fatalf("agreeing run: %v", err)
	}
	// A whole log holding half the rows the manifest counts (rows lost).
	if err := os.Remove(filepath.Join(dir, schemas.TurnLogFile)); err != nil {
		t.Fatal(err)
	}
	writeRun(t, dir, m, recs[:len(recs)/2])
	_, err := curve.LoadPoint(context.Background(), dir, nil, nil)
	if err == nil || !strings.Contains(err.Error(), runlog.ErrDisagree.Error()) {
		t.Fatalf("lost log: %v", err)
	}
}
