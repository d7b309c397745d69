package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/card"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/progress"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/tokens"
	"github.com/urfave/cli/v3"
)

func ingestCommand() *cli.Command {
	return &cli.Command{
		Name:      "ingest",
		Usage:     "ingest trace files (flat or snapshot JSONL, optionally .gz) into a dataset directory",
		UsageText: "agentrace ingest --out DIR [--overwrite] [--format auto|flat|snapshot] [--tokenizer DIR] FILE...",
		Description: "Reads MLPerf agentic trace files and writes DIR/conversations.parquet (one row per\n" +
			"trajectory), DIR/messages.parquet (one row per wire message: a tool row with several\n" +
			"results gives several), DIR/turns.parquet (one row per client turn) and DIR/manifest.json\n" +
			"(inputs with sha256, counts, content hash). Each message is stored once, pre-serialized\n" +
			"as it goes on the wire, so replay builds a request by concatenation.\n\n" +
			"Every input is validated first. What the reference client's loader refuses is a problem:\n" +
			"all problems are listed with file, line, conversation and turn, and nothing is written.\n" +
			"What the reference accepts is ingested as the reference reads it (rows sorted by turn,\n" +
			"ids as its strings, values sent as the file has them); what it does not check, or would\n" +
			"alter through pandas' typing (an integer column with gaps sent as 8192.0, ...), is listed\n" +
			"as a warning (stderr and manifest.json). --strict refuses the inputs on any warning.\n" +
			"Beyond the reference, ids must be unique across files, and an id C__repeat_N (any digits:\n" +
			"C__repeat_1 and C__repeat_02 too) beside a conversation C is a problem naming both lines\n" +
			"(replay sends C's repeat N as C__repeat_N; the reference's scorer reads any such suffix back).\n" +
			"Snapshot files are converted as the reference's converter does (conversations sorted by\n" +
			"id, the last system message wins), keeping reasoning_content, delay_seconds and\n" +
			"intent_codes unless --snapshot-as-reference. The directory appears only when ingest\n" +
			"succeeds.\n\n" +
			"Bounded whatever the input: at most " + fmt.Sprint(ingest.MaxKeptProblems) + " problems are kept (the rest counted by kind),\n" +
			"reading stops after " + fmt.Sprint(ingest.StopAfterProblems) + " problems, and a .gz input may decompress to at most\n" +
			"--max-expansion times its size.\n\n" +
			"Progress goes to stderr (redrawn on a terminal, a line every 5 s otherwise): the phase\n" +
			"(read, validate, build, tokenize, write), input bytes read of the total and decompressed,\n" +
			"rows validated, conversations built and written, turns tokenized (with --tokenizer) of\n" +
			"those read, and an ETA.\n\n" +
			"Example:\n" +
			"  agentrace ingest --out ds ../shared/data/deepswe-sample-20.jsonl\n" +
			"  agentrace ingest --out ds --tokenizer .cache/tokenizers/qwen3 traces.snapshot.jsonl.gz",
		Flags: append([]cli.Flag{
			outFlag("dataset directory to create"),
			&cli.StringFlag{Name: "format", Value: ingest.FormatAuto, Usage: "input form: auto (detected per file), flat or snapshot"},
			&cli.IntFlag{Name: "max-problems", Value: ingest.DefaultMaxProblems, Usage: "problems reported per file (at most " + fmt.Sprint(ingest.MaxKeptProblems) + " are kept in all unless this is larger; the rest are counted by kind)"},
			&cli.FloatFlag{Name: "max-expansion", Value: ingest.DefaultMaxExpansion, Usage: "refuse a .gz input that decompresses past this many times its size (at least 64 MiB; 0 or less: no limit; traces compress 5 to 15x)"},
			&cli.IntFlag{Name: "max-line-bytes", Value: ingest.DefaultMaxLineBytes, Usage: "reject longer lines"},
			tokenizerFlag("tokenizer directory (tokenizer.json, tokenizer_config.json): fill each client turn's ISL", false),
			tokenizerRevisionFlag(),
			&cli.StringFlag{Name: "isl-profile", Value: ingest.DefaultISLProfile, Usage: "profile whose chat_template_kwargs render ISL"},
			&cli.BoolFlag{Name: "strict", Usage: "refuse the inputs on any warning (what the reference client accepts unchecked)"},
			&cli.BoolFlag{Name: "snapshot-as-reference", Usage: "convert snapshot files exactly as the reference's converter: drop reasoning_content, delay_seconds and intent_codes"},
		}, overwriteFlags("a dataset directory")...),
		Action: func(ctx context.Context, c *cli.Command) error {
			tokDir, inputs, err := tokenizerAndArgs(c, "no input files")
			if err != nil {
				return err
			}
			m, err := ingest.Run(ctx, ingest.Options{
				Out: c.String("out"), Inputs: inputs, Format: c.String("format"), Overwrite: overwrite(c),
				MaxProblems: int(c.Int("max-problems")), MaxLineBytes: int(c.Int("max-line-bytes")), MaxExpansion: maxExpansion(c),
				Tokenizer: tokDir, ISLProfile: c.String("isl-profile"),
				Strict: c.Bool("strict"), SnapshotAsReference: c.Bool("snapshot-as-reference"),
				Progress: os.Stderr, ProgressTTY: progress.IsTerminal(os.Stderr),
			})
			if err != nil {
				return err
			}
			if m.WarningCount > 0 {
				problem(c, "warning", english.Count(m.WarningCount, "problem", "problems")+
					" the reference client accepts (--strict refuses them):")
				for _, w := range m.Warnings {
					fmt.Fprintf(c.Root().ErrWriter, "  %s\n", w)
				}
				if n := m.WarningCount - len(m.Warnings); n > 0 {
					fmt.Fprintf(c.Root().ErrWriter, "  ... and %d more (raise --max-problems to see them)\n", n)
				}
			}
			fmt.Fprintf(c.Root().Writer, "wrote %s: %s (%d coding, %d workflow), %s, %s, %s; content hash %s\n",
				c.String("out"), english.Count(m.Counts.Conversations, "conversation", "conversations"), m.Counts.Coding, m.Counts.Workflow,
				english.Count(m.Counts.Rows, "row", "rows"), english.Count(m.Counts.ClientTurns, "client turn", "client turns"),
				english.Count(m.Counts.Messages, "message", "messages"), m.ContentHash)
			return nil
		},
	}
}

