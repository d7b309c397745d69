package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// rescore exits 1 when a run could not be scored, names it, and still writes the
// table with the rest.
func TestRescoreExitStatus(t *testing.T) {
	repo := testenv.RepoRoot(t)
	tree := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(filepath.Join(tree, "ok"), os.DirFS(filepath.Join(repo, "testdata", "reference-runfolder"))); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(tree, "broken"), 0o755)
	os.WriteFile(filepath.Join(tree, "broken", "turns.arrows"), []byte("not arrow"), 0o644)
	out := filepath.Join(t.TempDir(), "r.parquet")
	ds := filepath.Join(repo, "testdata", "reference-run", "dataset.jsonl")
	text, err := runApp(t, "rescore", "--out", out, "--dataset", ds, tree)
	// An error from the command: main prints it and exits 1.
	if err == nil || !strings.Contains(err.Error(), "1 of 2 runs could not be scored") {
		t.Fatalf("rescore with a broken run: %v\n%s", err, text)
	}
	if !strings.Contains(text, "broken") || !strings.Contains(text, "1 could not be scored") {
		t.Errorf("output does not name the broken run:\n%s", text)
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Errorf("the table was not written: %v", err)
	}
	os.RemoveAll(filepath.Join(tree, "broken"))
	if text, err := runApp(t, "rescore", "--out", out, "--overwrite", "--dataset", ds, tree); err != nil {
		t.Errorf("rescore of good runs: %v\n%s", err, text)
	}
}
