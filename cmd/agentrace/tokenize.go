package main

import (
	"context"

	"github.com/agentrace/agentrace/tokens"
	"github.com/urfave/cli/v3"
)

func tokenizeCommand() *cli.Command {
	return &cli.Command{
		Name:      "tokenize",
		Usage:     "count tokens with a model's reference tokenizer and chat template, as the rules do",
		UsageText: "agentrace tokenize --tokenizer DIR [--jsonl FILE|-] [--ids] [FILE...]",
		Description: "Loads a tokenizer folder (Hugging Face tokenizer.json, or a tiktoken.model rank file, plus\n" +
			"tokenizer_config.json for added tokens and the chat template) and counts tokens in pure Go.\n\n" +
			"Without --jsonl it prints the token count of each FILE's text (standard input when none),\n" +
			"followed by the file name when there are several; --ids prints {\"n\", \"ids\"} instead.\n\n" +
			"With --jsonl each input line is one of\n" +
			"  {\"text\": \"...\"}\n" +
			"  {\"messages\": [...], \"tools\": [...], \"add_generation_prompt\": true, \"chat_template_kwargs\": {...}}\n" +
			"and gives one output line {\"n\": COUNT, \"ids\": [...]}, with \"text\" (the rendered template) for\n" +
			"message input. Text is encoded with special-token strings recognized and nothing added; ISL is\n" +
			"the count of the messages line with add_generation_prompt true.\n\n" +
			"Examples:\n" +
			"  make tokenizers\n" +
			"  echo 'hello world' | agentrace tokenize --tokenizer .cache/tokenizers/qwen3\n" +
			"  agentrace tokenize --tokenizer .cache/tokenizers/qwen3 README.md go.mod\n" +
			"  echo '{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"add_generation_prompt\":true}' |\n" +
			"    agentrace tokenize --tokenizer .cache/tokenizers/qwen3 --jsonl -",
		Flags: []cli.Flag{
			tokenizerFlag("tokenizer folder (tokenizer.json or tiktoken.model, tokenizer_config.json)", true),
			tokenizerRevisionFlag(),
			&cli.StringFlag{Name: "jsonl", Usage: "JSON Lines input file, - for standard input (default: count plain text)"},
			&cli.BoolFlag{Name: "ids", Usage: "in plain-text mode, print {\"n\", \"ids\"} lines instead of bare counts"},
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			tokDir, tokErr := tokenizerArg(c)
			if tokErr != nil {
				return tokErr
			}
			return tokens.Tokenize(ctx, tokens.TokenizeOptions{
				Tokenizer: tokDir,
				JSONL:     c.String("jsonl"),
				Files:     c.Args().Slice(),
				IDs:       c.Bool("ids"),
				In:        c.Root().Reader,
				Out:       c.Root().Writer,
			})
		},
	}
}
