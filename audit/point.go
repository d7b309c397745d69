package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"sort"
	"strings"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/agentrace/agentrace/score/runread"
	"go.yaml.in/yaml/v3"
)

// point is one run audited: its re-derived point and scores, and its rows.
type point struct {
	run   *archive.Run
	facts archive.Facts
	p     *curve.Point
	// scores re-derived from the events (nil when they could not be: scoreErr).
	scores   *schemas.Scores
	scoreErr error
	rules    rulesets.Ruleset
	// noEvents: the point ships no event log; nothing is re-derived.
	noEvents bool
	// oslWhy, when set, says why the token-count figures are not re-derived;
	// notComparable, that they were published from another counting (then
	// input token figures are not compared either).
	oslWhy        string
	notComparable bool
	// pointYAML is the point's point.yaml, parsed (nil when none).
	pointYAML map[string]any
	rows      []Row
	base      Row
}

// loadPoint re-derives one run.
func loadPoint(ctx context.Context, run *archive.Run, o *Options) *point {
	pt := &point{run: run}
	pt.base = Row{Run: run.Label, Kind: run.Kind, Source: run.Source.Path}
	info, err := runread.ReadInfo(run)
	if err != nil {
		pt.fail("run", "", err)
		return pt
	}
	pt.facts = info.Facts
	pt.base.Concurrency = int32(info.Facts.Concurrency)
	var islFor func(schemas.RunManifest) (metrics.ISLCounter, error)
	if o.isl != nil {
		islFor = o.isl
	}
	var tok metrics.TokenCounter
	if o.tok != nil {
		tok = o.tok
	}
	rsName := o.Ruleset
	if rsName == "" {
		rsName = rulesets.Auto
	}
	// One evaluation: the log read once for the fold and the scorer. Inline
	// accuracy is re-derived from the events and the dataset; a submission point
	// with no dataset at hand, or no event log, is judged on its published
	// figures, as report judges it.
	p, err := curve.LoadRunWith(ctx, run, curve.LoadOptions{Tokenizer: tok, ISLFor: islFor,
		Judge: &score.EvalOptions{Dataset: o.Dataset, Ruleset: rsName, Workers: 1, OrPublished: runread.IsPoint(run)}})
	if err != nil {
		pt.fail("events", "", err)
		return pt
	}
	pt.p = p
	if p.Concurrency > 0 {
		pt.base.Concurrency = int32(p.Concurrency)
	}
	ev := p.Evaluated()
	name, _ := run.EventsName()
	pt.noEvents = !runread.HasTurnLog(run) && name == ""
	switch {
	case pt.noEvents:
	case o.tok == nil && !strings.HasPrefix(p.TokenSource, "server_usage"):
		pt.oslWhy = "output tokens need the reference tokenizer"
	case o.tok == nil:
		// Server usage counts: comparable only with a summary counted the same way.
		if pub, _ := pt.publishedTokenSource(); pub != "" && pub != p.TokenSource {
			pt.oslWhy = fmt.Sprintf("published with %s counts, re-derived from %s: give the reference tokenizer", pub, p.TokenSource)
		}
	default:
		// A tokenizer: comparable only with a summary counted with the same one
		// (its digest), one reason for every token figure of the point.
		pub, _ := pt.publishedTokenSource()
		sha := pt.publishedTokenizerSHA256()
		if p.Tokenizer != nil && (pub == "server_usage" || sha != "" && sha != p.Tokenizer.TokenizerSHA256) {
			was := "the server's usage counts"
			if sha != "" {
				was = fmt.Sprintf("%s (sha256 %.12s)", pub, sha)
			}
			pt.oslWhy = fmt.Sprintf("%s: published from %s, re-derived with tokenizer %s (%s sha256 %.12s)",
				schemas.NotComparableLabel, was, p.Tokenizer.Name, p.Tokenizer.File, p.Tokenizer.TokenizerSHA256)
			pt.notComparable = true
		}
	}
	if run.Has(archive.PointFile) {
		if b, err := run.ReadFile(archive.PointFile); err == nil {
			var m map[string]any
			if yaml.Unmarshal(b, &m) == nil {
				pt.pointYAML = m
			}
		}
	}
	if ev.Basis != score.BasisEvents {
		// Judged on the published figures (or not judged: scoreErr says why):
		// nothing of the gates is re-derived.
		pt.scoreErr = ev.ScoreErr
		if pt.scoreErr == nil {
			pt.scoreErr = errors.New(ev.BasisWhy)
		}
		return pt
	}
	s := ev.Scores
	rules, err := rulesets.Load(s.Run.Ruleset)
	if err != nil {
		pt.scoreErr = err
		return pt
	}
	pt.rules = rules
	// The OSL gate from the re-derived full-run block (not the usage counts the
	// scorer falls back to).
	s.OSL = nil
	if full := p.Summary.OSLFullRun; full != nil && pt.oslWhy == "" {
		s.OSL = &schemas.OSLResult{Mean: full.Avg, Turns: full.Count, Total: int64(full.Total),
			Source: p.TokenSource, Unofficial: p.Unofficial, Tokenizer: p.Tokenizer, Window: rules.OSLWindow}
	}
	s.Verdict = score.Judge(rules, s)
	pt.scores = s
	p.AttachScores(s)
	return pt
}

