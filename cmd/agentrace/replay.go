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
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/interrupt"
	"github.com/agentrace/agentrace/internal/progress"
	"github.com/agentrace/agentrace/replay"
	"github.com/agentrace/agentrace/replay/swebench"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/urfave/cli/v3"
)

// replayFlags are the flags replay and sweep share (sweep's --concurrency is a list and
// its --out a sweep folder).
func replayFlags(out *cli.StringFlag) []cli.Flag {
	flags := []cli.Flag{
		datasetFlag("dataset directory written by agentrace ingest or synth, or a trace file (the reference's JSONL), ingested first into the cache (required unless --config names it)", false),
		&cli.StringSliceFlag{Name: "endpoint", Usage: "OpenAI-compatible server, e.g. http://127.0.0.1:8000 (…/v1 and …/v1/chat/completions work too; required unless --config names it); repeatable: requests go over them as --endpoint-routing says"},
		out,
	}
	flags = append(flags, configFlags()...)
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
	flags = append(flags, telemetryFlags()...)
	return append(flags, requestFlags()...)
}

// replayOptions reads the flags, over a --config's settings when one is given:
// a flag given on the command line wins; one not given keeps the config's value
// (without --config, every flag's default applies). The dataset may be a trace
// file, ingested first (datasetDir).
func replayOptions(ctx context.Context, c *cli.Command, path string) (replay.Options, *replay.ConfigRun, error) {
	cr, err := loadConfig(ctx, c)
	if err != nil {
		return replay.Options{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	var o replay.Options
	if cr != nil {
		o = cr.Options
		if c.String("mode") == "perf" {
			for _, d := range cr.Accuracy {
				problem(c, kindNote, fmt.Sprintf("accuracy dataset %q (%s) not run in --mode perf", d.DisplayName(), d.Scorer()))
			}
		}
		for _, n := range o.ConfigNotes {
			problem(c, kindNote, "config: "+n)
		}
	}
	given := func(name string) bool { return cr == nil || c.IsSet(name) }
	str := func(dst *string, name string) {
		if given(name) {
			*dst = c.String(name)
		}
	}
	boolean := func(dst *bool, name string) {
		if c.IsSet(name) || cr == nil {
			*dst = c.Bool(name)
		}
	}
	dur := func(dst *time.Duration, name string) {
		if given(name) {
			*dst = c.Duration(name)
		}
	}
	o.Force = interrupt.FromContext(ctx).Force()
	str(&o.Dataset, "dataset")
	if eps := c.StringSlice("endpoint"); given("endpoint") && len(eps) > 0 {
		o.Endpoint, o.Endpoints = eps[0], eps[1:]
	}
	telemetryOptions(c, &o)
	str(&o.Out, "out")
	o.Overwrite = overwrite(c)
	str(&o.Model, "model")
	str(&o.Profile, "profile")
	if given("trajectories") {
		o.Trajectories = int(c.Int("trajectories"))
	}
	boolean(&o.NoSalt, "no-salt")
	boolean(&o.NoDelays, "no-delays")
	if given("delay-scale") {
		o.DelayScale = c.Float("delay-scale")
	}
	dur(&o.TurnTimeout, "turn-timeout")
	boolean(&o.StopIssuingAtWindowEnd, "stop-issuing-at-window-end")
	dur(&o.Grace, "grace")
	if cr != nil && !c.IsSet("grace") && o.Grace == 0 {
		o.Grace = replay.DefaultGrace // the config's interrupted_teardown_grace_s, else the default
	}
	dur(&o.MaxDuration, "max-duration")
	boolean(&o.StrictStream, "strict-stream")
	if given("max-output-bytes") {
		o.MaxOutputBytes = c.Int64("max-output-bytes")
	}
	str(&o.APIKeyEnv, "api-key-env")
	if given("header") {
		o.Headers = c.StringSlice("header")
	}
	if given("public-header") {
		o.PublicHeaders = c.StringSlice("public-header")
	}
	if given("routing-header") {
		o.RoutingHeaders = c.StringSlice("routing-header")
	}
	if given("max-tokens") {
		o.MaxTokens = int(c.Int("max-tokens"))
	}
	boolean(&o.NoStream, "no-stream")
	boolean(&o.StreamUsage, "stream-usage")
	boolean(&o.ClearGeneratedCache, "clear-generated-cache")
	sampling, err := samplingFlags(c)
	if err != nil {
		return o, nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.IsSet("profile") && cr != nil {
		// a profile given over a config replaces the config's model_params
		o.Sampling = datasets.Profile{}
	}
	o.Sampling = o.Sampling.Overlay(sampling)
	o.Progress, o.Events = c.Root().ErrWriter, events(c)
	o.ProgressTTY = progress.IsTerminal(os.Stderr)
	for _, f := range []struct{ name, v string }{{"dataset", o.Dataset}, {"endpoint", o.Endpoint}, {"out", o.Out}} {
		if f.v == "" {
			return o, nil, argsError(path, "--%s missing (or give --config with it)", f.name)
		}
	}
	dir, src, err := datasetDir(ctx, o.Dataset, c.Root().ErrWriter)
	if err != nil {
		return o, nil, fmt.Errorf("%s: %w", path, err)
	}
	o.Dataset, o.DatasetSource = dir, src
	return o, cr, nil
}

const replayDescription = "Replays the dataset's trajectories closed-loop, as the MLPerf reference client's agentic\n" +
	"strategy does: N trajectories active at once, each with exactly one turn in flight; a turn is\n" +
	"issued when the previous one completed and its delay_seconds has passed; a finished trajectory\n" +
	"frees its slot for the next. Trajectories take the conversations in an order shuffled per pass\n" +
	"over the dataset from the dataloader seed (dataloader_random_seed, 42 without --config), as the\n" +
	"reference draws it; the k-th trajectory is instance k div n + 1 of its conversation,\n" +
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
	"Writes RUNDIR/turns.arrows (one row per client turn; `agentrace log dump RUNDIR` prints it),\n" +
	"RUNDIR/manifest.json (settings, never the API key; counts; complete, interrupted or failed) and\n" +
	"RUNDIR/config.yaml (the run in the reference's config schema, secrets redacted, as the submission\n" +
	"tools read it).\n" +
	"Secrets: the API key, every --header value (unless --public-header) and the endpoint's user\n" +
	"information (with its Basic form) are masked as <redacted> in every file and message, also where\n" +
	"the server echoes them (an error body, an error frame, a completion); the manifest keeps header names.\n\n" +
	"--config FILE reads the reference client's benchmark YAML (its schema; ${VAR} expanded; unknown\n" +
	"keys refused with their path; what agentrace cannot honour refused naming the key); flags given on\n" +
	"the command line win over it; its dataset path may be the reference's JSONL, ingested first into\n" +
	"the cache. See docs/config.md.\n\n" +
	"Settings that depart from the official ones are listed in the manifest as non_official.\n\n"

func replayCommand() *cli.Command {
	out := outFlag("run directory to write (turns.arrows, manifest.json, config.yaml; default: a --config's report_dir)")
	out.Required = false
	flags := append([]cli.Flag{&cli.IntFlag{Name: "concurrency", HideDefault: true, Usage: "trajectories active at once (N; required unless --config sets settings.load_pattern.target_concurrency)"}},
		replayFlags(out)...)
	return &cli.Command{
		Name:  "replay",
		Usage: "replay a dataset closed-loop against an OpenAI-compatible endpoint at N active trajectories",
		UsageText: "agentrace replay --dataset DIR --endpoint URL --concurrency N --out RUNDIR [options]\n" +
			"   agentrace replay --config FILE [--mode perf|acc|both] [options, which win over the file]",
		Description: replayDescription + "Examples:\n" +
			"  agentrace replay --dataset ds --endpoint http://127.0.0.1:8000 --concurrency 32 --out run-c32 \\\n" +
			"      --profile qwen3.6-35b-a3b --model Qwen/Qwen3.6-35B-A3B\n" +
			"  agentrace replay --dataset ds --endpoint https://api.example.com/v1 --api-key-env MY_KEY \\\n" +
			"      --concurrency 4 --out run --no-delays --trajectories 8\n" +
			"  agentrace replay --dataset ds --endpoint https://gw.example.com --header 'X-Gateway-Key: abc123' \\\n" +
			"      --header 'X-Tenant: team-a' --public-header X-Tenant --concurrency 8 --out run\n" +
			"  ENDPOINT=http://127.0.0.1:30000 agentrace replay --config qwen_agentic_benchmark.yaml --concurrency 32 --out run-c32",
		Flags: flags,
		Action: func(ctx context.Context, c *cli.Command) error {
			o, cr, err := replayOptions(ctx, c, "replay")
			if err != nil {
				return err
			}
			if c.IsSet("concurrency") || cr == nil {
				o.Concurrency = int(c.Int("concurrency"))
			}
			if o.Concurrency < 1 {
				return argsError("replay", "--concurrency missing (or give --config with settings.load_pattern.target_concurrency)")
			}
			mode := c.String("mode")
			switch mode {
			case "perf", "both":
			case "acc":
				acc, err := prepareAccuracy(ctx, c, cr, o)
				if err != nil {
					return err
				}
				return swebenchRun(ctx, c, acc)
			default:
				return argsError("replay", "--mode %q: want perf, acc or both", mode)
			}
			var acc *swebench.Options
			if mode == "both" {
				if acc, err = prepareAccuracy(ctx, c, cr, o); err != nil {
					return err
				}
			}
			sum, err := replay.Run(ctx, o)
			if sum != nil {
				fmt.Fprintln(c.Root().Writer, sum)
			}
			if err != nil {
				return runStatus(err)
			}
			if sum.State == schemas.RunInterrupted && sum.Dropped {
				return fmt.Errorf("interrupted: the earlier run at %s is kept as it was; this one was dropped", sum.RunDir)
			}
			if sum.State == schemas.RunInterrupted {
				return withStatus(exitIncomplete, errors.New("interrupted: the run directory holds the turns done so far"))
			}
			if acc != nil {
				// the performance run is done: whatever stops the accuracy
				// run, the command did not do nothing
				if err := swebenchRun(ctx, c, acc); err != nil {
					return withStatus(max(exitCode(err), exitIncomplete), fmt.Errorf("%w (the performance run at %s is complete)", err, sum.RunDir))
				}
			}
			return nil
		},
	}
}

func sweepCommand() *cli.Command {
	out := outFlag("sweep directory to write: one run directory c<N>/ per concurrency (default: a --config's report_dir)")
	out.Required = false
	flags := append([]cli.Flag{&cli.StringFlag{Name: "concurrency", Usage: "comma-separated concurrencies, run in this order, e.g. 1,2,4,8 (default with --config: its target_concurrency)"}},
		replayFlags(out)...)
	return &cli.Command{
		Name:  "sweep",
		Usage: "replay at several concurrencies, one after another, into SWEEPDIR/c<N>/",
		UsageText: "agentrace sweep --dataset DIR --endpoint URL --concurrency 1,2,4,8 --out SWEEPDIR [options]\n" +
			"   agentrace sweep --config FILE [--concurrency 1,2,4,8] [options, which win over the file]",
		Description: "Runs `agentrace replay` once per concurrency with the same settings, each point into\n" +
			"SWEEPDIR/c<N>/, and stops at its first point that is not whole (failed, its endpoint lost,\n" +
			"interrupted) or that was refused before it sent anything: the points before it are kept,\n" +
			"the later ones are not run, and the exit status is that point's (3, or 130/143 after a\n" +
			"signal; 2 only when the first point was refused). `agentrace report SWEEPDIR`\n" +
			"draws the Pareto curve of the points.\n\n" + replayDescription + "Example:\n" +
			"  agentrace sweep --dataset ds --endpoint http://127.0.0.1:8000 --concurrency 1,8,32,128 \\\n" +
			"      --profile kimi-k3 --out sweep-kimi",
		Flags: flags,
		Action: func(ctx context.Context, c *cli.Command) error {
			o, cr, err := replayOptions(ctx, c, "sweep")
			if err != nil {
				return err
			}
			var cs []int
			if cr != nil && !c.IsSet("concurrency") {
				cs = []int{o.Concurrency}
			} else if cs, err = parseConcurrencies(c.String("concurrency")); err != nil {
				return err
			}
			if c.String("mode") != "perf" {
				return argsError("sweep", "--mode %s: run the accuracy dataset with agentrace replay --mode acc (or agentrace swebench)", c.String("mode"))
			}
			return runStatus(replay.Sweep(ctx, o, cs))
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
				"--columns also takes every column of the run's analysis table turns.parquet (docs/layouts.md:\n" +
				"error_kind, issued, lag_ms, ttft_ms, latency_ms, the *_at times, ...): then every column\n" +
				"is read from that table, turn as its client_turn.\n\n" +
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
				if curve.IsRunDir(path) {
					return dump(c.Root().Writer, filepath.Join(path, schemas.TurnLogFile))
				}
				dirs, err := curve.RunDirs([]string{path}) // a sweep: its c<N>/ runs
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
