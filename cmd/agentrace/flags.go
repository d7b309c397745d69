package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/score/checker"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/agentrace/agentrace/tokens"
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

// overwriteFlags is --overwrite; read it with overwrite.
func overwriteFlags(what string) []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "overwrite", Usage: "replace " + what + " already at --out (only one agentrace made, of the same kind)"},
	}
}

// overwrite reports whether --overwrite was given.
func overwrite(c *cli.Command) bool { return c.Bool("overwrite") }

// tokenizerFlag is --tokenizer: a model folder, or a Hugging Face model id found
// in the local hub cache (read it with tokenizerArg).
func tokenizerFlag(usage string, required bool) *cli.StringFlag {
	return &cli.StringFlag{Name: "tokenizer", Usage: usage + "; a model folder, or a Hugging Face model id (ORG/NAME) in the local cache (HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub; never downloaded)",
		Required: required, TakesFile: true}
}

// tokenizerRevisionFlag is --tokenizer-revision, the revision of a model id.
func tokenizerRevisionFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "tokenizer-revision", Usage: "revision of the --tokenizer model id in the cache: a branch, a tag or a commit id", Value: tokens.DefaultRevision}
}

// tokenizerArg resolves --tokenizer (at --tokenizer-revision) to the folder it
// names, offline; "" when it is not given.
func tokenizerArg(c *cli.Command) (string, error) {
	spec, rev := c.String("tokenizer"), c.String("tokenizer-revision")
	if spec == "" {
		if rev != "" && rev != tokens.DefaultRevision {
			return "", argsError(c.Name, "--tokenizer-revision %q needs --tokenizer (a Hugging Face model id)", rev)
		}
		return "", nil
	}
	return tokens.Resolve(spec, rev)
}

// tokenizerAndArgs is the first step of every command that takes --tokenizer and
// positional folders or files (ingest, score, rescore, report, publish, audit):
// --tokenizer resolved (tokenizerArg), then the arguments, at least one; none is
// a usage error saying what is missing ("no run directory given").
func tokenizerAndArgs(c *cli.Command, missing string) (tokDir string, args []string, err error) {
	if tokDir, err = tokenizerArg(c); err != nil {
		return "", nil, err
	}
	if c.NArg() == 0 {
		return "", nil, argsError(c.Name, "%s", missing)
	}
	return tokDir, c.Args().Slice(), nil
}

// rulesetFlag is --ruleset, whose default is auto in every command: the newest
// embedded ruleset naming each run's model (report and publish: the one the runs'
// scores.json names first).
func rulesetFlag(usage string) *cli.StringFlag {
	return &cli.StringFlag{Name: "ruleset", Usage: usage, Value: rulesets.Auto}
}

// curveRuleset is --ruleset of report and publish: auto is "" to them (each run's
// scores.json ruleset, else the newest naming its model).
func curveRuleset(c *cli.Command) string {
	if r := c.String("ruleset"); r != rulesets.Auto {
		return r
	}
	return ""
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

// usageError is every command's OnUsageError: "ERR (see agentrace CMD --help)" of
// command CMD (printed "agentrace CMD: error: ERR (see ...)"),
// exit status 2 (status.go); path "" is the root command.
func usageError(path string) cli.OnUsageErrorFunc {
	return func(ctx context.Context, c *cli.Command, err error, _ bool) error {
		if path == "" {
			return withStatus(exitUsage, fmt.Errorf("%w (see agentrace --help)", err))
		}
		return withStatus(exitUsage, commandError{path, fmt.Errorf("%w (see agentrace %s --help)", err, path)})
	}
}

// withUsageErrors gives every command of the tree (below the root) the one
// usage-error format, named by its path ("log dump"), and ties its action's error
// to that path (commandError, printed by main); a command that only groups
// subcommands refuses an unknown one the same way.
func withUsageErrors(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		path := strings.TrimSpace(parent + " " + c.Name)
		c.OnUsageError = usageError(path)
		if c.Action == nil && len(c.Commands) > 0 {
			c.Action = groupAction(path)
		}
		if act := c.Action; act != nil {
			c.Action = func(ctx context.Context, cc *cli.Command) error {
				if err := act(ctx, cc); err != nil {
					return commandError{path, err}
				}
				return nil
			}
		}
		withUsageErrors(c.Commands, path)
	}
}

// groupAction is the action of a command that groups subcommands (and of the root,
// path ""): its help without arguments, an error naming an unknown subcommand.
func groupAction(path string) cli.ActionFunc {
	return func(ctx context.Context, c *cli.Command) error {
		if c.NArg() == 0 {
			// No subcommand is bad usage: the help, and exit status 2.
			if err := cli.ShowSubcommandHelp(c); err != nil {
				return err
			}
			return withStatus(exitUsage, nil)
		}
		if path == "" {
			return fmt.Errorf("unknown command %q (see agentrace --help)", c.Args().First())
		}
		return argsError(path, "unknown command %q", c.Args().First())
	}
}

// problem prints what is not an error, the one way every command and stage does
// (english.Problem): "agentrace CMD: warning: MSG" (kind english.Warning, Note or
// Error for one item of many), on standard error, secrets masked. An error that
// ends the command is printed by main as "agentrace CMD: error: MSG".
func problem(c *cli.Command, kind, msg string) {
	english.Fprint(c.Root().ErrWriter, c.FullName(), kind, msg) // FullName: "agentrace log dump"
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

// checkerFlags name files replacing the submission checker's embedded data, as
// the checker's own --approved-drafters and --seed-sets and their environment
// variables do (agentrace rulesets lists what is embedded).
func checkerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "approved-drafters", Usage: "approved speculative-decoding drafters, in the checker's approved_drafters.yaml format (default: embedded)",
			Sources: cli.EnvVars("MLPERF_ENDPOINTS_APPROVED_DRAFTERS"), TakesFile: true},
		&cli.StringFlag{Name: "seed-sets", Usage: "published seed sets, in the checker's seed_sets.yaml format (default: embedded)",
			Sources: cli.EnvVars("MLPERF_ENDPOINTS_SEED_SETS"), TakesFile: true},
		&cli.StringFlag{Name: "checker-targets", Usage: "accepted model names and agentic accuracy targets, in the format of `agentrace rulesets --checker-data` (default: embedded)", TakesFile: true},
	}
}

// checkerData loads the submission checker's data, replaced where the flags name files.
func checkerData(c *cli.Command) (*checker.Data, error) {
	d, err := checker.LoadData(checker.DataOptions{ApprovedDrafters: c.String("approved-drafters"), SeedSets: c.String("seed-sets"), Targets: c.String("checker-targets")})
	if err != nil {
		return nil, argsError(c.Name, "%v", err)
	}
	return d, nil
}
