package ingest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
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
