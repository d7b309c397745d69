package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/agentrace/agentrace/score/checker"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/report"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/urfave/cli/v3"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "build the rules' metrics, Pareto step curve, regions, plots and a self-contained HTML report",
		UsageText: "agentrace report --out DIR [--overwrite] [--cmax N] [--ruleset NAME] [--tokenizer DIR] RUNDIR|SWEEPDIR...\n   agentrace report --out DIR --compare SYSTEM_A SYSTEM_B",
		Description: "Reads run directories (turns.arrows + manifest.json, and scores.json when `agentrace score`\n" +
			"has run), sweep directories holding c<N>/ run folders, reference client run folders (events.jsonl,\n" +
			"config.yaml, performance/result_summary.json) and submission trees (<system>/<model>/r<N>/ points,\n" +
			"one curve per <system>/<model>), each as a directory or a .tar.gz/.tgz/.zip archive read in place\n" +
			"(or a folder inside one: sub.tgz/sys/model). It computes each point's metrics over its performance\n" +
			"window as the MLPerf Endpoints rules define them (\"lower\" percentiles), from the turn log or the\n" +
			"event log. Reference runs and submission points are scored on the spot (their dataset when at hand,\n" +
			"else their published accuracy_results.json and result summary); a curve's SWE-bench gate is the\n" +
			"mean of one result per mandatory region (scores.json swebench or a published swe_bench entry).\n\n" +
			"Writes into DIR:\n" +
			"  report.html        one self-contained page: verdict, checks, plots, per-point table, settings\n" +
			"  summary.md         the same, for a pull request\n" +
			"  points.json        one object per point (system_tps, e2e_avg_interactivity, tps_per_user, ...)\n" +
			"  plots/*.png|svg    Pareto step curve, metrics against concurrency, context growth, TTFT vs ISL, OSL\n" +
			"  points/c<N>/       result_summary.json (the reference's field names) and a draft point.yaml\n" +
			"DIR is built beside and renamed into place when complete; it may not be or sit inside a run\n" +
			"or sweep it reads, and an earlier report there is replaced only with --overwrite.\n\n" +
			"Regions follow §5.5 in the ruleset's region form (`agentrace regions`; the report names it), with\n" +
			"C_max = --cmax, else the C_max the points declare, else the highest point. The checks are the\n" +
			"submission checker's for an agentic curve, each with the checker's rule id. Token counts come\n" +
			"from the reference tokenizer with --tokenizer, else as the runs recorded when they were\n" +
			"scored, else from the server's usage (marked unofficial).\n\n" +
			"Examples:\n" +
			"  agentrace report --out report sweep-out\n" +
			"  agentrace report --out report --cmax 256 --tokenizer .cache/tokenizers/qwen3 sweep-out\n" +
			"  agentrace report --out cmp --compare sweep-h200 sweep-b200\n" +
			"  agentrace report --out rep --tokenizer .cache/tokenizers/qwen3 acme-submission.tar.gz",
		Flags: append([]cli.Flag{
			outFlag("folder to write the report into (created when absent; an earlier report there is replaced only with --overwrite)"),
			cmaxFlag("declared maximum supported concurrency C_max (default: the highest point)", false),
			maxExpansionFlag(),
			rulesetFlag("ruleset judging the points that have no scores.json and marking the OSL window (auto: the runs' scores.json ruleset, else the newest naming their model)"),
			tokenizerFlag("reference tokenizer folder (tokenizer.json, tokenizer_config.json) for official token counts"+recordedDefault, false),
			tokenizerRevisionFlag(),
			&cli.BoolFlag{Name: "compare", Usage: "draw each argument (a sweep or run directory) as its own system, overlaid"},
			&cli.StringFlag{Name: "name", Usage: "the system's name, the report's title (default: the runs' model and what served it, e.g. Qwen/Qwen3.6-35B-A3B on embedded sim (agentrace demo): hardware h200-qwen3.6-35b-a3b; with --compare each folder's name)"},
			&cli.FloatFlag{Name: "slo-ttft-ms", HideDefault: true, Usage: "service level: show per point the share of turns whose time to first token is at most this many ms"},
			&cli.FloatFlag{Name: "slo-tps-per-user", HideDefault: true, Usage: "service level: show per point the share of turns decoding at least this many tokens/s (1000 / the turn's TPOT ms)"},
			descendFlag(),
		}, append(overwriteFlags("a report"), checkerFlags()...)...),
		Action: func(ctx context.Context, c *cli.Command) error {
			tokDir, runs, err := countingTokenizer(c, "no run or sweep directory given", false)
			if err != nil {
				return err
			}
			cd, err := checkerData(c)
			if err != nil {
				return err
			}
			o := report.Options{
				Checker:       checker.NewCache(cd),
				Out:           c.String("out"),
				Overwrite:     overwrite(c),
				CMax:          int(c.Int("cmax")),
				Ruleset:       curveRuleset(c),
				TokenizerDir:  tokDir,
				MaxExpansion:  maxExpansion(c),
				SLOTTFTMs:     c.Float("slo-ttft-ms"),
				SLOTPSPerUser: c.Float("slo-tps-per-user"),
				Name:          c.String("name"),
				Events:        prefixed(c, "report"),
				Descend:       c.Bool("descend"),
			}
			if c.Bool("compare") {
				o.Compare = runs
			} else {
				o.Runs = runs
			}
			r, err := report.Build(ctx, o)
			if err != nil {
				return descendHint(err)
			}
			verdict := "FAIL"
			if r.Verdict() {
				verdict = "PASS"
			}
			failed := r.FailedChecks()
			if len(failed) > 0 {
				verdict += ": " + english.Count(len(failed), "check", "checks") + " failed"
			}
			w := c.Root().Writer
			if _, err := fmt.Fprintf(w, "report: %s (curve checks %s)\n", filepath.Join(o.Out, report.HTMLFile), verdict); err != nil {
				return err
			}
			for _, ch := range failed {
				fmt.Fprintf(w, "  - %s: %s\n", ch.Name, english.Shorten(ch.Reason, 160))
			}
			if !r.Verdict() {
				return withStatus(exitNo, nil) // the lines above name the failed checks; report.html says more
			}
			return nil
		},
	}
}

