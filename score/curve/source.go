package curve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/score/checker"

	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/agentrace/agentrace/score/runread"
	"github.com/agentrace/agentrace/tokens"
	"github.com/apache/arrow-go/v18/arrow"
)

// RunSet is the runs an argument names, and the sources to close.
type RunSet struct {
	Runs    []*archive.Run
	Sources []*archive.Source
}

// Close closes the runs' sources.
func (rs *RunSet) Close() {
	for _, s := range rs.Sources {
		s.Close()
	}
}

// FindRuns opens each argument (a run folder, a sweep folder, a reference run
// folder, a submission tree, or any of them as a .tar.gz/.tgz/.zip archive, or a
// folder inside one) and lists the runs in it. A run that cannot be read safely
// is an error: a report is not drawn from part of a curve silently. A folder
// that merely holds runs deeper inside is refused unless descend (archive.Whole).
func FindRuns(args []string, lim archive.Limits, descend bool) (*RunSet, error) {
	set := &RunSet{}
	for _, a := range args {
		src, inner, err := archive.OpenPath(a, lim)
		if err != nil {
			set.Close()
			return nil, fmt.Errorf("read runs: %w", err)
		}
		set.Sources = append(set.Sources, src)
		runs := archive.Under(archive.Find(src), inner)
		if !descend {
			if err := archive.Whole(src, inner, a, runs); err != nil {
				set.Close()
				return nil, fmt.Errorf("read runs: %w", err)
			}
		}
		n := 0
		for _, r := range runs {
			if r.Kind == "" {
				set.Close()
				return nil, fmt.Errorf("read runs in %q: %w", a, r.Err)
			}
			if r.Err != nil {
				set.Close()
				return nil, fmt.Errorf("run %q: %w", r.Label, r.Err)
			}
			set.Runs = append(set.Runs, r)
			n++
		}
		if n == 0 {
			set.Close()
			return nil, fmt.Errorf("%q holds no run: neither %s (agentrace run or sweep with c<N>/ folders), %s (reference run folder), nor a submission point r<N>/ with point.yaml",
				a, schemas.TurnLogFile, archive.EventsFile)
		}
	}
	return set, nil
}

// SplitCurves splits one group's runs into one group per submission curve when
// they come from several (<system>/<model> folders); other runs stay together.
func SplitCurves(name string, runs []*archive.Run) []RunGroup {
	curves := map[string][]*archive.Run{}
	var order []string
	var other []*archive.Run
	for _, r := range runs {
		if !runread.IsPoint(r) {
			other = append(other, r)
			continue
		}
		key := r.Source.Path + "\x00" + r.CurveDir()
		if _, ok := curves[key]; !ok {
			order = append(order, key)
		}
		curves[key] = append(curves[key], r)
	}
	if len(order) <= 1 {
		return []RunGroup{{Name: name, Runs: runs}}
	}
	var out []RunGroup
	if len(other) > 0 {
		out = append(out, RunGroup{Name: name, Runs: other})
	}
	for _, k := range order {
		rs := curves[k]
		n := path.Join(rs[0].System, rs[0].Model)
		if n == "" || n == "." {
			n = rs[0].CurveDir()
		}
		out = append(out, RunGroup{Name: n, Runs: rs})
	}
	return out
}

// RunGroup is the runs of one curve and the curve's name.
type RunGroup struct {
	Name string
	Runs []*archive.Run
}

// ReferenceManifest stands in for a run manifest for a reference run or a
// submission point: its configuration as its config.yaml and point.yaml say, a
// setting they leave out being the reference's default (salting, delays and
// stop-issuing off, streaming on).
func ReferenceManifest(f archive.Facts) schemas.RunManifest {
	deref := func(b *bool, def bool) bool {
		if b == nil {
			return def
		}
		return *b
	}
	return schemas.RunManifest{
		Config: schemas.RunConfig{
			Dataset: f.Dataset, Model: f.Model, Concurrency: f.Concurrency, Trajectories: f.Trajectories,
			Salt: deref(f.Salt, false), Delays: deref(f.Delays, false), DelayScale: 1,
			StopIssuingAtWindow: deref(f.StopIssuing, false), Stream: deref(f.Stream, true),
		},
		DatasetSize: f.DatasetSize,
		State:       f.State,
	}
}

