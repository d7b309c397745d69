package main

import "github.com/urfave/cli/v3"

func synthCommand() *cli.Command { return notYet("synth", "generate synthetic traces") }
