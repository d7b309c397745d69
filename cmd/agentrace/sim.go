package main

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"strings"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/simserver"
	"github.com/agentrace/agentrace/tokens"
	"github.com/urfave/cli/v3"
)

// simOptions are the flags of `agentrace sim`.
type simOptions struct {
	listen, hardware, dataset, fault, tokenizer, speculative string
	tokenizerRevision                                        string
	speedup, fidelity, outMean, outSigma, acceptance         float64
	outMin, outMax, maxConns                                 int
	seed                                                     uint64
}

// hardwareNames lists the simulated hardware by name, for --hardware's help.
func hardwareNames() []string {
	var names []string
	for _, p := range simserver.AllHardware() {
		names = append(names, p.Name)
	}
	return names
}

func simCommand() *cli.Command {
	var o simOptions
	def := simserver.DefaultOutputLength()
	names := hardwareNames()
	return &cli.Command{
		Name:      "sim",
		Usage:     "run the simulated OpenAI-compatible LLM server",
		UsageText: "agentrace sim [--listen ADDR] [--hardware NAME] [--speedup X] [--dataset DIR --fidelity P] [--fault SPEC]",
		Description: "Serves a model of an LLM server: prefill, continuous batching with chunked prefill,\n" +
			"a KV pool with a prefix cache (generated tokens included), preemption, and a bounded\n" +
			"queue. Endpoints: POST /v1/chat/completions (streaming and not), GET /v1/models,\n" +
			"GET /health, GET /metrics (vLLM-style names). Every modelled duration is divided by\n" +
			"--speedup; responses carry X-Sim-Speedup. `agentrace simulate` runs the same model in\n" +
			"virtual time; docs/simulator.md says how it is derived and fitted.\n\n" +
			"Example: serve the simulated H200 20 times faster than real time, answering with the\n" +
			"dataset's recorded messages 90% of the time, with 1% stream cuts:\n\n" +
			"  agentrace sim --listen 127.0.0.1:8000 --speedup 20 --dataset ds --fidelity 0.9 --fault cut=0.01\n\n" +
			"Bounded against hostile clients: a request body may be at most 32 bytes per token of the\n" +
			"hardware's context length (413 past it, before it is read when declared), tokenizing stops\n" +
			"at the context length, headers and body must arrive within 30 s, idle connections close\n" +
			"after 5 minutes, and a connection past --max-connections is answered 503.\n\n" +
			"Hardware: " + strings.Join(names, ", ") + ".",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8000", Usage: "serve on this `ADDR` (host:port)", Destination: &o.listen},
			&cli.StringFlag{Name: "hardware", Value: simserver.DefaultHardware, Usage: "simulated hardware and model `NAME` (" + strings.Join(names, ", ") + ")", Destination: &o.hardware},
			&cli.Float64Flag{Name: "speedup", Value: 1, Usage: "divide every modelled duration by `X` (a positive number: 1 is real time)", Destination: &o.speedup},
			&cli.StringFlag{Name: "speculative", Usage: "speculative decoding: off, mtp or eagle3 (default: the hardware's)", Destination: &o.speculative},
			&cli.Float64Flag{Name: "acceptance", HideDefault: true, Usage: "speculative draft acceptance rate `A` in [0, 1] (default: the hardware's)", Destination: &o.acceptance},
			withDest(datasetFlag("answer with the recorded assistant messages of dataset `DIR` (an ingest output)", false), &o.dataset),
			&cli.Float64Flag{Name: "fidelity", Value: 0.9, Usage: "with --dataset: probability `P` of the exact recorded answer (else a perturbed one)", Destination: &o.fidelity},
			&cli.StringFlag{Name: "fault", Usage: "inject faults: `SPEC` is NAME=RATE,... with NAME one of 5xx, 429, cut (stream cut half-way), malformed (one broken chunk), stall (a pause half-way; stall_s=SECONDS, default 60), e.g. 5xx=0.01,cut=0.01,stall=0.01,stall_s=30", Destination: &o.fault},
			withDest(tokenizerFlag("count and cache with the real tokenizer in `DIR` (tokenizer.json), instead of the pseudo-tokenizer", false), &o.tokenizer),
			withDest(tokenizerRevisionFlag(), &o.tokenizerRevision),
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of fault and fidelity draws and synthetic answers", Destination: &o.seed},
			&cli.Float64Flag{Name: "output-mean", Value: def.Mean, Usage: "mean length in tokens of synthetic answers (log-normal)", Destination: &o.outMean},
			&cli.Float64Flag{Name: "output-sigma", Value: def.Sigma, Usage: "shape of the synthetic answer length's log-normal (0: always the mean)", Destination: &o.outSigma},
			&cli.IntFlag{Name: "output-min", Value: def.Min, Usage: "shortest synthetic answer in tokens", Destination: &o.outMin},
			&cli.IntFlag{Name: "output-max", Value: def.Max, Usage: "longest synthetic answer in tokens", Destination: &o.outMax},
			&cli.IntFlag{Name: "max-connections", HideDefault: true, Usage: "open connections served at once; one more is answered 503 (default: 3/4 of the open-file limit)", Destination: &o.maxConns},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.NArg() > 0 {
				return argsError("sim", "unexpected argument %q (sim takes flags only)", c.Args().First())
			}
			if !(o.speedup > 0) || math.IsInf(o.speedup, 0) {
				return argsError("sim", "--speedup %v: want a finite positive number (1: real time, 20: twenty times faster)", o.speedup)
			}
			return runSim(ctx, o)
		},
	}
}

func runSim(ctx context.Context, o simOptions) error {
	p, err := simserver.LookupHardware(o.hardware)
	if err != nil {
		return err
	}
	if p, err = p.WithSpeculative(o.speculative, o.acceptance); err != nil {
		return argsError("sim", "%v", err)
	}
	faults, err := simserver.ParseFaults(o.fault)
	if err != nil {
		return err
	}
	cfg := simserver.Config{Hardware: p, Speedup: o.speedup, Fidelity: o.fidelity, Faults: faults, Seed: int64(o.seed),
		Output: simserver.OutputLength{Mean: o.outMean, Sigma: o.outSigma, Min: o.outMin, Max: o.outMax}, MaxConnections: o.maxConns}
	if err := cfg.Check(); err != nil {
		return argsError("sim", "%v", err)
	}
	if o.dataset != "" {
		if cfg.Dataset, err = datasets.Open(ctx, o.dataset); err != nil {
			return err
		}
	}
	if o.tokenizer != "" {
		dir, err := tokens.Resolve(o.tokenizer, o.tokenizerRevision)
		if err != nil {
			return err
		}
		tok, err := tokens.Load(ctx, dir)
		if err != nil {
			return err
		}
		cfg.Tokenizer = tok
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("sim listen %s: %w", o.listen, err)
	}
	fmt.Fprintf(os.Stderr, "agentrace sim: serving %s (hardware %s, speedup %g) on http://%s/v1\n", p.Model, p.Name, cfg.Speedup, ln.Addr())
	return simserver.Serve(ctx, ln, cfg)
}
