package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Snapshot is the sha256 of every regular file under root, by path: what
// SameFiles compares a tree with later.
func Snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		out[p] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// SameFiles fails the test unless root holds exactly the files of before (a
// Snapshot), unchanged: none changed, vanished or appeared.
func SameFiles(t testing.TB, root string, before map[string]string) {
	t.Helper()
	after := Snapshot(t, root)
	for p, h := range before {
		if after[p] != h {
			t.Errorf("%s changed or vanished", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s appeared", p)
		}
	}
}
