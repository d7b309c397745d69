package runlog_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/scoretest"
)

// BenchmarkWriteTable30k writes the analysis table (turns.parquet) of a
// 30,210-turn run: the shared sample tiled 30 times, its outputs the dataset's
// (scoretest.WriteRun), rewritten as a replay writes its log: times on the run
// clock, one chunk time per completion token, a batch every 16 rows.
func BenchmarkWriteTable30k(b *testing.B) {
	dir := b.TempDir()
	tiled := filepath.Join(dir, "tiled.jsonl")
	if err := scoretest.TileTrace(testenv.SampleFlat(b), tiled, 30); err != nil {
		b.Fatal(err)
	}
	ds := filepath.Join(dir, "ds")
	d := scoretest.Ingest(b, ds, tiled)
	run := filepath.Join(dir, "run")
	n, err := scoretest.WriteRun(run, ds, d, scoretest.RunOptions{Fidelity: 0.7, FailRate: 0.01, Seed: 1, Model: "m", Concurrency: 64})
	if err != nil {
		b.Fatal(err)
	}
	logPath := filepath.Join(run, schemas.TurnLogFile)
	recs, err := runlog.ReadFile(context.Background(), logPath)
	if err != nil {
		b.Fatal(err)
	}
	lf, err := runlog.Create(logPath, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range recs {
		r := &recs[i]
		if r.IssuedNs > 0 {
			r.ScheduledNs, r.HeadersNs, r.FirstTokenNs = r.IssuedNs-3, r.IssuedNs+40, r.IssuedNs+90
			for k := range min(int(r.UsageCompletionTokens), 4096) {
				r.ChunkTimesNs = append(r.ChunkTimesNs, r.FirstTokenNs+int64(k)*20)
			}
		}
		if err := lf.Write(r); err != nil {
			b.Fatal(err)
		}
		if i%16 == 15 {
			if err := lf.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := lf.Close(); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "turns.parquet")
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		info, err := runlog.WriteTable(context.Background(), out, []runlog.TableRun{{Dir: run}}, runlog.TableOptions{})
		if err != nil || info.Rows != n {
			b.Fatalf("%v %+v", err, info.Rows)
		}
	}
	b.StopTimer()
	// CPU time (user and system, every thread): the machine is shared, wall time
	// says more about the others' load than about this code
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(n), "turns")
	st, _ := os.Stat(logPath)
	b.ReportMetric(float64(st.Size())/(1<<20), "log-MiB")
	st, _ = os.Stat(out)
	b.ReportMetric(float64(st.Size())/(1<<20), "table-MiB")
}

// cpuTime is the process's CPU time so far, in nanoseconds.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
