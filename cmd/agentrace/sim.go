package main

import "github.com/urfave/cli/v3"

func simCommand() *cli.Command { return notYet("sim", "run the simulated endpoint") }