func regionsCommand() *cli.Command {
	return &cli.Command{
		Name:      "regions",
		Usage:     "print the concurrency regions of rules §5.5 for a declared C_max and a curve's C_min",
		UsageText: "agentrace regions --cmax N --cmin N [--json]",
		Description: "Prints the concurrency regions of a curve (rules §5.4-§5.5) in both region forms:\n" +
			"  cmin-v1.0 (the submission checker of 2026-10, models/regions.py; the default):\n" +
			"    C_min = the curve's lowest concurrency, clamped to 32\n" +
			"    I = log2(C_max - C_min) / 3\n" +
			"    low_end = round(C_min + 2^I), med_end = round(C_min + 2^(2I))   (round half to even)\n" +
			"    low_latency 1..C_min, low C_min+1..low_end, medium low_end+1..med_end,\n" +
			"    high med_end+1..C_max, margin C_max+1..ceil(1.10*C_max) (satisfies no region)\n" +
			"  fixed32-v0.7 (the v0.7 rules and checker): the same with C_min fixed at 32,\n" +
			"    the margin folded into the high region.\n" +
			"A ruleset names its form (`agentrace rulesets`); every report says which form placed its points.\n" +
			"Whatever the form, the SWE-bench mean counts a point at or below 32 towards the ultra-low band.\n\n" +
			"C_max must be greater than 32. A region left empty by rounding (start > end) is printed as\n" +
			"empty: the rules do not resolve that case.\n\n" +
			"Example:\n" +
			"  agentrace regions --cmax 1024 --cmin 8\n" +
			"  agentrace regions --cmax 64 --cmin 2 --form cmin-v1.0 --json",
		Flags: []cli.Flag{
			cmaxFlag("declared maximum supported concurrency C_max (> 32)", true),
			&cli.IntFlag{Name: "cmin", Usage: "lowest concurrency of the curve (C_min before clamping to 32)", Required: true},
			&cli.StringFlag{Name: "form", Usage: "print only this region form (cmin-v1.0, fixed32-v0.7)"},
			jsonFlag("print JSON: {form: {low_latency, low_concurrency, med_concurrency, high_concurrency, margin} each {start, end}}"),
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.NArg() > 0 {
				return argsError("regions", "unexpected argument %q (use --cmax and --cmin)", c.Args().First())
			}
			if cmax, cmin := c.Int("cmax"), c.Int("cmin"); cmin > cmax {
				return argsError("regions", "--cmin %d is above --cmax %d: C_min is the curve's lowest point, C_max its declared highest", cmin, cmax)
			}
			forms := rulesets.RegionForms()
			if f := c.String("form"); f != "" {
				forms = []string{f}
			}
			all := map[string]score.RegionSet{}
			var sets []score.RegionSet
			for _, f := range forms {
				rs, err := score.RegionsFor(f, int(c.Int("cmax")), int(c.Int("cmin")))
				if err != nil {
					return err
				}
				all[f] = rs
				sets = append(sets, rs)
			}
			if c.Bool("json") {
				b, err := json.MarshalIndent(all, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(c.Root().Writer, "%s\n", b)
				return err
			}
			for _, rs := range sets {
				if err := printRegions(c.Root().Writer, rs, false); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func printRegions(w io.Writer, rs score.RegionSet, asJSON bool) error {
	if asJSON {
		b, err := json.MarshalIndent(rs, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	clamped := ""
	if rs.CMinClamped {
		clamped = " (the lowest point, clamped to 32)"
	}
	def := ""
	if rs.Form == rulesets.DefaultRegionForm {
		def = ", the default"
	}
	if _, err := fmt.Fprintf(w, "%s%s: C_max %d, C_min %d%s\n", rs.Form, def, rs.CMax, rs.CMin, clamped); err != nil {
		return err
	}
	for _, n := range rs.Named() {
		if _, err := fmt.Fprintf(w, "  %-17s %s\n", n.Name, n.Range); err != nil {
			return err
		}
	}
	return nil
}
