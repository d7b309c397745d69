package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"
)

// notYet is a placeholder for a subcommand whose stage is still being written.
// Each stage's file replaces its entries here.
func notYet(name, usage string) *cli.Command {
	return &cli.Command{
		Name:  name,
		Usage: usage + " (not implemented yet)",
		Action: func(ctx context.Context, c *cli.Command) error {
			return fmt.Errorf("%s: not implemented yet", name)
		},
	}
}
