package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/score/checker"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/agentrace/agentrace/submission"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/agentrace/agentrace/tokens"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sourcegraph/conc/iter"
)

// Output files of a report folder.
const (
	HTMLFile          = "report.html"
	SummaryFile       = "summary.md"
	PointsFile        = "points.json"
	ResultSummaryFile = "result_summary.json"
	PointYAMLFile     = "point.yaml"
	PlotsDir          = "plots"
	PointsDir         = "points"
)

// Options configure a report.
type Options struct {
	// Out is the folder the report is written to (created when absent). It is
	// built beside and renamed into place; an earlier report there is replaced only
	// with Overwrite, and nothing else ever is (internal/outguard).
	Out       string
	Overwrite bool
	// Descend reads every run inside a folder given that is not a run, a folder of
	// runs or a submission tree (archive.Whole); without it such a folder is
	// refused, naming the runs inside.
	Descend bool
	// Runs are run directories or sweep directories (with c<N>/ run folders),
	// drawn together as one system.
	Runs []string
	// Compare, when set, holds two or more run or sweep directories, each drawn as
	// its own system; Runs must then be empty.
	Compare []string
	// Name names the system of Runs (the report's title); "" names it from the
	// runs: the model and the endpoint they ran against (systemName).
	Name string
	// CMax is the declared maximum supported concurrency; 0 means the highest point.
	CMax int
	// Ruleset names the ruleset (or a ruleset file) whose OSL window the histogram
	// marks; "" uses the ruleset of the runs' scores.json, else rulesets.Default.
	Ruleset string
	// TokenizerDir is a reference tokenizer folder loaded with tokens.Load when
	// Tokenizer is nil; "" means none.
	TokenizerDir string
	// Tokenizer counts output tokens officially; nil uses server usage (unofficial).
	Tokenizer metrics.TokenCounter
	// Checker, when set, judges the submission points (in a folder or an
	// archive) with the submission checker's rules (points.json
	// checker_findings, and the check "submission checker rules").
	Checker *checker.Cache
	// ISL, when set, counts input tokens officially for every run; when nil, the
	// report counts them from each run's dataset (see Notes), else from server usage.
	ISL metrics.ISLCounter
	// MaxExpansion is as archive.Limits.MaxExpansion for runs read from archives.
	MaxExpansion float64
	// SLOTTFTMs and SLOTPSPerUser are service levels (a first token within this
	// many ms; a decode speed of at least this many tokens/s per user): each point
	// then reports the share of its completed window turns that met them
	// (Point.SLO). 0 applies no threshold; both 0 shows no SLO view.
	SLOTTFTMs, SLOTPSPerUser float64
	// Events receives a progress event per point read, a warning per note of a
	// point's logs or scores, and a note per table left out; nil drops them.
	Events notice.Sink
}

// Report is everything a report shows.
type Report struct {
	Systems []*curve.System
	Figures []Figure
	Notes   []Note
	Options Options
	// tableNotes are what writing turns.parquet said.
	tableNotes []string
}

