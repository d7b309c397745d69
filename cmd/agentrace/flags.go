package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"
)

// The CLI grammar, one definition per meaning. Every subcommand builds its flags from
// these constructors, so the same thing has the same name, alias and wording everywhere:
//
//	--out, -o         the output (file or folder) a command writes
//	--dataset, -d     a dataset folder (or, where a command reads traces, a trace file)
//	--overwrite       replace an earlier output of the same kind
//	--tokenizer       a reference tokenizer folder
//	--ruleset         an embedded ruleset name, a ruleset file, or auto
//	--json            print JSON instead of a table
//	--quiet, -q       print nothing on success
//	--max-expansion   how many times its size an archive read in place may expand to
//
// Run folders (and sweep folders, archives) are positional arguments in every command
// that reads them: score, report, log dump, log export, rescore. A flag is hidden only
// when it is an old spelling kept as a deprecated alias (urfave prints a warning when it
// is used); grammar_test.go walks every command and checks these rules.
//
// Each constructor returns a fresh flag: urfave flags hold their parsed value, so one
// instance must not be shared between commands.

// outFlag is the required --out/-o naming what a command writes.
func outFlag(usage string) *cli.StringFlag {
	return &cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: usage, Required: true, TakesFile: true}
}

// outFlagDefault is --out/-o with a default value instead of being required.
func outFlagDefault(usage, value string) *cli.StringFlag {
	return &cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: usage, Value: value, TakesFile: true}
}

// maxExpansionFlag is --max-expansion, for commands that read archives in place.
func maxExpansionFlag() *cli.FloatFlag {
	return &cli.FloatFlag{Name: "max-expansion", Value: 10,
		Usage: "refuse a .tar.gz/.zip whose entries expand past this many times its size (0 or less: no limit; event logs compress ~15x)"}
}

// maxExpansion reads --max-expansion as archive.Limits.MaxExpansion (0 or less:
// no limit, which Limits writes as a negative value).
func maxExpansion(c *cli.Command) float64 {
	if f := c.Float("max-expansion"); f > 0 {
		return f
	}
	return -1
}

// datasetFlag is --dataset/-d.
func datasetFlag(usage string, required bool) *cli.StringFlag {
	return &cli.StringFlag{Name: "dataset", Aliases: []string{"d"}, Usage: usage, Required: required, TakesFile: true}
}

// overwriteFlags are --overwrite and its deprecated hidden spelling --force; read them
// with overwrite.
func overwriteFlags(what string) []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "overwrite", Usage: "replace " + what + " already at --out (only one agentrace made, of the same kind; the old spelling --force still works)"},
		&cli.BoolFlag{Name: "force", Hidden: true, Deprecated: "use --overwrite"},
	}
}

// overwrite reports whether --overwrite (or the deprecated --force) was given.
func overwrite(c *cli.Command) bool {
	return c.Bool("overwrite") || c.Bool("force")
}

// tokenizerFlag is --tokenizer, a tokenizer folder.
func tokenizerFlag(usage string, required bool) *cli.StringFlag {
	return &cli.StringFlag{Name: "tokenizer", Usage: usage, Required: required, TakesFile: true}
}

// rulesetFlag is --ruleset with a default (empty for none).
func rulesetFlag(usage, value string) *cli.StringFlag {
	return &cli.StringFlag{Name: "ruleset", Usage: usage, Value: value}
}

// jsonFlag is --json.
func jsonFlag(usage string) *cli.BoolFlag {
	return &cli.BoolFlag{Name: "json", Usage: usage}
}

// quietFlag is --quiet/-q.
func quietFlag(usage string) *cli.BoolFlag {
	return &cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: usage}
}

// cmaxFlag is --cmax, the declared maximum supported concurrency.
func cmaxFlag(usage string, required bool) *cli.IntFlag {
	return &cli.IntFlag{Name: "cmax", Usage: usage, Required: required, HideDefault: !required}
}

