package main

import "github.com/urfave/cli/v3"

func tokenizeCommand() *cli.Command { return notYet("tokenize", "count tokens") }
