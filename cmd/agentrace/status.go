package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"
)

// The exit statuses, one table for every command: each --help and the README show
// it (exitStatusHelp), and exitCode maps a command's error onto it.
const (
	// exitOK: the command did its work, and every verdict it gave passed.
	exitOK = 0
	// exitNo: the work was done and its answer is no: a verdict that did not pass
	// (score, report), an audit with a number that disagrees, datasets that differ
	// (diff), a run that could not be scored (rescore).
	exitNo = 1
	// exitUsage: nothing was done: bad usage (a flag, an argument, a list or range),
	// an input that cannot be read or is invalid, an output that may not be
	// written, a SWE-bench service that refused the run before it began. Every
	// error without a status of its own is this one.
	exitUsage = 2
	// exitIncomplete: a run was made but is not whole: replay, sweep or demo
	// stopped before its end (failed, cut short), or every turn failed; a
	// SWE-bench service run gave no whole result (swebench, replay --mode acc,
	// and --mode both after its performance run).
	exitIncomplete = 3
)

// exitStatusTable is the table every --help ends with, and the README shows.
var exitStatusTable = []struct {
	code    string
	meaning string
}{
	{"0", "done; every verdict given passed"},
	{"1", "done, and the answer is no: a verdict did not pass (score, report), an audit found a number that disagrees (or a point it could not read), the datasets differ (diff), a run could not be scored (rescore)"},
	{"2", "nothing done: bad usage or input (a flag, a list or range, an unreadable or invalid input, an output that may not be written, a SWE-bench service that refused the run before it began)"},
	{"3", "a run is not whole: replay, sweep or demo failed or stopped before its end, or every turn failed; a SWE-bench service run (swebench, replay --mode acc or both) failed, was cancelled, or gave no whole result (an invalid or incomplete one, an artifact not downloaded), after a completed performance run too"},
	{"130, 143", "interrupted by SIGINT (Ctrl-C) or SIGTERM (128 + the signal's number); the outputs are left true"},
}

// exitStatusHelp is the exit status table as --help prints it.
func exitStatusHelp() string {
	var b strings.Builder
	b.WriteString("Exit status (the same for every command):\n")
	for _, r := range exitStatusTable {
		fmt.Fprintf(&b, "  %-9s %s\n", r.code, r.meaning)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// withExitStatusHelp ends the description of every command of the tree (the root
// too) with the exit status table.
func withExitStatusHelp(c *cli.Command) {
	if c.Description != "" {
		c.Description += "\n\n"
	}
	c.Description += exitStatusHelp()
	for _, sub := range c.Commands {
		withExitStatusHelp(sub)
	}
}
