package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/diff"
	"github.com/agentrace/agentrace/datasets/diff/difftest"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/score/scoretest"
)

// benchDiff times `agentrace diff` on two datasets of the sample tiled 30 times
// (61 MB of JSONL each; B with one conversation removed, one added, one tool result
// and one delay changed) against reading both once (datasets.Open of each, at the
// same time, as diff does). Five alternating rounds; medians compared.
func benchDiff(env Env) (Row, error) {
	row := Row{Name: fmt.Sprintf("diff: two datasets of the sample x%d vs reading both once", ingestTiles),
		Goal: "< 2x the time of reading both (diff time / read time)"}
	if env.Shared == "" {
		return row, errors.New("needs AGENTRACE_SHARED (the sample)")
	}
	tiled := filepath.Join(env.Work, "diff-a.jsonl")
	if err := scoretest.TileTrace(env.sample(), tiled, ingestTiles); err != nil {
		return row, err
	}
	mutated := filepath.Join(env.Work, "diff-b.jsonl")
	if _, err := difftest.Mutate(tiled, mutated, "added__conversation-1"); err != nil {
		return row, err
	}
	a, b := filepath.Join(env.Work, "diff-a"), filepath.Join(env.Work, "diff-b")
	for _, p := range [][2]string{{tiled, a}, {mutated, b}} {
		if err := ingest.Files(context.Background(), p[1], p[0]); err != nil {
			return row, err
		}
	}
	readBoth := func() error {
		var wg sync.WaitGroup
		var ea, eb error
		wg.Add(2)
		go func() { defer wg.Done(); _, ea = datasets.Open(context.Background(), a) }()
		go func() { defer wg.Done(); _, eb = datasets.Open(context.Background(), b) }()
		wg.Wait()
		return errors.Join(ea, eb)
	}
	var reads, diffs []time.Duration
	var res *diff.Result
	for range 5 {
		runtime.GC()
		start := time.Now()
		if err := readBoth(); err != nil {
			return row, err
		}
		reads = append(reads, time.Since(start))
		runtime.GC()
		start = time.Now()
		r, err := diff.Compare(context.Background(), a, b)
		if err != nil {
			return row, err
		}
		diffs = append(diffs, time.Since(start))
		res = r
	}
	if res.Added != 1 || res.Removed != 1 || res.Changed != 2 {
		return row, fmt.Errorf("diff found %d added, %d removed, %d changed; want 1, 1, 2", res.Added, res.Removed, res.Changed)
	}
	med := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	read, dt := med(reads), med(diffs)
	ratio := dt.Seconds() / read.Seconds()
	row.Measured = fmt.Sprintf("diff %.2f s, read both %.2f s (medians of 5 alternating rounds; %d vs %d conversations, 1 added, 1 removed, 2 changed; GOMAXPROCS %d, load average %s)",
		dt.Seconds(), read.Seconds(), res.A.Conversations, res.B.Conversations, runtime.GOMAXPROCS(0), loadAverage())
	row.Ratio = fmt.Sprintf("%.2fx", ratio)
	row.Met = ratio < 2
	return row, nil
}
