package score_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/scoretest"
)

// tiledDataset ingests the shared sample tiled `times` times.
func tiledDataset(b *testing.B, times int) (string, *datasets.Dataset) {
	return tiledDatasetT(b, times)
}

func tiledDatasetT(b testing.TB, times int) (string, *datasets.Dataset) {
	b.Helper()
	dir := b.TempDir()
	tiled := filepath.Join(dir, "tiled.jsonl")
	if err := scoretest.TileTrace(testenv.SampleFlat(b), tiled, times); err != nil {
		b.Fatal(err)
	}
	ds := filepath.Join(dir, "ds")
	d := scoretest.Ingest(b, ds, tiled)
	os.Remove(tiled)
	return ds, d
}

// BenchmarkScoreRun30k scores a 30,210-turn run (the sample tiled 30 times)
// without a tokenizer: load the dataset's ground truth, read turns.arrows, score,
// and write scores.json and scores.parquet. The goal is under 2 s.
func BenchmarkScoreRun30k(b *testing.B) {
	ds, d := tiledDataset(b, 30)
	run := filepath.Join(b.TempDir(), "run")
	n, err := scoretest.WriteRun(run, ds, d, scoretest.RunOptions{Fidelity: 0.7, FailRate: 0.01, Seed: 1, Model: "Qwen/Qwen3.6-35B-A3B", Concurrency: 64})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n), "turns")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := score.ScoreRun(context.Background(), score.Options{Run: run})
		if err != nil {
			b.Fatal(err)
		}
		if err := score.WriteScores(context.Background(), run, s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRescore scores 20 archived runs (3 passes over the sample each) with 1
// and 2 jobs.
func BenchmarkRescore(b *testing.B) {
	ds, d := tiledDataset(b, 1)
	archive := b.TempDir()
	for i := 0; i < 20; i++ {
		if _, err := scoretest.WriteRun(filepath.Join(archive, fmt.Sprintf("run%02d", i)), ds, d,
			scoretest.RunOptions{Repeats: 3, Fidelity: 0.5, Seed: uint64(i), Model: "Qwen/Qwen3.6-35B-A3B", Concurrency: 8 << (i % 5)}); err != nil {
			b.Fatal(err)
		}
	}
	for _, jobs := range []int{1, 2} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				rows, err := score.Rescore(context.Background(), score.RescoreOptions{Archives: []string{archive}, Jobs: jobs})
				if err != nil || len(rows) != 20 || rows[0].Error != "" {
					b.Fatalf("%v %d %+v", err, len(rows), rows)
				}
			}
		})
	}
}
