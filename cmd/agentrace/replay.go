package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/datasets/runlog"
	"github.com/agentrace/agentrace/internal/interrupt"
	"github.com/agentrace/agentrace/internal/progress"
	"github.com/agentrace/agentrace/replay"
	"github.com/agentrace/agentrace/report"
	"github.com/agentrace/agentrace/schemas"
	"github.com/urfave/cli/v3"
)

// replayFlags are the flags replay and sweep share (sweep's --concurrency is a list and
// its --out a sweep folder).
func replayFlags(out *cli.StringFlag) []cli.Flag {
	flags := []cli.Flag{
		datasetFlag("dataset directory written by agentrace ingest or synth", true),
		&cli.StringFlag{Name: "endpoint", Usage: "OpenAI-compatible server, e.g. http://127.0.0.1:8000 (…/v1 and …/v1/chat/completions work too)", Required: true},
		out,
	}
	flags = append(flags, overwriteFlags("a run")...)
	flags = append(flags,
		&cli.IntFlag{Name: "trajectories", Usage: "trajectories to start; 0 means one per conversation (official: a positive multiple of the dataset size)"},
		&cli.BoolFlag{Name: "no-delays", Usage: "do not sleep the rows' delay_seconds before turns (unofficial)"},
		&cli.FloatFlag{Name: "delay-scale", Value: 1, Usage: "multiply every delay by this (unofficial unless 1)"},
		&cli.DurationFlag{Name: "turn-timeout", Value: replay.DefaultTurnTimeout, Usage: "fail a turn not complete after this long"},
		&cli.BoolFlag{Name: "stop-issuing-at-window-end", Usage: "stop issuing turns when the performance window ends (unofficial)"},
		&cli.DurationFlag{Name: "grace", Value: replay.DefaultGrace, Usage: "after Ctrl-C, wait this long for in-flight turns before cancelling them (a second Ctrl-C cancels them at once)"},
		&cli.DurationFlag{Name: "max-duration", Usage: "end the run (each sweep point) this long after its start, as the reference's max_duration_ms does: no new turns, turns in flight cancelled (0: no cap; its Qwen example sets 10h)"},
		&cli.BoolFlag{Name: "strict-stream", Usage: "fail a turn on a malformed SSE frame, an error object in a 200 stream, or a stream without a finish reason or [DONE] (default: tolerate them as the reference does, noted in the warnings column)"},
		&cli.Int64Flag{Name: "max-output-bytes", Value: replay.DefaultMaxOutputBytes, Usage: "output a turn keeps (content, reasoning, tool calls); the excess is counted in output_truncated_bytes, not kept"},
		&cli.StringSliceFlag{Name: "header", Usage: "extra request header 'Name: value' (repeatable); its value is a secret: never recorded, masked wherever it appears (a server's echo included; a value under 4 bytes is not searched for) unless --public-header names it"},
		&cli.StringSliceFlag{Name: "public-header", Usage: "NAME of a --header whose value is not secret: recorded in the manifest, not masked (repeatable)"},
		&cli.StringSliceFlag{Name: "routing-header", Value: []string{replay.DefaultRoutingHeader}, Usage: "header carrying the session id (repeatable)"},
	)
	return append(flags, requestFlags()...)
}

func replayOptions(ctx context.Context, c *cli.Command) replay.Options {
	return replay.Options{
		Force:                  interrupt.FromContext(ctx).Force(),
		Dataset:                c.String("dataset"),
		Endpoint:               c.String("endpoint"),
		Out:                    c.String("out"),
		Overwrite:              overwrite(c),
		Model:                  c.String("model"),
		Profile:                c.String("profile"),
		Trajectories:           c.Int("trajectories"),
		NoSalt:                 c.Bool("no-salt"),
		NoDelays:               c.Bool("no-delays"),
		DelayScale:             c.Float("delay-scale"),
		TurnTimeout:            c.Duration("turn-timeout"),
		StopIssuingAtWindowEnd: c.Bool("stop-issuing-at-window-end"),
		Grace:                  c.Duration("grace"),
		MaxDuration:            c.Duration("max-duration"),
		StrictStream:           c.Bool("strict-stream"),
		MaxOutputBytes:         c.Int64("max-output-bytes"),
		APIKeyEnv:              c.String("api-key-env"),
		Headers:                c.StringSlice("header"),
		PublicHeaders:          c.StringSlice("public-header"),
		RoutingHeaders:         c.StringSlice("routing-header"),
		MaxTokens:              c.Int("max-tokens"),
		NoStream:               c.Bool("no-stream"),
		StreamUsage:            c.Bool("stream-usage"),
		ClearGeneratedCache:    c.Bool("clear-generated-cache"),
		Progress:               c.Root().ErrWriter,
		ProgressTTY:            progress.IsTerminal(os.Stderr),
	}
}

