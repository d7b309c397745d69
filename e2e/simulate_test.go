package e2e

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/replay"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/agentrace/agentrace/simserver"
	"github.com/agentrace/agentrace/simulate"
)

// TestSimulateAgreesWithRealTime replays a small synthetic dataset closed-loop
// against the real-time sim (speedup 10) and simulates the same dataset and
// settings in virtual time: one model, so their system tokens/s (the real-time
// run's divided by the speedup) agree within 5%, and so do the prefix-cache
// hit ratios.
func TestSimulateAgreesWithRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("a real-time replay of about 8 s")
	}
	dsDir, d := synthDataset(t, synth.Options{Scale: 0.02, Seed: 11})
	prof, err := simserver.LookupHardware(simserver.DefaultHardware)
	if err != nil {
		t.Fatal(err)
	}
	const speedup, c = 10, 4
	s, url := startSim(t, simserver.Config{Hardware: prof, Speedup: speedup, Dataset: d, Fidelity: 1, Seed: 3})
	run := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := replay.Run(ctx, replay.Options{Dataset: dsDir, Data: d, Endpoint: url, Out: run, Profile: "qwen3.6-35b-a3b",
		Concurrency: c, NoDelays: true, StreamUsage: true}); err != nil {
		t.Fatal(err)
	}
	real, err := curve.LoadPoint(ctx, run, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sampling, err := datasets.LookupProfile("qwen3.6-35b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	virt, err := simulate.Run(ctx, simulate.Options{Hardware: prof, Data: d, Concurrency: c, NoDelays: true, Fidelity: 1, Seed: 3, Sampling: &sampling})
	if err != nil {
		t.Fatal(err)
	}
	// Wall seconds are modelled seconds / speedup: modelled tokens/s are the wall
	// figure / speedup, modelled latencies the wall ones × speedup (which then
	// include the client's and the HTTP server's own wall time, × 10).
	realTPS := float64(real.SystemTPS) / speedup
	t.Logf("real time (x%d): system %.0f tok/s, TTFT p50 %.1f ms, TPOT p50 %.2f ms, hit %.3f, %d window turns, sim lag %.3f s",
		speedup, realTPS, float64(real.TTFTP50Ms)*speedup, float64(real.TPOTP50Ms)*speedup, float64(real.PrefixCacheHitRatio), real.Completed, s.Stats().LagSeconds)
	t.Logf("virtual time: system %.0f tok/s, TTFT p50 %.1f ms, TPOT p50 %.2f ms, hit %.3f, %d window turns, %.2f s wall",
		float64(virt.SystemTPS), float64(virt.TTFTP50Ms), float64(virt.TPOTP50Ms), float64(virt.PrefixCacheHitRatio), virt.WindowTurns, virt.WallSeconds)
	if lag := s.Stats().LagSeconds; lag > 0.1 {
		// A starved sim runs its steps late and the client's wall clock counts the
		// delay: the run no longer measures the model.
		t.Skipf("the real-time sim fell %.2f s behind the modelled pace (a loaded machine): its run is not the model's", lag)
	}
	if d := math.Abs(realTPS-float64(virt.SystemTPS)) / float64(virt.SystemTPS); d > 0.05 {
		t.Errorf("system tok/s: real time %.0f, virtual time %.0f: %.1f%% apart (> 5%%)", realTPS, float64(virt.SystemTPS), 100*d)
	}
	if d := math.Abs(float64(real.PrefixCacheHitRatio - virt.PrefixCacheHitRatio)); d > 0.01 {
		t.Errorf("prefix-cache hit ratio: real time %.3f, virtual time %.3f", float64(real.PrefixCacheHitRatio), float64(virt.PrefixCacheHitRatio))
	}
}
