package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/simserver"
	"github.com/agentrace/agentrace/simulate"
	"github.com/agentrace/agentrace/tokens"
	"github.com/urfave/cli/v3"
)

func simulateCommand() *cli.Command {
	names := hardwareNames()
	return &cli.Command{
		Name:  "simulate",
		Usage: "predict a sweep on modelled hardware in virtual time (no server, no waiting)",
		UsageText: "agentrace simulate --dataset DIR --concurrency LIST [--hardware NAME] [--replicas N --routing R] [--json]\n" +
			"agentrace simulate --isl N --osl M [--requests K] --concurrency LIST [--hardware NAME] [--speculative off|mtp|eagle3]",
		Description: "Runs the embedded sim's scheduler and cost model (the model `agentrace sim` serves in real\n" +
			"time) as a discrete-event loop: no HTTP and no sleeping, so a full-size sweep to c=1024 takes\n" +
			"seconds. Every figure is modelled, in modelled seconds: nothing to divide.\n\n" +
			"With --dataset it drives the agentic closed loop as replay does (salts, delays, repeats,\n" +
			"--clear-generated-cache, the performance window) and computes each point's metrics with\n" +
			"report's code. With --isl/--osl it runs random prompts without shared prefixes, closed loop,\n" +
			"as serving benchmarks do (for calibration against published runs). --replicas N routes the\n" +
			"turns across N replicas, each with its own prefix cache: by session id (what X-Session-ID\n" +
			"lets a router do), round-robin or least-loaded.\n\n" +
			"Examples:\n" +
			"  agentrace simulate --dataset ds --concurrency 1,8,64,256\n" +
			"  agentrace simulate --isl 8192 --osl 1024 --concurrency 1,16 --hardware b200-qwen3.6-35b-a3b\n" +
			"  agentrace simulate --isl 8192 --osl 1024 --concurrency 1,16,256 --hardware 8xh200-kimi-k2.6 --speculative off\n" +
			"  agentrace simulate --dataset ds --concurrency 256 --replicas 4 --routing round-robin --json\n" +
			"  agentrace simulate --dataset ds --concurrency 1,8,64 --out sim-sweep && agentrace report --out rep sim-sweep\n\n" +
			"Hardware: " + strings.Join(names, ", ") + " (docs/simulator.md: what each models, and how it was fitted).",
		Flags: append([]cli.Flag{
			datasetFlag("agentic workload: the dataset `DIR` (an ingest output)", false),
			&cli.StringFlag{Name: "concurrency", Usage: "comma-separated concurrencies, e.g. 1,8,64", Required: true},
			&cli.IntFlag{Name: "isl", HideDefault: true, Usage: "random workload: prompt tokens `N` per request"},
			&cli.IntFlag{Name: "osl", HideDefault: true, Usage: "random workload: output tokens `M` per request"},
			&cli.IntFlag{Name: "requests", HideDefault: true, Usage: "random workload: requests `K` per point (default 10 x concurrency, 16 to 4096)"},
			&cli.StringFlag{Name: "hardware", Value: simserver.DefaultHardware, Usage: "simulated hardware and model `NAME` (" + strings.Join(names, ", ") + ")"},
			&cli.StringFlag{Name: "speculative", Usage: "speculative decoding: off, mtp (Qwen3.6's own layer) or eagle3 (Kimi K2.6's draft model); refused where the hardware's model has no such draft (default: the hardware's)"},
			&cli.FloatFlag{Name: "acceptance", HideDefault: true, Usage: "speculative draft acceptance rate `A` in [0, 1] (default: the hardware's)"},
			&cli.IntFlag{Name: "replicas", Value: 1, Usage: "replicas `N` of the hardware, each with its own scheduler and prefix cache"},
			&cli.StringFlag{Name: "routing", Value: simulate.RouteSession, Usage: "with --replicas: session, round-robin or least-loaded"},
			&cli.IntFlag{Name: "trajectories", HideDefault: true, Usage: "trajectories to start per point (default: one per conversation)"},
			&cli.BoolFlag{Name: "no-salt", Usage: "do not salt the system prompts (repeats then share the prefix cache)"},
			&cli.BoolFlag{Name: "no-delays", Usage: "send each turn as soon as the previous one completed"},
			&cli.FloatFlag{Name: "delay-scale", Value: 1, Usage: "multiply every recorded delay by `X`"},
			&cli.BoolFlag{Name: "clear-generated-cache", Usage: "send recorded assistant messages changed, as replay's flag, so generated tokens never hit the cache"},
			&cli.IntFlag{Name: "max-tokens", HideDefault: true, Usage: "max_completion_tokens for rows that set none (default: the sampling profile's)"},
			&cli.FloatFlag{Name: "fidelity", Value: 0.9, Usage: "probability `P` of the exact recorded answer"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of answers and draft acceptances"},
			tokenizerFlag("count and cache with the real tokenizer in `DIR`, instead of the pseudo-tokenizer", false),
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: 1, Usage: "points simulated at once, each with its own model (a full-size dataset point holds about 0.8 GB)"},
			jsonFlag("print the points as a JSON list"),
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, TakesFile: true,
				Usage: "with --dataset: also write each point as a run folder `SWEEPDIR`/c<N>/ (manifest.json, turns.arrows on the modelled clock) that score and report read"},
		}, overwriteFlags("sweep")...),
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.NArg() > 0 {
				return argsError("simulate", "unexpected argument %q (simulate takes flags only)", c.Args().First())
			}
			cs, err := parseConcurrencies(c.String("concurrency"))
			if err != nil {
				return usageErrorf("%v", strings.TrimPrefix(err.Error(), "sweep: "))
			}
			o, err := simulateOptions(ctx, c)
			if err != nil {
				return err
			}
			var pts []*simulate.Point
			if out := c.String("out"); out != "" {
				if o.Data == nil {
					return usageErrorf("--out writes the runs of a dataset workload: give --dataset")
				}
				pts, err = simulate.WriteSweep(ctx, o, cs, int(c.Int("jobs")), out, c.String("dataset"), overwrite(c))
			} else {
				pts, err = simulate.Sweep(ctx, o, cs, int(c.Int("jobs")))
			}
			if err != nil {
				return err
			}
			if c.Bool("json") {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(pts)
			}
			writeSimulateTable(os.Stdout, o, pts)
			return nil
		},
	}
}