// readJSON reads and parses the run's published file (its document and its
// bytes); a failure is field's error row (and false).
func (pt *point) readJSON(field, file string) (jsonDoc, []byte, bool) {
	b, err := pt.run.ReadFile(file)
	if err != nil {
		pt.fail(field, file, err)
		return nil, nil, false
	}
	d, err := parseJSON(b)
	if err != nil {
		pt.fail(field, file, fmt.Errorf("parse %s: %w", pt.run.FileLabel(file), err))
		return nil, nil, false
	}
	return d, b, true
}

func (pt *point) fail(field, file string, err error) {
	r := pt.base
	r.Field, r.File, r.Status, r.Note = field, file, Error, err.Error()
	pt.rows = append(pt.rows, r)
}

// publishedTokenSource reads the agentrace.token_source of a published summary.
func (pt *point) publishedTokenSource() (string, bool) {
	v, ok := pt.publishedAgentrace("token_source")
	s, _ := v.(string)
	return s, ok
}

// publishedTokenizerSHA256 reads the digest of the vocabulary file a published
// summary's agentrace.tokenizer names ("" when none).
func (pt *point) publishedTokenizerSHA256() string {
	v, _ := pt.publishedAgentrace("tokenizer", "tokenizer_sha256")
	s, _ := v.(string)
	return s
}

// publishedAgentrace reads a member of a published summary's agentrace block.
func (pt *point) publishedAgentrace(keys ...string) (any, bool) {
	name := pt.run.SummaryName()
	if name == "" {
		return nil, false
	}
	b, err := pt.run.ReadFile(name)
	if err != nil {
		return nil, false
	}
	d, err := parseJSON(b)
	if err != nil {
		return nil, false
	}
	return get(d, append([]string{"agentrace"}, keys...)...)
}

// add appends a numeric row and judges it.
func (pt *point) add(r Row) {
	base := pt.base
	base.Field, base.File, base.Published, base.Recomputed = r.Field, r.File, r.Published, r.Recomputed
	base.PublishedText, base.RecomputedText, base.Tolerance = r.PublishedText, r.RecomputedText, r.Tolerance
	base.Status, base.Note, base.DerivedFrom = r.Status, r.Note, r.DerivedFrom
	base.Rule, base.Severity, base.Level, base.Point = r.Rule, r.Severity, r.Level, r.Point
	base.judge()
	pt.rows = append(pt.rows, base)
}

// compare builds the point's rows from its published files.
func (pt *point) compare() {
	if pt.p == nil {
		return
	}
	pt.compareSummary()
	pt.compareAccuracy()
	pt.compareScores()
	pt.comparePointYAML()
	pt.fileCheckRows()
	pt.followInputs()
	pt.gateRows()
	pt.tokenizerRow()
}