// Build reads the runs, computes the points, checks and plots, and writes the
// report folder: report.html, summary.md, points.json, plots/*.png|svg and
// points/[<system>/]c<N>/{result_summary.json,point.yaml}.
func Build(ctx context.Context, o Options) (*Report, error) {
	if o.Out == "" {
		return nil, fmt.Errorf("report: no output folder")
	}
	inputs := append(append([]string{o.TokenizerDir}, o.Runs...), o.Compare...)
	// Claimed before the runs are read (internal/outguard): a second report into
	// the same folder is refused at once; an earlier report stays until this one
	// is whole.
	claim, err := outguard.Take(outguard.Output{Path: o.Out, Kind: outguard.Report, Overwrite: o.Overwrite}, inputs...)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	defer claim.Release()
	o.Events = o.Events.Serial() // the points fold in parallel
	if o.Tokenizer == nil && o.TokenizerDir != "" {
		tk, err := tokens.Load(ctx, o.TokenizerDir)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		o.Tokenizer = tk
	}
	groups, err := systemsOf(o)
	if err != nil {
		return nil, err
	}
	var islFor func(schemas.RunManifest) (metrics.ISLCounter, error)
	if o.ISL != nil {
		islFor = func(schemas.RunManifest) (metrics.ISLCounter, error) { return o.ISL, nil }
	} else {
		tk, _ := o.Tokenizer.(*tokens.Tokenizer)
		islFor = metrics.NewISLSource(ctx, tk)
	}
	r := &Report{Options: o, Notes: Notes()}
	// Every curve's runs are found first: turns.parquet is written from the
	// same read that evaluates each run, and is planned from all of them.
	var curves []readCurve
	for _, g := range groups {
		set, err := curve.FindRuns(g.args, archive.Limits{MaxExpansion: o.MaxExpansion}, o.Descend)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		defer set.Close()
		for _, rg := range curve.SplitCurves(g.name, set.Runs) {
			c, err := planCurve(rg, g.args)
			if err != nil {
				return nil, err
			}
			curves = append(curves, c)
		}
	}
	scoreRuleset := o.Ruleset
	if scoreRuleset == "" {
		scoreRuleset = rulesets.Auto
	}
	turns := startTurnsTable(ctx, claim.Dir(), curves)
	defer turns.abort()
	for _, c := range curves {
		// Points fold in parallel (token counting dominates), started in the
		// order of the curve's points, each source read in one pass (see
		// planCurve); results keep the runs' order.
		byRead := make([]*archive.Run, len(c.order))
		for k, i := range c.order {
			byRead[k] = c.runs[i]
		}
		read, err := iter.MapErr(byRead, func(run **archive.Run) (*curve.Point, error) {
			p, err := r.loadPoint(ctx, *run, turns.of[*run], curve.LoadOptions{Tokenizer: o.Tokenizer, ISLFor: islFor, Ruleset: scoreRuleset, Checker: o.Checker})
			switch {
			case errors.Is(err, runlog.ErrTableStopped):
				// Another run failed: its error is the one MapErr returns.
				return nil, nil
			case err != nil:
				turns.fail(err)
			}
			return p, err
		})
		if err != nil {
			return nil, err
		}
		pts := make([]*curve.Point, len(read))
		for k, i := range c.order {
			pts[i] = read[k]
		}
		for _, p := range pts {
			p.ApplySLO(o.SLOTTFTMs, o.SLOTPSPerUser)
		}
		rs, def, err := curve.CurveRuleset(o.Ruleset, pts)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		s := curve.NewSystemWith(c.name, pts, o.CMax, rs)
		if def {
			s.Ruleset += ", the default"
		}
		r.Systems = append(r.Systems, s)
	}
	if r.tableNotes, err = turns.close(); err != nil {
		return nil, fmt.Errorf("report: write %s: %w", TurnsTable, err)
	}
	if r.Figures, err = figures(ctx, r.Systems); err != nil {
		return nil, err
	}
	if err := r.write(ctx, claim.Dir()); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	// Interrupted while it wrote: what was written is dropped, whatever was at
	// --out stays.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if err := claim.Commit(); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return r, nil
}

type group struct {
	name string
	args []string
}

// readCurve is one curve's runs as the report reads them.
type readCurve struct {
	// name is the system's name: the curve's, else systemName's.
	name  string
	runs  []*archive.Run
	facts []archive.Facts // of runs
	// order is the order runs are read in (indexes into runs): the order of
	// the curve's points (by concurrency, as the system sorts them), each source
	// in one pass (archive.ReadOrder). turns.parquet holds their rows so.
	order []int
}

// planCurve reads the facts of a curve's runs and the order to read them in.
func planCurve(rg curve.RunGroup, args []string) (readCurve, error) {
	c := readCurve{name: rg.Name, runs: rg.Runs, facts: make([]archive.Facts, len(rg.Runs))}
	byPoint := make([]int, len(rg.Runs))
	for i, run := range rg.Runs {
		f, err := run.Facts()
		if err != nil {
			return c, fmt.Errorf("run %q: %w", run.Label, err)
		}
		c.facts[i], byPoint[i] = f, i
	}
	slices.SortStableFunc(byPoint, func(a, b int) int { return c.facts[a].Concurrency - c.facts[b].Concurrency })
	sorted := make([]*archive.Run, len(byPoint))
	for k, i := range byPoint {
		sorted[k] = rg.Runs[i]
	}
	for _, k := range archive.ReadOrder(sorted) {
		c.order = append(c.order, byPoint[k])
	}
	if c.name == "" {
		var first *schemas.RunManifest
		if len(rg.Runs) > 0 {
			m := curve.ReferenceManifest(c.facts[0])
			if c.facts[0].Manifest != nil {
				m = *c.facts[0].Manifest
			}
			first = &m
		}
		c.name = systemName(first, args)
	}
	return c, nil
}

