package main

import "github.com/urfave/cli/v3"

func replayCommand() *cli.Command { return notYet("replay", "replay a dataset against an endpoint") }
func sweepCommand() *cli.Command  { return notYet("sweep", "replay at several concurrencies") }
func logCommand() *cli.Command    { return notYet("log", "read turn logs") }