const replayDescription = "Replays the dataset's trajectories closed-loop, as the MLPerf reference client's agentic\n" +
	"strategy does: N trajectories active at once, each with exactly one turn in flight; a turn is\n" +
	"issued when the previous one completed and its delay_seconds has passed; a finished trajectory\n" +
	"frees its slot for the next. Trajectory k replays conversation k mod n as instance k div n + 1,\n" +
	"with session id C (C__repeat_N from the second pass) in X-Session-ID and a salted system prompt.\n" +
	"A failed turn (HTTP error, 429 included, broken stream, timeout) aborts the rest of its\n" +
	"trajectory, logged (status aborted) but not sent. A malformed SSE frame or an error object in a\n" +
	"200 stream is skipped as the reference client skips it, noted in the warnings column\n" +
	"(--strict-stream fails the turn instead). Each turn keeps at most --max-output-bytes of output.\n\n" +
	"Checks before work: the endpoint must answer GET /v1/models before any turn (401 or 403 stops\n" +
	"the run there), and when it lists its models, every model name the requests carry must be\n" +
	"among them (exit status 2, nothing written). A first failing turn answered 401, 403 or 404\n" +
	"before any turn succeeded, which every turn would get, stops the run at once with the server's\n" +
	"message; that run, and one whose every turn failed, ends failed (exit status 3). A concurrency\n" +
	"above the trajectory budget runs only as many trajectories at once as the budget holds.\n\n" +
	"Stopping: Ctrl-C stops issuing (turns never sent: not_issued), says how many turns are in\n" +
	"flight and waits --grace for them, then cancels them (cancelled); a second Ctrl-C cancels them at\n" +
	"once; either way the log is closed and the manifest says interrupted (exit status 130); a third\n" +
	"Ctrl-C exits at once. --max-duration ends the run the same way at its cap. If the turn log cannot\n" +
	"be written (a full disk), issuing stops at once, every flushed row is kept and the manifest says\n" +
	"failed. So it does at a client fault, which is the client's, not the endpoint's (out of file\n" +
	"descriptors EMFILE/ENFILE, of socket buffers ENOBUFS, no local address EADDRNOTAVAIL): the turns\n" +
	"in flight are cancelled, no turn is logged as an endpoint error, stop_cause client_fault.\n\n" +
	"Writes RUNDIR/turns.arrows (one row per client turn; `agentrace log dump RUNDIR` prints it)\n" +
	"and RUNDIR/manifest.json (settings, never the API key; counts; complete, interrupted or failed).\n" +
	"Secrets: the API key, every --header value (unless --public-header) and the endpoint's user\n" +
	"information (with its Basic form) are masked as <redacted> in every file and message, also where\n" +
	"the server echoes them (an error body, an error frame, a completion); the manifest keeps header names.\n" +
	"Settings that depart from the official ones are listed in the manifest as non_official.\n\n"

