package audit

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/checker"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/agentrace/agentrace/score/runread"
	"github.com/agentrace/agentrace/tokens"
	"github.com/sourcegraph/conc/iter"
)

// Options configure an audit.
type Options struct {
	// Inputs are reference run folders, submission trees, agentrace runs and
	// sweeps, folders of runs, or archives of them (.tar.gz, .tgz, .tar, .zip),
	// read in place. A folder that merely holds runs deeper inside, beside other
	// things, is refused naming them (archive.Whole), unless Descend.
	Inputs  []string
	Descend bool
	// Dataset is the dataset (folder or trace file) inline accuracy is re-scored
	// against; "" takes each run's own.
	Dataset string
	// Tokenizer is the reference tokenizer's folder: without it, figures built on
	// output token counts are unchecked (reference runs) or re-derived from server
	// usage (agentrace runs published the same way).
	Tokenizer string
	// Ruleset judges the gates and places the points; "" picks the ruleset naming
	// each run's model (rulesets.Auto).
	Ruleset string
	// CMax is the curve's declared maximum concurrency when the points do not
	// declare one (point.yaml, system_desc.json); 0 takes the highest point.
	CMax int
	// Jobs bounds the points audited at once (0: GOMAXPROCS).
	Jobs int
	// Limits bound what reading an archive may cost.
	Limits archive.Limits
	// Events receives a progress event per point audited; nil discards them.
	Events notice.Sink
	// Checker, when set, judges each submission tree (or bare system folder), a
	// folder or an archive read in place, with the submission checker's rules:
	// one checker.<rule> row per finding. Reference run folders are not judged
	// by it.
	Checker *checker.Cache

	tok *tokens.Tokenizer
	isl func(m schemas.RunManifest) (metrics.ISLCounter, error)
}

// Result is an audit's rows, ordered by curve, point and field.
type Result struct {
	Rows []Row
	// Points and Curves count what was audited.
	Points, Curves int
}

// Failed returns the rows that fail the audit (disagreements and errors).
func (r *Result) Failed() []Row {
	var out []Row
	for _, x := range r.Rows {
		if x.Failed() {
			out = append(out, x)
		}
	}
	return out
}

// Counts counts the rows by status.
func (r *Result) Counts() map[string]int {
	m := map[string]int{}
	for _, x := range r.Rows {
		m[x.Status]++
	}
	return m
}

// curveGroup is the points of one curve.
type curveGroup struct {
	key, name, source string
	runs              []*archive.Run
	points            []*point
	sweepFile         string // the curve folder's sweep_summary.csv inside the source, "" when none
	src               *archive.Source
}

