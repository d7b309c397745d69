package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
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

// recordedDefault ends the --tokenizer usage of the commands that read
// countingTokenizer.
const recordedDefault = "; default: the tokenizer (or the server's usage) the runs recorded when they were counted before, found again by its digest, else the server's usage; another one's numbers are marked not comparable"

// countingTokenizer is the first step of every command that counts the tokens
// of runs counted before (score, rescore, report, publish, audit): the
// tokenizer and the arguments as tokenizerAndArgs reads them, and without
// --tokenizer the counting the runs recorded (score.Recorded): their tokenizer
// where it is found with the recorded digest, or the server's usage counts. A
// recorded tokenizer not found here is an error, except where absentOK (audit:
// its token figures are then unchecked). A --tokenizer other than the recorded
// counting is named on the error stream: its numbers are
// schemas.NotComparableLabel.
func countingTokenizer(c *cli.Command, missing string, absentOK bool) (tokDir string, args []string, err error) {
	if tokDir, args, err = tokenizerAndArgs(c, missing); err != nil {
		return "", nil, err
	}
	rec, err := score.Recorded(args)
	if err != nil {
		if tokDir != "" {
			problem(c, kindWarning, fmt.Sprintf("%v; counting all with --tokenizer %s", err, c.String("tokenizer")))
			return tokDir, args, nil
		}
		return "", nil, argsError(c.Name, "%v: give --tokenizer", err)
	}
	if rec == nil {
		return tokDir, args, nil
	}
	runs := rec.RunsNamed()
	if tokDir != "" {
		same, err := rec.Same(tokDir)
		if err != nil || !same {
			problem(c, kindWarning, fmt.Sprintf("--tokenizer %s is not what %s counted with (%s): its numbers are %s",
				c.String("tokenizer"), runs, rec, schemas.NotComparableLabel))
		}
		return tokDir, args, nil
	}
	switch {
	case rec.ServerUsage():
		problem(c, kindNote, fmt.Sprintf("counting tokens as %s recorded: %s", runs, rec))
	case rec.Dir != "":
		problem(c, kindNote, fmt.Sprintf("counting tokens as %s recorded: with %s, found at %s", runs, rec, rec.Dir))
		tokDir = rec.Dir
	case absentOK:
		problem(c, kindWarning, fmt.Sprintf("%s counted with %s, which is not here (tried %s): its token figures are not re-derived; give --tokenizer",
			runs, rec, strings.Join(rec.Tried, "; ")))
	default:
		return "", nil, argsError(c.Name, "%s counted with %s, which is not here (tried %s): give --tokenizer with it (another tokenizer's numbers are %s)",
			runs, rec, strings.Join(rec.Tried, "; "), schemas.NotComparableLabel)
	}
	return tokDir, args, nil
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
// descendFlag is --descend of score, report and audit: read every run inside a
// folder that is not a run, a folder of runs or a submission tree (which is
// otherwise refused, naming the runs inside: archive.Whole).
func descendFlag() *cli.BoolFlag {
	return &cli.BoolFlag{Name: "descend", Usage: "read every run inside a folder that is not itself a run, a folder of runs (a sweep) or a submission tree, instead of refusing it"}
}

// descendHint names --descend in the refusal of a folder that is not a run.
func descendHint(err error) error {
	var nr *archive.NotARunError
	if errors.As(err, &nr) {
		return fmt.Errorf("%w (or --descend reads every run in it)", err)
	}
	return err
}

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
		&cli.StringFlag{Name: "profile", Usage: "sampling profile: qwen3.6-35b-a3b, kimi-k3, kimi-k2.6, deepseek-v4 (none: only the dataset's parameters)"},
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
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
			if s := movedFlag(path, name); s != "" {
				err = fmt.Errorf("%w; %s", err, s)
			} else if s := flagSuggestion(c, name); s != "" {
				err = fmt.Errorf("%w; did you mean %s?", err, s)
			}
		}
		if path == "" {
			return withStatus(exitUsage, fmt.Errorf("%w (see agentrace --help)", err))
		}
		return withStatus(exitUsage, commandError{path, fmt.Errorf("%w (see agentrace %s --help)", err, path)})
	}
}

// movedFlag says which flag replaced flag name (without its dashes) of command
// path, for a flag that shipped under that name: --profile now means the
// sampling profile alone, so the old name is refused, naming the new one, never
// taken as an alias.
func movedFlag(path, name string) string {
	switch {
	case name == "profile" && (path == "sim" || path == "simulate"):
		return "the simulated hardware is --hardware now (--profile names a sampling profile)"
	case name == "sim-profile" && path == "demo":
		return "the simulated hardware is --hardware now"
	case name == "profile" && path == "synth":
		return "the traces' shape is --shape now (--profile names a sampling profile)"
	}
	return ""
}

// flagSuggestion is the flag of c that a mistyped name (without its dashes) most
// likely meant, as urfave's suggester picks it ("--concurrency" for "concurency"),
// "" when even that one is not a near miss (closeName).
func flagSuggestion(c *cli.Command, name string) string {
	name = strings.TrimLeft(name, "-")
	s := cli.SuggestFlag(c.Flags, name, true)
	if !closeName(name, strings.TrimLeft(s, "-")) {
		return ""
	}
	return "--" + strings.TrimLeft(s, "-")
}

// commandSuggestion is the subcommand of c that a mistyped name most likely meant
// ("sweep" for "swep"), "" when none is a near miss.
func commandSuggestion(c *cli.Command, name string) string {
	s := cli.SuggestCommand(c.Commands, name)
	if s == "help" || s == "h" || !closeName(name, s) {
		return ""
	}
	return s
}

// closeName tells whether typed is a near miss of want: at most one edit in
// four characters of want (at least one), an edit being a letter inserted, left
// out, changed, or two neighbours swapped.
func closeName(typed, want string) bool {
	if want == "" || typed == want {
		return false
	}
	return editDistance(typed, want) <= max(1, len(want)/4)
}

// editDistance is the optimal string alignment distance of a and b (bytes).
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
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
		name := c.Args().First()
		unknown := fmt.Sprintf("unknown command %q", name)
		if s := commandSuggestion(c, name); s != "" {
			unknown += fmt.Sprintf("; did you mean %q?", s)
		}
		if path == "" {
			return fmt.Errorf("%s (see agentrace --help)", unknown)
		}
		return argsError(path, "%s", unknown)
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

// checkerFlags name files replacing the submission checker's embedded data, as
// the checker's own --approved-drafters and --seed-sets and their environment
// variables do (agentrace rulesets lists what is embedded).
func checkerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "approved-drafters", Usage: "approved speculative-decoding drafters, in the checker's approved_drafters.yaml format (default: embedded)",
			Sources: cli.EnvVars("MLPERF_ENDPOINTS_APPROVED_DRAFTERS"), TakesFile: true},
		&cli.StringFlag{Name: "seed-sets", Usage: "published seed sets, in the checker's seed_sets.yaml format (default: embedded)",
			Sources: cli.EnvVars("MLPERF_ENDPOINTS_SEED_SETS"), TakesFile: true},
		&cli.StringFlag{Name: "checker-targets", Usage: "accepted model names and agentic accuracy targets, in the format of the checker data's targets.yaml (agentrace rulesets --checker-data targets.yaml prints it) (default: embedded)", TakesFile: true},
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