// loadPoint evaluates one run; rt, when not nil, takes its turn log's rows for
// turns.parquet in the same read.
func (r *Report) loadPoint(ctx context.Context, run *archive.Run, rt *runlog.RunTable, lo curve.LoadOptions) (*curve.Point, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rt != nil {
		lo.OnBatch = func(b arrow.RecordBatch, rows metrics.RowValues) error {
			if err := rt.Write(b, rows.OSL, rows.ISL, rows.TPOTMs); err != nil {
				return fmt.Errorf("write %s: %w", TurnsTable, err)
			}
			return nil
		}
	}
	p, err := curve.LoadRunWith(ctx, run, lo)
	if err != nil {
		return nil, err
	}
	if rt != nil {
		if err := rt.Close(p.Evaluated().Scan.Note); err != nil {
			return nil, fmt.Errorf("report: write %s: %w", TurnsTable, err)
		}
	}
	tps := "not evaluated (no output token counted)"
	if p.SystemTPS.Valid() {
		tps = english.Thousands(float64(p.SystemTPS), 1)
		if sp := p.Speedup(); sp > 0 {
			tps = english.Thousands(float64(p.ModelledRate(p.SystemTPS)), 1) + " modelled (" + tps + " on the run's clock, the simulated server " +
				english.Thousands(sp, -1) + "x faster)"
		}
	}
	r.Options.Events.Say(notice.Progress, "", "%s: c=%d, %d turns issued in the window, system_tps %s",
		run.Label, p.Concurrency, p.Issued, tps)
	for _, note := range []string{p.LogNote, p.ScoresNote} {
		if note != "" {
			r.Options.Events.Say(notice.Warning, "", "%s: %s", run.Label, note)
		}
	}
	return p, nil
}

func systemsOf(o Options) ([]group, error) {
	switch {
	case len(o.Compare) > 0 && len(o.Runs) > 0:
		return nil, notice.Errorf("compare", "report: give run directories, or systems to compare, not both")
	case len(o.Compare) == 1:
		return nil, notice.Errorf("compare", "report: comparing needs at least two systems")
	case len(o.Compare) > 1:
		var gs []group
		seen := map[string]int{}
		for _, c := range o.Compare {
			name := filepath.Base(filepath.Clean(c))
			seen[name]++
			if seen[name] > 1 {
				name = fmt.Sprintf("%s (%d)", name, seen[name])
			}
			gs = append(gs, group{name: name, args: []string{c}})
		}
		return gs, nil
	case len(o.Runs) == 0:
		return nil, fmt.Errorf("report: no run or sweep directory given")
	}
	return []group{{name: o.Name, args: o.Runs}}, nil
}

// figures renders every plot of the report; it stops, with ctx's error, once ctx is done.
func figures(ctx context.Context, systems []*curve.System) ([]Figure, error) {
	var figs []Figure
	add := func(f Figure, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		figs = append(figs, f)
		return nil
	}
	if err := add(ParetoPlot(systems)); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		name, metric, unit string
		v                  func(*curve.Point) metrics.Num
	}{
		{"system_tps", "system_tps", "output tokens/s", func(p *curve.Point) metrics.Num { return p.ModelledRate(p.SystemTPS) }},
		{"ttft_p90", "ttft_p90_ms", "ms", func(p *curve.Point) metrics.Num { return p.ModelledTime(p.TTFTP90Ms) }},
		{"tps_per_user", "tps_per_user", "tokens/s = 1000 / TPOT P90 ms", func(p *curve.Point) metrics.Num { return p.ModelledRate(p.TPSPerUser) }},
	} {
		if err := add(ConcurrencyPlot(systems, c.name, c.metric, c.unit, c.v)); err != nil {
			return nil, err
		}
	}
	if len(systems) == 0 {
		return figs, nil
	}
	if err := add(ContextGrowthPlot(systems)); err != nil {
		return nil, err
	}
	if err := add(TTFTvsISLPlot(systems)); err != nil {
		return nil, err
	}
	if err := add(OSLHistogramPlot(systems, systems[0].OSLWindow, systems[0].Ruleset)); err != nil {
		return nil, err
	}
	tl, err := TimelinePlots(systems)
	if err != nil {
		return nil, err
	}
	// The server's timelines go right under the client's in-flight plot (the
	// first of tl), on its clock.
	st, err := ServerTimelinePlots(systems)
	if err != nil {
		return nil, err
	}
	figs = append(figs, tl[:1]...)
	figs = append(figs, st...)
	figs = append(figs, tl[1:]...)
	return figs, nil
}

