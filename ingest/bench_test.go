package ingest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// BenchmarkIngestFile ingests the file named by AGENTRACE_BENCH_INPUT (skipped
// when unset); `make bench` measures the real sample tiled 30 times against DuckDB.
func BenchmarkIngestFile(b *testing.B) {
	in := os.Getenv("AGENTRACE_BENCH_INPUT")
	if in == "" {
		b.Skip("AGENTRACE_BENCH_INPUT not set")
	}
	st, err := os.Stat(in)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	dir := b.TempDir()
	for i := 0; b.Loop(); i++ {
		if _, err := Run(context.Background(), Options{Out: filepath.Join(dir, "ds"), Inputs: []string{in}, Overwrite: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseLines parses every line of the shared sample, flat and snapshot
// (the JSON part of ingest: validation and the row's fields).
func BenchmarkParseLines(b *testing.B) {
	var lines [][]byte
	var formats []string
	var size int64
	for _, f := range []struct{ path, format string }{{testenv.SampleFlat(b), FormatFlat}, {testenv.SampleSnapshot(b), FormatSnapshot}} {
		data, err := os.ReadFile(f.path)
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			lines, formats = append(lines, l), append(formats, f.format)
			size += int64(len(l))
		}
	}
	b.SetBytes(size)
	for b.Loop() {
		for i, l := range lines {
			if it := parseLine(l, int64(i+1), formats[i]); it.err != nil {
				b.Fatal(it.err)
			}
		}
	}
}
