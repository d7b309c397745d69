package main

import (
	"context"
	"encoding/json"

	"github.com/agentrace/agentrace/datasets/diff"
	"github.com/urfave/cli/v3"
)

// Exit statuses of diff, as diff(1) has them, which the table of every command
// (status.go) follows.
const (
	diffDifferent = exitNo
	diffTrouble   = exitUsage
)

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "compare two dataset directories: conversations added, removed, changed, and per-domain figures",
		UsageText: "agentrace diff [--json] [--quiet] DATASET_A DATASET_B",
		Description: "Compares dataset A (the old version) with dataset B (the new one), conversation by\n" +
			"conversation, by each conversation's content digest (the unit of the content hash: its\n" +
			"system prompt, messages, tool calls and results, intent codes, extra fields and client\n" +
			"turns with their delays, tools and parameters). It lists the conversations added and\n" +
			"removed and, for each changed one, the first message that differs, what differs in it\n" +
			"(content, reasoning_content, tool_calls, tool_call_id, intent_codes, extra, and the\n" +
			"client turn's delay_seconds, tools, params, max_tokens) with excerpts of both values,\n" +
			"how many messages differ, and every changed delay. It says when the common\n" +
			"conversations changed order (replay's seeded shuffle draws conversation indices), and\n" +
			"compares per domain the trajectories, client and assistant turns, history bytes (last\n" +
			"turns), request bytes (all turns), total delay and ISL (when both were ingested with\n" +
			"--tokenizer).\n\n" +
			"Exit status as diff(1): 0 the datasets are the same, 1 they differ, 2 trouble (a\n" +
			"dataset cannot be read, or has a schema version this agentrace does not read: re-ingest\n" +
			"it). --json prints the whole comparison as one JSON object.\n\n" +
			"Example:\n" +
			"  agentrace diff ds-2026-10 ds-2026-11\n" +
			"  agentrace diff --json ds-2026-10 ds-2026-11 | jq '.changed_conversations[].first_difference'",
		Flags: []cli.Flag{
			jsonFlag("print the comparison as JSON"),
			quietFlag("print nothing: the exit status says same (0), different (1) or trouble (2)"),
		},
		Action: func(ctx context.Context, c *cli.Command) error {
			if c.NArg() != 2 {
				return withStatus(diffTrouble, argsError("diff", "want two dataset directories, DATASET_A and DATASET_B, got %d arguments", c.NArg()))
			}
			r, err := diff.Compare(ctx, c.Args().Get(0), c.Args().Get(1))
			if err != nil {
				return withStatus(diffTrouble, err)
			}
			if !c.Bool("json") {
				for _, w := range r.Warnings {
					problem(c, kindWarning, w)
				}
			}
			if !c.Bool("quiet") {
				w := c.Root().Writer
				if c.Bool("json") {
					enc := json.NewEncoder(w)
					enc.SetIndent("", "  ")
					enc.SetEscapeHTML(false)
					err = enc.Encode(r)
				} else {
					err = diff.WriteText(w, r)
				}
				if err != nil {
					return withStatus(diffTrouble, err)
				}
			}
			if r.Same {
				return nil
			}
			return withStatus(diffDifferent, nil)
		},
	}
}
