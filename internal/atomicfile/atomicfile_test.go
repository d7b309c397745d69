package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteLeavesNothingOnError(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	if err := WriteBytes(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(p, func(w io.Writer) error {
		_, _ = w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "old" {
		t.Fatalf("target changed to %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temp files left behind: %v", entries)
	}
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ds")
	fail := errors.New("bad input")
	if err := Dir(p, false, func(tmp string) error {
		_ = os.WriteFile(filepath.Join(tmp, "a"), []byte("x"), 0o644)
		return fail
	}); !errors.Is(err, fail) {
		t.Fatalf("err = %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
	if err := Dir(p, false, func(tmp string) error {
		return os.WriteFile(filepath.Join(tmp, "a"), []byte("x"), 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	if err := Dir(p, false, func(string) error { return nil }); err == nil {
		t.Fatal("want an error for an existing folder without replace")
	}
	if err := Dir(p, true, func(tmp string) error {
		return os.WriteFile(filepath.Join(tmp, "b"), []byte("y"), 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p, "b")); err != nil {
		t.Fatal("replacement missing")
	}
	if _, err := os.Stat(filepath.Join(p, "a")); err == nil {
		t.Fatal("old content survived the replacement")
	}
}