func replayCommand() *cli.Command {
	flags := append([]cli.Flag{&cli.IntFlag{Name: "concurrency", Usage: "trajectories active at once (N)", Required: true}},
		replayFlags(outFlag("run directory to write (turns.arrows, manifest.json)"))...)
	return &cli.Command{
		Name:      "replay",
		Usage:     "replay a dataset closed-loop against an OpenAI-compatible endpoint at N active trajectories",
		UsageText: "agentrace replay --dataset DIR --endpoint URL --concurrency N --out RUNDIR [options]",
		Description: replayDescription + "Examples:\n" +
			"  agentrace replay --dataset ds --endpoint http://127.0.0.1:8000 --concurrency 32 --out run-c32 \\\n" +
			"      --profile qwen3.6-35b-a3b --model Qwen/Qwen3.6-35B-A3B\n" +
			"  agentrace replay --dataset ds --endpoint https://api.example.com/v1 --api-key-env MY_KEY \\\n" +
			"      --concurrency 4 --out run --no-delays --trajectories 8\n" +
			"  agentrace replay --dataset ds --endpoint https://gw.example.com --header 'X-Gateway-Key: abc123' \\\n" +
			"      --header 'X-Tenant: team-a' --public-header X-Tenant --concurrency 8 --out run",
		Flags: flags,
		Action: func(ctx context.Context, c *cli.Command) error {
			o := replayOptions(ctx, c)
			o.Concurrency = c.Int("concurrency")
			sum, err := replay.Run(ctx, o)
			if sum != nil {
				fmt.Fprintln(c.Root().Writer, sum)
			}
			if err != nil {
				return runStatus(err)
			}
			if sum.State == schemas.RunInterrupted && sum.Dropped {
				return fmt.Errorf("replay interrupted: the earlier run at %s is kept as it was; this one was dropped", sum.RunDir)
			}
			if sum.State == schemas.RunInterrupted {
				return withStatus(exitIncomplete, errors.New("replay interrupted: the run directory holds the turns done so far"))
			}
			return nil
		},
	}
}

func sweepCommand() *cli.Command {
	flags := append([]cli.Flag{&cli.StringFlag{Name: "concurrency", Usage: "comma-separated concurrencies, run in this order, e.g. 1,2,4,8", Required: true}},
		replayFlags(outFlag("sweep directory to write: one run directory c<N>/ per concurrency"))...)
	return &cli.Command{
		Name:      "sweep",
		Usage:     "replay at several concurrencies, one after another, into RUNDIR/c<N>/",
		UsageText: "agentrace sweep --dataset DIR --endpoint URL --concurrency 1,2,4,8 --out SWEEPDIR [options]",
		Description: "Runs `agentrace replay` once per concurrency with the same settings, each point into\n" +
			"SWEEPDIR/c<N>/, and stops at the first failed or interrupted point. `agentrace report SWEEPDIR`\n" +
			"draws the Pareto curve of the points.\n\n" + replayDescription + "Example:\n" +
			"  agentrace sweep --dataset ds --endpoint http://127.0.0.1:8000 --concurrency 1,8,32,128 \\\n" +
			"      --profile kimi-k3 --out sweep-kimi",
		Flags: flags,
		Action: func(ctx context.Context, c *cli.Command) error {
			cs, err := parseConcurrencies(c.String("concurrency"))
			if err != nil {
				return err
			}
			return runStatus(replay.Sweep(ctx, replayOptions(ctx, c), cs))
		},
	}
}

// runStatus gives a replay's or a sweep's error its exit status: 3 when a run
// started and is not whole, 2 when it was refused before anything was sent.
func runStatus(err error) error {
	if err != nil && replay.IsIncomplete(err) {
		return withStatus(exitIncomplete, err)
	}
	return err
}

// parseConcurrencies parses sweep's --concurrency list: positive integers
// separated by commas, none empty, none twice (replay.CheckConcurrencies).
func parseConcurrencies(s string) ([]int, error) {
	var out []int
	for i, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, argsError("sweep", "--concurrency %q: item %d is empty: want positive integers separated by commas", s, i+1)
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, argsError("sweep", "--concurrency %q: %q is not a positive integer: want positive integers separated by commas", s, f)
		}
		out = append(out, n)
	}
	if err := replay.CheckConcurrencies(out); err != nil {
		return nil, argsError("sweep", "--concurrency %q: %v", s, err)
	}
	return out, nil
}

