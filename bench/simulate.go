package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/simserver"
	"github.com/agentrace/agentrace/simulate"
)

// simulateGoal is modelled turns per wall second: the full-size dataset
// (20,297 client turns) in 10 s.
const simulateGoal = 2000

// sweepGoal is the wall time of a sweep of the full-size dataset to c=1024.
const sweepGoal = 60 * time.Second

// sweepConcurrencies are the points of the full-size sweep.
var sweepConcurrencies = []int{1, 16, 64, 256, 1024}

// fullSizeDataset writes the synthetic full-size dataset (synth at scale 1: 613
// trajectories) into the work folder once and opens it.
func fullSizeDataset(env Env) (*datasets.Dataset, error) {
	ctx := context.Background()
	dir := filepath.Join(env.Work, "simulate-ds")
	if _, err := os.Stat(dir); err != nil {
		trace := filepath.Join(env.Work, "simulate-full.jsonl")
		if _, err := synth.WriteFile(ctx, trace, synth.Options{Scale: 1, Seed: 1}); err != nil {
			return nil, err
		}
		if err := ingest.Files(ctx, dir, trace); err != nil {
			return nil, err
		}
	}
	return datasets.Open(context.Background(), dir)
}

// fullSizeOptions are the simulate settings both simulate rows model: the
// full-size dataset on the default H200 profile, 90% recorded answers, seed 1.
func fullSizeOptions(env Env) (simulate.Options, error) {
	d, err := fullSizeDataset(env)
	if err != nil {
		return simulate.Options{}, err
	}
	p, err := simserver.LookupHardware(simserver.DefaultHardware)
	if err != nil {
		return simulate.Options{}, err
	}
	return simulate.Options{Hardware: p, Data: d, Fidelity: 0.9, Seed: 1}, nil
}

// benchSimulateSweep measures a sweep of the full-size dataset to c=1024 on the
// default H200 profile, one point at a time (two jobs on the shared 2-CPU
// machine took longer: 104 s wall against 57 at load 7): wall and CPU seconds.
func benchSimulateSweep(env Env) (Row, error) {
	o, err := fullSizeOptions(env)
	if err != nil {
		return Row{}, err
	}
	const jobs = 1
	cpu0, wall0 := cpuTime(), time.Now()
	pts, err := simulate.Sweep(context.Background(), o, sweepConcurrencies, jobs)
	if err != nil {
		return Row{}, err
	}
	wall, cpu := time.Since(wall0), (cpuTime() - cpu0).Seconds()
	turns := 0
	for _, pt := range pts {
		turns += pt.Turns
	}
	return Row{
		Name: "simulate: synthetic full-size dataset swept at c=1,16,64,256,1024",
		Measured: fmt.Sprintf("%d modelled turns in %.1f s wall, %.1f s CPU (one point at a time; load %s)",
			turns, wall.Seconds(), cpu, loadAverage()),
		Ratio: fmt.Sprintf("%.2fx", sweepGoal.Seconds()/wall.Seconds()),
		Goal:  fmt.Sprintf("the sweep within %.0f s wall (goal / time >= 1.0x)", sweepGoal.Seconds()),
		Met:   wall <= sweepGoal,
	}, nil
}

// benchSimulate measures `agentrace simulate` on the synthetic full-size dataset
// (synth at scale 1: 613 trajectories) at concurrency 256 on the default H200
// profile: modelled turns per wall second and per CPU second.
func benchSimulate(env Env) (Row, error) {
	o, err := fullSizeOptions(env)
	if err != nil {
		return Row{}, err
	}
	o.Concurrency = 256
	cpu0, wall0 := cpuTime(), time.Now()
	pt, err := simulate.Run(context.Background(), o)
	if err != nil {
		return Row{}, err
	}
	wall, cpu := time.Since(wall0).Seconds(), (cpuTime() - cpu0).Seconds()
	perWall := float64(pt.Turns) / wall
	return Row{
		Name: "simulate: synthetic full-size dataset at c=256, modelled turns per wall second",
		Measured: fmt.Sprintf("%d turns (%.0f modelled s, system %.0f tok/s) in %.1f s wall, %.1f s CPU: %.0f turns/s wall, %.0f per CPU second (load %s)",
			pt.Turns, pt.ModelledSeconds, float64(pt.SystemTPS), wall, cpu, perWall, float64(pt.Turns)/cpu, loadAverage()),
		Ratio: fmt.Sprintf("%.2fx of goal", perWall/simulateGoal),
		Goal:  fmt.Sprintf(">= %d turns/s (the full-size dataset in 10 s)", simulateGoal),
		Met:   perWall >= simulateGoal,
	}, nil
}
