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
			"Token counts are made with --tokenizer (a model folder, or a Hugging Face model id in the\n" +
			"local cache), else with .cache/tokenizers/qwen3 when present (`make tokenizers`: Qwen3's\n" +
			"tokenizer, an offline stand-in for Qwen3.6's), else from the server's usage counts. They\n" +
			"are official only with the model's own tokenizer (the digests its ruleset records): the\n" +
			"table says which tokenizer counted, its digest, and \"stand-in, not the model's tokenizer\"\n" +
			"when it is not the model's.\n\n" +
			"Example:\n" +
			"  agentrace demo --out demo-out && xdg-open demo-out/report/report.html",
		Flags: []cli.Flag{
			outFlagDefault("write traces, dataset, runs and report under `DIR` (an earlier demo's output there is replaced)", "demo-out"),
			&cli.Float64Flag{Name: "coding-scale", Value: tour.DefaultCodingScale, Usage: "synth scale of the coding domain (0.01: one trajectory of about 140 turns)"},
			&cli.Float64Flag{Name: "workflow-scale", Value: tour.DefaultWorkflowScale, Usage: "synth scale of the workflow domain (0.02: 10 trajectories of about 9 turns)"},
			&cli.Uint64Flag{Name: "seed", Value: tour.DefaultSeed, Usage: "synth seed"},
			&cli.IntSliceFlag{Name: "concurrency", Value: tour.DefaultConcurrencies(), Usage: "sweep points"},
			&cli.StringFlag{Name: "hardware", Usage: "the simulated server's hardware and model `NAME` (default: the sim's H200 / Qwen3.6-35B-A3B)"},
			&cli.Float64Flag{Name: "speedup", Value: tour.DefaultSpeedup, Usage: "divide modelled server times and the trace delays by `X`"},
			&cli.Float64Flag{Name: "fidelity", Value: tour.DefaultFidelity, Usage: "probability the server answers with the recorded message"},
			tokenizerFlag("tokenizer `FOLDER|MODEL-ID` for the token counts (default: .cache/tokenizers/qwen3, the offline stand-in, when present)", false),
			tokenizerRevisionFlag(),
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.NArg() > 0 {
				return argsError("demo", "unexpected argument %q (demo takes flags only)", c.Args().First())
			}
			// Zero is the library's "default": given on the command line, it is refused.
			for _, name := range []string{"speedup", "coding-scale", "workflow-scale"} {
				if c.IsSet(name) && c.Float64(name) == 0 {
					return argsError("demo", "--%s 0: want a positive number", name)
				}
			}
			tok, err := tokenizerArg(c)
			if err != nil {
				return err
			}
			_, err = tour.Run(ctx, tour.Options{
				Out: c.String("out"), CodingScale: c.Float64("coding-scale"), WorkflowScale: c.Float64("workflow-scale"), Seed: c.Uint64("seed"),
				Concurrencies: c.IntSlice("concurrency"), Hardware: c.String("hardware"),
				Speedup: c.Float64("speedup"), Fidelity: c.Float64("fidelity"), Tokenizer: tok,
				Progress: os.Stderr, TTY: progress.IsTerminal(os.Stderr), Events: events(c),
				// A second Ctrl-C cuts the sweep's turns in flight at once; the tour
				// still puts the earlier demo's entries back before it exits.
				Force: interrupt.FromContext(ctx).Force(),
			})
			return runStatus(err)
		},
	}
}
