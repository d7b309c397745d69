package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/internal/testenv"
)

// TestProgressLines ingests gzipped synthetic traces with a slow ISL counter and
// reads the progress lines: the phase, compressed and decompressed bytes of the
// input's total, rows validated, conversations built, turns tokenized of the
// turns seen, conversations written, an ETA while working, and a final line with
// everything done and the time taken.
func TestProgressLines(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "synth.jsonl")
	sum, err := synth.WriteFile(context.Background(), plain, synth.Options{CodingScale: 0.01, WorkflowScale: 0.02, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	gz := filepath.Join(dir, "synth.jsonl.gz")
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(data)
	zw.Close()
	if err := os.WriteFile(gz, zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out testenv.SyncBuffer
	slow := func(msgs, tools []byte) (int, error) {
		time.Sleep(3 * time.Millisecond)
		return len(msgs), nil
	}
	_, err = Run(context.Background(), Options{Out: filepath.Join(dir, "ds"), Inputs: []string{gz}, isl: slow, islName: "bytes",
		Workers: 1, Progress: &out, ProgressEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 10 {
		t.Fatalf("%d progress lines for %d turns at 3 ms each and a line every 20 ms:\n%s", len(lines), sum.ClientTurns(), out.String())
	}
	var sawETA, sawTokenizing bool
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "ingest [") || !strings.Contains(l, " MB of ") || !strings.Contains(l, "MB decompressed") ||
			!strings.Contains(l, "rows validated") || !strings.Contains(l, "conversations built") || !strings.Contains(l, "turns tokenized") {
			t.Errorf("progress line lacks a count: %q", l)
		}
		sawETA = sawETA || strings.Contains(l, "; ETA ")
		sawTokenizing = sawTokenizing || strings.Contains(l, "turns tokenized") && !strings.Contains(l, " 0/0 turns")
	}
	if !sawETA || !sawTokenizing {
		t.Errorf("no line with an ETA (%v) or turns being tokenized (%v):\n%s", sawETA, sawTokenizing, out.String())
	}
	last := lines[len(lines)-1]
	t.Logf("%d lines, e.g.\n%s\n%s\n%s", len(lines), lines[len(lines)/3], lines[2*len(lines)/3], last)
	turns := count(int64(sum.ClientTurns()))
	for _, want := range []string{"ingest [done]", turns + "/" + turns + " turns tokenized", count(int64(sum.Conversations)) + " written", count(int64(sum.Rows)) + " rows validated", mb(int64(len(data))) + " decompressed", " in "} {
		if !strings.Contains(last, want) {
			t.Errorf("final line %q lacks %q", last, want)
		}
	}
}

// TestProgressPhases: the phase named is the earliest stage not finished, and
// the ETA follows the rate of the measure of the moment.
func TestProgressPhases(t *testing.T) {
	var p progressCounts
	var in, written atomic.Int64
	t0 := time.Unix(1000, 0)
	p.begin, p.total = t0, 1000
	p.etaFrom, p.eta = "read", etaState{t0: t0}
	in.Store(250)
	p.data.Store(1000) // decompresses 4x: 4000 bytes in all
	p.doneData.Store(1000)
	p.flat.Store(true)
	p.queued.Store(10)
	p.turns.Store(100)
	p.validated.Store(10)
	p.built.Store(10)
	p.tokenized.Store(40)
	written.Store(9)
	s := p.status(&in, &written, true, t0.Add(10*time.Second))
	// A quarter done in 10 s: 30 s left.
	if !strings.HasPrefix(s, "ingest [read] read 0.0 MB of 0.0 MB (0.0 MB decompressed)") || !strings.HasSuffix(s, "; ETA 30s") {
		t.Errorf("reading: %q", s)
	}
	p.readDone(t0.Add(10 * time.Second))
	for _, c := range []struct {
		validated, built, tokenized int64
		want                        string
	}{
		{9, 9, 40, "[validate]"}, {10, 9, 40, "[build]"}, {10, 10, 40, "[tokenize]"}, {10, 10, 100, "[write]"},
	} {
		p.validated.Store(c.validated)
		p.built.Store(c.built)
		p.tokenized.Store(c.tokenized)
		if s := p.status(&in, &written, true, t0.Add(11*time.Second)); !strings.Contains(s, c.want) {
			t.Errorf("%+v: %q", c, s)
		}
	}
	// Tokenizing: the measure restarted when reading ended (at 11 s, 40 of 100
	// turns): 35 more in 19 s, 25 left.
	p.tokenized.Store(75)
	if s := p.status(&in, &written, true, t0.Add(30*time.Second)); !strings.Contains(s, "[tokenize]") || !strings.HasSuffix(s, "; ETA 14s") {
		t.Errorf("tokenizing: %q", s)
	}
	p.phase.Store(phaseTables)
	p.tokenized.Store(100)
	written.Store(10)
	if s := p.status(&in, &written, true, t0.Add(31*time.Second)); !strings.Contains(s, "[write]") || !strings.Contains(s, "finishing the Parquet tables") || strings.Contains(s, "ETA") {
		t.Errorf("tables: %q", s)
	}
	p.phase.Store(phaseDone)
	if s := p.status(&in, &written, true, t0.Add(95*time.Second)); !strings.HasPrefix(s, "ingest [done]") || !strings.HasSuffix(s, "10 written in 1m35s") {
		t.Errorf("done: %q", s)
	}
	if got := count(1234567); got != "1,234,567" {
		t.Errorf("count = %q", got)
	}
}
