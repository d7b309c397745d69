package infile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

type columnsRow struct {
	ID   string  `parquet:"id,dict"`
	N    int32   `parquet:"n"`
	Text string  `parquet:"text"`
	Opt  *string `parquet:"opt,optional"`
	List []int32 `parquet:"list"`
}

// writeColumnsFile writes rows in row groups of 700 rows and pages of about 1 KiB,
// so that a column spans many pages in several row groups.
func writeColumnsFile(t *testing.T, rows []columnsRow) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.parquet")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[columnsRow](f, parquet.PageBufferSize(1<<10))
	for start := 0; start < len(rows); start += 700 {
		if _, err := w.Write(rows[start:min(start+700, len(rows))]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadColumns(t *testing.T) {
	var rows []columnsRow
	for i := range 5000 {
		r := columnsRow{ID: fmt.Sprintf("conv%03d", i/37), N: int32(i * 3), Text: strings.Repeat("x", i%50), List: []int32{int32(i)}}
		if i%7 != 0 {
			s := fmt.Sprint(i)
			r.Opt = &s
		}
		rows = append(rows, r)
	}
	path := writeColumnsFile(t, rows)
	if f, err := Open(path); err == nil {
		st, _ := f.Stat()
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil || len(pf.RowGroups()) < 5 {
			t.Fatalf("the test file has %d row groups (%v), want several", len(pf.RowGroups()), err)
		}
		f.Close()
	}

	var gotRows int64
	ids, ns, texts := make([]string, 0), make([]int32, 0), make([]string, 0)
	err := ReadColumns(t.Context(), path, []string{"text", "id", "n"}, false, func(n int64) { gotRows = n }, func(col int, row int64, v parquet.Value) error {
		switch col {
		case 0:
			if int(row) != len(texts) {
				return fmt.Errorf("text row %d after %d values", row, len(texts))
			}
			texts = append(texts, string(v.ByteArray()))
		case 1:
			ids = append(ids, string(v.ByteArray()))
		case 2:
			ns = append(ns, v.Int32())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if gotRows != int64(len(rows)) || len(ids) != len(rows) || len(ns) != len(rows) || len(texts) != len(rows) {
		t.Fatalf("rows %d: %d ids, %d ns, %d texts, want %d each", gotRows, len(ids), len(ns), len(texts), len(rows))
	}
	for i, r := range rows {
		if ids[i] != r.ID || ns[i] != r.N || texts[i] != r.Text {
			t.Fatalf("row %d: (%q, %d, %q), want (%q, %d, %q)", i, ids[i], ns[i], texts[i], r.ID, r.N, r.Text)
		}
	}

	nulls := 0
	if err := ReadColumns(t.Context(), path, []string{"opt"}, true, func(int64) {}, func(_ int, row int64, v parquet.Value) error {
		if v.IsNull() != (rows[row].Opt == nil) {
			return fmt.Errorf("row %d: null %v, want %v", row, v.IsNull(), rows[row].Opt == nil)
		}
		if v.IsNull() {
			nulls++
		}
		return nil
	}); err != nil || nulls != (len(rows)+6)/7 {
		t.Fatalf("optional column with nulls allowed: %v, %d nulls", err, nulls)
	}

	none := func(int64) {}
	keep := func(int, int64, parquet.Value) error { return nil }
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for _, c := range []struct {
		name    string
		ctx     context.Context
		columns []string
		want    string
	}{
		{"a null where none may be", t.Context(), []string{"opt"}, `column "opt": row 0 is null`},
		{"a repeated column", t.Context(), []string{"list"}, `column "list" is repeated`},
		{"a missing column", t.Context(), []string{"n", "nope"}, `no column "nope"`},
		{"a cancelled context", cancelled, []string{"n"}, "context canceled"},
	} {
		err := ReadColumns(c.ctx, path, c.columns, false, none, keep)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	stop := fmt.Errorf("stop")
	if err := ReadColumns(t.Context(), path, []string{"n"}, false, none, func(_ int, row int64, _ parquet.Value) error {
		if row == 1234 {
			return stop
		}
		return nil
	}); err == nil || !strings.Contains(err.Error(), "stop") {
		t.Errorf("an error from each: %v, want it returned", err)
	}
}