func promptCommand() *cli.Command {
	return &cli.Command{
		Name:      "prompt",
		Usage:     "print the exact JSON request body replay sends for one client turn",
		UsageText: "agentrace prompt --dataset DIR|--from-run RUNDIR --conversation ID --turn N [--repeat R] [--no-salt] [--model M] [--profile NAME] [-v]",
		Description: "Prints the request body of client turn N (a user or tool row's dataset turn number)\n" +
			"of conversation ID, for trajectory instance R (1 = first pass over the dataset), with\n" +
			"the system prompt salted as the reference client salts it. -v prints the headers first\n" +
			"(an API key is shown redacted). --from-run RUNDIR prints the body that run sent: its\n" +
			"dataset, model, profile, sampling, salting, streaming and max tokens, from its manifest.\n\n" +
			"Examples:\n" +
			"  agentrace prompt --dataset ds --conversation django__django-16899 --turn 3 --repeat 2 \\\n" +
			"    --profile qwen3.6-35b-a3b -v\n" +
			"  agentrace prompt --from-run runs/c8 --conversation sim_000002 --turn 3 > request.json",
		Flags: append([]cli.Flag{
			datasetFlag("dataset directory (default with --from-run: the run's)", false),
			&cli.StringFlag{Name: "from-run", Usage: "a replay run folder `RUNDIR`: the body it sent, with its dataset, model, profile, sampling, salting, streaming and max tokens (its manifest.json); flags given win", TakesFile: true},
			&cli.StringFlag{Name: "conversation", Aliases: []string{"c"}, Usage: "source conversation id", Required: true},
			&cli.IntFlag{Name: "turn", Aliases: []string{"t"}, Usage: "dataset turn number of a user or tool row", Required: true},
			&cli.IntFlag{Name: "repeat", Value: 1, Usage: "trajectory instance (pass over the dataset), 1-based"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print the request line and headers before the body"},
		}, requestFlags()...),
		Action: func(ctx context.Context, c *cli.Command) error {
			sampling, err := samplingFlags(c)
			if err != nil {
				return err
			}
			o := ingest.PromptOptions{
				Sampling: sampling,
				Dataset:  c.String("dataset"), Conversation: c.String("conversation"), Turn: int(c.Int("turn")),
				Repeat: int(c.Int("repeat")), NoSalt: c.Bool("no-salt"), Model: c.String("model"),
				Profile: c.String("profile"), NoStream: c.Bool("no-stream"), StreamUsage: c.Bool("stream-usage"), MaxTokens: int(c.Int("max-tokens")),
				ClearGeneratedCache: c.Bool("clear-generated-cache"), Verbose: c.Bool("verbose"),
				APIKey: c.String("api-key-env") != "",
			}
			if run := c.String("from-run"); run != "" {
				if err := promptAsRun(c, run, &o); err != nil {
					return err
				}
			}
			if o.Dataset == "" {
				return argsError("prompt", "give --dataset DIR, or --from-run RUNDIR (the body that run sent)")
			}
			return ingest.Prompt(ctx, c.Root().Writer, o)
		},
	}
}

// promptAsRun fills o with what the replay run folder run sent, from its manifest:
// its dataset, model, profile and sampling, salting, streaming, max tokens and
// routing headers; a flag given on the command line wins.
func promptAsRun(c *cli.Command, run string, o *ingest.PromptOptions) error {
	m, err := runlog.ReadManifest(run)
	if err != nil {
		return fmt.Errorf("prompt --from-run: %w", err)
	}
	rc := m.Config
	if !c.IsSet("dataset") {
		o.Dataset = runlog.DatasetDir(run, rc)
	}
	if !c.IsSet("model") {
		o.Model = rc.Model
	}
	if !c.IsSet("profile") {
		o.Profile = rc.Profile
	}
	if !c.IsSet("no-salt") {
		o.NoSalt = !rc.Salt
	}
	if !c.IsSet("no-stream") {
		o.NoStream = !rc.Stream
	}
	if !c.IsSet("stream-usage") {
		o.StreamUsage = rc.StreamUsage
	}
	if !c.IsSet("max-tokens") {
		o.MaxTokens = rc.MaxTokens
	}
	if !c.IsSet("clear-generated-cache") {
		o.ClearGeneratedCache = rc.ClearGeneratedCache
	}
	o.RoutingHeaders = rc.RoutingHeaders
	if sm := rc.Sampling; sm != nil {
		run := datasets.Profile{Temperature: sm.Temperature, Seed: sm.Seed, TopK: sm.TopK, TopP: sm.TopP,
			RepetitionPenalty: sm.RepetitionPenalty, PresencePenalty: sm.PresencePenalty, FrequencyPenalty: sm.FrequencyPenalty}
		if len(sm.ChatTemplateKwargs) > 0 {
			run.ChatTemplateKwargsJSON = string(jsontext.AppendCompact(nil, sm.ChatTemplateKwargs))
		}
		o.Sampling = run.Overlay(o.Sampling) // the flags given win
	}
	return nil
}

func statsCommand() *cli.Command {
	return &cli.Command{
		Name:      "stats",
		Usage:     "dataset statistics per domain and in total; --card writes a dataset card",
		UsageText: "agentrace stats --dataset DIR [--json]\n   agentrace stats --dataset DIR --card --out CARDDIR [--tokenizer DIR] [--overwrite]",
		Description: "Reports, per domain (coding, workflow) and in total: trajectories, client and\n" +
			"assistant turns, client turns per trajectory, history bytes at the last turn, the\n" +
			"delay distribution and total delay, distinct system prompts and shared-prefix bytes,\n" +
			"tool-call counts, and ISL per turn when the dataset was ingested with --tokenizer.\n" +
			"Percentiles use the rules' lower method.\n\n" +
			"--card writes a dataset card into the folder --out, for reviewers of a dataset version:\n" +
			"CARD.md and card.json with the published table's figures per domain (trajectories;\n" +
			"client turns as user and tool rows; assistant turns; trajectories ending on a client\n" +
			"turn; tool messages and calls), set beside the benchmark's published figures; the\n" +
			"distributions of turns per trajectory, ISL (as counted at ingest), OSL of the recorded\n" +
			"assistant turns (counted with --tokenizer as the rules count a response), assistant\n" +
			"turn size, history growth and delays; the content hash and the provenance (every input\n" +
			"with its SHA-256 and dataset_metadata records, tools, tokenizers, dates); the counting\n" +
			"rules; and plots/ (ISL by client turn per domain, the OSL histogram; PNG and SVG).\n" +
			"The folder is written whole or not at all; --overwrite replaces an earlier card.\n\n" +
			"Example:\n" +
			"  agentrace stats --dataset ds\n" +
			"  agentrace stats --dataset ds --json | jq .total.trajectories\n" +
			"  agentrace stats --dataset ds --card --out ds-card --tokenizer .cache/tokenizers/qwen3",
		Flags: append([]cli.Flag{
			datasetFlag("dataset directory", true),
			jsonFlag("print JSON instead of a table"),
			&cli.BoolFlag{Name: "card", Usage: "write a dataset card (CARD.md, card.json, plots/) into the folder --out"},
			outFlagDefault("card folder to write (with --card)", ""),
			tokenizerFlag("reference tokenizer directory, to count the recorded assistant turns' OSL in the card", false),
			tokenizerRevisionFlag(),
		}, overwriteFlags("a card")...),
		Action: func(ctx context.Context, c *cli.Command) error {
			if !c.Bool("card") {
				for _, name := range []string{"out", "tokenizer", "overwrite"} {
					if c.IsSet(name) {
						return argsError("stats", "--%s goes with --card", name)
					}
				}
				return ingest.WriteStats(ctx, c.Root().Writer, ingest.StatsOptions{Dataset: c.String("dataset"), JSON: c.Bool("json")})
			}
			if c.String("out") == "" {
				return argsError("stats", "--card needs --out CARDDIR")
			}
			if c.Bool("json") {
				return argsError("stats", "--card writes card.json itself; leave out --json")
			}
			return writeCard(ctx, c)
		},
	}
}

// writeCard builds and writes a dataset card.
func writeCard(ctx context.Context, c *cli.Command) error {
	ds, out := c.String("dataset"), c.String("out")
	tokDir, tokErr := tokenizerArg(c)
	if tokErr != nil {
		return tokErr
	}
	inputs := []string{ds, tokDir}
	// Claim the output before the work, so a refusal comes at once and no other
	// command writes it meanwhile.
	claim, err := outguard.Take(outguard.Output{Path: out, Kind: card.Kind, Overwrite: overwrite(c)}, inputs...)
	if err != nil {
		return err
	}
	defer claim.Release()
	o := card.Options{Dataset: ds}
	if tokDir != "" {
		tok, err := tokens.Load(ctx, tokDir)
		if err != nil {
			return err
		}
		o.OSL = tok
	}
	cd, err := card.Build(ctx, o)
	if err != nil {
		return err
	}
	if err := card.Write(ctx, cd, card.WriteOptions{Out: out, Overwrite: overwrite(c), Inputs: inputs, Claim: claim}); err != nil {
		return err
	}
	for _, n := range cd.Notes {
		problem(c, "note", n)
	}
	total := cd.Domains[len(cd.Domains)-1]
	match := "does not match"
	if cd.Published.Matches {
		match = "matches"
	}
	fmt.Fprintf(c.Root().Writer, "wrote %s: %s and %s, %s; %s, %s, %s (%s the published figures)\n",
		out, card.MarkdownFile, card.JSONFile, english.Count(len(cd.Plots), "plot", "plots"), english.Count(total.Trajectories, "trajectory", "trajectories"),
		english.Count(total.ClientTurns, "client turn", "client turns"), english.Count(total.AssistantTurns, "assistant turn", "assistant turns"), match)
	return nil
}

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "export a dataset as flat JSONL",
		UsageText: "agentrace export --dataset DIR --out FILE.jsonl [--overwrite]",
		Description: "Writes the dataset as MLPerf flat JSONL, one row a line: a dataset_metadata record\n" +
			"naming agentrace export and the content hash, the inputs' dataset_metadata records, then\n" +
			"the rows. Re-ingesting the file gives the same content hash. An existing FILE is replaced\n" +
			"only with --overwrite, and only when agentrace wrote it.\n\n" +
			"Example:\n" +
			"  agentrace export --dataset ds --out ds.jsonl",
		Flags: append([]cli.Flag{
			datasetFlag("dataset directory", true),
			outFlag("JSONL file to write"),
		}, overwriteFlags("a JSONL file agentrace wrote")...),
		Action: func(ctx context.Context, c *cli.Command) error {
			out := c.String("out")
			if err := ingest.Export(ctx, ingest.ExportOptions{Dataset: c.String("dataset"), Out: out, Overwrite: overwrite(c)}); err != nil {
				return err
			}
			st, err := os.Stat(out)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(c.Root().Writer, "wrote %s: dataset %s as flat JSONL, %s\n", out, c.String("dataset"), byteSize(st.Size()))
			return err
		},
	}
}

// byteSize is a file size for a message: "812 B", "3.4 kB", "12.0 MB".
func byteSize(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