// usageErrorf is a bad-usage error (exit status 2).
func usageErrorf(format string, a ...any) error { return argsError("simulate", format, a...) }

func simulateOptions(ctx context.Context, c *cli.Command) (simulate.Options, error) {
	p, err := simserver.LookupHardware(c.String("hardware"))
	if err != nil {
		return simulate.Options{}, usageErrorf("%v", err)
	}
	if p, err = p.WithSpeculative(c.String("speculative"), c.Float("acceptance")); err != nil {
		return simulate.Options{}, usageErrorf("%v", err)
	}
	o := simulate.Options{
		Hardware: p, ISL: int(c.Int("isl")), OSL: int(c.Int("osl")), Requests: int(c.Int("requests")),
		Replicas: int(c.Int("replicas")), Routing: c.String("routing"), Seed: int64(c.Uint64("seed")),
		Fidelity: c.Float("fidelity"), Trajectories: int(c.Int("trajectories")), NoSalt: c.Bool("no-salt"),
		NoDelays: c.Bool("no-delays"), DelayScale: c.Float("delay-scale"), ClearGeneratedCache: c.Bool("clear-generated-cache"),
		MaxTokens: int(c.Int("max-tokens")),
	}
	dir := c.String("dataset")
	switch {
	case dir != "" && (o.ISL != 0 || o.OSL != 0):
		return o, usageErrorf("give --dataset or --isl/--osl, not both")
	case dir == "" && (o.ISL < 1 || o.OSL < 1):
		return o, usageErrorf("give --dataset DIR, or --isl N and --osl M (both >= 1)")
	case o.Replicas < 1:
		return o, usageErrorf("--replicas %d: want >= 1", o.Replicas)
	case o.Routing != simulate.RouteSession && o.Routing != simulate.RouteRoundRobin && o.Routing != simulate.RouteLeastLoaded:
		return o, usageErrorf("--routing %q: want session, round-robin or least-loaded", o.Routing)
	}
	if err := o.Check(); err != nil {
		return o, usageErrorf("%v", err)
	}
	if dir != "" {
		if o.Data, err = datasets.Open(ctx, dir); err != nil {
			return o, err
		}
	}
	if t := c.String("tokenizer"); t != "" {
		tok, err := tokens.Load(ctx, t)
		if err != nil {
			return o, err
		}
		o.Tokenizer = tok
	}
	return o, nil
}

// writeSimulateTable prints the points, one line each.
func writeSimulateTable(w io.Writer, o simulate.Options, pts []*simulate.Point) {
	p := o.Hardware
	bound := "max-num-seqs"
	if s := p.StateSlots(); s > 0 && s < p.MaxNumSeqs {
		bound = "linear-attention state slots"
	}
	fmt.Fprintf(w, "modelled: %s; speculation %s; running batch at most %d (%s), KV pool %d tokens\n",
		p.Description, p.Speculative.String(), p.RunningLimit(), bound, p.KVBlocks*p.BlockSize)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "concurrency\tsystem tok/s\toutput tok/s\tinteractivity tok/s\tTTFT p50 ms\tTTFT p99 ms\tTPOT p50 ms\tcache hit\twindow turns\twindow s\twall s\t")
	for _, pt := range pts {
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%.2f\t%.3f\t%d\t%.1f\t%.2f\t\n", pt.Concurrency, float64(pt.SystemTPS), float64(pt.OutputTPS),
			float64(pt.E2EAvgInteractivity), float64(pt.TTFTP50Ms), float64(pt.TTFTP99Ms), float64(pt.TPOTP50Ms),
			float64(pt.PrefixCacheHitRatio), pt.WindowTurns, float64(pt.WindowDurationS), pt.WallSeconds)
	}
	tw.Flush()
	if o.Replicas > 1 {
		fmt.Fprintf(w, "%d replicas, routed by %s\n", o.Replicas, o.Routing)
	}
}
