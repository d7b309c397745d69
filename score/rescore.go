package score

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrace/agentrace/datasets/tokens"
	"github.com/agentrace/agentrace/internal/progress"
	"github.com/agentrace/agentrace/schemas"
	"github.com/sourcegraph/conc/pool"
)

// RescoreOptions configures Rescore.
type RescoreOptions struct {
	// Archives are the directory trees to search for runs.
	Archives []string
	// Out, when set, is the Parquet table to write (one row per run).
	Out string
	// Jobs is how many runs are scored at once (default GOMAXPROCS); each run is
	// scored on one goroutine.
	Jobs int
	// Dataset, when set, is every run's dataset; otherwise each run's own.
	Dataset string
	// Ruleset is as in Options; "" means AutoRuleset (chosen per run's model).
	Ruleset string
	// Tokenizer is the reference tokenizer's folder, "" for server usage counts.
	Tokenizer string
	// Progress, when not nil, receives progress; ProgressTTY redraws one line.
	Progress    io.Writer
	ProgressTTY bool
}

// rescoreGCPercent is the GC target (GOGC) while Rescore runs.
const rescoreGCPercent = 400

// FoundRun is a run found in an archive.
type FoundRun struct {
	Dir  string
	Kind string
	// Err is set when the run cannot be read safely (a file that is a symlink
	// leading out of the archive root).
	Err error
}

// FindRuns walks an archive root and returns every run directory in it (a folder
// with turns.arrows or events.jsonl), in lexical order. Symbolic links to folders
// are not entered; a run whose files are symbolic links leading out of the root is
// returned with Err set, and never read. Paths are reported under the root with
// its symbolic links resolved.
func FindRuns(root string) ([]FoundRun, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("find runs in %q: %w", root, err)
	}
	realRoot, err = filepath.Abs(realRoot)
	if err != nil {
		return nil, fmt.Errorf("find runs in %q: %w", root, err)
	}
	var runs []FoundRun
	// Walk the resolved root, so that a root given as a symbolic link is entered.
	err = filepath.WalkDir(realRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == realRoot {
				return err
			}
			runs = append(runs, FoundRun{Dir: p, Err: fmt.Errorf("walk: %w", err)})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		kind := ""
		for _, k := range []struct{ file, kind string }{{schemas.TurnLogFile, KindAgentrace}, {EventsFile, KindReference}} {
			if _, err := os.Lstat(filepath.Join(p, k.file)); err == nil {
				kind = k.kind
				break
			}
		}
		if kind == "" {
			return nil
		}
		fr := FoundRun{Dir: p, Kind: kind}
		for _, f := range []string{schemas.TurnLogFile, EventsFile, schemas.RunManifestFile, ReferenceConfigFile,
			ReferenceSummaryFile, filepath.Join("performance", ReferenceSummaryFile)} {
			if err := insideRoot(realRoot, filepath.Join(p, f)); err != nil {
				fr.Err = err
				break
			}
		}
		runs = append(runs, fr)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find runs in %q: %w", root, err)
	}
	return runs, nil
}

// insideRoot checks that p, if it exists, resolves to a place inside realRoot.
func insideRoot(realRoot, p string) error {
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return fmt.Errorf("%s: broken symbolic link: %w", p, err)
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is a symbolic link leading out of the archive root (to %s): not followed", p, real)
	}
	return nil
}

// truthCache loads each dataset once, however many runs share it.
type truthCache struct {
	mu      sync.Mutex
	entries map[string]*truthEntry
}

type truthEntry struct {
	once  sync.Once
	truth *Truth
	err   error
}

func (c *truthCache) get(ctx context.Context, dataset string) (*Truth, error) {
	key := dataset
	if abs, err := filepath.Abs(dataset); err == nil {
		key = abs
	}
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok {
		e = &truthEntry{}
		c.entries[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.truth, e.err = LoadTruth(ctx, dataset) })
	return e.truth, e.err
}

