package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/agentrace/agentrace/score/checker"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/progress"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/urfave/cli/v3"
)

func scoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "score",
		Usage:     "score a run: inline accuracy, OSL window, SWE-bench, verdict",
		UsageText: "agentrace score [--overwrite] [--dataset DS] [--ruleset NAME|FILE|auto] [--tokenizer DIR] [--swebench REPORT.json] RUNDIR...",
		Description: "Scores each run: a replay run (turns.arrows), the MLPerf reference client's run folder\n" +
			"(events.jsonl, config.yaml, performance/result_summary.json) or a submission point (r<N>/ with\n" +
			"point.yaml and its event log as mlperf_endpoints_log_detail.json), each a folder, an archive\n" +
			"(.tar.gz, .tgz, .zip) holding one run, or a folder inside an archive (sub.tgz/sys/model/r8),\n" +
			"read in place. Against the dataset's ground truth:\n" +
			"  - inline accuracy exactly as the reference scorer computes it: every issued turn with\n" +
			"    ground truth counts, in every repeat, a turn without output scores 0; workflow turns\n" +
			"    by intent code, coding turns by multiset Jaccard of bash actions;\n" +
			"  - the OSL window: the per-turn output-token mean over ALL completed turns, counted with\n" +
			"    the reference tokenizer when --tokenizer is given, else as an earlier scoring of the run\n" +
			"    recorded, else from the server's usage counts (marked unofficial);\n" +
			"  - SWE-bench Verified when a harness report is given (resolved / 200 evaluated).\n" +
			"A point that ships no event log is judged on its published accuracy_results.json and summary\n" +
			"(the OSL gate reads output_sequence_lengths_full_run.output_sequence_lengths.avg, as the\n" +
			"submission checker does). A run's SWE-bench result is shown but judged per curve, by report\n" +
			"(the mean of one result per mandatory region).\n" +
			"It writes RUNDIR/scores.json (the reference's fields score, turns, domains, per_turn,\n" +
			"excluded_turns, plus osl, swebench, verdict) and RUNDIR/scores.parquet (one row per scored\n" +
			"turn), and prints the verdict table; scores an earlier score wrote are replaced only with\n" +
			"--overwrite. Exits 1 when a run's verdict is not PASS. A run inside an archive is never written into: its\n" +
			"verdict table is printed (standard output) and nothing is written; `agentrace rescore --out\n" +
			"TABLE` writes the scores of archived runs as a table.\n\n" +
			"The default ruleset is auto, as in every command: the newest ruleset naming the run's\n" +
			"model (" + rulesets.Default + " when none names it). `agentrace rulesets` lists them; a JSON file in the same format\n" +
			"is accepted.\n\n" +
			"The run directories are arguments.\n\n" +
			"Example:\n" +
			"  agentrace score --tokenizer .cache/tokenizers/qwen3 runs/c8\n" +
			"  agentrace score runs/c*\n" +
			"  agentrace score --dataset ds.jsonl sub.tgz/sys/model/r8   # printed, not written\n" +
			"  agentrace score --dataset agentic_combined.jsonl --ruleset checker-2026-10-qwen3.6 ref-logs/qwen_agentic",
		Flags: []cli.Flag{
			datasetFlag("dataset directory or trace file (default: the dataset the run names)", false),
			rulesetFlag("embedded ruleset name, ruleset JSON file, or auto (the newest naming the run's model)"),
			tokenizerFlag("reference tokenizer directory for official OSL counts"+recordedDefault, false),
			&cli.StringFlag{Name: "swebench", Usage: "SWE-bench harness report (swebench.harness.run_evaluation JSON), or a folder agentrace swebench wrote, to judge too", TakesFile: true},
			tokenizerRevisionFlag(),
			quietFlag("do not print the verdict table"),
			maxExpansionFlag(),
			&cli.BoolFlag{Name: "overwrite", Usage: "replace the scores.json and scores.parquet an earlier score wrote into the run folder (never a file agentrace did not write)"},
			descendFlag(),
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			tokDir, runs, err := countingTokenizer(c, "no run directory given", false)
			if err != nil {
				return err
			}
			if c.Bool("descend") {
				var all []string
				for _, a := range runs {
					in, err := archive.RunsIn(a, archive.Limits{MaxExpansion: maxExpansion(c)})
					if err != nil {
						return err
					}
					all = append(all, in...)
				}
				runs = all
			}
			var failed []string
			warned := newWarnings(len(runs) > 1)
			for i, run := range runs {
				opts := score.Options{Run: run, Dataset: c.String("dataset"), Ruleset: c.String("ruleset"),
					Tokenizer: tokDir, SWEBench: c.String("swebench"), MaxExpansion: maxExpansion(c),
					Overwrite: overwrite(c)}
				s, err := runScore(ctx, c, opts, warned)
				if err != nil {
					warned.flush(c, i)
					err = descendHint(err)
					if len(runs) > 1 {
						err = fmt.Errorf("%s: %w (%d of %d runs scored before it; the rest not scored)", run, err, i, len(runs))
					}
					return err
				}
				if !s.Verdict.Pass {
					failed = append(failed, run)
				}
			}
			warned.flush(c, len(runs))
			if len(runs) > 1 {
				fmt.Fprintf(c.Root().Writer, "scored %s: %d PASS, %d not PASS\n", english.Count(len(runs), "run", "runs"), len(runs)-len(failed), len(failed))
			}
			if len(failed) > 0 {
				return withStatus(exitNo, fmt.Errorf("score: the verdict of %s is not PASS", strings.Join(failed, ", ")))
			}
			return nil
		},
	}
}

