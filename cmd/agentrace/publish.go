package main

import (
	"context"

	"github.com/agentrace/agentrace/submission"
	"github.com/urfave/cli/v3"
)

func publishCommand() *cli.Command {
	return &cli.Command{
		Name:      "publish",
		Usage:     "write into agentrace runs what the reference client and the submission tools write for theirs",
		UsageText: "agentrace publish [--cmax N] [--ruleset NAME] [--tokenizer DIR] RUNDIR|SWEEPDIR...",
		Description: "Lays an agentrace run folder out as the reference client lays out its run folder, so that\n" +
			"archive readers, the submission checker and `agentrace audit` read it as they read a reference\n" +
			"one. Writes, in each run folder:\n" +
			"  performance/result_summary.json   the reference's summary, counted as it counts: issued includes\n" +
			"                                    turns skipped after a failure, completed includes failed turns;\n" +
			"                                    TTFT/TPOT/latency/ISL/OSL blocks with its 12 percentiles\n" +
			"                                    (\"99.9\"..\"1.0\"), 30 log-spaced histogram buckets and early-stopping\n" +
			"                                    estimates, finish_reason_counts, run_config; plus system_tps,\n" +
			"                                    tps_per_user, e2e_avg_interactivity and\n" +
			"                                    output_sequence_lengths_full_run, which the checker reads\n" +
			"  accuracy/accuracy_results.json    the per-dataset entries, from the run's scores.json (run\n" +
			"                                    `agentrace score` first; a swe_bench entry when it had --swebench)\n" +
			"  point.yaml                        the point's §8.3 file as the checker reads it, with the region it\n" +
			"                                    falls in; what only the submitter knows is left out (agentrace\n" +
			"                                    submit writes the whole submission tree with it)\n" +
			"and in a sweep folder sweep_summary.csv (one row per point: the headline figures, inline accuracy,\n" +
			"gates and the curve's verdict). A file agentrace did not write is never replaced; its own earlier\n" +
			"ones are. Token counts are official with --tokenizer (else as the runs' scores.json recorded,\n" +
			"else server usage, marked unofficial).\n\n" +
			"Examples:\n" +
			"  agentrace score --tokenizer .cache/tokenizers/qwen3 sweep-out/c*\n" +
			"  agentrace publish --tokenizer .cache/tokenizers/qwen3 --cmax 256 sweep-out\n" +
			"  agentrace audit --tokenizer .cache/tokenizers/qwen3 sweep-out",
		Flags: []cli.Flag{
			cmaxFlag("declared maximum supported concurrency C_max (default: the highest point)", false),
			rulesetFlag("ruleset judging the curve (auto: the runs' scores.json ruleset, else the newest naming their model)"),
			tokenizerFlag("reference tokenizer folder for official token counts"+recordedDefault, false),
			tokenizerRevisionFlag(),
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			tokDir, runs, err := countingTokenizer(c, "no run or sweep folder given", false)
			if err != nil {
				return err
			}
			_, err = submission.Publish(ctx, submission.PublishOptions{
				Runs: runs, CMax: int(c.Int("cmax")), Ruleset: curveRuleset(c),
				TokenizerDir: tokDir, Events: prefixed(c, "publish"),
			})
			return err
		},
	}
}
