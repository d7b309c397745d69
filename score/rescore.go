package score

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/progress"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/checker"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/agentrace/agentrace/score/runread"
	"github.com/agentrace/agentrace/tokens"
	"github.com/sourcegraph/conc/pool"
)

// RescoreOptions configures Rescore.
type RescoreOptions struct {
	// Archives are the directory trees to search for runs.
	Archives []string
	// Out, when set, is the Parquet table to write (one row per run). It may not
	// be or sit inside an archive; an earlier results table there is replaced
	// only with Overwrite (internal/outguard).
	Out       string
	Overwrite bool
	// Jobs is how many runs are scored at once (default GOMAXPROCS); each run is
	// scored on one goroutine.
	Jobs int
	// Dataset, when set, is every run's dataset; otherwise each run's own.
	Dataset string
	// Ruleset is as in Options; "" means rulesets.Auto (chosen per run's model).
	Ruleset string
	// Tokenizer is the reference tokenizer's folder, "" for server usage counts.
	Tokenizer string
	// MaxExpansion is how many times its size an archive may expand to (0: 10, a
	// negative value: no limit).
	MaxExpansion float64
	// Opened, when set, sees each file of the archives opened for reading
	// (archive.Limits.Opened).
	Opened func(name string, rc io.ReadCloser) io.ReadCloser
	// Progress, when not nil, receives progress; ProgressTTY redraws one line.
	Progress    io.Writer
	ProgressTTY bool
	// Checker, when set, judges the submission trees (folders or archives) with the
	// submission checker's rules: each point's row carries the findings that
	// concern it (checker_findings).
	Checker *checker.Cache
}