// requestFlags are the flags that shape a request body, shared by replay, sweep and
// prompt (prompt prints the body replay would send, so they must agree).
func requestFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "model", Usage: "model name sent by rows that name none (default: the profile's; a row's own model wins, then the first user row's, as in the reference client)"},
		&cli.StringFlag{Name: "profile", Usage: "sampling profile: qwen3.6-35b-a3b, kimi-k3, kimi-k2.6 (none: only the dataset's parameters)"},
		&cli.BoolFlag{Name: "no-salt", Usage: "do not salt system prompts (unofficial: cache is shared across trajectories)"},
		&cli.BoolFlag{Name: "no-stream", Usage: "ask for whole responses instead of Server-Sent Events where a turn's row sets no stream value (unofficial: no per-token times); a row's own stream value always decides, as in the reference client"},
		&cli.BoolFlag{Name: "stream-usage", Usage: "ask streamed answers for the server's token usage (stream_options.include_usage; unofficial: the reference client does not send it)"},
		&cli.IntFlag{Name: "max-tokens", HideDefault: true, Usage: "max_completion_tokens for rows that set none (default: the profile's, else 1024 as the reference client's; -1: none, the reference loader's own fallback: the first user row's, else 128)"},
		&cli.BoolFlag{Name: "clear-generated-cache", Usage: "put a space at the start of every recorded assistant message of the history (its reasoning, else its content), so that no token the server generated live is reused as cached history"},
		&cli.StringFlag{Name: "api-key-env", Usage: "environment variable holding the API key, sent as a Bearer token (never written anywhere; prompt -v shows it redacted)"},
	}, samplingFlagDefs()...)
}

// usageError is every command's OnUsageError: "CMD: ERR (see agentrace CMD --help)";
// path "" is the root command.
// A command whose Metadata[usageStatusKey] is an int exits with that status on a
// usage error (diff: 2, as diff(1) does).
func usageError(path string) cli.OnUsageErrorFunc {
	return func(ctx context.Context, c *cli.Command, err error, _ bool) error {
		if path == "" {
			return fmt.Errorf("%w (see agentrace --help)", err)
		}
		err = fmt.Errorf("%s: %w (see agentrace %s --help)", path, err, path)
		if code, ok := c.Metadata[usageStatusKey].(int); ok {
			return withStatus(code, err)
		}
		return err
	}
}

// usageStatusKey is the Metadata key of a command's usage-error exit status.
const usageStatusKey = "usage_status"

// withUsageErrors gives every command of the tree (below the root) the one
// usage-error format, named by its path ("log dump"); a command that only groups
// subcommands refuses an unknown one the same way.
func withUsageErrors(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		path := strings.TrimSpace(parent + " " + c.Name)
		c.OnUsageError = usageError(path)
		if c.Action == nil && len(c.Commands) > 0 {
			c.Action = groupAction(path)
		}
		withUsageErrors(c.Commands, path)
	}
}

// groupAction is the action of a command that groups subcommands (and of the root,
// path ""): its help without arguments, an error naming an unknown subcommand.
func groupAction(path string) cli.ActionFunc {
	return func(ctx context.Context, c *cli.Command) error {
		if c.NArg() == 0 {
			return cli.ShowSubcommandHelp(c)
		}
		if path == "" {
			return fmt.Errorf("unknown command %q (see agentrace --help)", c.Args().First())
		}
		return argsError(path, "unknown command %q", c.Args().First())
	}
}

// argsError is the format of an error about positional arguments, as usageError's.
func argsError(path, format string, a ...any) error {
	return fmt.Errorf("%s: %s (see agentrace %s --help)", path, fmt.Sprintf(format, a...), path)
}

// withDest sets a string flag's destination (for commands that parse into a struct).
func withDest(f *cli.StringFlag, dest *string) *cli.StringFlag {
	f.Destination = dest
	return f
}
