package main

import "github.com/urfave/cli/v3"

func scoreCommand() *cli.Command    { return notYet("score", "score a run") }
func rulesetsCommand() *cli.Command { return notYet("rulesets", "list rulesets") }
func rescoreCommand() *cli.Command  { return notYet("rescore", "re-score archived runs") }
