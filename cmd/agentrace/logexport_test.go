package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/scoretest"
)

func writeRunDir(t *testing.T, dir string, c int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var recs []schemas.TurnRecord
	for i := range 3 {
		recs = append(recs, schemas.TurnRecord{SessionID: "s", ConversationID: "s", Repeat: 1, Turn: int32(2*i + 1), Status: schemas.StatusOK,
			IssuedNs: int64(i+1) * 1000, CompletedNs: int64(i+1)*1000 + 500, InWindow: true})
	}
	scoretest.WriteLog(t, filepath.Join(dir, schemas.TurnLogFile), recs, 0)
	if err := runlog.WriteManifest(dir, schemas.RunManifest{SchemaVersion: schemas.Version, ToolVersion: schemas.ToolVersion,
		State: schemas.RunComplete, Counts: map[string]int{schemas.StatusOK: 3}, Config: schemas.RunConfig{Concurrency: c}}); err != nil {
		t.Fatal(err)
	}
}

// log export writes RUNDIR/turns.parquet, refuses to replace it without --overwrite,
// and with --out puts the runs of a sweep folder into one table.
func TestLogExport(t *testing.T) {
	sweep := filepath.Join(t.TempDir(), "sweep")
	writeRunDir(t, filepath.Join(sweep, "c1"), 1)
	writeRunDir(t, filepath.Join(sweep, "c4"), 4)
	c1 := filepath.Join(sweep, "c1")
	out, err := runApp(t, "log", "export", c1)
	if err != nil || !strings.Contains(out, "turns.parquet: 3 rows") {
		t.Fatalf("log export: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(c1, runlog.TableFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := runApp(t, "log", "export", c1); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Errorf("a second export without --overwrite: %v", err)
	}
	if _, err := runApp(t, "log", "export", "--overwrite", c1); err != nil {
		t.Errorf("--overwrite: %v", err)
	}
	all := filepath.Join(t.TempDir(), "all.parquet")
	if out, err := runApp(t, "log", "export", "--out", all, sweep); err != nil || !strings.Contains(out, "6 rows") {
		t.Errorf("--out over a sweep: %v\n%s", err, out)
	}
	// an output inside an input is refused: the run's own turn log
	if _, err := runApp(t, "log", "export", "--out", filepath.Join(c1, schemas.TurnLogFile), c1); err == nil {
		t.Error("log export over the turn log itself was not refused")
	}
}