func logCommand() *cli.Command {
	return &cli.Command{
		Name:  "log",
		Usage: "read turn logs",
		Commands: []*cli.Command{logExportCommand(), {
			Name:      "dump",
			Usage:     "print a run's turn log (turns.arrows) as JSON Lines",
			UsageText: "agentrace log dump RUNDIR|SWEEPDIR|turns.arrows [--columns a,b,...]",
			Description: "One JSON object per client turn, keys in column order (all columns, or --columns).\n" +
				"Times are integer nanoseconds on the run's monotonic clock; chunk_times is a list relative\n" +
				"to first_token_ns. A log cut short by a crash (kill -9, power loss) prints its complete\n" +
				"batches, warns on standard error, and exits 0; it fails only when no row could be read\n" +
				"(an empty file, a file that is not a turn log, a log cut before its first batch).\n" +
				"A sweep folder (as log export takes it) prints the rows of each c<N>/ run in turn, each\n" +
				"object starting with \"run\": the run folder.\n\n" +
				"Columns:\n" + columnHelp() + "\n" +
				"Examples:\n" +
				"  agentrace log dump run-c32 | head\n" +
				"  agentrace log dump run-c32 --columns session_id,turn,status,issued_ns,completed_ns\n" +
				"  agentrace log dump sweep --columns session_id,turn,status | jq -s 'group_by(.run)'",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "columns", Usage: "comma-separated columns to print (default: all)"},
			},
			Action: func(ctx context.Context, c *cli.Command) error {
				if c.NArg() != 1 {
					return argsError("log dump", "want exactly one RUNDIR, got %d arguments", c.NArg())
				}
				path := c.Args().First()
				var cols []string
				for _, s := range strings.Split(c.String("columns"), ",") {
					if s = strings.TrimSpace(s); s != "" {
						cols = append(cols, s)
					}
				}
				dump := func(w io.Writer, path string) error {
					n, err := runlog.Dump(ctx, w, path, cols)
					if err != nil && errors.Is(err, runlog.ErrTruncated) && !errors.Is(err, runlog.ErrNoRows) {
						problem(c, "warning", fmt.Sprintf("printed the %d rows of the log's complete batches of %s: %v", n, path, err))
						return nil
					}
					return err
				}
				st, err := os.Stat(path)
				if err != nil || !st.IsDir() {
					return dump(c.Root().Writer, path)
				}
				if report.IsRunDir(path) {
					return dump(c.Root().Writer, filepath.Join(path, schemas.TurnLogFile))
				}
				dirs, err := report.RunDirs([]string{path}) // a sweep: its c<N>/ runs
				if err != nil {
					return fmt.Errorf("log dump: %w", err)
				}
				for _, d := range dirs {
					if err := dump(newRunKeyWriter(c.Root().Writer, filepath.ToSlash(d)), filepath.Join(d, schemas.TurnLogFile)); err != nil {
						return err
					}
				}
				return nil
			},
		}},
	}
}

func columnHelp() string {
	var b strings.Builder
	for _, c := range schemas.TurnLogColumns() {
		fmt.Fprintf(&b, "  %-24s %s\n", c.Name, c.Meaning)
	}
	return b.String()
}

// runKeyWriter puts "run": RUN first in every JSON object line written through it
// (log dump of a sweep: which run each row is of).
type runKeyWriter struct {
	w     io.Writer
	key   []byte
	start bool
}

func newRunKeyWriter(w io.Writer, run string) *runKeyWriter {
	key, _ := json.Marshal(run)
	return &runKeyWriter{w: w, key: append(append([]byte(`{"run":`), key...), ','), start: true}
}

func (k *runKeyWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if k.start && p[0] == '{' {
			if _, err := k.w.Write(k.key); err != nil {
				return n, err
			}
			p, n = p[1:], n+1
		}
		k.start = false
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			m, err := k.w.Write(p)
			return n + m, err
		}
		m, err := k.w.Write(p[:i+1])
		n += m
		if err != nil {
			return n, err
		}
		p, k.start = p[i+1:], true
	}
	return n, nil
}
