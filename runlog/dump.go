package runlog

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/agentrace/agentrace/internal/infile"
)

// Dump writes the turn log at path as JSON Lines, one object per row with the
// columns in schema order (or in the order of columns, when given), and returns the
// number of rows written. Integer times stay integers; chunk_times is an array. A
// truncated log (a killed run) dumps its complete batches and then returns their
// count with an error matching ErrTruncated (and ErrNoRows when there were none).
//
// It stops when ctx is done, returning ctx's error.
func Dump(ctx context.Context, out io.Writer, path string, columns []string) (int, error) {
	f, err := infile.Open(path)
	if err != nil {
		return 0, fmt.Errorf("dump turn log: %w", err)
	}
	defer f.Close()
	all := ColumnNames()
	for _, c := range columns {
		if !slices.Contains(all, c) {
			return 0, fmt.Errorf("dump turn log %q: unknown column %q (columns: %s)", path, c, strings.Join(all, ","))
		}
	}
	bw := bufio.NewWriterSize(out, 256<<10)
	var line []byte
	rows := 0
	scanErr := Scan(ctx, f, SizeOf(f), memory.DefaultAllocator, func(rec arrow.RecordBatch) error {
		names := columns
		if len(names) == 0 {
			names = make([]string, 0, rec.NumCols())
			for _, fd := range rec.Schema().Fields() {
				names = append(names, fd.Name)
			}
		}
		cols := make([]arrow.Array, len(names))
		keys := make([][]byte, len(names))
		for j, n := range names {
			idx := rec.Schema().FieldIndices(n)
			if len(idx) == 0 {
				return fmt.Errorf("turn log lacks column %q", n)
			}
			cols[j] = rec.Column(idx[0])
			k, _ := json.Marshal(n)
			keys[j] = k
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			line = append(line[:0], '{')
			for j, c := range cols {
				if j > 0 {
					line = append(line, ',')
				}
				line = append(line, keys[j]...)
				line = append(line, ':')
				v, err := json.Marshal(c.GetOneForMarshal(i))
				if err != nil {
					return fmt.Errorf("encode column %q row %d: %w", names[j], i, err)
				}
				line = append(line, v...)
			}
			line = append(line, '}', '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
			rows++
		}
		return nil
	})
	if err := bw.Flush(); err != nil {
		return rows, fmt.Errorf("dump turn log %q: %w", path, err)
	}
	if scanErr = CheckRecovered(scanErr, rows); scanErr != nil {
		return rows, fmt.Errorf("dump turn log %q: %w", path, scanErr)
	}
	return rows, nil
}
