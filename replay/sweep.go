package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrace/agentrace/internal/outguard"
)

// Sweep runs one replay per concurrency, one after another, each into
// opts.Out/c<N>/ with the same settings. It prints each point's summary to
// opts.Progress and stops at the first failed or interrupted point.
//
// The sweep folder is an output of its own kind (internal/outguard): with
// opts.Overwrite an earlier sweep there is replaced as a whole (no stale point
// survives); without it, new points are added to an earlier sweep, and a point it
// already holds is refused before anything runs.
func Sweep(ctx context.Context, opts Options, concurrencies []int) error {
	if len(concurrencies) == 0 {
		return fmt.Errorf("sweep: no concurrencies")
	}
	for _, c := range concurrencies {
		if c < 1 {
			return fmt.Errorf("sweep: concurrency %d: must be at least 1", c)
		}
	}
	out := opts.Out
	point := func(c int) string { return filepath.Join(out, fmt.Sprintf("c%d", c)) }
	guard := outguard.Output{Path: out, Kind: outguard.Sweep, Overwrite: opts.Overwrite}
	err := guard.Check(opts.inputs()...)
	switch {
	case errors.Is(err, outguard.ErrExists):
		// Add points to an earlier sweep: none of them may exist.
		for _, c := range concurrencies {
			if _, err := os.Lstat(point(c)); err == nil {
				return fmt.Errorf("sweep: %q already holds the point c%d: pass --overwrite to replace the whole sweep, or leave c%d out", out, c, c)
			}
		}
	case err != nil:
		return fmt.Errorf("sweep: %w", err)
	default:
		claim, err := outguard.Begin(guard, opts.inputs()...)
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		defer func() {
			// A sweep whose first point never started (endpoint down) puts the
			// earlier sweep back.
			if _, err := os.Lstat(point(concurrencies[0])); errors.Is(err, os.ErrNotExist) {
				claim.Abandon()
			} else {
				claim.Finish()
			}
		}()
	}
	for i, c := range concurrencies {
		o := opts
		o.Concurrency = c
		o.Out = point(c)
		o.Overwrite = false // a fresh sweep folder, or a point checked absent above
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "sweep point %d/%d: concurrency %d -> %s\n", i+1, len(concurrencies), c, o.Out)
		}
		sum, err := Run(ctx, o)
		if sum != nil && o.Progress != nil {
			fmt.Fprintln(o.Progress, sum)
		}
		if err != nil {
			return fmt.Errorf("sweep at concurrency %d: %w", c, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("sweep interrupted at concurrency %d: %w", c, ctx.Err())
		}
	}
	return nil
}