// gateRows lists the point's gates as agentrace judges them (nothing published
// to compare): each gate's outcome (pass, fail, or not evaluated with the
// submission checker's severity), the figure it judged and agentrace's
// re-derived value beside it, then the point's verdict.
func (pt *point) gateRows() {
	if pt.p.GatesOutcome == "" {
		return
	}
	for _, g := range pt.p.Gates {
		if g.Informational {
			continue
		}
		r := Row{Field: "gate." + g.Name, RecomputedText: g.Outcome, Recomputed: g.Rederived, Status: NotPublished}
		if g.Evaluated() {
			r.Published = fp(g.Value)
		} else {
			r.RecomputedText += " (" + g.Severity + ")"
		}
		r.Note = strings.TrimSuffix(strings.TrimPrefix(g.Reason+"; "+g.Note, "; "), "; ")
		if g.Source != "" {
			r.Note = strings.TrimPrefix(r.Note+"; judged on: "+g.Source, "; ")
		}
		pt.add(r)
	}
	c := pt.p.GateCounts
	r := Row{Field: "point.verdict", RecomputedText: pt.p.GatesOutcome, Status: NotPublished}
	if c != nil {
		r.Note = fmt.Sprintf("%d pass, %d fail, %d not evaluated", c.Pass, c.Fail, c.NotEvaluated)
	}
	pt.add(r)
}

// tokenizerRow records the tokenizer the point's token figures were re-derived
// with (its name and digests) and whether it is the model's own: with a
// stand-in, the re-derived token figures are unofficial.
func (pt *point) tokenizerRow() {
	u := pt.p.Tokenizer
	if u == nil {
		return
	}
	status := Agree
	if u.StandIn {
		status = Unchecked
	}
	pt.add(Row{Field: "point.tokenizer", Status: status, Note: u.Note,
		RecomputedText: fmt.Sprintf("%s %s sha256 %s, chat template sha256 %s", u.Name, u.File, u.TokenizerSHA256, u.TemplateSHA256)})
}

// blockRows compares a published stat block with the re-derived one.
func (pt *point) blockRows(prefix, file string, pub any, rec *metrics.StatBlock, es bool, why string) {
	pm, ok := asObject(pub)
	if !ok {
		return
	}
	_, hasTotal := pm["total"]
	if !hasTotal {
		// {} (or only the early-stopping map): the reference's empty series.
		r := Row{Field: prefix + ".count", File: file, Published: fp(0), Tolerance: 0}
		if rec != nil {
			r.Recomputed = fp(float64(rec.Count))
		} else {
			r.Recomputed = fp(0)
		}
		if why != "" {
			r.Status, r.Note = Unchecked, why
		}
		pt.add(r)
		return
	}
	val := func(f func(b *metrics.StatBlock) float64) *float64 {
		if rec == nil || rec.Count == 0 {
			return nil
		}
		return fp(f(rec))
	}
	for _, f := range []struct {
		key string
		fn  func(b *metrics.StatBlock) float64
	}{
		{"total", func(b *metrics.StatBlock) float64 { return b.Total }},
		{"min", func(b *metrics.StatBlock) float64 { return b.Min }},
		{"max", func(b *metrics.StatBlock) float64 { return b.Max }},
		{"median", func(b *metrics.StatBlock) float64 { return b.Median }},
		{"avg", func(b *metrics.StatBlock) float64 { return b.Avg }},
		{"std_dev", func(b *metrics.StatBlock) float64 { return b.StdDev }},
	} {
		if _, ok := pm[f.key]; !ok {
			continue
		}
		r := Row{Field: prefix + "." + f.key, File: file, Published: numAt(pm, f.key), Recomputed: val(f.fn), Tolerance: Tolerance}
		if why != "" {
			r.Status, r.Note = Unchecked, why
		}
		pt.add(r)
	}
	if pp, ok := asObject(pm["percentiles"]); ok {
		for _, k := range percentileKeys(pp) {
			r := Row{Field: prefix + ".percentiles." + metrics.PercentileKey(k.P), File: file, Published: numAt(pp, k.Key), Tolerance: Tolerance}
			if rec != nil && rec.Count > 0 {
				r.Recomputed = fp(rec.Percentile(k.P))
				if r.Recomputed == nil {
					r.Status, r.Note = Unchecked, "not a percentile of the reference's grid"
				}
			}
			if why != "" {
				r.Status, r.Note = Unchecked, why
			}
			pt.add(r)
		}
	}
	if es {
		if pe, ok := asObject(pm["early_stopping_percentiles"]); ok {
			for _, k := range percentileKeys(pe) {
				r := Row{Field: prefix + ".early_stopping_percentiles." + metrics.PercentileKey(k.P), File: file, Published: numAt(pe, k.Key), Tolerance: Tolerance}
				if rec != nil {
					for i, key := range rec.EarlyStoppingKeys {
						if key == metrics.PercentileKey(k.P) && rec.EarlyStopping[i] != nil {
							r.Recomputed = fp(*rec.EarlyStopping[i])
						}
					}
				}
				if why != "" {
					r.Status, r.Note = Unchecked, why
				}
				pt.add(r)
			}
		}
	}
	if h, ok := asObject(pm["histogram"]); ok {
		pt.histogramRow(prefix+".histogram", file, h, rec, why)
	}
}