// LoadRun evaluates one run of any kind into a Point (LoadRunWith with the
// report's way of judging it). rs is the ruleset to judge by.
func LoadRun(ctx context.Context, run *archive.Run, tok metrics.TokenCounter, islFor func(schemas.RunManifest) (metrics.ISLCounter, error), rs string) (*Point, error) {
	return LoadRunWith(ctx, run, LoadOptions{Tokenizer: tok, ISLFor: islFor, Ruleset: rs})
}

// LoadOptions configure LoadRunWith.
type LoadOptions struct {
	// Tokenizer counts output tokens officially (nil: server usage).
	Tokenizer metrics.TokenCounter
	// ISLFor gives an agentrace run's ISL counter from its manifest (nil: usage).
	ISLFor func(schemas.RunManifest) (metrics.ISLCounter, error)
	// Ruleset judges a reference run's or submission point's gates.
	Ruleset string
	// Judge, when set, is how the run's gates are judged (score.Evaluate's
	// options: the dataset, the ruleset, what may stand in for a dataset);
	// LoadRunWith adds the run's facts, the fold and the token counter. nil: the
	// report's way, with Ruleset: an agentrace run by its own scores.json (scored
	// again when that scored another state of its log), a reference run or a
	// submission point from its log, or on its published figures when no dataset
	// is at hand.
	Judge *score.EvalOptions
	// Checker, when set, judges a submission point (in a folder or an archive)
	// with the submission checker's rules (Point.CheckerFindings).
	Checker *checker.Cache
	// NoScores folds the run's log alone: no scores.json read, no gate judged.
	NoScores bool
	// OnRecord, when set, is given every record as the run is read (once), after
	// the fold took it; the record is reused after the call.
	OnRecord func(*schemas.TurnRecord) error
	// OnBatch, when set, is given each batch of an agentrace run's turn log as
	// the run is read (once), in log order, once the fold took its rows, with the
	// fold's values of those rows (rows[i] of the batch's row i: the report's
	// turns.parquet columns), valid during the call. The batch is released after
	// the call unless the callee retains it.
	OnBatch func(b arrow.RecordBatch, rows metrics.RowValues) error
}

