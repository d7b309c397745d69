package scoretest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

func TestTileAndWriteRun(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(testenv.RepoRoot(t), "testdata", "reference-run", "dataset.jsonl")
	tiled := filepath.Join(dir, "tiled.jsonl")
	if err := TileTrace(src, tiled, 3); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(tiled)
	if n := strings.Count(string(data), "\n"); n != 1+3*24 {
		t.Errorf("%d lines, want 73 (one metadata line, 24 rows three times)", n)
	}
	ds := filepath.Join(dir, "ds")
	d := Ingest(t, ds, tiled)
	if d.Manifest.Counts.Conversations != 12 || d.Manifest.Counts.Workflow != 6 {
		t.Errorf("counts %+v, want 12 conversations, 6 of them workflow", d.Manifest.Counts)
	}
	run := filepath.Join(dir, "run")
	n, err := WriteRun(run, ds, d, RunOptions{Repeats: 2, Fidelity: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := runlog.ReadFile(context.Background(), filepath.Join(run, schemas.TurnLogFile))
	if err != nil {
		t.Fatal(err)
	}
	if n != 2*d.Manifest.Counts.ClientTurns || len(recs) != n {
		t.Errorf("%d records (%d read), want %d", n, len(recs), 2*d.Manifest.Counts.ClientTurns)
	}
	m, err := runlog.ReadManifest(run)
	if err != nil || runlog.DatasetDir(run, m.Config) != ds || m.DatasetHash != d.Manifest.ContentHash {
		t.Errorf("manifest %+v %v", m, err)
	}
}
