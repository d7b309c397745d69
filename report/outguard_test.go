package report

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
)

// TestReportOutput: the report folder never replaces or sits inside the runs it
// reads, replaces an earlier report only with Overwrite, and never anything else.
func TestReportOutput(t *testing.T) {
	root := t.TempDir()
	sweep := writeFakeSweep(t, filepath.Join(root, "sweep"), defaultFake())
	c := filepath.Join(sweep, "c1")
	ents, _ := os.ReadDir(sweep)
	for _, e := range ents {
		if e.IsDir() {
			c = filepath.Join(sweep, e.Name())
			break
		}
	}
	log, _ := os.ReadFile(filepath.Join(c, schemas.TurnLogFile))
	for _, out := range []string{sweep, c, filepath.Join(sweep, "report"), root} {
		if _, err := Build(context.Background(), Options{Out: out, Overwrite: true, Runs: []string{sweep}}); !errors.Is(err, outguard.ErrOverlap) {
			t.Errorf("report into %s: %v, want ErrOverlap", out, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(c, schemas.TurnLogFile)); len(log) == 0 || string(b) != string(log) {
		t.Fatal("a refused report changed a run")
	}
	// A run folder is not a report, even when it is not an input.
	other := writeFakeSweep(t, filepath.Join(root, "other"), defaultFake())
	if _, err := Build(context.Background(), Options{Out: other, Overwrite: true, Runs: []string{sweep}}); !errors.Is(err, outguard.ErrNotOurs) {
		t.Errorf("report over a sweep: %v, want ErrNotOurs", err)
	}
	rep := filepath.Join(root, "rep")
	if _, err := Build(context.Background(), Options{Out: rep, Runs: []string{sweep}}); err != nil {
		t.Fatal(err)
	}
	if k := outguard.DirKind(rep); k != outguard.Report.Name {
		t.Fatalf("report kind %q", k)
	}
	if _, err := Build(context.Background(), Options{Out: rep, Runs: []string{sweep}}); !errors.Is(err, outguard.ErrExists) {
		t.Errorf("second report without overwrite: %v, want ErrExists", err)
	}
	stale := filepath.Join(rep, PlotsDir, "stale.png")
	if err := os.WriteFile(stale, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(context.Background(), Options{Out: rep, Overwrite: true, Runs: []string{sweep}}); err != nil {
		t.Fatalf("second report with overwrite: %v", err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Error("a file of the earlier report survived the replacement")
	}
	if _, err := os.Stat(filepath.Join(rep, HTMLFile)); err != nil {
		t.Error(err)
	}
}
