package outguard

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"
)

// sparseNulls is a column's nulls (0) and values (1) that parquet-go v0.32,
// given in one call, writes with a null (row 130) as a value.
const sparseNulls = "0010000000000000000000000010010000001000000010010000100000000000000000010000000001001000000100000100010000001001001001000000000001000000000000000"

// TestWriteParquetNulls writes a table whose optional columns are not pointers
// (a zero value is null), mostly zeros with a value here and there (a pattern
// parquet-go v0.32 writes wrong in one call: some zeros as values), and reads
// each column back: null exactly where the value was zero.
func TestWriteParquetNulls(t *testing.T) {
	type row struct {
		Text  string `parquet:"text,optional"`
		Dict  string `parquet:"dict,dict,optional"`
		Count int32  `parquet:"count,optional"`
	}
	var rows []row
	var want []bool
	for _, c := range sparseNulls {
		zero := c == '0'
		r := row{Text: "a", Dict: "b", Count: 7}
		if zero {
			r = row{}
		}
		rows, want = append(rows, r), append(want, zero)
	}
	path := filepath.Join(t.TempDir(), "t.parquet")
	if err := WriteParquet(path, Kind{Name: "test"}, rows, &snappy.Codec{}); err != nil {
		t.Fatal(err)
	}
	for _, col := range []string{"text", "dict", "count"} {
		var got []bool
		err := infile.ReadColumns(context.Background(), path, []string{col}, true, func(int64) {}, func(_ int, _ int64, v parquet.Value) error {
			got = append(got, v.IsNull())
			return nil
		})
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: null %v\nwant %v (%v)", col, got, want, err)
		}
	}
}
