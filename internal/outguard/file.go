package outguard

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/schemas"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
)

// TraceGenerator is the value a JSONL trace file agentrace writes carries in the
// generator member of its first line, a dataset_metadata record, followed by a
// space and the command ("agentrace synth", "agentrace export").
const TraceGenerator = "agentrace"

// ParquetMetadata is the Parquet writer option that marks a Parquet file as
// agentrace's output of kind (footer key ParquetKey).
func ParquetMetadata(kind Kind) parquet.WriterOption {
	return parquet.KeyValueMetadata(ParquetKey, kind.Name)
}

// WriteParquet writes rows (a Go struct whose parquet tags are its columns) as a
// Parquet table to path, atomically (AtomicWrite), compressed with codec and
// marked as agentrace's output of kind: the one path of agentrace's tables of
// rows (scores, rescore results, a report's points, an audit). The turn log's
// analysis table, built from Arrow records, goes through pqarrow instead
// (runlog.WriteTable), and a dataset's tables stream row by row (datasets.Writer).
func WriteParquet[T any](path string, kind Kind, rows []T, codec compress.Codec) error {
	return AtomicWrite(path, func(w io.Writer) error {
		pw := parquet.NewGenericWriter[T](w, parquet.Compression(codec),
			parquet.CreatedBy("agentrace", schemas.ToolVersion, ""), ParquetMetadata(kind))
		// One row a call: given several, parquet-go (v0.32.1) writes some
		// zero values of an optional field that is not a pointer (null for a
		// missing value) as values.
		for k := range rows {
			if _, err := pw.Write(rows[k : k+1]); err != nil {
				return fmt.Errorf("write %q: %w", path, err)
			}
		}
		if err := pw.Close(); err != nil {
			return fmt.Errorf("close %q: %w", path, err)
		}
		return nil
	})
}

// FileKind returns the kind of output agentrace wrote in the file path ("" when
// it cannot tell): a Parquet file's ParquetKey, or Traces for a JSONL file whose
// first line is a dataset_metadata record with an agentrace generator.
func FileKind(path string) string {
	f, err := infile.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	head := make([]byte, 4)
	if _, err := io.ReadFull(f, head); err != nil {
		return ""
	}
	if string(head) == "PAR1" {
		pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
		if err != nil {
			return ""
		}
		v, _ := pf.Lookup(ParquetKey)
		return v
	}
	// The first line, up to 64 KiB.
	r := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(head), io.LimitReader(f, 64<<10)), 64<<10)
	line, err := r.ReadSlice('\n')
	if err != nil && err != io.EOF {
		return ""
	}
	var rec struct {
		Type      string `json:"_type"`
		Generator string `json:"generator"`
	}
	if json.Unmarshal(line, &rec) != nil || rec.Type != "dataset_metadata" {
		return ""
	}
	if rec.Generator == TraceGenerator || strings.HasPrefix(rec.Generator, TraceGenerator+" ") {
		return Traces.Name
	}
	return ""
}