// histogramRow compares a published histogram with the re-derived one: the same
// counts, and edges within 1e-9 (relative).
func (pt *point) histogramRow(field, file string, h map[string]any, rec *metrics.StatBlock, why string) {
	counts, _ := h["counts"].([]any)
	buckets, _ := h["buckets"].([]any)
	r := Row{Field: field, File: file, PublishedText: fmt.Sprintf("%d buckets", len(counts))}
	if rec != nil {
		r.RecomputedText = fmt.Sprintf("%d buckets", len(rec.HistCounts))
	}
	switch {
	case why != "":
		r.Status, r.Note = Unchecked, why
	case rec == nil || len(counts) != len(rec.HistCounts) || len(buckets) != len(rec.HistEdges):
		r.Status, r.Note = Disagree, "a different number of buckets"
	default:
		r.Status = Agree
		for i := range counts {
			c, _ := score.PyFloat(counts[i])
			if int(c) != rec.HistCounts[i] {
				r.Status, r.Note = Disagree, fmt.Sprintf("bucket %d holds %d published, %d re-derived", i, int(c), rec.HistCounts[i])
				break
			}
			e, _ := buckets[i].([]any)
			if len(e) != 2 {
				r.Status, r.Note = Disagree, fmt.Sprintf("bucket %d is not a [low, high] pair", i)
				break
			}
			lo, _ := score.PyFloat(e[0])
			hi, _ := score.PyFloat(e[1])
			if relDiff(lo, rec.HistEdges[i][0]) > 1e-9 || relDiff(hi, rec.HistEdges[i][1]) > 1e-9 {
				r.Status, r.Note = Disagree, fmt.Sprintf("bucket %d is [%g, %g] published, [%g, %g] re-derived", i, lo, hi, rec.HistEdges[i][0], rec.HistEdges[i][1])
				break
			}
		}
	}
	pt.add(r)
}