// pointDir is a point's folder inside the report.
func (r *Report) pointDir(s *curve.System, p *curve.Point) string {
	d := filepath.Join(PointsDir, fmt.Sprintf("c%d", p.Concurrency))
	if len(r.Systems) > 1 {
		d = filepath.Join(PointsDir, safeName(s.Name), fmt.Sprintf("c%d", p.Concurrency))
	}
	return d
}

// safeName keeps letters, digits, '-', '_' and '.' of a name for a folder name.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 || strings.Trim(b.String(), ".") == "" {
		return "system"
	}
	return b.String()
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return outguard.AtomicWriteBytes(path, append(b, '\n'))
}

// write is Write that stops, with ctx's error, once ctx is done.
func (r *Report) write(ctx context.Context, out string) error {
	if err := os.MkdirAll(filepath.Join(out, PlotsDir), 0o755); err != nil {
		return fmt.Errorf("create report folder %q: %w", out, err)
	}
	all := []PointJSON{}
	for _, s := range r.Systems {
		for _, p := range s.Points {
			all = append(all, NewPointJSON(p))
		}
		for i, p := range s.Points {
			dir := filepath.Join(out, r.pointDir(s, p))
			if i > 0 && s.Points[i-1].Concurrency == p.Concurrency {
				dir += fmt.Sprintf("_%d", i)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("create point folder %q: %w", dir, err)
			}
			if err := writeJSON(filepath.Join(dir, ResultSummaryFile), p.Summary); err != nil {
				return err
			}
			if err := outguard.AtomicWriteBytes(filepath.Join(dir, PointYAMLFile), submission.PointYAML(s, p, nil)); err != nil {
				return err
			}
		}
	}
	if err := writeJSON(filepath.Join(out, PointsFile), all); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	notes, err := r.writeTables(ctx, out)
	for _, n := range notes {
		r.Options.Events.Say(notice.Note, "", "%s", n)
	}
	if err != nil {
		return err
	}
	for _, f := range r.Figures {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := outguard.AtomicWriteBytes(filepath.Join(out, PlotsDir, f.Name+".png"), f.PNG); err != nil {
			return err
		}
		if err := outguard.AtomicWriteBytes(filepath.Join(out, PlotsDir, f.Name+".svg"), f.SVG); err != nil {
			return err
		}
	}
	var html bytes.Buffer
	if err := r.HTML(&html); err != nil {
		return err
	}
	if err := outguard.AtomicWriteBytes(filepath.Join(out, HTMLFile), html.Bytes()); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := r.Markdown(&md); err != nil {
		return err
	}
	return outguard.AtomicWriteBytes(filepath.Join(out, SummaryFile), md.Bytes())
}

// Verdict tells whether every check of every system passed.
func (r *Report) Verdict() bool {
	for _, s := range r.Systems {
		for _, c := range s.Checks {
			if !c.Pass() {
				return false
			}
		}
	}
	return len(r.Systems) > 0
}

// FailedChecks are the curve checks that failed, system by system, as
// report.html lists them.
func (r *Report) FailedChecks() []curve.Check {
	var failed []curve.Check
	for _, s := range r.Systems {
		for _, c := range s.Checks {
			if !c.Pass() {
				if len(r.Systems) > 1 {
					c.Name = s.Name + ": " + c.Name
				}
				failed = append(failed, c)
			}
		}
	}
	return failed
}

// Note names a metric or rule the rules leave open and how the report treats it.
type Note struct {
	Topic     string `json:"topic"`
	Treatment string `json:"treatment"`
}