// warnings are a multi-run command's warnings, each printed once after the runs
// with the runs it concerns, rather than once per run; with one run they are
// printed at once.
type warnings struct {
	later bool
	order []string
	runs  map[string][]string
}

func newWarnings(later bool) *warnings {
	return &warnings{later: later, runs: map[string][]string{}}
}

// add records warning msg of run, or prints it when not deferred.
func (w *warnings) add(c *cli.Command, run, msg string) {
	if !w.later {
		problem(c, kindWarning, msg)
		return
	}
	if _, seen := w.runs[msg]; !seen {
		w.order = append(w.order, msg)
	}
	w.runs[msg] = append(w.runs[msg], run)
}

// flush prints each recorded warning once, naming its runs, "every run" when it
// concerns each of the scored runs.
func (w *warnings) flush(c *cli.Command, scored int) {
	for _, msg := range w.order {
		rs := w.runs[msg]
		who := strings.Join(rs, ", ")
		if len(rs) > 1 && len(rs) == scored {
			who = "every run"
		}
		problem(c, kindWarning, msg+" ("+who+")")
	}
	w.order, w.runs = nil, map[string][]string{}
}

func runScore(ctx context.Context, c *cli.Command, opts score.Options, warned *warnings) (*schemas.Scores, error) {
	s, err := score.ScoreAndWrite(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, w := range s.Warnings {
		warned.add(c, opts.Run, w)
	}
	if c.Bool("quiet") {
		return s, nil
	}
	w := c.Root().Writer
	// "issued" here is the reference scorer's: every client turn the run logged (sent,
	// or skipped after its trajectory failed), as scores.json's turns.issued.
	fmt.Fprintf(w, "%s (%s run): inline accuracy %.4f over %d scored turns (%d with output, %d without); %d turns logged with ground truth (the reference's \"issued\": sent, or skipped after a failure)\n",
		opts.Run, s.Run.Kind, s.Score, s.Turns.Scored, s.Turns.Observed, s.Turns.Missing, s.Turns.Issued)
	return s, score.WriteVerdict(w, s)
}

func rulesetsCommand() *cli.Command {
	return &cli.Command{
		Name:      "rulesets",
		Usage:     "list the embedded rulesets (accuracy thresholds and OSL windows by rules version)",
		UsageText: "agentrace rulesets [--show NAME|FILE] [--checker-rules] [--checker-data NAME]",
		Description: "Lists every embedded ruleset: its name (for --ruleset), date, source, the inline\n" +
			"accuracy threshold, the inclusive OSL per-turn mean window and the SWE-bench threshold.\n" +
			"Every command's --ruleset defaults to auto: the newest naming the run's model, else\n" +
			rulesets.Default + " (marked auto's fallback). A user ruleset is a JSON file with the same\n" +
			"fields; --show prints one in that format, to start from. `agentrace rulesets derive` makes a\n" +
			"new one from the reference model's runs (see its --help). It also names the submission\n" +
			"checker's data embedded for report, audit and rescore, with the version read of each;\n" +
			"--checker-rules lists the checker's rule ids, --checker-data prints one data file.\n\n" +
			"Examples:\n" +
			"  agentrace rulesets\n" +
			"  agentrace rulesets --show checker-2026-10-kimi-k3 > my-rules.json   # edit, then --ruleset my-rules.json\n" +
			"  agentrace rulesets --checker-data seed_sets.yaml > sets.yaml   # edit, then --seed-sets sets.yaml",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "show", Usage: "print this ruleset (name or file) as JSON"},
			&cli.BoolFlag{Name: "checker-rules", Usage: "list every rule id of the submission checker's catalog with its level and home"},
			&cli.StringFlag{Name: "checker-data", Usage: "print the embedded submission checker data file NAME (messages.yaml, approved_drafters.yaml, seed_sets.yaml, targets.yaml)"},
		}, checkerFlags()...),
		Commands: []*cli.Command{rulesetsDeriveCommand()},
		Action: func(ctx context.Context, c *cli.Command) error {
			if name := c.String("checker-data"); name != "" {
				b, err := checker.EmbeddedFile(name)
				if err != nil {
					return argsError(c.Name, "%v", err)
				}
				_, err = c.Root().Writer.Write(b)
				return err
			}
			if name := c.String("show"); name != "" {
				r, err := rulesets.Load(name)
				if err != nil {
					return err
				}
				b, err := rulesets.JSON(r)
				if err != nil {
					return err
				}
				_, err = c.Root().Writer.Write(b)
				return err
			}
			tw := tabwriter.NewWriter(c.Root().Writer, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDATE\tMODEL\tACCURACY\tOSL WINDOW\tSWE-BENCH (MEAN OF 4)\tREGIONS\tSOURCE")
			for _, r := range rulesets.All() {
				name := r.Name
				if name == rulesets.Default {
					name += " (auto's fallback)"
				}
				src := r.Source
				if r.Tentative {
					src += " (tentative)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, r.Date, r.Model, r.AccuracyThreshold(),
					r.OSLThreshold(), r.SWEBenchThreshold(), r.RegionForm(), src)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			cd, err := checkerData(c)
			if err != nil {
				return err
			}
			w := c.Root().Writer
			fmt.Fprintln(w)
			fmt.Fprint(w, cd.Describe())
			if !c.Bool("checker-rules") {
				fmt.Fprintf(w, "  %d rule ids, each evaluated by report, audit and rescore (--checker-rules lists them)\n", len(checker.Rules))
				return nil
			}
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RULE\tLEVEL\tHOME (score/checker)\tNOTE")
			for _, r := range checker.Rules {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Level, r.Home, r.Informational)
			}
			return tw.Flush()
		},
	}
}

func rescoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "rescore",
		Usage:     "re-score every run in archive trees into one Parquet table",
		UsageText: "agentrace rescore --out results.parquet [--overwrite] [--jobs N] [--dataset DS] [--ruleset NAME|FILE|auto] [--tokenizer DIR] ARCHIVE...",
		Description: "Walks each ARCHIVE (a directory tree, or a .tar.gz, .tgz, .tar or .zip archive read in place,\n" +
			"never extracted) and finds every run in it: replay runs (turns.arrows), reference client run\n" +
			"folders (events.jsonl, config.yaml, performance/result_summary.json) and the points of submission\n" +
			"trees (<system>/<model>/r<N>/ with point.yaml), each with its dataset (the one its manifest or\n" +
			"config.yaml names, or --dataset). Scores them N at a time, and writes one row per run: path, kind,\n" +
			"model, concurrency, ruleset, every gate's value and pass, the verdict, and the error if the run\n" +
			"could not be scored (a broken run is a row, never a crash). A value that was not evaluated is\n" +
			"null, never 0 or false; each gate's outcome is pass, fail or not_evaluated, and not_evaluated\n" +
			"says why with the submission checker's severity (warning; error fails the verdict). A submission\n" +
			"point is judged on its published accuracy_results.json and result summary, as the checker judges\n" +
			"it (its ruleset by its model folder's name), agentrace's re-derived values beside them\n" +
			"(rederived_accuracy, rederived_osl_mean). Symbolic links are never\n" +
			"followed out of a tree; archive entries with absolute or ../ paths and links are refused, and an\n" +
			"archive expanding past --max-expansion times its size is one error row. Each dataset is loaded\n" +
			"once. The runs are not modified; the results table may not be inside an archive, and an\n" +
			"earlier one is replaced only with --overwrite. Exits 1 when any run could not be scored.\n\n" +
			"The default ruleset is auto: per run, the newest ruleset naming its model (else " + rulesets.Default + ").\n\n" +
			"Example:\n" +
			"  agentrace rescore --out results.parquet --jobs 4 archive/2026-10 ref-archive/\n" +
			"  agentrace rescore --out r.parquet --dataset agentic_combined.jsonl ref-logs/",
		Flags: append([]cli.Flag{
			outFlag("results table to write (Parquet; outside the archives)"),
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Value: runtime.GOMAXPROCS(0), Usage: "runs scored at once"},
			datasetFlag("dataset directory or trace file for every run (default: each run's own)", false),
			rulesetFlag("embedded ruleset name, ruleset JSON file, or auto (the newest naming each run's model)"),
			tokenizerFlag("reference tokenizer directory for official OSL counts"+recordedDefault, false),
			tokenizerRevisionFlag(),
			maxExpansionFlag(),
		}, append(overwriteFlags("a results table"), checkerFlags()...)...),
		Action: func(ctx context.Context, c *cli.Command) error {
			tokDir, archives, err := countingTokenizer(c, "no archive given", false)
			if err != nil {
				return err
			}
			cd, err := checkerData(c)
			if err != nil {
				return err
			}
			rows, err := score.Rescore(ctx, score.RescoreOptions{
				Checker:  checker.NewCache(cd),
				Archives: archives, Out: c.String("out"), Overwrite: overwrite(c), Jobs: int(c.Int("jobs")),
				Dataset: c.String("dataset"), Ruleset: c.String("ruleset"), Tokenizer: tokDir,
				MaxExpansion: maxExpansion(c),
				Progress:     os.Stderr, ProgressTTY: progress.IsTerminal(os.Stderr),
			})
			if err != nil {
				return err
			}
			failed, passed, open := 0, 0, 0
			for _, r := range rows {
				switch {
				case r.Error != "":
					failed++
				case r.Pass == nil:
					open++
				case *r.Pass:
					passed++
				}
			}
			fmt.Fprintf(c.Root().Writer, "wrote %s: %s, %d pass, %d fail, %d not judged (a gate not evaluated), %d could not be scored\n",
				c.String("out"), english.Count(len(rows), "run", "runs"), passed, len(rows)-passed-failed-open, open, failed)
			for _, r := range rows {
				if r.Error != "" {
					problem(c, "error", r.Path+": "+r.Error)
				}
			}
			if failed > 0 {
				return withStatus(exitNo, fmt.Errorf("rescore: %d of %d runs could not be scored (error column of %s)", failed, len(rows), c.String("out")))
			}
			return nil
		},
	}
}