// rescoreGCPercent is the GC target (GOGC) while Rescore runs.
const rescoreGCPercent = 400

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
		opts.Ruleset = rulesets.Auto
	}
	out := outguard.Output{Path: opts.Out, Kind: outguard.Rescore, Overwrite: opts.Overwrite}
	inputs := append([]string{opts.Dataset, opts.Tokenizer, opts.Ruleset}, opts.Archives...)
	if opts.Out != "" {
		// Claimed for the whole batch (internal/outguard): a second rescore into
		// the same table is refused at once.
		claim, err := outguard.Take(out, inputs...)
		if err != nil {
			return nil, fmt.Errorf("rescore: %w", err)
		}
		defer claim.Release()
	}
	if opts.Ruleset != rulesets.Auto {
		if _, err := rulesets.Load(opts.Ruleset); err != nil {
			return nil, fmt.Errorf("rescore: %w", err)
		}
	}
	var counter OSLCounter
	if opts.Tokenizer != "" {
		tok, err := tokens.Load(ctx, opts.Tokenizer)
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
	var found []*archive.Run
	lim := archive.Limits{MaxExpansion: opts.MaxExpansion, Opened: opts.Opened}
	for _, a := range opts.Archives {
		src, inner, err := archive.OpenPath(a, lim)
		if err != nil {
			if errors.Is(err, infile.ErrExpansion) || archive.ArchiveKind(a) != "" {
				// A bad archive is one error row; the rest is still scored.
				found = append(found, &archive.Run{Label: a, Err: err})
				continue
			}
			return nil, fmt.Errorf("rescore: %w", err)
		}
		defer src.Close()
		found = append(found, archive.Under(archive.Find(src), inner)...)
	}
	// done counts the runs scored or failed on their own; stopped those an
	// interrupt left unscored (never started, or cut while scored).
	var done, failed, stopped atomic.Int64
	var line *progress.Line
	if opts.Progress != nil {
		start := time.Now()
		line = progress.New(opts.Progress, opts.ProgressTTY, 10*time.Second, func() string {
			return rescoreStatus(done.Load(), failed.Load(), stopped.Load(), int64(len(found)), time.Since(start))
		}).Start()
	}
	cache := &truthCache{entries: map[string]*truthEntry{}}
	reuse := newRecycler()
	rows := make([]schemas.RescoreRow, len(found))
	p := pool.New().WithMaxGoroutines(opts.Jobs)
	// Runs are scored in the order their logs lie in their archive, so that a
	// .tgz is decompressed in one pass; rows keep the order found.
	order := archive.ReadOrder(found)
	for _, i := range order {
		fr := found[i]
		p.Go(func() {
			rows[i] = rescoreOne(ctx, fr, opts, counter, cache, reuse)
			switch {
			case rows[i].Error != "" && ctx.Err() != nil:
				stopped.Add(1)
			case rows[i].Error != "":
				failed.Add(1)
				done.Add(1)
			default:
				done.Add(1)
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
	placeSubmissionPoints(found, rows)
	attachCheckerFindings(opts.Checker, found, rows)
	if opts.Out != "" {
		if err := WriteRescoreRows(opts.Out, rows); err != nil {
			return rows, fmt.Errorf("rescore: %w", err)
		}
	}
	return rows, nil
}

// rescoreStatus is rescore's progress line: "rescore: 77/210 runs scored, 2
// errors, 3.5s; about 6s left", and after an interrupt how many runs it left
// unscored instead of the time left.
func rescoreStatus(done, failed, stopped, total int64, took time.Duration) string {
	s := fmt.Sprintf("rescore: %d/%d runs scored, %s, %.1fs", done, total, english.Count(int(failed), "error", "errors"), took.Seconds())
	if stopped > 0 {
		return s + fmt.Sprintf("; interrupted: %d not scored", stopped)
	}
	if eta := progress.ETA(done, total, took); eta != "" {
		s += "; " + eta
	}
	return s
}

// attachCheckerFindings fills each submission point's checker_findings from the
// submission checker's judgement of its tree (a folder, or an archive read in
// place).
func attachCheckerFindings(c *checker.Cache, found []*archive.Run, rows []schemas.RescoreRow) {
	if c == nil {
		return
	}
	for i, r := range found {
		if !runread.IsPoint(r) {
			continue
		}
		fs, _, ok := c.ForRun(r.Source.Path, r.Source.ArchiveFS(), r.Dir)
		if !ok {
			continue
		}
		if fs == nil {
			fs = []checker.Finding{}
		}
		if b, err := json.Marshal(fs); err == nil {
			rows[i].CheckerFindings = string(b)
		}
	}
}

// rescoreOne scores one found run into a row; it never panics.
func rescoreOne(ctx context.Context, fr *archive.Run, opts RescoreOptions, counter OSLCounter, cache *truthCache, reuse *recycler) (row schemas.RescoreRow) {
	start := time.Now()
	row = schemas.RescoreRow{Path: fr.Label, Kind: fr.Kind}
	if runread.IsPoint(fr) {
		row.Curve = fr.CurveDir()
	}
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
	info, err := runread.ReadInfo(fr)
	row.Model, row.Concurrency = info.Model, int32(info.Concurrency)
	if err != nil {
		return fail(err)
	}
	row.Dataset = opts.Dataset
	if row.Dataset == "" {
		row.Dataset = info.Dataset
	}
	if runread.IsPoint(fr) {
		if pa, err := ReadPublishedAccuracy(fr); err == nil && pa.Inline != nil {
			v := *pa.Inline
			row.PublishedAccuracy = &v
		}
	}
	ev, err := Evaluate(ctx, fr, EvalOptions{Info: &info, Dataset: opts.Dataset, Ruleset: opts.Ruleset, Counter: counter,
		Workers: 1, TruthOf: cache.get, OrPublished: true, reuse: reuse})
	if err != nil {
		return fail(err)
	}
	if ev.ScoreErr != nil {
		return fail(ev.ScoreErr)
	}
	fillRow(&row, ev.Scores)
	return row
}

func f64(v float64) *float64 { return &v }
func bptr(v bool) *bool      { return &v }

// fillRow copies a run's scores into its results row: what was evaluated gets a
// value, the rest stays null.
func fillRow(row *schemas.RescoreRow, s *schemas.Scores) {
	row.Ruleset = s.Verdict.Ruleset
	row.AccuracySource = s.AccuracySource
	if s.Turns.Scored > 0 || s.AccuracySource == AccuracyPublished {
		row.Score = f64(s.Score)
	}
	if s.AccuracySource == AccuracyFromEvents {
		n := int32(s.Turns.Scored)
		row.ScoredTurns = &n
		if d, ok := s.Domains[schemas.DomainCoding]; ok && d.Scored > 0 {
			row.CodingScore = f64(d.Score)
		}
		if d, ok := s.Domains[schemas.DomainWorkflow]; ok && d.Scored > 0 {
			row.WorkflowScore = f64(d.Score)
		}
	}
	if s.OSL != nil && s.OSL.Turns > 0 {
		row.OSLMean, row.OSLUnofficial, row.OSLSource = f64(s.OSL.Mean), bptr(s.OSL.Unofficial), s.OSL.Source
	}
	if s.SWEBench != nil {
		row.SWEBenchScore, row.SWEBenchIncomplete = f64(s.SWEBench.Score), bptr(s.SWEBench.Incomplete)
	}
	var open []string
	for _, g := range s.Verdict.Gates {
		switch g.Name {
		case GateAccuracy:
			row.AccuracyOutcome, row.RederivedAccuracy = g.Outcome, g.Rederived
		case GateOSL:
			row.OSLOutcome, row.RederivedOSLMean = g.Outcome, g.Rederived
		}
		if !g.Evaluated() {
			open = append(open, fmt.Sprintf("%s (%s): %s", g.Name, g.Severity, g.Reason))
			continue
		}
		switch g.Name {
		case GateAccuracy:
			row.AccuracyPass = bptr(g.Pass)
			if s.Published != nil {
				row.Score = f64(g.Value) // the published figure the gate judged
			}
		case GateOSL:
			row.OSLPass = bptr(g.Pass)
			if s.Published != nil {
				row.OSLMean, row.OSLSource = f64(g.Value), g.Source
			}
		case GateSWEBench:
			row.SWEBenchPass = bptr(g.Pass)
		}
	}
	if s.Published != nil {
		if row.AccuracyPass == nil {
			row.Score = nil
		}
		if row.OSLPass == nil {
			row.OSLMean, row.OSLUnofficial, row.OSLSource = nil, nil, ""
		}
	}
	row.Outcome, row.NotEvaluated = s.Verdict.Outcome, strings.Join(open, "; ")
	switch s.Verdict.Outcome {
	case schemas.OutcomePass:
		row.Pass = bptr(true)
	case schemas.OutcomeFail:
		row.Pass = bptr(false) // a gate failed (or errored): the rest cannot save it
	}
	warn := append([]string(nil), s.Warnings...)
	sort.Strings(warn)
	row.Warnings = strings.Join(warn, "; ")
}

// placeSubmissionPoints fills the region of each submission point's row: the
// points of one curve (<system>/<model> folder) placed together, by the region
// form of the ruleset the curve's rows were scored under, with the C_max the
// checker takes (archive.CurveCMax; when no point has a system description of
// its own, the C_max the points declare, else the highest point) and C_min from
// the lowest point. A curve without a C_max places no point, as the checker.
func placeSubmissionPoints(found []*archive.Run, rows []schemas.RescoreRow) {
	type copyAt struct {
		folder int
		c      *archive.SystemDescCopy
	}
	type curve struct {
		idx    []int
		cmax   int
		lowest int
		high   int
		rules  string
		copies []copyAt
	}
	curves := map[string]*curve{}
	for i, r := range found {
		if !runread.IsPoint(r) || rows[i].Concurrency <= 0 {
			continue
		}
		key := r.Source.Path + "\x00" + r.CurveDir()
		c := curves[key]
		if c == nil {
			c = &curve{lowest: int(rows[i].Concurrency)}
			curves[key] = c
		}
		c.idx = append(c.idx, i)
		c.lowest = min(c.lowest, int(rows[i].Concurrency))
		c.high = max(c.high, int(rows[i].Concurrency))
		if c.rules == "" {
			c.rules = rows[i].Ruleset
		}
		if f, err := r.Facts(); err == nil {
			c.copies = append(c.copies, copyAt{r.Point, f.SystemDesc})
			if f.MaxSupportedConcurrency > 0 && c.cmax == 0 {
				c.cmax = f.MaxSupportedConcurrency
			}
		}
	}
	for _, c := range curves {
		sort.SliceStable(c.copies, func(i, j int) bool { return c.copies[i].folder < c.copies[j].folder })
		var copies []*archive.SystemDescCopy
		for _, a := range c.copies {
			copies = append(copies, a.c)
		}
		// The checker takes C_max from the point folders' own system_desc.json
		// only (archive.CurveCMax): a curve without one has none, and no point
		// of it is placed in a region.
		declared, _, ok := archive.CurveCMax(copies)
		if !ok || declared == 0 {
			continue
		}
		c.cmax = declared
		form := rulesets.DefaultRegionForm
		if rs, err := rulesets.Load(c.rules); err == nil && c.rules != "" {
			form = rs.RegionForm()
		}
		cmax := c.cmax
		if cmax == 0 {
			cmax = c.high
		}
		regions, err := RegionsFor(form, cmax, c.lowest)
		if err != nil {
			continue
		}
		for _, i := range c.idx {
			rows[i].Region = regions.Classify(int(rows[i].Concurrency))
		}
	}
}
