//go:build unix

package score

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrace/agentrace/schemas"
)

// TestRescoreHostileFiles: a run whose manifest.json is a FIFO once
// blocked rescore forever; a manifest naming /dev/zero as its dataset spun at 100%
// CPU for 15 minutes. Only regular files are opened: each such run is an error row,
// promptly, and the good run beside them is scored.
func TestRescoreHostileFiles(t *testing.T) {
	ds, truth := fixtureTruth(t)
	recs := recordsFromReference(t, truth)
	archive := filepath.Join(t.TempDir(), "archive")
	writeRun(t, filepath.Join(archive, "good"), ds, truth.Hash, recs)

	fifoRun := filepath.Join(archive, "fifo")
	writeRun(t, fifoRun, ds, truth.Hash, recs)
	os.Remove(filepath.Join(fifoRun, schemas.RunManifestFile))
	if err := syscall.Mkfifo(filepath.Join(fifoRun, schemas.RunManifestFile), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	logFIFO := filepath.Join(archive, "logfifo")
	writeRun(t, logFIFO, ds, truth.Hash, recs)
	os.Remove(filepath.Join(logFIFO, schemas.TurnLogFile))
	if err := syscall.Mkfifo(filepath.Join(logFIFO, schemas.TurnLogFile), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
		writeRun(t, filepath.Join(archive, filepath.Base(dev)), dev, truth.Hash, recs)
	}
	fifoData := filepath.Join(t.TempDir(), "data.jsonl")
	if err := syscall.Mkfifo(fifoData, 0o644); err != nil {
		t.Fatal(err)
	}
	writeRun(t, filepath.Join(archive, "fifodata"), fifoData, truth.Hash, recs)

	type result struct {
		rows []schemas.RescoreRow
		err  error
	}
	done := make(chan result, 1)
	go func() {
		rows, err := Rescore(context.Background(), RescoreOptions{Archives: []string{archive}, Jobs: 2})
		done <- result{rows, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("rescore did not return within 60 s")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	byDir := map[string]schemas.RescoreRow{}
	for _, row := range r.rows {
		byDir[filepath.Base(row.Path)] = row
	}
	if row, ok := byDir["good"]; !ok || row.Error != "" || row.ScoredTurns == nil || *row.ScoredTurns == 0 {
		t.Errorf("good run: %+v", row)
	}
	for _, name := range []string{"zero", "urandom", "fifodata"} {
		if row := byDir[name]; !strings.Contains(row.Error, "not a regular file") {
			t.Errorf("%s: error %q, want not a regular file", name, row.Error)
		}
	}
	// A run whose manifest or turn log is a FIFO is either not a run (the walk
	// only takes regular files) or an error row; never a hang.
	for _, name := range []string{"fifo", "logfifo"} {
		if row, ok := byDir[name]; ok && row.Error == "" {
			t.Errorf("%s scored: %+v", name, row)
		}
	}
}
