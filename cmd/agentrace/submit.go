package main

import (
	"context"
	"fmt"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/submission"
	"github.com/urfave/cli/v3"
)

func submitCommand() *cli.Command {
	return &cli.Command{
		Name:      "submit",
		Usage:     "lay sweeps out as the submission tree the MLCommons submission checker reads",
		UsageText: "agentrace submit --out ROOT [--submitter FILE] [--tokenizer DIR] [--ruleset NAME] [--overwrite] SWEEP...",
		Description: "Writes ROOT (the submission's <submission_id>/ folder) from scored agentrace sweeps:\n" +
			"  results/<system>/<model>/r<N>/   point.yaml (§8.3), result_summary.json, accuracy_results.json\n" +
			"                                   and system_desc.json (§8.2, with the point's tps_utilization)\n" +
			"  results/<system>/system_power.json   the power descriptor, where the division needs it\n" +
			"  docs/README.md, src/agentrace/README.md\n" +
			"<model> is the checker's name of the served model (qwen3_6-35b-a3b, ...), <system> the system\n" +
			"description's system_name. The submitter file (YAML) gives what only the submitter knows:\n" +
			"system (the §8.2 description), division, model_precision, link_to_model, checkpoint (name,\n" +
			"revision), speculative_decoding (none, or model_id and weight_checksum), dataset_link,\n" +
			"target_cohort, swebench_template and power. Nothing is invented: without --submitter, or where\n" +
			"the file leaves a field open, the tree is written without it, the list of what is missing is\n" +
			"printed, and the command exits 1. Run `agentrace score` on every point first. ROOT may not be\n" +
			"or sit inside an input; an earlier tree there is replaced only with --overwrite.\n\n" +
			"Examples:\n" +
			"  agentrace score --tokenizer .cache/tokenizers/qwen3 sweep/c*\n" +
			"  agentrace submit --submitter submitter.yaml --tokenizer .cache/tokenizers/qwen3 --out acme/sub-1 sweep",
		Flags: append([]cli.Flag{
			outFlag("submission root to write (results/, docs/, src/)"),
			&cli.StringFlag{Name: "submitter", Usage: "submitter file (YAML): what only the submitter knows"},
			tokenizerFlag("reference tokenizer folder for official token counts", false),
			tokenizerRevisionFlag(),
			rulesetFlag("ruleset judging the curves (auto: the runs' scores.json ruleset, else the newest naming their model)"),
		}, overwriteFlags("a submission tree")...),
		Action: func(ctx context.Context, c *cli.Command) error {
			tokDir, sweeps, err := tokenizerAndArgs(c, "no sweep folder given")
			if err != nil {
				return err
			}
			var sub *submission.Submitter
			if f := c.String("submitter"); f != "" {
				if sub, err = submission.ReadSubmitter(ctx, f); err != nil {
					return err
				}
			}
			res, err := submission.Build(ctx, submission.Options{
				Out: c.String("out"), Overwrite: overwrite(c), Sweeps: sweeps, Submitter: sub, SubmitterFile: c.String("submitter"),
				TokenizerDir: tokDir, Ruleset: curveRuleset(c), Events: prefixed(c, "submit"),
			})
			if err != nil {
				return err
			}
			w := c.Root().Writer
			points := 0
			for _, cv := range res.Curves {
				points += len(cv.Points)
			}
			fmt.Fprintf(w, "submission tree: %s (%s in %s)\n", res.Root, english.Count(points, "point", "points"), english.Count(len(res.Curves), "curve", "curves"))
			if len(res.Missing) == 0 {
				return nil
			}
			fmt.Fprintf(w, "left open (%d), to give in the submitter file or to run first:\n", len(res.Missing))
			for _, m := range res.Missing {
				fmt.Fprintf(w, "  - %s\n", m)
			}
			return withStatus(exitNo, fmt.Errorf("submit: the tree is written without %d things left open (listed above)", len(res.Missing)))
		},
	}
}