// LoadRunWith evaluates one run of any kind into a Point: an agentrace run from
// its turn log, a reference run or a submission point from its event log. The
// log is read once (score.Evaluate), feeding the metrics fold and the scorer;
// the point's gates are judged on the basis score.Evaluate chose
// (Point.Evaluated says which), and a reference run's or submission point's
// SWE-bench result comes from its published accuracy results.
func LoadRunWith(ctx context.Context, run *archive.Run, o LoadOptions) (*Point, error) {
	tok, islFor, rs := o.Tokenizer, o.ISLFor, o.Ruleset
	info, err := runread.ReadInfo(run)
	if err != nil {
		return nil, fmt.Errorf("run %q: %w", run.Label, err)
	}
	facts := info.Facts
	m := ReferenceManifest(facts)
	if facts.Manifest != nil {
		m = *facts.Manifest
	}
	var isl metrics.ISLCounter
	var islErr error
	if islFor != nil && facts.Manifest != nil {
		// The ISL source opens the dataset by path: give it the one found from here.
		mi := m
		mi.Config.Dataset, mi.Config.DatasetAbs = runread.DatasetOf(run, facts), ""
		isl, islErr = islFor(mi)
	}
	// An event log carries each turn's prompt: its ISL is counted from it, as the
	// reference's aggregator counts it (agentrace runs count theirs from the dataset).
	var so runread.ScanOptions
	var cur runread.TurnExtra
	if pc, ok := tok.(promptCounter); ok && facts.Manifest == nil && isl == nil {
		so.Prompt = func(data json.RawMessage) (int, bool) { return promptISL(pc, data) }
		isl = func(*schemas.TurnRecord) (int, bool, error) { return cur.ISL, cur.HasISL, nil }
	}
	a := metrics.NewAccumulator(m, tok, isl)
	fold := func(rec *schemas.TurnRecord, x runread.TurnExtra) error {
		cur = x
		a.Add(rec)
		if o.OnRecord != nil {
			return o.OnRecord(rec)
		}
		return nil
	}
	// A batch comes before the fold's records of its rows: it is held until the
	// next batch (or the log's end), then handed on with its rows' values, which
	// the fold then forgets.
	var held arrow.RecordBatch
	var stopped bool // the fold stopped on an error, which a.Close returns
	defer func() {
		if held != nil {
			held.Release()
		}
	}()
	handOn := func() error {
		if held == nil {
			return nil
		}
		b, n := held, int(held.NumRows())
		held = nil
		defer b.Release()
		rv := a.Rows()
		if stopped = stopped || len(rv.OSL) != n; stopped {
			return nil
		}
		defer a.DropRows()
		return o.OnBatch(b, rv)
	}
	if o.OnBatch != nil {
		so.Batches = func(b arrow.RecordBatch) error {
			if err := handOn(); err != nil {
				return err
			}
			b.Retain()
			held = b
			return nil
		}
	}
	var scan runread.TurnScan
	var ev *score.Evaluation
	if o.NoScores {
		scan, err = runread.ScanTurnsWith(ctx, run, so, fold)
		if err != nil && !(errors.Is(err, runread.ErrNoTurns) && runread.IsPoint(run)) {
			return nil, fmt.Errorf("run %q: %w", run.Label, err)
		}
	} else {
		eo := score.EvalOptions{Ruleset: rs, Workers: 1, Recorded: true, OrPublished: true}
		if o.Judge != nil {
			eo = *o.Judge
		}
		eo.Info, eo.Fold, eo.Prompt, eo.Batches = &info, fold, so.Prompt, so.Batches
		if c, ok := tok.(score.OSLCounter); ok && tok != nil && eo.Counter == nil {
			eo.Counter = c
		}
		if ev, err = score.Evaluate(ctx, run, eo); err != nil {
			return nil, err
		}
		scan = ev.Scan
	}
	if err := handOn(); err != nil {
		return nil, fmt.Errorf("run %q: %w", run.Label, err)
	}
	a.SetWindowStart(scan.WindowStartNs)
	mp, err := a.Close()
	if err != nil {
		return nil, fmt.Errorf("run %q: %w", run.Label, err)
	}
	p := NewPoint(m, mp)
	p.RunDir, p.Kind = run.Label, run.Kind
	p.conditions = runread.Conditions(facts, 0)
	p.point, p.eventLog = runread.IsPoint(run), !runread.HasTurnLog(run)
	p.source, p.evaluation = run, ev
	if facts.Manifest != nil {
		p.datasetDir = runread.DatasetOf(run, facts)
		p.loadServerMetrics(run)
	}
	if p.Concurrency == 0 {
		p.Concurrency = facts.Concurrency
	}
	p.DeclaredRegion, p.MaxSupportedConcurrency = facts.Region, facts.MaxSupportedConcurrency
	p.LoadPattern, p.DatasetName = facts.LoadPattern, facts.DatasetName
	p.FileChecks, p.systemDesc = facts.FileChecks, facts.SystemDesc
	if runread.IsPoint(run) && o.Checker != nil {
		if fs, not, ok := o.Checker.ForRun(run.Source.Path, run.Source.ArchiveFS(), run.Dir); ok {
			p.CheckerFindings, p.CheckerNotEvaluated, p.checkerJudged = fs, not, true
			if p.CheckerFindings == nil {
				p.CheckerFindings = []checker.Finding{}
			}
		}
	}
	if scan.File == "" {
		p.LogNote = "no event log: the point's metrics are not re-derived (only its published files are read)"
	}
	switch {
	case scan.Note != "":
		p.LogNote = scan.Note
	case scan.Truncated != nil:
		p.LogNote = scan.Truncated.Error()
	}
	p.log = scan.Log
	if scan.Skipped > 0 {
		p.LogNote = strings.TrimPrefix(p.LogNote+fmt.Sprintf("; %s: skipped %d malformed lines, as the reference does (first: %s)", scan.File, scan.Skipped, scan.FirstSkipped), "; ")
	}
	if scan.Malformed > 0 {
		p.LogNote = strings.TrimPrefix(p.LogNote+fmt.Sprintf("; %s: %d complete events have a malformed output entry, left out (first: %s)", scan.File, scan.Malformed, scan.FirstMalformed), "; ")
	}
	if islErr != nil {
		note := "dataset not readable, ISL from server usage: " + islErr.Error()
		if p.ISLNote != "" {
			note += "; " + p.ISLNote
		}
		p.ISLNote = note
	}
	if runread.IsPoint(run) {
		if !run.Has(archive.PointFile) {
			p.MissingFiles = append(p.MissingFiles, archive.PointFile)
		}
		if run.SummaryName() == "" {
			p.MissingFiles = append(p.MissingFiles, "result_summary.json (or mlperf_endpoints_log_summary.json)")
		}
	}
	switch {
	case ev == nil:
	case ev.ScoreErr != nil && runread.HasTurnLog(run) && run.Has(schemas.ScoresFile):
		// Never the scores of another state of the log: scored again, or refused.
		return nil, ev.ScoreErr
	case ev.ScoreErr != nil:
		p.TokenNote = strings.TrimPrefix(p.TokenNote+"; not scored: "+ev.ScoreErr.Error(), "; ")
	case ev.Scores != nil:
		if runread.HasTurnLog(run) && ev.Basis == score.BasisEvents && eventsRescored(o) {
			p.ScoresNote = ev.BasisWhy
		}
		p.attachScores(ev.Scores)
		p.GatesBasis, p.GatesBasisNote = string(ev.Basis), ev.BasisWhy
	}
	if !runread.HasTurnLog(run) {
		if n := run.SummaryName(); n != "" {
			if b, err := run.ReadFile(n); err == nil {
				p.PublishedSummary = b
			}
		}
		p.publishedSWEBench(run)
	}
	if p.scores != nil && p.scores.SWEBench != nil && p.SWEBench == nil {
		v := p.scores.SWEBench.Score
		p.SWEBench = &v
	}
	if tok != nil {
		p.markTokenizer(tok, rs, m.Config.Model)
	}
	p.markNotComparable()
	p.applyPublished()
	return p, nil
}