// Notes lists the ambiguities of the rules and how this report resolves them.
func Notes() []Note {
	return []Note{
		{"Turn time", "The rules time a turn from request to response completion on the server. A client cannot observe server-side times, so turn time here is issue to completion as seen by the client (it includes network and queueing in the client's HTTP stack, and excludes the inter-turn delay)."},
		{"Performance window start", "Window start is the run's start (run clock 0; agentrace has no warmup phase). The window ends at the last completion of a turn issued inside it (failed turns included)."},
		{"Issued", "Issued means a request was sent: status ok, error, timeout or cancelled. n_samples_issued, the tables' sent counts and turns.parquet's issued column count those turns (of the performance window here); aborted turns (skipped after an earlier failure of their trajectory) and not_issued turns (issuing had stopped) were never sent. The reference client also publishes a skipped turn as issued (register_skipped), so a result_summary.json written by its rules, and scores.json's turns.issued (the reference scorer's), count aborted turns too."},
		{"Tracked turns", "A turn counts when it was issued before the window closed (in_window). Aborted turns (never sent after an earlier failure) count in counts by status but not as issued."},
		{"TTFT, TPOT, latency samples", "Taken from completed (status ok) window turns only. TTFT and TPOT need a streamed turn: a turn whose request did not ask for a stream (its row's stream false, or a replay without streaming) has neither, as the reference times neither for it; samples <= 0 or non-finite are dropped."},
		{"result_summary.json", "Each point's result_summary.json is counted as the reference client counts (its metrics aggregator, mlcommons/endpoints): n_samples_issued = window turns sent or skipped after an earlier failure of their trajectory (aborted, which the reference registers as issued); n_samples_completed = those that completed, failed ones included; n_samples_failed = error, timeout and aborted turns; TTFT of every window turn with a first chunk (failed ones too); latency of every completed window turn (failures included, an aborted turn's 0); ISL of every window turn sent; OSL and TPOT of turns that completed ok with a non-empty output. So its counts and TTFT and latency percentiles can differ from points.json's (issued = sent, samples of ok turns) when turns failed; the report's headline metrics and the audit use points.json's, the checker result_summary.json's. Its agentrace.counting member says so in the file."},
		{"TPOT without a tokenizer", "Without the reference tokenizer the suffix after the first output-bearing chunk is counted as server completion_tokens - 1 (the first chunk taken as one token): unofficial."},
		{"ITL", "Inter-token latency is per chunk: the gaps between consecutive chunks the reference client publishes a receive event for (the first output-bearing chunk, then each chunk carrying content or reasoning; a chunk may carry several tokens). Chunks carrying tool calls alone after the first are left out, as the reference's accumulator publishes nothing for them (their times are in the turn log's tool_call_chunk_times). The reference's own series (chunk_delta_ns in final_snapshot.json) is empty unless its stream_all_chunks is on, its default being off; the rules do not define ITL."},
		{"Token counts", "With the reference tokenizer, OSL and TPOT tokens come from it, and ISL from the run's salted request messages (rebuilt from the run's dataset) rendered with the chat template and the profile's chat_template_kwargs. Without it, ISL is the dataset's stored count (counted at ingest with a tokenizer: salted as repeat 1, so a repeat's different salt may shift it by a token or two) and OSL the server's usage. Anything from server usage marks the point unofficial."},
		{"Per-trajectory progress rate", "Output tokens of a trajectory / (its end-to-end time - its total delay), end-to-end running from its first turn's start (scheduled time minus its delay) to its last completion. Only trajectories all of whose turns were issued in the window and completed are included."},
		{"Pareto step direction", "§5.2 says each point is a step at its concurrency and the curve holds the last measured value between points, but not which way a step goes in the throughput-interactivity plane. Here, going up in concurrency, the curve holds the previous point's throughput until the next point's interactivity (on (x_i, x_i+1] it shows y_i+1): it never shows a throughput at an interactivity that was not measured. Against concurrency, each value holds from its concurrency up to the next point. No frontier filtering or interpolation is drawn."},
		{"Regions when empty", "Rounding can leave a region empty (start > end); it is reported as empty, and coverage of an empty region then fails, since the rules do not resolve it."},
		{"Coverage count", "The 7-point minimum counts points inside the four regions; margin points are flagged and not counted."},
		{"Minimum duration", "§6 asks 600 s (ultra-low) or 1200 s (others) but does not say how it applies to agentic points: shown as information, never failing."},
		{"Prefix-cache hit ratio", "sum(cached_tokens) / sum(prompt_tokens) over completed window turns whose server reported both; absent (null) otherwise. Server-reported, not a rules metric."},
		{"Client lag", "issued - scheduled over window turns: how late the client sent a turn that was due. A large P99 means the client, not the server, limited the load."},
	}
}

// systemName names a system its runs do not name otherwise: the model they served
// and what served it (the embedded sim's profile, or the endpoint's host), else
// the folder given. first is the manifest of the system's first run (nil: none).
func systemName(first *schemas.RunManifest, args []string) string {
	folder := filepath.Base(filepath.Clean(args[0]))
	if len(args) > 1 {
		folder = "runs"
	}
	if first == nil {
		return folder
	}
	c := first.Config
	model := c.Model
	if model == "" {
		return folder
	}
	on := first.EndpointDescription
	if i := strings.Index(on, ", speedup"); i > 0 {
		on = on[:i] // the sim's settings beyond its profile are in the settings table
	}
	if on == "" {
		if u, err := url.Parse(c.Endpoint); err == nil && u.Host != "" {
			on = u.Host
		}
	}
	if on == "" {
		return model
	}
	return model + " on " + on
}