// compareSummary compares result_summary.json (or a submission point's
// mlperf_endpoints_log_summary.json).
func (pt *point) compareSummary() {
	name := pt.run.SummaryName()
	rs := pt.p.Summary
	if name == "" {
		r := Row{Field: "result_summary", Status: NotPublished, Note: "the run publishes no result summary"}
		pt.add(r)
		return
	}
	d, _, ok := pt.readJSON("result_summary", name)
	if !ok {
		return
	}
	noEv := ""
	if pt.noEvents {
		noEv = "the point ships no event log: nothing to re-derive it from"
	}
	orEv := func(why string) string {
		if noEv != "" {
			return noEv
		}
		return why
	}
	count := func(field string, v int) {
		r := Row{Field: field, File: name, Published: numAt(d, field), Recomputed: fp(float64(v))}
		if noEv != "" {
			r.Status, r.Note = Unchecked, noEv
		}
		pt.add(r)
	}
	count("n_samples_issued", rs.NSamplesIssued)
	count("n_samples_completed", rs.NSamplesCompleted)
	count("n_samples_failed", rs.NSamplesFailed)
	num := func(field string, v float64, why string) {
		if _, ok := get(d, field); !ok {
			if why == "" && noEv == "" {
				pt.add(Row{Field: field, Recomputed: fp(v), Tolerance: Tolerance})
			}
			return
		}
		r := Row{Field: field, File: name, Published: numAt(d, field), Recomputed: fp(v), Tolerance: Tolerance}
		if w := orEv(why); w != "" {
			r.Status, r.Note, r.Recomputed = Unchecked, w, nil
		}
		pt.add(r)
	}
	dur := math.NaN()
	if rs.DurationNs > 0 {
		dur = float64(rs.DurationNs)
	}
	num("duration_ns", dur, "")
	num("qps", float64(rs.QPS), "")
	num("tps", float64(rs.TPS), pt.oslWhy)
	for _, k := range []string{"stop", "length", "tool_calls", "content_filter", "function_call", "other"} {
		if _, ok := get(d, "finish_reason_counts", k); !ok {
			continue
		}
		r := Row{Field: "finish_reason_counts." + k, File: name, Published: numAt(d, "finish_reason_counts", k), Recomputed: fp(float64(rs.FinishReasonCounts[k]))}
		if noEv != "" {
			r.Status, r.Note = Unchecked, noEv
		}
		pt.add(r)
	}
	for _, b := range []struct {
		key, why string
		rec      *metrics.StatBlock
		es       bool
	}{
		{"ttft", "", rs.TTFT, true},
		{"tpot", pt.oslWhy, rs.TPOT, true},
		{"latency", "", rs.Latency, true},
		{"output_sequence_lengths", pt.oslWhy, rs.OSL, false},
		{"input_sequence_lengths", pt.islWhy(), rs.ISL, false},
	} {
		if v, ok := get(d, b.key); ok {
			pt.blockRows(b.key, name, v, b.rec, b.es, orEv(b.why))
		}
	}
	const fullField = "output_sequence_lengths_full_run.output_sequence_lengths"
	if v, ok := get(d, "output_sequence_lengths_full_run", "output_sequence_lengths"); ok {
		pt.blockRows(fullField, name, v, rs.OSLFullRun, false, orEv(pt.oslWhy))
	} else if noEv == "" {
		r := Row{Field: fullField + ".avg", Tolerance: Tolerance, Note: "the checker's OSL gate reads this field; the summary lacks it"}
		if rs.OSLFullRun != nil && pt.oslWhy == "" {
			r.Recomputed = fp(rs.OSLFullRun.Avg)
		}
		r.Status = NotPublished
		pt.add(r)
	}
	// The full-run block's counters, where the summary has them (the reference's
	// newer summaries): the turns counted depend on the token counts, the others
	// on the turns' outcomes alone.
	fc := rs.FullRun
	if rs.OSLFullRun != nil {
		fc.Counted = rs.OSLFullRun.Count
	}
	for _, c := range []struct {
		k   string
		v   int
		why string
	}{{"n_turns_counted", fc.Counted, pt.oslWhy}, {"n_empty", fc.Empty, pt.oslWhy}, {"n_errors", fc.Errors, pt.oslWhy},
		{"n_undecodable", fc.Undecodable, ""}, {"n_missing", fc.Missing, ""}} {
		if _, ok := get(d, "output_sequence_lengths_full_run", c.k); !ok {
			continue
		}
		r := Row{Field: "output_sequence_lengths_full_run." + c.k, File: name, Published: numAt(d, "output_sequence_lengths_full_run", c.k), Recomputed: fp(float64(c.v))}
		if w := orEv(c.why); w != "" {
			r.Status, r.Note, r.Recomputed = Unchecked, w, nil
		}
		pt.add(r)
	}
	// The agentic figures as the checker takes them: derived from the summary's
	// totals (score.ReadSummaryFigures), the summary's own field only where the
	// checker derives none; a stored field more than 1% from the derivation is the
	// checker's error, said in the row's note.
	fig := score.ReadSummaryFigures(d)
	num("output_tokens_per_turn_total", float64(rs.OutputTokensPerTurnTotal), pt.oslWhy)
	num("e2e_turn_time_seconds_total", float64(rs.E2ETurnTimeSecondsTotal), "")
	pt.derived(d, name, "system_tps", float64(rs.SystemTPS), orEv(pt.oslWhy), checkerFigure{
		v: fig.SystemTPS, has: fig.HasSystemTPS, stored: fig.StoredSystemTPS, rule: "metric-consistency-system-tps",
		from: []string{"output_sequence_lengths.total", "duration_ns"}, how: "int(output_sequence_lengths.total) / duration_ns in seconds",
	})
	pt.derived(d, name, "tps_per_user", float64(rs.TPSPerUser), orEv(pt.oslWhy), checkerFigure{
		v: fig.TPSPerUser, has: fig.HasTPSPerUser, stored: fig.StoredTPSPerUser, rule: "metric-consistency-tps-per-user",
		from: []string{"tpot.percentiles.90.0"}, how: "1000 / TPOT P90 in ms",
	})
	pt.derived(d, name, "e2e_avg_interactivity", float64(rs.E2EAvgInteractivity), orEv(pt.oslWhy), checkerFigure{
		v: fig.Interactivity, has: fig.HasInteractivity, stored: fig.StoredInteractivity, rule: "agentic-metric-consistency",
		from: []string{"output_tokens_per_turn_total", "e2e_turn_time_seconds_total"}, how: "output_tokens_per_turn_total / e2e_turn_time_seconds_total",
	})
}