// Rescore finds every run in the archives, scores them in parallel and returns one
// row per run, in the order found (archives in the order given, each walked in
// lexical order). A run that cannot be scored yields a row with Error set; only a
// bad option, an unreadable archive root or a failed write of Out is an error.
func Rescore(ctx context.Context, opts RescoreOptions) ([]schemas.RescoreRow, error) {
	if len(opts.Archives) == 0 {
		return nil, errors.New("rescore: no archive given")
	}
	if opts.Jobs <= 0 {
		opts.Jobs = runtime.GOMAXPROCS(0)
	}
	if opts.Ruleset == "" {
		opts.Ruleset = AutoRuleset
	}
	if opts.Ruleset != AutoRuleset {
		if _, err := LoadRuleset(opts.Ruleset); err != nil {
			return nil, fmt.Errorf("rescore: %w", err)
		}
	}
	var counter OSLCounter
	if opts.Tokenizer != "" {
		tok, err := tokens.Load(opts.Tokenizer)
		if err != nil {
			return nil, fmt.Errorf("rescore: %w", err)
		}
		counter = tok
	}
	// Each run leaves a few MB of short-lived garbage on a heap of a few MB, so at
	// the default GC target the collector runs about once per run and takes a
	// quarter of the CPU. A batch job can afford a larger heap: raise the target
	// while rescoring, unless the user set GOGC.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(rescoreGCPercent))
	}
	var found []FoundRun
	for _, a := range opts.Archives {
		runs, err := FindRuns(a)
		if err != nil {
			return nil, fmt.Errorf("rescore: %w", err)
		}
		found = append(found, runs...)
	}

	var done, failed atomic.Int64
	var line *progress.Line
	if opts.Progress != nil {
		start := time.Now()
		line = progress.New(opts.Progress, opts.ProgressTTY, 10*time.Second, func() string {
			return fmt.Sprintf("rescore: %d/%d runs scored, %d errors, %.1fs", done.Load(), len(found), failed.Load(), time.Since(start).Seconds())
		}).Start()
	}
	cache := &truthCache{entries: map[string]*truthEntry{}}
	buffers := newBufferPool()
	rows := make([]schemas.RescoreRow, len(found))
	p := pool.New().WithMaxGoroutines(opts.Jobs)
	for i, fr := range found {
		p.Go(func() {
			rows[i] = rescoreOne(ctx, fr, opts, counter, cache, buffers)
			done.Add(1)
			if rows[i].Error != "" {
				failed.Add(1)
			}
		})
	}
	p.Wait()
	if line != nil {
		line.Stop()
	}
	if err := ctx.Err(); err != nil {
		return rows, err
	}
	if opts.Out != "" {
		if err := WriteRescoreRows(opts.Out, rows); err != nil {
			return rows, fmt.Errorf("rescore: %w", err)
		}
	}
	return rows, nil
}

// rescoreOne scores one found run into a row; it never panics.
func rescoreOne(ctx context.Context, fr FoundRun, opts RescoreOptions, counter OSLCounter, cache *truthCache, pool *bufferPool) (row schemas.RescoreRow) {
	start := time.Now()
	row = schemas.RescoreRow{Path: fr.Dir, Kind: fr.Kind}
	defer func() {
		if r := recover(); r != nil {
			row.Error = fmt.Sprintf("internal error: %v", r)
		}
		row.DurationSeconds = time.Since(start).Seconds()
	}()
	fail := func(err error) schemas.RescoreRow {
		row.Error = err.Error()
		return row
	}
	if fr.Err != nil {
		return fail(fr.Err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	info, err := ReadRunInfo(fr.Dir)
	row.Model, row.Concurrency = info.Model, int32(info.Concurrency)
	if err != nil {
		return fail(err)
	}
	ds := opts.Dataset
	if ds == "" {
		ds = info.Dataset
	}
	row.Dataset = ds
	if ds == "" {
		return fail(errors.New("the run names no dataset; give --dataset"))
	}
	truth, err := cache.get(ctx, ds)
	if err != nil {
		return fail(err)
	}
	s, err := ScoreRun(ctx, Options{Run: fr.Dir, Ruleset: opts.Ruleset, Truth: truth, Counter: counter, Workers: 1, pool: pool})
	if err != nil {
		return fail(err)
	}
	fillRow(&row, s)
	return row
}

// fillRow copies a run's scores into its results row.
func fillRow(row *schemas.RescoreRow, s *schemas.Scores) {
	row.Ruleset = s.Verdict.Ruleset
	row.Score = s.Score
	row.ScoredTurns = int32(s.Turns.Scored)
	row.CodingScore = s.Domains[schemas.DomainCoding].Score
	row.WorkflowScore = s.Domains[schemas.DomainWorkflow].Score
	if s.OSL != nil {
		row.OSLMean, row.OSLUnofficial, row.OSLSource = s.OSL.Mean, s.OSL.Unofficial, s.OSL.Source
	}
	if s.SWEBench != nil {
		row.SWEBenchScore, row.SWEBenchIncomplete = s.SWEBench.Score, s.SWEBench.Incomplete
	}
	for _, g := range s.Verdict.Gates {
		switch g.Name {
		case GateAccuracy:
			row.AccuracyPass = g.Pass
		case GateOSL:
			row.OSLPass = g.Pass
		case GateSWEBench:
			row.SWEBenchPass = g.Pass
		}
	}
	row.Pass = s.Verdict.Pass
	warn := append([]string(nil), s.Warnings...)
	sort.Strings(warn)
	row.Warnings = strings.Join(warn, "; ")
}
