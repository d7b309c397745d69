package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/schemas"
)

// TestReadersRefuseAFolderThatIsNotARun: score, report and audit given a folder
// holding a dataset, traces and a run refuse it (exit 2), naming the run inside
// and --descend, and write nothing into the run; with --descend score scores the
// run inside under its own name, and a folder of runs (a sweep) needs no flag.
func TestReadersRefuseAFolderThatIsNotARun(t *testing.T) {
	root, _, run := readersFixture(t)
	for _, args := range [][]string{
		{"score", root},
		{"report", "--out", filepath.Join(t.TempDir(), "rep"), root},
		{"audit", root},
	} {
		out, err := runApp(t, args...)
		if exitCode(err) != exitUsage || err == nil || !strings.Contains(err.Error(), run) || !strings.Contains(err.Error(), "--descend") ||
			!strings.Contains(err.Error(), "is not a run") {
			t.Errorf("%s: status %d, error %v, want exit 2 naming %s and --descend\n%s", strings.Join(args, " "), exitCode(err), err, run, out)
		}
	}
	if _, err := os.Stat(filepath.Join(run, schemas.ScoresFile)); !os.IsNotExist(err) {
		t.Fatalf("a refused score wrote into the run inside (%v)", err)
	}
	out, err := runApp(t, "score", "--descend", root)
	if !doneWithVerdict(err) || !strings.Contains(out, run+" (agentrace run)") {
		t.Fatalf("score --descend: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(run, schemas.ScoresFile)); err != nil {
		t.Fatalf("score --descend wrote no scores into the run: %v", err)
	}
	sweep := filepath.Join(t.TempDir(), "sweep")
	copyRun(t, run, filepath.Join(sweep, "c2"))
	if out, err := runApp(t, "audit", sweep); err != nil && exitCode(err) == exitUsage {
		t.Errorf("audit of a folder of runs refused: %v\n%s", err, out)
	}
}