// checkerFigure is one agentic figure as the submission checker derives it from
// a summary, with the summary's own field beside it.
type checkerFigure struct {
	v      float64
	has    bool
	stored *float64
	rule   string
	from   []string
	how    string
}

// derived adds the row of an agentic figure: the checker's derivation from the
// summary's totals as the published value (a derived row), else the summary's own
// field, else a not_published row.
func (pt *point) derived(d jsonDoc, file, field string, rec float64, why string, f checkerFigure) {
	r := Row{Field: field, Recomputed: fp(rec), Tolerance: Tolerance}
	_, hasField := get(d, field)
	mismatch := ""
	switch {
	case f.has:
		r.File, r.Published, r.DerivedFrom = file, fp(f.v), f.from
		r.Note = "as the checker derives it: " + f.how
		if f.stored == nil {
			r.Note = "not stored: " + f.how + ", as the checker derives it"
		} else if e := score.CheckerRelErr(*f.stored, f.v); e > Tolerance {
			mismatch = fmt.Sprintf("the summary's own %s is %.2f%% from %s (%.6g), the checker's figure: its %s error", field, 100*e, f.how, f.v, f.rule)
		}
	case f.stored != nil:
		r.File, r.Published = file, f.stored
		mismatch = fmt.Sprintf("the summary's own %s, but %s is not derivable: the checker's %s error", field, f.how, f.rule)
		if f.rule != "agentic-metric-consistency" {
			mismatch = ""
			r.Note = fmt.Sprintf("the summary's own %s: the checker derives none (%s)", field, f.how)
		}
	case hasField:
		r.File = file
	default:
		r.Note = "not stored, and the summary lacks what " + f.how + " needs: the checker derives none"
	}
	if why != "" && r.Published != nil {
		r.Status, r.Note, r.Recomputed = Unchecked, why, nil
	}
	if mismatch != "" {
		r.Published, r.DerivedFrom, r.Status, r.Note = f.stored, nil, Disagree, mismatch
	}
	if r.Published == nil && (why != "" || pt.noEvents) {
		return
	}
	pt.add(r)
}

func (pt *point) islWhy() string {
	if pt.p == nil {
		return ""
	}
	switch {
	case pt.notComparable:
		return pt.oslWhy
	case strings.HasPrefix(pt.p.ISLSource, "tokenizer"):
		return ""
	case runread.HasTurnLog(pt.run) && pt.p.ISLSource == "server_usage" && pt.oslWhy == "":
		return ""
	case !runread.HasTurnLog(pt.run) && pt.oslWhy != "":
		return "input tokens need the reference tokenizer: they are counted from the prompts the events carry"
	case !runread.HasTurnLog(pt.run):
		return "the events carry no prompt agentrace can count (token ids or structured messages)"
	case pt.oslWhy != "":
		return "input tokens need the reference tokenizer and the run's dataset"
	}
	return "the run's dataset could not be read to count input tokens"
}

// followInputs turns a derived row that disagrees because one of its published
// inputs disagrees into a following row, naming the input.
func (pt *point) followInputs() {
	failed := map[string]bool{}
	for _, r := range pt.rows {
		if r.Status == Disagree && len(r.DerivedFrom) == 0 {
			failed[r.Field] = true
		}
	}
	for i := range pt.rows {
		r := &pt.rows[i]
		if r.Status != Disagree || len(r.DerivedFrom) == 0 {
			continue
		}
		var bad []string
		for _, f := range r.DerivedFrom {
			if failed[f] {
				bad = append(bad, f)
			}
		}
		if len(bad) > 0 {
			r.Status = Follows
			r.Note = "derived from " + strings.Join(r.DerivedFrom, " and ") + "; follows the disagreeing " + strings.Join(bad, ", ")
		}
	}
}

// accuracyEntry is one published per-dataset accuracy entry.
type accuracyEntry struct {
	name string
	m    map[string]any
}

