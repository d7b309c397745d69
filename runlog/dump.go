package runlog

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/agentrace/agentrace/internal/infile"
)

// Dump writes the turn log at path as JSON Lines, one object per row with the
// columns in schema order (or in the order of columns, when given), and returns the
// number of rows written. Integer times stay integers; chunk_times is an array. A
// truncated log (a killed run) dumps its complete batches and then returns their
// count with an error matching ErrTruncated (and ErrNoRows when there were none).
//
// Columns the log lacks that its run's analysis table has (error_kind, issued,
// ttft_ms, the *_at times: TableFile beside the log) are read from that table, all
// of them: its rows are the log's, in the same order, and its turn column is
// client_turn, which turn names there too.
//
// It stops when ctx is done, returning ctx's error.
func Dump(ctx context.Context, out io.Writer, path string, columns []string) (int, error) {
	all := ColumnNames()
	var tableOnly []string
	for _, c := range columns {
		if !slices.Contains(all, c) {
			tableOnly = append(tableOnly, c)
		}
	}
	if len(tableOnly) > 0 {
		return dumpTable(ctx, out, path, columns, tableOnly, all)
	}
	f, err := infile.Open(path)
	if err != nil {
		return 0, fmt.Errorf("dump turn log: %w", err)
	}
	defer f.Close()
	lw := newLineWriter(out)
	scanErr := Scan(ctx, f, SizeOf(f), memory.DefaultAllocator, func(rec arrow.RecordBatch) error {
		return lw.write(rec, columns, nil)
	})
	rows := lw.rows
	if err := lw.bw.Flush(); err != nil {
		return rows, fmt.Errorf("dump turn log %q: %w", path, err)
	}
	if scanErr = CheckRecovered(scanErr, rows); scanErr != nil {
		return rows, fmt.Errorf("dump turn log %q: %w", path, scanErr)
	}
	return rows, nil
}

// dumpTable is Dump of columns read from the analysis table beside the log at
// path (tableOnly are those the log lacks).
func dumpTable(ctx context.Context, out io.Writer, path string, columns, tableOnly, logColumns []string) (int, error) {
	table := filepath.Join(filepath.Dir(path), TableFile)
	f, err := infile.Open(table)
	if err != nil {
		return 0, fmt.Errorf("dump turn log %q: column %s is not in the turn log (columns: %s) but in the analysis table %s, which cannot be read (exporting the log writes it): %w",
			path, strings.Join(tableOnly, ", "), strings.Join(logColumns, ","), table, err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return 0, fmt.Errorf("dump analysis table %q: %w", table, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.DefaultAllocator)
	if err != nil {
		return 0, fmt.Errorf("dump analysis table %q: %w", table, err)
	}
	schema, err := fr.Schema()
	if err != nil {
		return 0, fmt.Errorf("dump analysis table %q: %w", table, err)
	}
	// turn is client_turn in the table.
	alias := map[string]string{}
	var names []string
	for _, c := range columns {
		if len(schema.FieldIndices(c)) == 0 && c == "turn" {
			alias[c] = "client_turn"
		}
		if n := cmp.Or(alias[c], c); len(schema.FieldIndices(n)) == 0 {
			names = append(names, c)
		}
	}
	if len(names) > 0 {
		have := make([]string, 0, schema.NumFields())
		for _, fd := range schema.Fields() {
			have = append(have, fd.Name)
		}
		return 0, fmt.Errorf("dump turn log %q: unknown column %s (the turn log's columns: %s; its analysis table's: %s)",
			path, strings.Join(names, ", "), strings.Join(logColumns, ","), strings.Join(have, ","))
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return 0, fmt.Errorf("dump analysis table %q: %w", table, err)
	}
	defer rr.Release()
	lw := newLineWriter(out)
	for rr.Next() {
		if err := ctx.Err(); err != nil {
			return lw.rows, err
		}
		if err := lw.write(rr.RecordBatch(), columns, alias); err != nil {
			return lw.rows, fmt.Errorf("dump analysis table %q: %w", table, err)
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return lw.rows, fmt.Errorf("dump analysis table %q: %w", table, err)
	}
	if err := lw.bw.Flush(); err != nil {
		return lw.rows, fmt.Errorf("dump analysis table %q: %w", table, err)
	}
	return lw.rows, nil
}

// lineWriter writes records' rows as JSON Lines.
type lineWriter struct {
	bw   *bufio.Writer
	line []byte
	rows int
}

func newLineWriter(out io.Writer) *lineWriter {
	return &lineWriter{bw: bufio.NewWriterSize(out, 256<<10)}
}

// write writes rec's rows, the columns names (all, in schema order, when none),
// each read from the column alias names when it names one.
func (lw *lineWriter) write(rec arrow.RecordBatch, names []string, alias map[string]string) error {
	if len(names) == 0 {
		names = make([]string, 0, rec.NumCols())
		for _, fd := range rec.Schema().Fields() {
			names = append(names, fd.Name)
		}
	}
	cols := make([]arrow.Array, len(names))
	keys := make([][]byte, len(names))
	for j, n := range names {
		idx := rec.Schema().FieldIndices(cmp.Or(alias[n], n))
		if len(idx) == 0 {
			return fmt.Errorf("turn log lacks column %q", n)
		}
		cols[j] = rec.Column(idx[0])
		k, _ := json.Marshal(n)
		keys[j] = k
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		lw.line = append(lw.line[:0], '{')
		for j, c := range cols {
			if j > 0 {
				lw.line = append(lw.line, ',')
			}
			lw.line = append(lw.line, keys[j]...)
			lw.line = append(lw.line, ':')
			v, err := json.Marshal(c.GetOneForMarshal(i))
			if err != nil {
				return fmt.Errorf("encode column %q row %d: %w", names[j], i, err)
			}
			lw.line = append(lw.line, v...)
		}
		lw.line = append(lw.line, '}', '\n')
		if _, err := lw.bw.Write(lw.line); err != nil {
			return err
		}
		lw.rows++
	}
	return nil
}