// Run audits the inputs. It returns an error only when nothing can be audited (no
// input can be opened, no tokenizer loads); a run that cannot be read becomes an
// error row.
func Run(ctx context.Context, o Options) (*Result, error) {
	if len(o.Inputs) == 0 {
		return nil, errors.New("audit: no run folder, sweep, submission tree or archive given")
	}
	if o.Tokenizer != "" {
		tk, err := tokens.Load(ctx, o.Tokenizer)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		o.tok = tk
	}
	o.isl = metrics.NewISLSource(ctx, o.tok)
	res := &Result{}
	var groups []*curveGroup
	byKey := map[string]*curveGroup{}
	var sources []*archive.Source
	defer func() {
		for _, s := range sources {
			s.Close()
		}
	}()
	for _, in := range o.Inputs {
		src, inner, err := archive.OpenPath(in, o.Limits)
		if err != nil {
			res.Rows = append(res.Rows, Row{Source: in, Field: "input", Status: Error, Note: err.Error()})
			continue
		}
		sources = append(sources, src)
		runs := archive.Under(archive.Find(src), inner)
		if !o.Descend {
			if err := archive.Whole(src, inner, in, runs); err != nil {
				return nil, fmt.Errorf("audit: %w", err)
			}
		}
		found := 0
		for _, r := range runs {
			if r.Kind == "" || r.Err != nil {
				msg := "cannot be read"
				if r.Err != nil {
					msg = r.Err.Error()
				}
				res.Rows = append(res.Rows, Row{Source: src.Path, Run: r.Label, Kind: r.Kind, Field: "run", Status: Error, Note: msg})
				continue
			}
			found++
			key, name, dir := curveOf(r)
			g := byKey[key]
			if g == nil {
				g = &curveGroup{key: key, name: name, source: src.Path, src: src}
				if f := path.Join(dir, archive.SweepSummaryFile); dir != "." && src.IsFile(f) {
					g.sweepFile = f
				} else if dir == "." && src.IsFile(archive.SweepSummaryFile) {
					g.sweepFile = archive.SweepSummaryFile
				}
				byKey[key] = g
				groups = append(groups, g)
			}
			g.runs = append(g.runs, r)
		}
		if found == 0 {
			res.Rows = append(res.Rows, Row{Source: in, Field: "input", Status: Error,
				Note: fmt.Sprintf("%q holds no run: no %s (agentrace), %s (reference run folder) or submission point r<N>/", in, archive.TurnLogFile, archive.EventsFile)})
		}
	}
	if len(groups) == 0 && len(res.Rows) > 0 {
		return res, nil
	}
	// Points are audited in parallel; tokenizing dominates.
	var all []*point
	var where []*curveGroup
	for _, g := range groups {
		for _, r := range g.runs {
			all = append(all, &point{run: r})
			where = append(where, g)
		}
	}
	jobs := o.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	it := iter.Iterator[*point]{MaxGoroutines: jobs}
	it.ForEachIdx(all, func(i int, pt **point) {
		if ctx.Err() != nil {
			return
		}
		*pt = loadPoint(ctx, (*pt).run, &o)
		(*pt).base.Curve = where[i].name
		(*pt).compare()
		o.Events.Say(notice.Progress, "", "%s: %s", (*pt).run.Label, pointLine(*pt))
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, pt := range all {
		for j := range pt.rows {
			pt.rows[j].Curve = where[i].name
		}
		where[i].points = append(where[i].points, pt)
	}
	seen := map[string]bool{}
	for _, g := range groups {
		res.Curves++
		res.Points += len(g.points)
		res.Rows = append(res.Rows, g.audit(&o)...)
		res.Rows = append(res.Rows, g.checkerRows(o.Checker, seen)...)
	}
	return res, nil
}

// checkerRows are the submission checker's findings on the curve's tree: one
// checker.<rule> row per finding that concerns one of its points (the point's
// own, its curve's, system's and tree's, each once in the audit, seen).
func (g *curveGroup) checkerRows(c *checker.Cache, seen map[string]bool) []Row {
	if c == nil {
		return nil
	}
	var rows []Row
	for _, r := range g.runs {
		if !runread.IsPoint(r) {
			continue
		}
		found, notEvaluated, ok := c.ForRun(g.src.Path, g.src.ArchiveFS(), r.Dir)
		if !ok {
			continue
		}
		if len(notEvaluated) > 0 && !seen["not_evaluated\x00"+g.key] {
			seen["not_evaluated\x00"+g.key] = true
			rows = append(rows, Row{Source: g.source, Curve: g.name, Field: "checker.not_evaluated", Status: Unchecked,
				Note: "a bare system folder, not a whole submission: the structure rules " + strings.Join(notEvaluated, ", ") + " are not evaluated"})
		}
		for _, f := range found {
			key := f.Rule + "\x00" + string(f.Severity) + "\x00" + f.Path + "\x00" + f.Reason
			if seen[key] {
				continue
			}
			seen[key] = true
			row := Row{Source: g.source, Curve: g.name, Field: "checker." + f.Rule, File: f.Path, RecomputedText: string(f.Severity),
				Status: Finding, Note: f.Reason, Rule: f.Rule, Severity: string(f.Severity), Level: string(f.Level), Point: f.Point}
			if f.Point != "" {
				row.Run, row.Kind, row.Concurrency = r.Label, r.Kind, int32(r.Point)
				if f.Point != path.Base(r.Dir) {
					row.Run = path.Join(path.Dir(r.Label), f.Point)
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// curveOf names the curve a run belongs to: a submission point's <system>/<model>
// folder, else the folder holding the run (a sweep, a folder of reference runs).
func curveOf(r *archive.Run) (key, name, dir string) {
	dir = path.Dir(r.Dir)
	if runread.IsPoint(r) {
		if d := r.CurveDir(); d != "" {
			dir = d
		}
		name = path.Join(r.System, r.Model)
	}
	if name == "" || name == "." {
		if dir == "." || dir == "" {
			name = filepath.Base(r.Source.Path)
		} else {
			name = path.Base(dir)
		}
	}
	return r.Source.Path + "\x00" + dir, name, dir
}

func pointLine(pt *point) string {
	var agree, bad, unch int
	for _, r := range pt.rows {
		switch r.Status {
		case Agree:
			agree++
		case Disagree, Error:
			bad++
		case Unchecked:
			unch++
		}
	}
	return fmt.Sprintf("%d fields agree, %d disagree, %d unchecked", agree, bad, unch)
}

// audit places a curve's points in their regions, judges the curve, and adds the
// region, sweep_summary.csv and curve rows to the points' rows.
func (g *curveGroup) audit(o *Options) []Row {
	var pts []*curve.Point
	var rules rulesets.Ruleset
	haveRules := false
	for _, pt := range g.points {
		if pt.p != nil {
			pts = append(pts, pt.p)
			if !haveRules && pt.rules.Name != "" {
				rules, haveRules = pt.rules, true
			}
		}
	}
	if !haveRules {
		var err error
		name := o.Ruleset
		if name == rulesets.Auto {
			name = ""
		}
		if rules, err = rulesets.Load(name); err != nil {
			rules, _ = rulesets.Load("")
		}
	}
	var out []Row
	base := Row{Source: g.source, Curve: g.name}
	var sys *curve.System
	if len(pts) > 0 {
		sys = curve.NewSystemWith(g.name, pts, o.CMax, rules)
	}
	for _, pt := range g.points {
		if pt.p != nil && sys != nil {
			pt.regionRow(sys)
		}
		out = append(out, pt.rows...)
	}
	if sys == nil {
		return out
	}
	verdict, failed := curveVerdict(sys)
	var sweep *sweepTable
	if g.sweepFile != "" {
		var err error
		if sweep, err = readSweepSummary(g.src, g.sweepFile); err != nil {
			r := base
			r.Field, r.File, r.Status, r.Note = "sweep_summary", g.sweepFile, Error, err.Error()
			out = append(out, r)
		} else {
			out = append(out, g.sweepRows(sweep, sys, verdict)...)
		}
	}
	// The curve's rows.
	rg := base
	rg.Field = "curve.regions"
	rg.RecomputedText = regionsText(sys)
	rg.Status = NotPublished
	rg.Note = "the points' regions by the ruleset's region form (" + sys.RegionForm + "), C_max " + strconv.Itoa(sys.CMax) + " (" + sys.CMaxSource + ")"
	out = append(out, rg)
	if sys.SWEBench != nil {
		r := base
		r.Field = "curve.swe_bench_mean"
		if sys.SWEBench.Evaluated() {
			r.Recomputed = fp(sys.SWEBench.Value)
		}
		r.Status = NotPublished
		r.Note = "the mean of one published SWE-bench result per mandatory region (" + sys.SWEBench.Note + "): its inputs are published, not re-derivable"
		out = append(out, r)
	}
	rv := base
	rv.Field = "curve.verdict"
	rv.RecomputedText = verdict
	rv.Note = "re-derived checks failing: " + strings.Join(failed, "; ")
	if len(failed) == 0 {
		rv.Note = "every check of the curve passes"
	}
	if sweep != nil && sweep.verdict != "" {
		rv.File = g.sweepFile
		rv.PublishedText = sweep.verdict
		rv.Status = textStatus(strings.ToLower(sweep.verdict), verdict)
	} else {
		rv.Status = NotPublished
	}
	for _, pt := range g.points {
		if pt.oslWhy != "" && rv.Status != NotPublished {
			rv.Status, rv.Note = Unchecked, pt.oslWhy+"; "+rv.Note
			break
		}
	}
	out = append(out, rv)
	return out
}

func curveVerdict(s *curve.System) (string, []string) {
	var failed []string
	for _, c := range s.Checks {
		if !c.Pass() {
			failed = append(failed, c.Name)
		}
	}
	if len(failed) == 0 {
		return "pass", nil
	}
	return "fail", failed
}

func regionsText(s *curve.System) string {
	if s.Regions == nil {
		return "none: " + s.RegionsErr
	}
	short := map[string]string{score.RegionLowLatency: "ultra-low", score.RegionLow: "low", score.RegionMedium: "medium",
		score.RegionHigh: "high", score.RegionMargin: "margin"}
	var parts []string
	for _, n := range s.Regions.Named() {
		name := short[n.Name]
		if name == "" {
			name = n.Name
		}
		parts = append(parts, name+" "+n.Range.String())
	}
	return strings.Join(parts, ", ")
}

// regionRow compares a point's declared region (point.yaml) with the region its
// concurrency falls in. A point declared submitters_choice agrees with any.
func (pt *point) regionRow(sys *curve.System) {
	r := Row{Field: "point.region", RecomputedText: pt.p.Region}
	if r.RecomputedText == "" {
		r.RecomputedText = "none"
	}
	if pt.pointYAML != nil {
		if v, ok := pt.pointYAML["region"].(string); ok {
			r.File, r.PublishedText = archive.PointFile, v
		}
	}
	switch {
	case r.PublishedText == "":
		r.Status = NotPublished
	case r.PublishedText == "submitters_choice":
		r.Status, r.Note = Agree, "declared the submitter's choice (any region)"
	default:
		r.Status = textStatus(r.PublishedText, pt.p.Region)
	}
	if sys.Regions == nil && r.Status == Disagree {
		r.Status, r.Note = Unchecked, "regions cannot be computed: "+sys.RegionsErr
	}
	pt.add(r)
}

// sweepTable is a curve's sweep_summary.csv.
type sweepTable struct {
	header  []string
	rows    [][]string
	verdict string // a curve_verdict column's value, "" when none
}

func readSweepSummary(src *archive.Source, name string) (*sweepTable, error) {
	b, err := src.ReadFile(name)
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(strings.NewReader(string(b)))
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", src.Label(name), err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s is empty", src.Label(name))
	}
	t := &sweepTable{header: recs[0], rows: recs[1:]}
	for i := range t.header {
		t.header[i] = strings.TrimSpace(strings.ToLower(t.header[i]))
	}
	return t, nil
}

// sweepRows compares each cell of sweep_summary.csv with the re-derived point of
// its concurrency.
func (g *curveGroup) sweepRows(t *sweepTable, sys *curve.System, verdict string) []Row {
	ci := -1
	for i, h := range t.header {
		if h == "concurrency" {
			ci = i
		}
	}
	base := Row{Source: g.source, Curve: g.name, File: g.sweepFile}
	if ci < 0 {
		r := base
		r.Field, r.Status, r.Note = "sweep_summary", Error, "no concurrency column: its rows cannot be matched to points"
		return []Row{r}
	}
	byC := map[int]*point{}
	for _, pt := range g.points {
		if pt.p != nil {
			byC[pt.p.Concurrency] = pt
		}
	}
	var out []Row
	for ri, rec := range t.rows {
		if ci >= len(rec) {
			continue
		}
		c, err := strconv.Atoi(strings.TrimSpace(rec[ci]))
		pt := byC[c]
		if err != nil || pt == nil {
			r := base
			r.Field, r.Status = "sweep_summary.concurrency", Disagree
			r.PublishedText = rec[ci]
			r.Note = fmt.Sprintf("row %d names concurrency %q: no point of the curve has it", ri+2, rec[ci])
			out = append(out, r)
			continue
		}
		for i, h := range t.header {
			if i == ci || i >= len(rec) || h == "written_by" {
				continue
			}
			r := pt.base
			r.Curve, r.File, r.Field = g.name, g.sweepFile, "sweep_summary."+h
			cell := strings.TrimSpace(rec[i])
			sweepCell(&r, pt, h, cell, verdict)
			if r.Field == "sweep_summary.curve_verdict" && t.verdict == "" {
				t.verdict = cell
			}
			r.judge()
			out = append(out, r)
		}
	}
	return out
}

// sweepCell fills a sweep_summary.csv cell's row: its published value and the
// re-derived one for the column.
func sweepCell(r *Row, pt *point, col, cell string, verdict string) {
	setPub := func() {
		if f, err := strconv.ParseFloat(cell, 64); err == nil && !math.IsNaN(f) {
			r.Published = &f
		} else if cell != "" && !strings.EqualFold(cell, "null") && !strings.EqualFold(cell, "nan") {
			r.PublishedText = cell
		}
	}
	text := func(rec string) {
		r.PublishedText, r.RecomputedText = cell, rec
		r.Status = textStatus(strings.ToLower(cell), rec)
	}
	if pt.noEvents {
		setPub()
		r.Status, r.Note = Unchecked, "the point ships no event log: nothing to re-derive it from"
		return
	}
	rs := pt.p.Summary
	r.Tolerance = Tolerance
	setPub()
	oslDep := false
	var rec float64
	ok := true
	unit := 1.0
	name := col
	switch {
	case strings.HasSuffix(col, "_ms"):
		unit, name = 1e6, strings.TrimSuffix(col, "_ms")
	case strings.HasSuffix(col, "_ns"):
		unit, name = 1, strings.TrimSuffix(col, "_ns")
	}
	pblock := func(b *metrics.StatBlock, prefix string) bool {
		if !strings.HasPrefix(name, prefix+"_p") {
			return false
		}
		p, err := strconv.ParseFloat(strings.TrimPrefix(name, prefix+"_p"), 64)
		if err != nil || b == nil {
			rec = math.NaN()
			return true
		}
		rec = b.Percentile(p) / unit
		return true
	}
	switch {
	case col == "region":
		switch {
		case cell == "submitters_choice":
			r.PublishedText, r.RecomputedText, r.Status, r.Note = cell, pt.p.Region, Agree, "declared the submitter's choice (any region)"
		default:
			text(pt.p.Region)
		}
		return
	case col == "curve_verdict" || col == "verdict":
		text(verdict)
		return
	case col == "gates_pass" || col == "point_verdict":
		if pt.scores == nil {
			r.PublishedText, r.Status, r.Note = cell, Unchecked, fmt.Sprintf("could not be re-scored: %v", pt.scoreErr)
			return
		}
		if pt.oslWhy != "" {
			r.Published, r.PublishedText, r.Status, r.Note = nil, cell, Unchecked, "the OSL gate: "+pt.oslWhy
			return
		}
		r.Published = nil
		text(passText(pt.scores.Verdict.Pass))
		if cell == "true" || cell == "false" {
			r.Status = textStatus(map[string]string{"true": "pass", "false": "fail"}[cell], r.RecomputedText)
		}
		return
	case col == "n_samples_issued":
		rec, r.Tolerance = float64(rs.NSamplesIssued), 0
	case col == "n_samples_completed":
		rec, r.Tolerance = float64(rs.NSamplesCompleted), 0
	case col == "n_samples_failed":
		rec, r.Tolerance = float64(rs.NSamplesFailed), 0
	case col == "duration_ns":
		rec = float64(rs.DurationNs)
	case col == "duration_s":
		rec = float64(rs.DurationNs) / 1e9
	case col == "qps":
		rec = float64(rs.QPS)
	case col == "tps" || col == "system_tps":
		rec, oslDep = float64(rs.SystemTPS), true
	case col == "tps_per_user":
		rec, oslDep = float64(rs.TPSPerUser), true
	case col == "e2e_avg_interactivity":
		rec, oslDep = float64(rs.E2EAvgInteractivity), true
	case col == "output_tokens_per_turn_total":
		rec, oslDep = float64(rs.OutputTokensPerTurnTotal), true
	case col == "e2e_turn_time_seconds_total":
		rec = float64(rs.E2ETurnTimeSecondsTotal)
	case col == "osl_mean" || col == "osl_avg":
		rec, oslDep = blockAvg(rs.OSL), true
	case col == "osl_full_run_mean" || col == "osl_full_run_avg":
		rec, oslDep = blockAvg(rs.OSLFullRun), true
	case col == "inline_accuracy" || col == "accuracy" || col == "score":
		if pt.scores == nil {
			r.Status, r.Note = Unchecked, fmt.Sprintf("could not be re-scored: %v", pt.scoreErr)
			return
		}
		rec = pt.scores.Score
	case col == "swe_bench" || col == "swebench":
		r.Status, r.Note = Unchecked, "the SWE-bench harness's result: not re-derivable from the events"
		return
	case pblock(rs.TTFT, "ttft"), pblock(rs.Latency, "latency"):
	case pblock(rs.TPOT, "tpot"):
		oslDep = true
	default:
		ok = false
	}
	if !ok {
		r.Status, r.Note = Unchecked, "a column agentrace does not know how to re-derive"
		return
	}
	if oslDep && pt.oslWhy != "" {
		r.Status, r.Note = Unchecked, pt.oslWhy
		return
	}
	r.Recomputed = fp(rec)
}

func blockAvg(b *metrics.StatBlock) float64 {
	if b == nil || b.Count == 0 {
		return math.NaN()
	}
	return b.Avg
}
