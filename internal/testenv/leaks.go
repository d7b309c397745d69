package testenv

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// Leaks walks every file under root and reports each secret one holds: in its
// bytes, and for a Parquet file (whose pages are compressed) in the values of its
// string columns. It returns the files read and a line per leak, "PATH holds
// SECRET".
func Leaks(t testing.TB, root string, secrets ...string) (files int, leaks []string) {
	t.Helper()
	eachFile(t, root, func(path string, b []byte) {
		files++
		if strings.HasSuffix(path, ".parquet") {
			b = append(b, parquetStrings(t, path)...)
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				leaks = append(leaks, path+" holds "+s)
			}
		}
	})
	return files, leaks
}

// eachFile calls fn with the path and the bytes of every regular file under root;
// an error fails t.
func eachFile(t testing.TB, root string, fn func(path string, b []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(path, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// parquetStrings returns the values of a Parquet file's byte-array columns, one
// a line.
func parquetStrings(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []byte
	r := parquet.NewGenericReader[any](f, pf.Schema())
	defer r.Close()
	buf := make([]parquet.Row, 64)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			for _, v := range row {
				if !v.IsNull() && v.Kind() == parquet.ByteArray {
					out = append(append(out, v.ByteArray()...), '\n')
				}
			}
		}
		if err != nil {
			return out
		}
	}
}
