package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/urfave/cli/v3"
)

// defaultRule is the default ruleset's derivation rule: the derive flags'
// defaults come from the ruleset file, never from constants here.
func defaultRule() rulesets.DerivationRule {
	r, err := rulesets.Load(rulesets.Default)
	if err != nil || r.Derivation == nil {
		panic("the default ruleset has no derivation rule") // TestRulesetsDeriveDefaults
	}
	return r.Derivation.Rule
}

func fstr(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func rulesetsDeriveCommand() *cli.Command {
	d := defaultRule()
	return &cli.Command{
		Name:      "derive",
		Usage:     "derive a ruleset (thresholds, OSL window) from the reference model's own runs",
		UsageText: "agentrace rulesets derive --out FILE [--like RULESET] [--tokenizer DIR] [--swebench-report REPORT]... [rule flags] RUN...\n   agentrace rulesets derive --out FILE --like RULESET --inline-mean F --osl-mean F --swebench-mean F",
		Description: "Derives a new ruleset from runs of the reference model (agentrace run folders, reference client\n" +
			"run folders, archives holding one run, or runs inside archives), as a maintainer does for a new\n" +
			"model or dataset version: each run is scored (inline accuracy against the dataset's ground truth,\n" +
			"the full-run OSL mean counted with --tokenizer, or a reference run's own result summary), the\n" +
			"means are taken across runs, and the rule turns them into thresholds:\n" +
			"  inline accuracy >= factor x mean, rounded to a step in a direction;\n" +
			"  OSL window [low factor x mean, high factor x mean], each rounded;\n" +
			"  SWE-bench >= the one-sided lower confidence bound (z) of a mean of N results over the\n" +
			"  instances (method lower_bound), or factor x mean (method factor), rounded, from the\n" +
			"  SWE-bench harness reports given with --swebench-report.\n" +
			"The rule's defaults are the published one, read from the base ruleset's file (--like; else the\n" +
			"newest ruleset naming the runs' model, else " + rulesets.Default + "): factors 0.99, 0.9 and 1.1, lower\n" +
			"bounds rounded down and upper bounds up, z 1.645 over 4 x 200 instances rounded down to a whole\n" +
			"instance. Each flag changes one part; the rule, the means with their spread across runs (min, max,\n" +
			"standard deviation), and the provenance (every run with its values, the dataset's content hash, the\n" +
			"SWE-bench reports with their SHA-256, the tokenizer, the tool version, the date) are written into the\n" +
			"ruleset file, which `agentrace score --ruleset FILE` then uses; loading it re-derives and checks the\n" +
			"thresholds.\n\n" +
			"Refused, naming the reason: a run that is not official (salting and delays on, stop-issuing off, a\n" +
			"trajectory budget that is a multiple of the dataset), not complete (state, turns not issued or cut,\n" +
			"a reference run without a result summary saying complete), with failed turns (unless\n" +
			"--allow-failures), without an official OSL count (an agentrace run needs --tokenizer), and runs\n" +
			"that differ in dataset content hash, model, sampling settings or ruleset. An incomplete SWE-bench\n" +
			"report is refused too. Without SWE-bench reports, --swebench-min keeps a threshold (marked given).\n\n" +
			"With --inline-mean, --osl-mean and --swebench-mean instead of runs, the rule is applied to those\n" +
			"means: `--like checker-2026-10-qwen3.6` with the means the submission checker quotes re-derives\n" +
			"its published thresholds.\n\n" +
			"Example:\n" +
			"  agentrace rulesets derive -o qwen-2027.json --tokenizer .cache/tokenizers/qwen3 \\\n" +
			"      --swebench-report swe1.json --swebench-report swe2.json runs/ref-c8 runs/ref-c32 runs/ref-c64\n" +
			"  agentrace rulesets derive -o kimi.json --like checker-2026-10-kimi-k3 --inline-mean 0.589 --osl-mean 472 --swebench-mean 0.9483",
		Flags: append([]cli.Flag{
			outFlag("ruleset file to write (JSON)"),
			&cli.StringFlag{Name: "like", Usage: "base ruleset (name or file): model patterns, region form, SWE-bench instances and the rule's defaults (default: the newest ruleset naming the runs' model)"},
			datasetFlag("dataset directory or trace file for every run (default: each run's own)", false),
			tokenizerFlag("reference tokenizer directory for official OSL counts (required for agentrace runs)", false),
			tokenizerRevisionFlag(),
			&cli.StringSliceFlag{Name: "swebench-report", Usage: "SWE-bench harness report of the reference model (repeatable: one per SWE-bench run)", TakesFile: true},
			&cli.FloatFlag{Name: "swebench-min", HideDefault: true, Usage: "SWE-bench threshold to keep when no report is given (recorded as given, not derived)"},
			&cli.FloatFlag{Name: "inline-mean", HideDefault: true, Usage: "reference inline accuracy mean (a fraction), instead of runs"},
			&cli.FloatFlag{Name: "osl-mean", HideDefault: true, Usage: "reference full-run OSL per-turn mean (tokens), instead of runs"},
			&cli.FloatFlag{Name: "swebench-mean", HideDefault: true, Usage: "reference SWE-bench mean (a fraction), instead of reports"},
			&cli.StringFlag{Name: "name", Usage: "ruleset name (default: derived-DATE-MODEL)"},
			&cli.StringFlag{Name: "title", Usage: "ruleset title (default: the model, date and what it was derived from)"},
			&cli.StringFlag{Name: "model", Usage: "model the ruleset is for (default: the runs', else the base ruleset's)"},
			&cli.BoolFlag{Name: "final", Usage: "mark the ruleset final (derived rulesets are tentative by default)"},
			&cli.BoolFlag{Name: "allow-failures", Usage: "accept runs with failed turns (they score 0 and lower the means)"},
			&cli.FloatFlag{Name: "inline-factor", Value: d.InlineAccuracy.Factor, Usage: "inline accuracy threshold = factor x mean"},
			&cli.StringFlag{Name: "inline-round", Value: d.InlineAccuracy.Round, Usage: "rounding of the inline threshold: down, up or nearest"},
			&cli.FloatFlag{Name: "inline-step", Value: d.InlineAccuracy.Step, Usage: "the inline threshold is a multiple of this (a fraction)"},
			&cli.FloatFlag{Name: "osl-low-factor", Value: d.OSLLow.Factor, Usage: "OSL window low = factor x mean"},
			&cli.StringFlag{Name: "osl-low-round", Value: d.OSLLow.Round, Usage: "rounding of the OSL window's low bound"},
			&cli.FloatFlag{Name: "osl-high-factor", Value: d.OSLHigh.Factor, Usage: "OSL window high = factor x mean"},
			&cli.StringFlag{Name: "osl-high-round", Value: d.OSLHigh.Round, Usage: "rounding of the OSL window's high bound"},
			&cli.FloatFlag{Name: "osl-step", Value: d.OSLLow.Step, Usage: "the OSL bounds are multiples of this (tokens)"},
			&cli.StringFlag{Name: "swebench-method", Value: d.SWEBench.Method, Usage: "lower_bound (mean - z x binomial standard error of a mean of N results) or factor"},
			&cli.FloatFlag{Name: "swebench-z", Value: d.SWEBench.Z, Usage: "lower_bound: the normal quantile"},
			&cli.IntFlag{Name: "swebench-results", Value: d.SWEBench.Results, Usage: "lower_bound: results averaged (the rules' mean of N region points)"},
			&cli.FloatFlag{Name: "swebench-factor", Value: d.SWEBench.Factor, HideDefault: d.SWEBench.Factor == 0, Usage: "factor: SWE-bench threshold = factor x mean"},
			&cli.StringFlag{Name: "swebench-round", Value: d.SWEBench.Round, Usage: "rounding of the SWE-bench threshold"},
			&cli.FloatFlag{Name: "swebench-step", Value: d.SWEBench.Step, Usage: "the SWE-bench threshold is a multiple of this (0.005 = one instance in 200)"},
		}, overwriteFlags("a ruleset file")...),
		Action: func(ctx context.Context, c *cli.Command) error {
			tokDir, tokErr := tokenizerArg(c)
			if tokErr != nil {
				return tokErr
			}
			o := score.DeriveOptions{Runs: c.Args().Slice(), Dataset: c.String("dataset"), Tokenizer: tokDir,
				SWEBench: c.StringSlice("swebench-report"), Base: c.String("like"), Name: c.String("name"), Title: c.String("title"),
				Model: c.String("model"), Final: c.Bool("final"), AllowFailures: c.Bool("allow-failures"), EditRule: ruleEdits(c)}
			if c.IsSet("swebench-min") {
				v := c.Float("swebench-min")
				o.SWEBenchMin = &v
			}
			meanFlags := 0
			for _, n := range []string{"inline-mean", "osl-mean", "swebench-mean"} {
				if c.IsSet(n) {
					meanFlags++
				}
			}
			if meanFlags > 0 {
				if !c.IsSet("inline-mean") || !c.IsSet("osl-mean") {
					return argsError("rulesets derive", "--inline-mean and --osl-mean go together")
				}
				if c.NArg() > 0 {
					return argsError("rulesets derive", "give runs or means (--inline-mean, --osl-mean), not both")
				}
				m := rulesets.ReferenceMeans{InlineAccuracy: rulesets.Spread{Mean: c.Float("inline-mean")}, OSL: rulesets.Spread{Mean: c.Float("osl-mean")}}
				if c.IsSet("swebench-mean") {
					m.SWEBench = &rulesets.Spread{Mean: c.Float("swebench-mean")}
				}
				o.Means = &m
			} else if c.NArg() == 0 {
				return argsError("rulesets derive", "no run given (give the reference model's runs, or --inline-mean and --osl-mean)")
			}
			inputs := append(append([]string{o.Dataset, o.Tokenizer, o.Base}, o.Runs...), o.SWEBench...)
			r, err := score.DeriveRuleset(ctx, o)
			if err != nil {
				return err
			}
			if err := score.WriteRuleset(c.String("out"), r, overwrite(c), inputs...); err != nil {
				return err
			}
			if err := writeDerived(c.Root().Writer, r); err != nil {
				return err
			}
			fmt.Fprintf(c.Root().Writer, "wrote %s (use it with --ruleset %s)\n", c.String("out"), c.String("out"))
			return nil
		},
	}
}

// ruleEdits applies the rule flags given on the command line.
func ruleEdits(c *cli.Command) func(*rulesets.DerivationRule) {
	return func(r *rulesets.DerivationRule) {
		set := func(name string, f func()) {
			if c.IsSet(name) {
				f()
			}
		}
		set("inline-factor", func() { r.InlineAccuracy.Factor = c.Float("inline-factor") })
		set("inline-round", func() { r.InlineAccuracy.Round = c.String("inline-round") })
		set("inline-step", func() { r.InlineAccuracy.Step = c.Float("inline-step") })
		set("osl-low-factor", func() { r.OSLLow.Factor = c.Float("osl-low-factor") })
		set("osl-low-round", func() { r.OSLLow.Round = c.String("osl-low-round") })
		set("osl-high-factor", func() { r.OSLHigh.Factor = c.Float("osl-high-factor") })
		set("osl-high-round", func() { r.OSLHigh.Round = c.String("osl-high-round") })
		set("osl-step", func() { r.OSLLow.Step, r.OSLHigh.Step = c.Float("osl-step"), c.Float("osl-step") })
		set("swebench-method", func() { r.SWEBench.Method = c.String("swebench-method") })
		set("swebench-z", func() { r.SWEBench.Z = c.Float("swebench-z") })
		set("swebench-results", func() { r.SWEBench.Results = int(c.Int("swebench-results")) })
		set("swebench-factor", func() { r.SWEBench.Factor = c.Float("swebench-factor") })
		set("swebench-round", func() { r.SWEBench.Round = c.String("swebench-round") })
		set("swebench-step", func() { r.SWEBench.Step = c.Float("swebench-step") })
	}
}

// writeDerived prints what a derivation did: means with their spread, the rule
// and the thresholds, beside the base ruleset's.
func writeDerived(w io.Writer, r *rulesets.Ruleset) error {
	d := r.Derivation
	p := d.Provenance
	from := d.MeansSource
	if p != nil && p.DatasetHash != "" {
		from += ", dataset " + p.DatasetHash[:min(12, len(p.DatasetHash))]
	}
	fmt.Fprintf(w, "ruleset %s for %s (%s)\n", r.Name, r.Model, from)
	var base *rulesets.Ruleset
	if p != nil && p.Base != "" {
		if b, err := rulesets.Load(p.Base); err == nil {
			base = &b
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "GATE\tMEAN\tMIN\tMAX\tSTD DEV\tRULE\tTHRESHOLD"
	if base != nil {
		head += "\t" + strings.ToUpper(base.Name)
	}
	fmt.Fprintln(tw, head)
	spread := func(s *rulesets.Spread) string {
		if s == nil {
			return "-\t-\t-\t-"
		}
		opt := func(v *float64) string {
			if v == nil {
				return "-"
			}
			return fstr(round6(*v))
		}
		return fstr(round6(s.Mean)) + "\t" + opt(s.Min) + "\t" + opt(s.Max) + "\t" + opt(s.StdDev)
	}
	bound := func(b rulesets.BoundRule) string {
		return fmt.Sprintf("%s x mean, %s to %s", fstr(b.Factor), b.Round, fstr(b.Step))
	}
	row := func(gate string, s *rulesets.Spread, rule, th string, baseTh func(*rulesets.Ruleset) string) {
		line := gate + "\t" + spread(s) + "\t" + rule + "\t" + th
		if base != nil {
			line += "\t" + baseTh(base)
		}
		fmt.Fprintln(tw, line)
	}
	row("inline accuracy", &d.Means.InlineAccuracy, bound(d.Rule.InlineAccuracy), r.AccuracyThreshold(),
		func(b *rulesets.Ruleset) string { return b.AccuracyThreshold() })
	row("OSL window", &d.Means.OSL, "["+bound(d.Rule.OSLLow)+"; "+bound(d.Rule.OSLHigh)+"]", r.OSLThreshold(),
		func(b *rulesets.Ruleset) string { return b.OSLThreshold() })
	sw := d.Rule.SWEBench
	swRule := fmt.Sprintf("%s x mean, %s to %s", fstr(sw.Factor), sw.Round, fstr(sw.Step))
	if sw.Method == rulesets.SWEBenchLowerBound {
		swRule = fmt.Sprintf("mean - %s x binomial s.e. of a mean of %d x %d, %s to %s", fstr(sw.Z), sw.Results, r.SWEBenchEvaluated, sw.Round, fstr(sw.Step))
	}
	if p != nil && p.SWEBenchGiven {
		swRule = "given (--swebench-min)"
	}
	row("SWE-bench", d.Means.SWEBench, swRule, r.SWEBenchThreshold(), func(b *rulesets.Ruleset) string { return b.SWEBenchThreshold() })
	if err := tw.Flush(); err != nil {
		return err
	}
	if d.Note != "" {
		fmt.Fprintf(w, "note: %s\n", d.Note)
	}
	if p != nil {
		for _, run := range p.Runs {
			fmt.Fprintf(w, "  run %s (%s, c%d): inline accuracy %.4f over %d turns, OSL mean %.1f over %d turns (%s)\n",
				run.Path, run.Kind, run.Concurrency, run.InlineAccuracy, run.ScoredTurns, run.OSLMean, run.OSLTurns, run.OSLSource)
		}
		for _, s := range p.SWEBench {
			fmt.Fprintf(w, "  SWE-bench %s: %d of %d resolved (%.4f)\n", s.Report, s.Resolved, s.Evaluated, s.Score)
		}
	}
	return nil
}

func round6(v float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 6, 64), 64)
	return f
}
