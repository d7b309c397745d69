package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/agentrace/agentrace/score/checker"

	"github.com/agentrace/agentrace/audit"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/urfave/cli/v3"
)

func auditCommand() *cli.Command {
	return &cli.Command{
		Name:      "audit",
		Usage:     "re-derive every number a submission publishes from its raw events and compare",
		UsageText: "agentrace audit [--out DIR] [--overwrite] [--tokenizer DIR] [--dataset DS] [--ruleset NAME] [--cmax N] [--jobs N] [--all] [--json] RUN|SWEEP|TREE|ARCHIVE...",
		Description: "Reads reference client run folders (events.jsonl, performance/result_summary.json,\n" +
			"accuracy/accuracy_results.json), submission trees (<system>/<model>/r<N>/ points with point.yaml,\n" +
			"mlperf_endpoints_log_summary.json and mlperf_endpoints_log_detail.json, and the curve's\n" +
			"sweep_summary.csv) and agentrace runs and sweeps (with what `agentrace publish` wrote), each as a\n" +
			"folder or a .tar.gz/.tgz/.zip archive read in place. For every point it folds the event log once\n" +
			"as the reference client's metrics aggregator does (counts, duration, qps, tps, the TTFT, TPOT,\n" +
			"latency, ISL and OSL blocks and the full-run OSL block), re-scores inline accuracy from the\n" +
			"events and the dataset, re-judges the gates, then places each curve's points in their regions\n" +
			"and judges the curve. Every published number becomes a row with both values:\n" +
			"  agree           within the rules' 1% (counts, regions and verdicts must be equal)\n" +
			"  DISAGREE        beyond it: the audit fails and names the field\n" +
			"  follows         a figure derived from published ones (system_tps = output tokens / duration,\n" +
			"                  tps_per_user = 1000 / TPOT P90) off only because its input is\n" +
			"  unchecked       published but not re-derivable here (SWE-bench; token counts without\n" +
			"                  --tokenizer; token counts published from another counting than --tokenizer:\n" +
			"                  \"counted with another tokenizer, not comparable\"; a point that ships no\n" +
			"                  event log), with the reason\n" +
			"  not_published   re-derived, absent from the published files\n" +
			"  finding         a submission checker rule's error or warning (checker.<rule>: the tree judged\n" +
			"                  as the checker judges it, with its rule id, severity, level and point; a bare\n" +
			"                  system folder as that part; point.check.<rule>: what agentrace reads a point by);\n" +
			"                  a finding does not fail the audit\n" +
			"The table shows each point's headline figures and every row that does not agree (--all: every\n" +
			"row); --out DIR writes audit.json (counts, disagreements, every row) and audit.parquet (every\n" +
			"row). DIR may not be or sit inside an input; an earlier audit there is replaced only with\n" +
			"--overwrite.\n\n" +
			"Exits 1 when any published number disagrees or a run cannot be read, 0 otherwise.\n\n" +
			"Examples:\n" +
			"  agentrace audit --tokenizer .cache/tokenizers/qwen3 results/edge_agentic_full_run\n" +
			"  agentrace audit --tokenizer .cache/tokenizers/qwen3 --out audit-acme acme-submission.tar.gz\n" +
			"  agentrace audit sweep-out   # counts as the sweep recorded (its scores.json, its summaries)",
		Flags: append([]cli.Flag{
			descendFlag(),
			outFlagDefault("folder to write audit.json and audit.parquet into (default: print the table only)", ""),
			tokenizerFlag("reference tokenizer folder: token counts (OSL, TPOT, system_tps) are re-derived only with it"+recordedDefault, false),
			tokenizerRevisionFlag(),
			datasetFlag("dataset folder or trace file to re-score inline accuracy against (default: each run's own)", false),
			rulesetFlag("embedded ruleset name, ruleset JSON file, or auto (the ruleset naming each run's model)"),
			cmaxFlag("declared maximum supported concurrency C_max when the points declare none (default: the highest point)", false),
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.GOMAXPROCS(0), Usage: "points audited at once"},
			&cli.BoolFlag{Name: "all", Usage: "print every row, not only the headline figures and what does not agree"},
			jsonFlag("print audit.json's document instead of the table"),
			maxExpansionFlag(),
		}, append(overwriteFlags("an audit"), checkerFlags()...)...),
		Action: func(ctx context.Context, c *cli.Command) error {
			tokDir, inputs, err := countingTokenizer(c, "no run folder, sweep, submission tree or archive given", true)
			if err != nil {
				return err
			}
			out := c.String("out")
			guarded := append(append([]string(nil), inputs...), c.String("tokenizer"), c.String("dataset"))
			var claim *outguard.Claim
			if out != "" {
				if claim, err = audit.Claim(out, overwrite(c), guarded...); err != nil {
					return err
				}
				defer claim.Release()
			}
			cd, err := checkerData(c)
			if err != nil {
				return err
			}
			res, err := audit.Run(ctx, audit.Options{
				Checker: checker.NewCache(cd),
				Inputs:  inputs, Dataset: c.String("dataset"), Tokenizer: tokDir,
				Ruleset: c.String("ruleset"), CMax: int(c.Int("cmax")), Jobs: int(c.Int("jobs")),
				Limits: archive.Limits{MaxExpansion: maxExpansion(c)}, Events: prefixed(c, "audit"),
				Descend: c.Bool("descend"),
			})
			if err != nil {
				return descendHint(err)
			}
			if out != "" {
				if err := audit.WriteClaimed(claim, guarded, res); err != nil {
					return err
				}
			}
			w := c.Root().Writer
			if c.Bool("json") {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if err := enc.Encode(audit.Document(inputs, res)); err != nil {
					return err
				}
			} else if err := audit.PrintTable(w, res, c.Bool("all")); err != nil {
				return err
			}
			if out != "" {
				fmt.Fprintf(c.Root().ErrWriter, "audit: wrote %s and %s in %s\n", audit.JSONFile, audit.ParquetFile, out)
			}
			if bad := res.Failed(); len(bad) > 0 {
				return withStatus(exitNo, fmt.Errorf("audit: %d published numbers disagree with the events or could not be read", len(bad)))
			}
			return nil
		},
	}
}