// eventsRescored tells whether an agentrace run scored from its log was scored
// again in place of its own scores.json (the report's way), not at the
// caller's asking.
func eventsRescored(o LoadOptions) bool { return o.Judge == nil || o.Judge.Recorded }

// Evaluated is how the point's run was evaluated: the basis its gates were
// judged on and why, what its log read said; nil when its gates were not
// judged (LoadOptions.NoScores).
func (p *Point) Evaluated() *score.Evaluation { return p.evaluation }

// markNotComparable says in TokenNote when the point's token figures were
// counted otherwise than its scores.json records: with another tokenizer (by
// digest), or with a tokenizer where the server's usage counted, or the reverse
// (schemas.NotComparableLabel).
func (p *Point) markNotComparable() {
	if p.scores == nil || p.scores.OSL == nil {
		return
	}
	rec, was := p.scores.OSL, ""
	switch {
	case rec.Source == "server_usage" && p.Tokenizer != nil:
		was = "the server's usage counts"
	case strings.HasPrefix(rec.Source, "tokenizer") && rec.Tokenizer != nil &&
		(p.Tokenizer == nil || p.Tokenizer.TokenizerSHA256 != rec.Tokenizer.TokenizerSHA256):
		was = fmt.Sprintf("tokenizer %s (%s sha256 %.12s)", rec.Tokenizer.Name, rec.Tokenizer.File, rec.Tokenizer.TokenizerSHA256)
	default:
		return
	}
	p.TokenNote = strings.TrimPrefix(p.TokenNote+"; "+schemas.NotComparableLabel+": its scores.json was counted with "+was, "; ")
}

// markTokenizer records the tokenizer the point's counts were made with and,
// when it is not the model's own under the point's ruleset (the one its scores
// name, else rs, else the newest naming the run's model), marks the point's
// token-based numbers unofficial, saying why.
func (p *Point) markTokenizer(tok metrics.TokenCounter, rs, model string) {
	name := p.Ruleset
	if name == "" {
		name = rs
	}
	var rules rulesets.Ruleset
	var err error
	if name == "" || name == rulesets.Auto {
		rules, _ = rulesets.ForModel(model)
	} else if rules, err = rulesets.Load(name); err != nil {
		rules, _ = rulesets.ForModel(model)
	}
	p.Tokenizer = score.CounterUse(&rules, tok)
	if p.Tokenizer.StandIn {
		p.Unofficial = true
		p.TokenNote = strings.TrimSuffix(p.Tokenizer.Note+"; "+p.TokenNote, "; ")
	}
	if p.Summary != nil {
		p.Summary.Unofficial, p.Summary.Tokenizer = p.Unofficial, p.Tokenizer
	}
}

