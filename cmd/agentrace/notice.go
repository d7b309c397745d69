package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/urfave/cli/v3"
)

// optionFlags names the command-line flag of each option key the stages give
// their errors and events (notice.OptionError, notice.Event.Option): the stages
// say what is wrong, the command line says which flag sets it. It is the one
// table of those names; a key missing from it is named as it is.
var optionFlags = map[string]string{
	"allow-failures":      "--allow-failures",
	"api-key-env":         "--api-key-env",
	"compare":             "--compare",
	"concurrency":         "--concurrency",
	"dataset":             "--dataset",
	"grace":               "--grace",
	"header":              "--header",
	"isl":                 "--isl",
	"like":                "--like",
	"max-artifact-bytes":  "--max-artifact-bytes",
	"max-artifacts-bytes": "--max-artifacts-bytes",
	"max-duration":        "--max-duration",
	"max-expansion":       "--max-expansion",
	"max-problems":        "--max-problems",
	"model":               "--model",
	"no-salt":             "--no-salt",
	"osl":                 "--osl",
	"out":                 "--out",
	"overwrite":           "--overwrite",
	"profile":             "--profile",
	"public-header":       "--public-header",
	"swebench-mean":       "--swebench-mean",
	"swebench-min":        "--swebench-min",
	"swebench-report":     "--swebench-report",
	"tokenizer":           "--tokenizer",
}

// optionsOf lists the options err concerns: those its notice.OptionErrors name,
// then those of the stages' sentinel errors that an option lifts.
func optionsOf(err error) []string {
	keys := notice.Options(err)
	add := func(k string) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	var ve *ingest.ValidationError
	switch {
	case errors.Is(err, outguard.ErrExists):
		add("overwrite")
	case errors.Is(err, infile.ErrExpansion):
		add("max-expansion")
	case errors.As(err, &ve) && ve.Omitted > 0:
		add("max-problems")
	}
	return keys
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

// prefixed is events(c) with progress lines starting "PREFIX: ", as submit,
// audit and swebench print theirs ("audit: c8: ...").
func prefixed(c *cli.Command, prefix string) notice.Sink {
	say := events(c)
	return func(e notice.Event) {
		if e.Kind == notice.Progress {
			e.Text = prefix + ": " + e.Text
		}
		say(e)
	}
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
			problem(c, kindNote, msg)
		case notice.Warning:
			problem(c, kindWarning, msg)
		default:
			fmt.Fprintln(c.Root().ErrWriter, msg)
		}
	}
}
