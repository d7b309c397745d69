package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/urfave/cli/v3"
)

// turnTableKind is the output kind of an analysis table (turns.parquet).
var turnTableKind = outguard.Kind{Name: runlog.TableKind}

func logExportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write a run's turn log as turns.parquet, the analysis table DuckDB, polars and pandas read",
		UsageText: "agentrace log export [--out FILE] [--overwrite] RUNDIR|SWEEPDIR...",
		Description: "Writes the analysis table of each run (replay and sweep write it at the end of every run;\n" +
			"this command writes it again, e.g. for a run made before it existed): RUNDIR/turns.parquet, one\n" +
			"row per client turn, the turn log's columns plus concurrency, client_turn and expected_turn (the\n" +
			"join keys of scores.parquet and the dataset's turns.parquet), issued, error_kind, the times as\n" +
			"UTC timestamps (*_at) beside the raw run-clock nanoseconds (*_ns), and the durations lag_ms,\n" +
			"ttft_ms, latency_ms, decode_ms and delay_ms. docs/analysis.md describes every column.\n\n" +
			"With --out, the runs given (a sweep folder stands for its c<N>/ runs) go into one table with\n" +
			"the columns run and system beside concurrency.\n\n" +
			"Examples:\n" +
			"  agentrace log export --overwrite runs/c8\n" +
			"  agentrace log export --out all-turns.parquet runs",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, TakesFile: true,
				Usage: "write one table of every run given here (default: RUNDIR/turns.parquet for each run)"},
		}, overwriteFlags("a turns table")...),
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.NArg() == 0 {
				return argsError("log export", "no run directory given")
			}
			dirs, err := curve.RunDirs(c.Args().Slice())
			if err != nil {
				return fmt.Errorf("log export: %w", err)
			}
			var inputs []string
			for _, d := range dirs {
				inputs = append(inputs, filepath.Join(d, schemas.TurnLogFile), filepath.Join(d, schemas.RunManifestFile))
			}
			write := func(out string, runs []runlog.TableRun, multi bool) error {
				claim, err := outguard.Take(outguard.Output{Path: out, Kind: turnTableKind, Overwrite: overwrite(c)}, inputs...)
				if err != nil {
					return fmt.Errorf("log export: %w", err)
				}
				defer claim.Release()
				info, err := runlog.WriteTable(ctx, out, runs, runlog.TableOptions{RunColumns: multi})
				for _, w := range info.Warnings {
					problem(c, "warning", w)
				}
				if err != nil {
					return fmt.Errorf("log export: %w", err)
				}
				fmt.Fprintf(c.Root().Writer, "wrote %s: %s, %s\n", out, english.Count(info.Rows, "row", "rows"), english.Count(len(info.Columns), "column", "columns"))
				return nil
			}
			if out := c.String("out"); out != "" {
				runs := make([]runlog.TableRun, len(dirs))
				for i, d := range dirs {
					runs[i] = runlog.TableRun{Dir: d, Run: filepath.ToSlash(d), System: filepath.Base(filepath.Dir(filepath.Clean(d)))}
				}
				return write(out, runs, true)
			}
			for _, d := range dirs {
				if err := write(filepath.Join(d, runlog.TableFile), []runlog.TableRun{{Dir: d}}, false); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
