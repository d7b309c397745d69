package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/internal/english"
	"github.com/urfave/cli/v3"
)

func synthCommand() *cli.Command {
	return &cli.Command{
		Name:      "synth",
		Usage:     "generate synthetic agentic traces (flat JSONL) shaped like the MLPerf dataset",
		UsageText: "agentrace synth [--shape NAME] [--scale F] [--seed N] --out FILE.jsonl [--overwrite]",
		Description: "Writes coding trajectories (SWE-style tasks worked through a bash tool) and workflow\n" +
			"trajectories (customer-service chats, ids sim_NNNNNN, with intent codes) in the MLPerf flat\n" +
			"JSONL form, with the published dataset's shape: at scale 1, " + defaultShapeSize() + ",\n" +
			"and a per-turn mean output length of about 395 Qwen3 tokens. The output is the same for\n" +
			"the same seed; its first line (dataset_metadata) records the shape, each domain's scale\n" +
			"and the seed.\n\n" +
			"Example:\n" +
			"  agentrace synth --scale 0.1 --seed 7 --out traces.jsonl\n" +
			"  agentrace ingest --out ds traces.jsonl && agentrace stats --dataset ds",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "shape", Value: synth.DefaultShape, Usage: "target shape `NAME` (only " + synth.DefaultShape + " for now)"},
			&cli.Float64Flag{Name: "scale", Value: 1, Usage: "multiply both domains' trajectory counts by `F` (at least one of each when F > 0)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed; the same seed gives the same file"},
			&cli.StringSliceFlag{Name: "domain", Usage: "generate only this domain (coding or workflow); repeatable"},
			outFlag("write the JSONL here (`FILE`)"),
		}, overwriteFlags("a JSONL file agentrace wrote")...),
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.NArg() > 0 {
				return argsError("synth", "unexpected argument %q (use --out FILE)", c.Args().First())
			}
			s, err := synth.WriteFile(ctx, c.String("out"), synth.Options{
				Shape: c.String("shape"), Scale: c.Float64("scale"), Seed: c.Uint64("seed"), Domains: c.StringSlice("domain"),
				Overwrite: overwrite(c),
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "synth: wrote %s: %s (%d coding, %d workflow), %s (%d coding, %d workflow), %s, %.1f MB\n",
				c.String("out"), english.Count(s.Conversations, "trajectory", "trajectories"), s.Coding, s.Workflow,
				english.Count(s.ClientTurns(), "client turn", "client turns"), s.CodingTurns, s.WorkflowTurns, english.Count(s.Rows, "row", "rows"), float64(s.Bytes)/1e6)
			return nil
		},
	}
}

// defaultShapeSize words the default shape's size at scale 1, the published table's
// (datasets.PublishedTable).
func defaultShapeSize() string {
	p, err := synth.LookupShape(synth.DefaultShape)
	if err != nil {
		return "the published table's"
	}
	return fmt.Sprintf("%d coding trajectories with\n%s client turns and %d workflow trajectories with %s",
		p.Coding, english.Thousands(float64(p.CodingTurns), 0), p.Workflow, english.Thousands(float64(p.WorkflowTurns), 0))
}
