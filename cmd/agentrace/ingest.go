package main

import "github.com/urfave/cli/v3"

func ingestCommand() *cli.Command { return notYet("ingest", "ingest trace files into a dataset") }
func promptCommand() *cli.Command { return notYet("prompt", "print a client turn's request body") }
func statsCommand() *cli.Command  { return notYet("stats", "dataset statistics") }
func exportCommand() *cli.Command { return notYet("export", "export a dataset as flat JSONL") }
