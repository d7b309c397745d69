package replay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/progress"
	"github.com/agentrace/agentrace/schemas"
)

// CheckConcurrencies checks a sweep's points before anything runs: at least one,
// each at least 1, none twice (a point's folder c<N>/ holds one run).
func CheckConcurrencies(cs []int) error {
	if len(cs) == 0 {
		return fmt.Errorf("no concurrency given")
	}
	seen := map[int]bool{}
	for _, c := range cs {
		if c < 1 {
			return fmt.Errorf("concurrency %d: must be at least 1", c)
		}
		if c > MaxConcurrency {
			return fmt.Errorf("concurrency %d: at most %d", c, MaxConcurrency)
		}
		if seen[c] {
			return fmt.Errorf("concurrency %d given twice: each point is one run folder c%d/", c, c)
		}
		seen[c] = true
	}
	return nil
}

// Sweep runs one replay per concurrency, one after another, each into
// opts.Out/c<N>/ with the same settings. It prints each point's summary to
// opts.Events, as progress.
//
// Its one rule: a sweep stops at its first point that is not whole (failed, its
// endpoint lost or refusing, or interrupted), and at a point refused before it
// sent anything (its endpoint down); the points before it are kept and the later
// ones are not run. Its error is that point's: Incomplete (the sweep is made but
// not whole) unless the refused point was the first, when nothing was made.
//
// The sweep folder is an output of its own kind, claimed for the sweep's life
// (internal/outguard). With opts.Overwrite an earlier sweep there is replaced as
// a whole (no stale point survives), and only once every point is complete: the
// new sweep is written beside it, and an interrupted or failed one is dropped,
// the earlier sweep kept whole. Without it, new points are added to an earlier
// sweep, and a point it already holds is refused before anything runs.
func Sweep(ctx context.Context, opts Options, concurrencies []int) error {
	if err := CheckConcurrencies(concurrencies); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	guard := outguard.Output{Path: opts.Out, Kind: outguard.Sweep, Overwrite: opts.Overwrite, Live: true, Add: !opts.Overwrite}
	claim, err := outguard.Take(guard, opts.inputs()...)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	defer claim.Release()
	dir := claim.Dir()
	name := func(c int) string { return fmt.Sprintf("c%d", c) }
	for _, c := range concurrencies {
		if _, err := os.Lstat(filepath.Join(dir, name(c))); err == nil {
			return notice.Errorf("overwrite", "sweep: %q already holds the point c%d: overwrite it to replace the whole sweep, or leave c%d out", opts.Out, c, c)
		}
	}
	complete := true
	began := time.Now()
	for i, c := range concurrencies {
		o := opts
		o.Concurrency = c
		o.Out = filepath.Join(dir, name(c))
		o.Overwrite = false // a fresh sweep folder, or a point checked absent above
		shown := filepath.Join(opts.Out, name(c))
		o.Events.Say(notice.Progress, "", "sweep point %d/%d: concurrency %d -> %s%s", i+1, len(concurrencies), c, shown, sweepPace(i, len(concurrencies), time.Since(began)))
		if i == 0 && claim.InPlace() {
			// A sweep whose first point never started (endpoint down) leaves the
			// folder as it was: commit only once a point exists.
			defer func() {
				if _, err := os.Lstat(o.Out); err == nil {
					claim.Commit()
				}
			}()
		}
		sum, err := Run(ctx, o)
		if sum != nil {
			sum.RunDir = shown
			complete = complete && sum.State == schemas.RunComplete
			o.Events.Say(notice.Progress, "", "%s", sum)
		}
		if err != nil {
			err = fmt.Errorf("sweep at concurrency %d: %w", c, err)
			if i > 0 && !IsIncomplete(err) {
				// Refused before it sent anything (its endpoint down), after
				// earlier points were made: the sweep is made but not whole.
				err = Incomplete(fmt.Errorf("%w; the sweep stopped there, its %d earlier points kept", err, i))
			}
			return err
		}
		if ctx.Err() != nil {
			return Incomplete(fmt.Errorf("sweep interrupted at concurrency %d (point %d of %d): the points so far are kept", c, i+1, len(concurrencies)))
		}
	}
	if !claim.InPlace() && !complete {
		return fmt.Errorf("sweep: a point did not complete: the earlier sweep at %q is kept as it was, this one was dropped", opts.Out)
	}
	return claim.Commit()
}

// sweepPace tells, before point i of n (from 0), how long the points so far took
// and the time the rest would take at their mean pace: "" before the first.
func sweepPace(i, n int, took time.Duration) string {
	if i == 0 {
		return ""
	}
	s := fmt.Sprintf(" (%s took %s", english.Count(i, "point", "points"), took.Round(time.Second))
	if eta := progress.ETA(int64(i), int64(n), took); eta != "" {
		s += "; at that pace the sweep has " + eta
	}
	return s + ")"
}
