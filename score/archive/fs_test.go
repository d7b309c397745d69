package archive

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// Source.FS is a correct io/fs.FS (testing/fstest's oracle) for a folder, a
// .tar.gz (a small entry cached, a big one streamed) and a .zip, and every file
// reads back as written.
func TestSourceFS(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat(`{"event_type": "sample.issued"}`+"\n", 40000) // > the 1 MiB cache
	entries := treeEntries(big)
	tgz := filepath.Join(dir, "sub.tar.gz")
	writeTarGz(t, tgz, entries)
	files := map[string]string{}
	tree := filepath.Join(dir, "tree")
	var names []string
	for _, e := range entries {
		files[e.name] = e.body
		names = append(names, e.name)
		p := filepath.Join(tree, filepath.FromSlash(e.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(e.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	zp := filepath.Join(dir, "sub.zip")
	writeZip(t, zp, files)

	for _, p := range []string{tree, tgz, zp} {
		t.Run(filepath.Base(p), func(t *testing.T) {
			src, err := Open(p, Limits{MaxExpansion: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			fsys := src.FS()
			if err := fstest.TestFS(fsys, names...); err != nil {
				t.Fatal(err)
			}
			for name, body := range files {
				b, err := fs.ReadFile(fsys, name)
				if err != nil || string(b) != body {
					t.Errorf("%s: read %d bytes (%v), want %d", name, len(b), err, len(body))
				}
			}
			if _, err := fs.Stat(fsys, "acme/nothing"); !os.IsNotExist(err) {
				t.Errorf("stat of an absent name: %v, want not exist", err)
			}
		})
	}
}
