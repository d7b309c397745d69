package main

import "github.com/urfave/cli/v3"

func reportCommand() *cli.Command  { return notYet("report", "build the report") }
func regionsCommand() *cli.Command { return notYet("regions", "print the concurrency regions") }
