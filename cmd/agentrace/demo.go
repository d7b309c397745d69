package main

import (
	"context"
	"os"

	"github.com/agentrace/agentrace/internal/interrupt"
	"github.com/agentrace/agentrace/internal/progress"
	"github.com/agentrace/agentrace/tour"
	"github.com/urfave/cli/v3"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:      "demo",
		Usage:     "the end-to-end tour: synthetic traces, the embedded sim, a 7-point sweep, scores and a report",
		UsageText: "agentrace demo [--out DIR] [--coding-scale F] [--workflow-scale F] [--speedup X] [--fidelity P] [--concurrency 1,2,4,...]",
		Description: "Runs the whole pipeline with nothing but Go, offline: synthesizes a small dataset with both\n" +
			"domains, ingests it and prints its statistics, starts the simulated endpoint on a free\n" +
			"loopback port, sweeps the concurrencies, scores each point and writes the report. It ends\n" +
			"with a table (concurrency, system tokens/s, e2e interactivity, inline accuracy, OSL mean,\n" +
			"verdict) and the path of report.html. Ctrl-C stops it and shuts the server down.\n\n" +
			"Token counts are official when the Qwen3 tokenizer is in .cache/tokenizers/qwen3\n" +
			"(`make tokenizers`, or --tokenizer DIR); otherwise the server's usage counts are used.\n\n" +
			"Example:\n" +
			"  agentrace demo --out demo-out && xdg-open demo-out/report/report.html",
		Flags: []cli.Flag{
			outFlagDefault("write traces, dataset, runs and report under `DIR` (an earlier demo's output there is replaced)", "demo-out"),
			&cli.Float64Flag{Name: "coding-scale", Value: tour.DefaultCodingScale, Usage: "synth scale of the coding domain (0.01: one trajectory of about 140 turns)"},
			&cli.Float64Flag{Name: "workflow-scale", Value: tour.DefaultWorkflowScale, Usage: "synth scale of the workflow domain (0.02: 10 trajectories of about 9 turns)"},
			&cli.Uint64Flag{Name: "seed", Value: tour.DefaultSeed, Usage: "synth seed"},
			&cli.IntSliceFlag{Name: "concurrency", Value: tour.DefaultConcurrencies(), Usage: "sweep points"},
			&cli.StringFlag{Name: "sim-profile", Usage: "simulated server profile (default: the sim's H200 / Qwen3.6-35B-A3B profile)"},
			&cli.Float64Flag{Name: "speedup", Value: tour.DefaultSpeedup, Usage: "divide modelled server times and the trace delays by `X`"},
			&cli.Float64Flag{Name: "fidelity", Value: tour.DefaultFidelity, Usage: "probability the server answers with the recorded message"},
			tokenizerFlag("Qwen3 tokenizer folder for official token counts (default: .cache/tokenizers/qwen3 when present)", false),
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.NArg() > 0 {
				return argsError("demo", "unexpected argument %q (demo takes flags only)", c.Args().First())
			}
			_, err := tour.Run(ctx, tour.Options{
				Out: c.String("out"), CodingScale: c.Float64("coding-scale"), WorkflowScale: c.Float64("workflow-scale"), Seed: c.Uint64("seed"),
				Concurrencies: c.IntSlice("concurrency"), SimProfile: c.String("sim-profile"),
				Speedup: c.Float64("speedup"), Fidelity: c.Float64("fidelity"), Tokenizer: c.String("tokenizer"),
				Progress: os.Stderr, TTY: progress.IsTerminal(os.Stderr),
				// A second Ctrl-C cuts the sweep's turns in flight at once; the tour
				// still puts the earlier demo's entries back before it exits.
				Force: interrupt.FromContext(ctx).Force(),
			})
			return err
		},
	}
}