func accuracyEntries(d jsonDoc) []accuracyEntry {
	root := any(d)
	if sc, ok := d["accuracy_scores"]; ok {
		root = sc
	}
	var out []accuracyEntry
	switch r := root.(type) {
	case []any:
		for i, it := range r {
			m, ok := it.(map[string]any)
			if !ok {
				continue
			}
			n, _ := m["dataset_name"].(string)
			if n == "" {
				n = fmt.Sprintf("#%d", i)
			}
			out = append(out, accuracyEntry{n, m})
		}
	case map[string]any, jsonDoc:
		m, _ := asObject(r)
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if e, ok := m[n].(map[string]any); ok {
				out = append(out, accuracyEntry{n, e})
			}
		}
	}
	return out
}

// entryScore reads an entry's score as the checker does: a scalar, or the score
// metric of a mapping, or its first metric.
func entryScore(e map[string]any) *float64 {
	switch sc := e["score"].(type) {
	case map[string]any:
		if v, ok := sc["score"]; ok {
			if f, ok := score.PyFloat(v); ok {
				return &f
			}
			return nil
		}
		keys := make([]string, 0, len(sc))
		for k := range sc {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) > 0 {
			if f, ok := score.PyFloat(sc[keys[0]]); ok {
				return &f
			}
		}
		return nil
	default:
		if f, ok := score.PyFloat(sc); ok {
			return &f
		}
	}
	return nil
}

// compareAccuracy compares accuracy/accuracy_results.json: the inline entry's
// score and sample count re-derived; other entries (SWE-bench) listed unchecked.
func (pt *point) compareAccuracy() {
	name := pt.run.AccuracyName()
	if name == "" {
		return
	}
	d, _, ok := pt.readJSON("accuracy", name)
	if !ok {
		return
	}
	for _, e := range accuracyEntries(d) {
		typ, _ := e.m["dataset_type"].(string)
		inline := typ == score.PerformanceDatasetType || (typ == "" && e.name == score.PerformanceDatasetType)
		field := "accuracy." + e.name
		r := Row{Field: field + ".score", File: name, Published: entryScore(e.m), Tolerance: Tolerance}
		switch {
		case !inline && e.name == score.SWEBenchDataset:
			r.Status, r.Note = Unchecked, "the SWE-bench harness's result: not re-derivable from the events (one input to the curve's mean of 4)"
		case !inline:
			r.Status, r.Note = Unchecked, "an accuracy dataset scored by its own scorer: not re-derived"
		case pt.noEvents:
			r.Status, r.Note = Unchecked, "the point ships no event log: nothing to re-derive it from"
		case pt.scores == nil:
			r.Status, r.Note = Unchecked, fmt.Sprintf("could not be re-scored: %v", pt.scoreErr)
		default:
			r.Recomputed = fp(pt.scores.Score)
		}
		pt.add(r)
		if inline {
			if v, ok := e.m["total_samples"]; ok {
				f, _ := score.PyFloat(v)
				r := Row{Field: field + ".total_samples", File: name, Published: &f}
				switch {
				case pt.noEvents:
					r.Status, r.Note = Unchecked, "the point ships no event log"
				case pt.scores == nil:
					r.Status, r.Note = Unchecked, fmt.Sprintf("could not be re-scored: %v", pt.scoreErr)
				default:
					// The reference totals its performance phases' issued samples: every
					// turn sent or skipped after a failure, in or out of the window.
					r.Recomputed = fp(float64(pt.scores.Turns.Issued))
				}
				pt.add(r)
			}
		}
	}
}

