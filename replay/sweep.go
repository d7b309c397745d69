package replay

import (
	"context"
	"fmt"
	"path/filepath"
)

// Sweep runs one replay per concurrency, one after another, each into
// opts.Out/c<N>/ with the same settings. It prints each point's summary to
// opts.Progress and stops at the first failed or interrupted point.
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
	for i, c := range concurrencies {
		o := opts
		o.Concurrency = c
		o.Out = filepath.Join(out, fmt.Sprintf("c%d", c))
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
