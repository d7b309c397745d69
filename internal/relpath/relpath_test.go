package relpath

import (
	"os"
	"path/filepath"
	"testing"
)

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

// A run folder records its dataset; the tree is then moved, or the run alone is moved.
func TestRecordResolveMoves(t *testing.T) {
	root := t.TempDir()
	tree := filepath.Join(root, "demo-out")
	run, ds := filepath.Join(tree, "runs", "c8"), filepath.Join(tree, "dataset")
	mkdir(t, run)
	mkdir(t, ds)
	t.Chdir(root)
	rel, abs := Record("demo-out/runs/c8", "demo-out/dataset")
	if rel != "../../dataset" || abs != ds {
		t.Fatalf("Record = %q, %q; want ../../dataset, %q", rel, abs, ds)
	}
	// read from anywhere, the folder given relative to there
	t.Chdir(run)
	if got := Resolve(".", rel, abs); got != "../../dataset" {
		t.Errorf("from the run folder: %q", got)
	}
	// the whole tree moved: the relative path finds the moved dataset
	moved := filepath.Join(root, "archive", "demo-out")
	mkdir(t, filepath.Dir(moved))
	t.Chdir(root)
	if err := os.Rename(tree, moved); err != nil {
		t.Fatal(err)
	}
	if got, want := Resolve(filepath.Join(moved, "runs", "c8"), rel, abs), filepath.Join(moved, "dataset"); got != want {
		t.Errorf("tree moved: %q, want %q", got, want)
	}
	// the run alone moved away from its dataset, which is back where it was: the absolute path
	if err := os.Rename(moved, tree); err != nil {
		t.Fatal(err)
	}
	alone := filepath.Join(root, "elsewhere", "c8")
	mkdir(t, filepath.Dir(alone))
	if err := os.Rename(run, alone); err != nil {
		t.Fatal(err)
	}
	if got := Resolve(alone, rel, abs); got != ds {
		t.Errorf("run moved alone: %q, want %q", got, ds)
	}
	// neither there: the relative form, joined, for the error message
	if got, want := Resolve(alone, rel, "/nonexistent/ds"), filepath.Join(alone, "../../dataset"); got != want {
		t.Errorf("missing: %q, want %q", got, want)
	}
	if got := Resolve(alone, "", ""); got != "" {
		t.Errorf("nothing recorded: %q", got)
	}
}

// A reference config's path is relative to the client's working directory, which is
// unknown: it is tried from here, then from the run folder and each folder above.
func TestResolveUnrooted(t *testing.T) {
	root := t.TempDir()
	run, ds := filepath.Join(root, "demo-out", "runs", "c8"), filepath.Join(root, "demo-out", "dataset")
	mkdir(t, run)
	mkdir(t, ds)
	t.Chdir(filepath.Join(root, "demo-out"))
	if got := ResolveUnrooted("runs/c8", "demo-out/dataset"); got != ds {
		t.Errorf("unrooted from inside demo-out: %q, want %q", got, ds)
	}
	t.Chdir(root)
	if got := ResolveUnrooted("demo-out/runs/c8", "demo-out/dataset"); got != "demo-out/dataset" {
		t.Errorf("unrooted from where it ran: %q", got)
	}
	if got := ResolveUnrooted("demo-out/runs/c8", "no/such"); got != "no/such" {
		t.Errorf("unrooted missing: %q", got)
	}
}
