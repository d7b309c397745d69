// Command agentrace is a toolkit for the MLPerf Agentic Inference benchmark: it
// ingests agentic traces into Parquet, replays them closed-loop against an
// OpenAI-compatible endpoint (or its embedded simulated one), scores the runs by the
// rules, and reports the Pareto curve.
//
// The command is thin: each subcommand parses its flags into an options struct and
// calls one function of a stage. Every subcommand is listed in commands below.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentrace/agentrace/internal/interrupt"
	"github.com/agentrace/agentrace/schemas"
	"github.com/urfave/cli/v3"
)

// commands lists every subcommand, in pipeline order.
func commands() []*cli.Command {
	return []*cli.Command{
		synthCommand(),
		ingestCommand(),
		promptCommand(),
		statsCommand(),
		diffCommand(),
		exportCommand(),
		tokenizeCommand(),
		simCommand(),
		simulateCommand(),
		replayCommand(),
		sweepCommand(),
		swebenchCommand(),
		logCommand(),
		scoreCommand(),
		rulesetsCommand(),
		rescoreCommand(),
		reportCommand(),
		publishCommand(),
		submitCommand(),
		auditCommand(),
		regionsCommand(),
		demoCommand(),
	}
}

func app() *cli.Command {
	cmds := commands()
	withUsageErrors(cmds, "")
	root := &cli.Command{
		Name:    "agentrace",
		Usage:   "replay, score and report the MLPerf Agentic Inference benchmark",
		Version: schemas.ToolVersion,
		Description: "A pipeline of subcommands:\n" +
			"  synth/ingest -> dataset -> replay (or sweep) against an endpoint or the embedded sim -> score -> report\n\n" +
			"Start with `agentrace demo --out demo-out` for a tour on synthetic traces.",
		Commands:     cmds,
		OnUsageError: usageError(""),
		Action:       groupAction(""),
	}
	withExitStatusHelp(root)
	return root
}

func main() {
	// The first interrupt (SIGINT, SIGTERM) cancels ctx: commands stop starting
	// work and shut down cleanly. The second exits at once, unless the command
	// handles it (replay and sweep cancel their turns in flight and still write
	// the log and manifest); the third always exits. After a signal the exit
	// status is 128 + its number (130 for Ctrl-C).
	ctx, h, stop := interrupt.Notify(context.Background())
	defer stop()
	if err := app().Run(ctx, os.Args); err != nil {
		code := exitCode(err)
		if h.Signalled() {
			code = h.ExitCode() // 130 after Ctrl-C, 143 after SIGTERM
			err = interrupted{err}
		}
		printError(os.Stderr, err)
		stop()
		os.Exit(code)
	}
}

// printError prints a command's error once, in the one format of every problem
// message: "agentrace CMD: error: MSG" (problemLine), CMD the command whose
// action or flags failed. Whatever it quotes (a URL with a password, a server's
// answer), the secrets in it are masked (internal/redact).
func printError(w io.Writer, err error) {
	msg := err.Error()
	if strings.TrimSpace(msg) == "" {
		return
	}
	path := ""
	var ce commandError
	if errors.As(err, &ce) {
		path = ce.path
	}
	fmt.Fprintln(w, problemLine(path, kindError, msg))
}

// commandError is the error of the command at path ("log dump"), which
// printError names. It reads "PATH: ERR", PATH said once, followed by the flags
// of the options ERR concerns (optionsOf): "PATH: ERR (--overwrite)".
type commandError struct {
	path string
	err  error
}

func (e commandError) Error() string {
	msg := withFlags(e.err.Error(), optionsOf(e.err)...)
	if e.path == "" || msg == "" {
		return msg
	}
	return e.path + ": " + strings.TrimPrefix(msg, e.path+": ")
}

func (e commandError) Unwrap() error { return e.err }

// interrupted is a command's error after a signal: the cancellation the signal
// caused says "interrupted", not Go's "context canceled", and says it once where
// the error already did ("interrupted: context canceled").
type interrupted struct{ err error }

func (e interrupted) Error() string {
	msg := strings.ReplaceAll(e.err.Error(), "interrupted: "+context.Canceled.Error(), "interrupted")
	return strings.ReplaceAll(msg, context.Canceled.Error(), "interrupted")
}

func (e interrupted) Unwrap() error { return e.err }

// exitStatus is an error that sets the exit status (exitUsage for any other
// error: see status.go); an
// exitStatus with no error exits silently. It is not a cli.ExitCoder, which would
// make urfave exit from inside Run.
type exitStatus struct {
	code int
	err  error
}

func (e *exitStatus) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *exitStatus) Unwrap() error { return e.err }

// withStatus returns err with exit status code (err may be nil).
func withStatus(code int, err error) error { return &exitStatus{code: code, err: err} }

// exitCode is the exit status for an error returned by the app: its own, else
// exitUsage (nothing done).
func exitCode(err error) int {
	var es *exitStatus
	if errors.As(err, &es) {
		return es.code
	}
	return exitUsage
}
