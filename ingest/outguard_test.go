package ingest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/internal/outguard"
)

// TestOutputNeverOverlapsInput: `ingest --force --out indir
// indir/good.jsonl` and `--out same.jsonl same.jsonl` deleted the input trace. Every
// way an output can be, contain or sit inside an input is refused before anything is
// written, with or without --overwrite, and the input is byte for byte intact.
func TestOutputNeverOverlapsInput(t *testing.T) {
	good := oneRow + `{"conversation_id":"c1","turn":2,"role":"assistant","content":"hello"}` + "\n"
	for _, tc := range []struct {
		name string
		out  func(root string) string
	}{
		{"out is the input folder", func(root string) string { return filepath.Join(root, "indir") }},
		{"out is the input file", func(root string) string { return filepath.Join(root, "indir", "good.jsonl") }},
		{"out is a link to the input folder", func(root string) string { return filepath.Join(root, "link") }},
		{"out is a hard link of the input", func(root string) string { return filepath.Join(root, "hard.jsonl") }},
		{"out contains the input", func(root string) string { return root }},
	} {
		for _, overwrite := range []bool{false, true} {
			t.Run(tc.name, func(t *testing.T) {
				root := t.TempDir()
				in := filepath.Join(root, "indir", "good.jsonl")
				if err := os.MkdirAll(filepath.Dir(in), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(in, []byte(good), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(root, "indir"), filepath.Join(root, "link")); err != nil {
					t.Fatal(err)
				}
				if err := os.Link(in, filepath.Join(root, "hard.jsonl")); err != nil {
					t.Fatal(err)
				}
				// The input is named in a second way too: through the link.
				for _, input := range []string{in, filepath.Join(root, "link", "good.jsonl")} {
					_, err := Run(context.Background(), Options{Out: tc.out(root), Inputs: []string{input}, Overwrite: overwrite})
					if !errors.Is(err, outguard.ErrOverlap) {
						t.Errorf("input %s: err = %v, want ErrOverlap", input, err)
					}
					if b, rerr := os.ReadFile(in); rerr != nil || !bytes.Equal(b, []byte(good)) {
						t.Fatalf("the input changed: %q, %v", b, rerr)
					}
				}
			})
		}
	}
}

// oneRow is a trace of one user row.
const oneRow = `{"conversation_id":"c1","turn":1,"role":"user","content":"hi","system":"s"}` + "\n"

// oneRowDataset writes oneRow to ROOT/good.jsonl in a new temporary folder ROOT
// and ingests it to ROOT/ds.
func oneRowDataset(t *testing.T) (root, in, ds string) {
	t.Helper()
	root = t.TempDir()
	in = filepath.Join(root, "good.jsonl")
	if err := os.WriteFile(in, []byte(oneRow), 0o644); err != nil {
		t.Fatal(err)
	}
	ds = filepath.Join(root, "ds")
	if _, err := Run(context.Background(), Options{Out: ds, Inputs: []string{in}}); err != nil {
		t.Fatal(err)
	}
	return root, in, ds
}

// TestOverwriteOnlyADataset: --overwrite replaces a dataset, and nothing else that
// happens to be at --out.
func TestOverwriteOnlyADataset(t *testing.T) {
	root, in, ds := oneRowDataset(t)
	if k := outguard.DirKind(ds); k != outguard.Dataset.Name {
		t.Fatalf("dataset folder kind %q", k)
	}
	if _, err := Run(context.Background(), Options{Out: ds, Inputs: []string{in}, Overwrite: true}); err != nil {
		t.Fatalf("overwrite a dataset: %v", err)
	}
	mine := filepath.Join(root, "mine")
	notes := filepath.Join(mine, "notes.txt")
	if err := os.MkdirAll(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, []byte("only copy"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Options{Out: mine, Inputs: []string{in}, Overwrite: true}); !errors.Is(err, outguard.ErrNotOurs) {
		t.Fatalf("overwrite a folder agentrace did not write: %v", err)
	}
	if _, err := os.Stat(notes); err != nil {
		t.Fatalf("the user's file is gone: %v", err)
	}
	// Beside the input (in its folder) is fine; an empty folder is fine.
	if _, err := Run(context.Background(), Options{Out: filepath.Join(root, "ds2"), Inputs: []string{in}}); err != nil {
		t.Fatalf("ingest beside the input: %v", err)
	}
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Options{Out: empty, Inputs: []string{in}}); err != nil {
		t.Fatalf("ingest into an empty folder: %v", err)
	}
}

// TestExportOutput: export never writes into its dataset, replaces an earlier export
// only with Overwrite, and never replaces a trace file agentrace did not write.
func TestExportOutput(t *testing.T) {
	root, in, ds := oneRowDataset(t)
	for _, out := range []string{ds, filepath.Join(ds, "back.jsonl"), filepath.Join(ds, "manifest.json")} {
		if err := Export(context.Background(), ExportOptions{Dataset: ds, Out: out, Overwrite: true}); !errors.Is(err, outguard.ErrOverlap) {
			t.Errorf("export to %s: %v, want ErrOverlap", out, err)
		}
	}
	// The user's own trace file is never replaced.
	if err := Export(context.Background(), ExportOptions{Dataset: ds, Out: in, Overwrite: true}); !errors.Is(err, outguard.ErrNotOurs) {
		t.Errorf("export over the user's trace: %v, want ErrNotOurs", err)
	}
	if b, _ := os.ReadFile(in); string(b) != oneRow {
		t.Fatalf("the user's trace changed: %q", b)
	}
	back := filepath.Join(root, "back.jsonl")
	if err := Export(context.Background(), ExportOptions{Dataset: ds, Out: back}); err != nil {
		t.Fatal(err)
	}
	if err := Export(context.Background(), ExportOptions{Dataset: ds, Out: back}); !errors.Is(err, outguard.ErrExists) {
		t.Errorf("second export without overwrite: %v, want ErrExists", err)
	}
	if err := Export(context.Background(), ExportOptions{Dataset: ds, Out: back, Overwrite: true}); err != nil {
		t.Errorf("second export with overwrite: %v", err)
	}
}