// publishedSWEBench reads a reference run's or submission point's published
// swe_bench entry, as the submission checker reads it: a malformed one is
// recorded with its problem, and a malformed inline entry beside it does not
// drop it.
func (p *Point) publishedSWEBench(run *archive.Run) {
	pa, err := score.ReadPublishedAccuracy(run)
	switch {
	case err != nil:
	case pa.SWEBench != nil:
		v := *pa.SWEBench
		p.SWEBench = &v
	case pa.SWEBenchProblem != nil && pa.SWEBenchProblem.Severity == schemas.SeverityError:
		p.SWEBenchProblem = pa.SWEBenchProblem
	}
}

// promptCounter counts a rendered prompt's tokens (*tokens.Tokenizer).
type promptCounter interface {
	CountISL(messagesJSON, toolsJSON []byte, kwargs map[string]any) (int, error)
	Encode(text string, addSpecial bool) []int
}

// promptISL counts the input tokens of a reference PromptData (["PromptData",
// text, token_ids, messages, tools, chat_template_kwargs, chat_template,
// tool_choice]) as the reference's IslTrigger does for structured messages: the
// messages (history tool-call arguments parsed into objects) rendered with the
// chat template (tools and chat_template_kwargs included) and a generation
// prompt; token ids are counted as given. When the reference's render fails it
// counts the tokens of the prompt's JSON text instead ({"messages": ..., "tools":
// ...}, as msgspec writes it): Python's Jinja2 fails on a message whose content is
// null (an assistant turn of tool calls alone), which the Qwen3 chat template
// concatenates as a string, so such prompts are counted that way too (agentrace's
// own renderer reads a null content as ""). A prompt with its own chat template,
// or only text, is not counted here (ok false).
func promptISL(pc promptCounter, data json.RawMessage) (int, bool) {
	var arr []json.RawMessage
	if json.Unmarshal(data, &arr) != nil || len(arr) < 4 {
		return 0, false
	}
	isNull := func(i int) bool {
		return i >= len(arr) || len(bytes.TrimSpace(arr[i])) == 0 || string(bytes.TrimSpace(arr[i])) == "null"
	}
	if !isNull(2) {
		var ids []json.RawMessage
		if json.Unmarshal(arr[2], &ids) == nil {
			return len(ids), true
		}
		return 0, false
	}
	if isNull(3) || !isNull(6) {
		return 0, false
	}
	var tools []byte
	if !isNull(4) {
		tools = arr[4]
	}
	var kwargs map[string]any
	if !isNull(5) && json.Unmarshal(arr[5], &kwargs) != nil {
		return 0, false
	}
	if nullContent(arr[3]) {
		var b bytes.Buffer
		// As msgspec writes it, whatever re-encoding the log went through (the
		// submission tools' detail log is indented, with ASCII escapes).
		b.WriteString(`{"messages":`)
		b.Write(jsontext.AppendCompact(nil, tokens.NormalizeToolCallArguments(arr[3])))
		if tools != nil {
			b.WriteString(`,"tools":`)
			b.Write(jsontext.AppendCompact(nil, tools))
		}
		b.WriteByte('}')
		return len(pc.Encode(b.String(), false)), true
	}
	n, err := pc.CountISL(arr[3], tools, kwargs)
	if err != nil {
		return 0, false
	}
	return n, true
}

// nullContent tells whether a message of a JSON message list has a null (or no)
// content.
func nullContent(messages json.RawMessage) bool {
	var ms []map[string]json.RawMessage
	if json.Unmarshal(messages, &ms) != nil {
		return false
	}
	for _, m := range ms {
		c, ok := m["content"]
		if !ok || string(bytes.TrimSpace(c)) == "null" {
			return true
		}
	}
	return false
}

// Run is the run a point was folded from (nil for a point built otherwise).
func (p *Point) Run() *archive.Run { return p.source }
