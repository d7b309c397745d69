package simulate

import (
	"context"
	"os"
	"testing"

	"github.com/agentrace/agentrace/datasets"
)

// BenchmarkDataset simulates the synthetic dataset in AGENTRACE_SIM_DATASET (or
// skips) at concurrency 256.
func BenchmarkDataset(b *testing.B) {
	dir := os.Getenv("AGENTRACE_SIM_DATASET")
	if dir == "" {
		b.Skip("AGENTRACE_SIM_DATASET not set")
	}
	d, err := datasets.Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	p := defaultHardware(b)
	for b.Loop() {
		pt, err := Run(context.Background(), Options{Hardware: p, Data: d, Concurrency: 256, Fidelity: 0.9, Seed: 1, Trajectories: 64})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(pt.Turns)/pt.WallSeconds, "turns/s")
	}
}
