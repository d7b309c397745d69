package main

import (
	"fmt"
	"strings"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/urfave/cli/v3"
)

// optionFlags names the command-line flag of each option key the stages give
// their errors and events (notice.OptionError, notice.Event.Option): the stages
// say what is wrong, the command line says which flag sets it. It is the one
// table of those names; a key missing from it is named as it is.
var optionFlags = map[string]string{
	"api-key-env":         "--api-key-env",
	"concurrency":         "--concurrency",
	"dataset":             "--dataset",
	"delay-scale":         "--delay-scale",
	"grace":               "--grace",
	"header":              "--header",
	"isl":                 "--isl",
	"max-artifact-bytes":  "--max-artifact-bytes",
	"max-artifacts-bytes": "--max-artifacts-bytes",
	"max-duration":        "--max-duration",
	"max-expansion":       "--max-expansion",
	"max-output-bytes":    "--max-output-bytes",
	"max-problems":        "--max-problems",
	"model":               "--model",
	"no-delays":           "--no-delays",
	"no-salt":             "--no-salt",
	"no-stream":           "--no-stream",
	"osl":                 "--osl",
	"out":                 "--out",
	"overwrite":           "--overwrite",
	"profile":             "--profile",
	"public-header":       "--public-header",
	"revision":            "--revision",
	"stop-issuing":        "--stop-issuing-at-window-end",
	"stream-usage":        "--stream-usage",
	"strict-stream":       "--strict-stream",
	"tokenizer":           "--tokenizer",
}

// withFlags appends to msg the command-line flags of the option keys, as
// "MSG (--a, --b)"; msg as it is when there are none.
func withFlags(msg string, keys ...string) string {
	if len(keys) == 0 {
		return msg
	}
	flags := make([]string, len(keys))
	for i, k := range keys {
		f, ok := optionFlags[k]
		if !ok {
			f = k
		}
		flags[i] = f
	}
	return fmt.Sprintf("%s (%s)", msg, strings.Join(flags, ", "))
}

// events is the sink of a stage that command c runs: notes and warnings are
// printed as its problem lines (naming the flag of the option they concern),
// progress as plain lines, all on standard error.
func events(c *cli.Command) notice.Sink {
	return func(e notice.Event) {
		var keys []string
		if e.Option != "" {
			keys = []string{e.Option}
		}
		msg := withFlags(e.Text, keys...)
		switch e.Kind {
		case notice.Note:
			problem(c, english.Note, msg)
		case notice.Warning:
			problem(c, english.Warning, msg)
		default:
			fmt.Fprintln(c.Root().ErrWriter, msg)
		}
	}
}
