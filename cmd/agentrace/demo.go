package main

import "github.com/urfave/cli/v3"

func demoCommand() *cli.Command { return notYet("demo", "the end-to-end tour") }