// compareScores compares a run's scores.json (the reference scorer's shape:
// score, turns, domains; agentrace adds osl and verdict).
func (pt *point) compareScores() {
	if !pt.run.Has(schemas.ScoresFile) || pt.noEvents {
		return
	}
	d, b, ok := pt.readJSON("scores", schemas.ScoresFile)
	if !ok {
		return
	}
	if runread.HasTurnLog(pt.run) && pt.p != nil {
		// Its figures are of the log it scored: another state of it is no input.
		var sc schemas.Scores
		err := json.Unmarshal(b, &sc)
		if err == nil {
			err = pt.p.CheckScores(&sc, pt.run.FileLabel(schemas.ScoresFile))
		}
		if err != nil {
			pt.fail("scores", schemas.ScoresFile, err)
			return
		}
	}
	s := pt.scores
	why := ""
	if s == nil {
		why = fmt.Sprintf("could not be re-scored: %v", pt.scoreErr)
	}
	row := func(field string, tol float64, v func() float64) {
		keys := strings.Split(field, ".")
		pub := numAt(d, keys...)
		if pub == nil {
			return
		}
		r := Row{Field: "scores." + field, File: schemas.ScoresFile, Published: pub, Tolerance: tol}
		if why != "" {
			r.Status, r.Note = Unchecked, why
		} else {
			r.Recomputed = fp(v())
		}
		pt.add(r)
	}
	row("score", Tolerance, func() float64 { return s.Score })
	row("turns.issued", 0, func() float64 { return float64(s.Turns.Issued) })
	row("turns.expected", 0, func() float64 { return float64(s.Turns.Expected) })
	row("turns.observed", 0, func() float64 { return float64(s.Turns.Observed) })
	row("turns.missing", 0, func() float64 { return float64(s.Turns.Missing) })
	row("turns.scored", 0, func() float64 { return float64(s.Turns.Scored) })
	for _, dom := range []string{"coding", "workflow"} {
		row("domains."+dom+".score", Tolerance, func() float64 {
			if x, ok := s.Domains[dom]; ok {
				return x.Score
			}
			return math.NaN()
		})
		row("domains."+dom+".scored", 0, func() float64 {
			if x, ok := s.Domains[dom]; ok {
				return float64(x.Scored)
			}
			return math.NaN()
		})
	}
	if _, ok := get(d, "osl", "mean"); ok {
		r := Row{Field: "scores.osl.mean", File: schemas.ScoresFile, Published: numAt(d, "osl", "mean"), Tolerance: Tolerance}
		switch {
		case pt.oslWhy != "":
			r.Status, r.Note = Unchecked, pt.oslWhy
		case s != nil && s.OSL != nil:
			r.Recomputed = fp(s.OSL.Mean)
		}
		pt.add(r)
	}
	if v, ok := get(d, "verdict", "pass"); ok {
		pb, _ := v.(bool)
		r := Row{Field: "scores.verdict.pass", File: schemas.ScoresFile, PublishedText: passText(pb)}
		switch {
		case why != "":
			r.Status, r.Note = Unchecked, why
		case pt.oslWhy != "":
			r.Status, r.Note = Unchecked, pt.oslWhy
		default:
			r.RecomputedText = passText(s.Verdict.Pass)
			r.Status = textStatus(r.PublishedText, r.RecomputedText)
		}
		pt.add(r)
	}
}

func passText(b bool) string {
	if b {
		return "pass"
	}
	return "fail"
}

func textStatus(a, b string) string {
	if a == b {
		return Agree
	}
	return Disagree
}

// fileCheckRows records the submission checker's findings on the point's
// point.yaml and system_desc.json that agentrace reads the point by, one
// point.check.<rule> row each: a finding, which does not fail the audit (the
// checker's verdict on the tree is its checker.<rule> rows, checkerRows).
func (pt *point) fileCheckRows() {
	for _, c := range pt.facts.FileChecks {
		pt.add(Row{Field: "point.check." + c.Rule, File: path.Base(c.File), RecomputedText: c.Severity, Status: Finding, Note: c.Reason,
			Rule: c.Rule, Severity: c.Severity, Level: "file", Point: path.Base(pt.run.Dir)})
	}
}

// comparePointYAML compares a point's point.yaml concurrency with its folder name
// and its run's configuration (the region is compared per curve).
func (pt *point) comparePointYAML() {
	if pt.pointYAML == nil {
		return
	}
	if c, ok := score.PyFloat(pt.pointYAML["concurrency"]); ok {
		r := Row{Field: "point.concurrency", File: archive.PointFile, Published: fp(c)}
		switch {
		case pt.run.Point > 0:
			r.Recomputed = fp(float64(pt.run.Point))
			r.Note = "the point folder's name"
		case pt.p.Manifest.Config.Concurrency > 0:
			r.Recomputed = fp(float64(pt.p.Manifest.Config.Concurrency))
			r.Note = "the run's configuration"
		default:
			r.Status, r.Note = Unchecked, "no other record of the concurrency"
		}
		pt.add(r)
	}
}
