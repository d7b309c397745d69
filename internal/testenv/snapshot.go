package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// Snapshot is the sha256 of every regular file under root, by path: what
// SameFiles compares a tree with later.
func Snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	eachFile(t, root, func(path string, b []byte) {
		sum := sha256.Sum256(b)
		out[path] = hex.EncodeToString(sum[:])
	})
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
