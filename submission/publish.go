package submission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/python"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/agentrace/agentrace/score/runread"
	"github.com/agentrace/agentrace/tokens"
	"github.com/sourcegraph/conc/iter"
)

// The files Publish writes, laid out as the reference client lays out its run
// folder and the submission tools a curve: in each run folder
// performance/result_summary.json, accuracy/accuracy_results.json and point.yaml;
// in a sweep folder sweep_summary.csv.
const (
	PublishedSummary  = archive.PerfSummaryFile
	PublishedAccuracy = archive.AccuracyFile
	PublishedPoint    = archive.PointFile
	PublishedSweep    = archive.SweepSummaryFile
)

// PublishedKind is the kind of output of the published files (internal/outguard):
// they belong to their run (or sweep), so Publish replaces its own earlier ones
// and never a file of that name it did not write (a reference client's
// result_summary.json, a submitter's point.yaml).
var PublishedKind = outguard.Kind{Name: "published"}

// PublishOptions configure Publish.
type PublishOptions struct {
	// Runs are agentrace run folders and sweep folders (c<N>/ run folders); the
	// files are written into them. A sweep folder also gets sweep_summary.csv.
	Runs []string
	// CMax is the declared maximum supported concurrency; 0: the highest point.
	CMax int
	// Ruleset judges the curve; "" takes the runs' scores.json ruleset, else the
	// default.
	Ruleset string
	// TokenizerDir is the reference tokenizer (official token counts); "" uses
	// server usage, marked unofficial in the files.
	TokenizerDir string
	// Events receives a warning when the token counts are a stand-in's, and a
	// progress event (the path) per file written; nil drops them.
	Events notice.Sink
}

// Publish writes, for agentrace runs, what the reference client and the
// submission tools write for theirs, so that archive readers, the submission
// checker and `agentrace audit` read an agentrace run folder as they read a
// reference one: performance/result_summary.json (ResultSummary, the one writer
// of that file), accuracy/accuracy_results.json (from the run's scores.json: the
// inline entry as the reference writes it, a swe_bench entry when the run was
// scored with a SWE-bench report), point.yaml (the report's draft, with the
// region the ruleset's form places the point in), and in a sweep folder
// sweep_summary.csv (one row per point: the headline figures as the checker
// derives them from the summaries, the inline accuracy, the point's gates and the
// curve's verdict). It returns the systems it judged.
func Publish(ctx context.Context, o PublishOptions) ([]*curve.System, error) {
	if len(o.Runs) == 0 {
		return nil, errors.New("publish: no run or sweep folder given")
	}
	lo, err := counting(ctx, o.TokenizerDir)
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	var systems []*curve.System
	for _, arg := range o.Runs {
		pts, sweep, src, err := LoadAgentraceRuns(ctx, arg, curve.LoadOptions{Tokenizer: lo.Tokenizer, ISLFor: lo.ISLFor, Ruleset: o.Ruleset}, nil)
		if err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
		defer src.Close()
		rs, _, err := curve.CurveRuleset(o.Ruleset, pts)
		if err != nil {
			return nil, fmt.Errorf("publish: %w", err)
		}
		name := filepath.Base(filepath.Clean(arg))
		s := curve.NewSystemWith(name, pts, o.CMax, rs)
		systems = append(systems, s)
		if note := curve.StandIn(s); note != "" {
			o.Events.Say(notice.Warning, "", "%s: token counts %s; the published token figures are unofficial (result_summary.json agentrace.tokenizer says so)", name, note)
		}
		// A sweep folder named as such gets the curve's table.
		sweepDir := ""
		if sweep {
			sweepDir = arg
		}
		if err := PublishSystem(ctx, s, sweepDir, o.TokenizerDir, o.Events); err != nil {
			return nil, err
		}
	}
	return systems, nil
}

// LoadAgentraceRuns folds the agentrace runs of a run or sweep folder arg (a
// folder, never an archive: the published files are written into it) into
// points, judged by ruleset ("" for the runs' own). sweep tells that arg is a
// sweep folder (its c<N>/ runs) rather than one run folder. Any other kind of run
// in it, or none, is an error. onRecord, when set, gives each run's
// LoadOptions.OnRecord. The points' runs (Point.Run) are read through the source
// returned, which the caller closes when done with them.
func LoadAgentraceRuns(ctx context.Context, arg string, o curve.LoadOptions, onRecord func(*archive.Run) func(*schemas.TurnRecord) error) (pts []*curve.Point, sweep bool, _ *archive.Source, err error) {
	src, inner, err := archive.OpenPath(arg, archive.Limits{})
	if err != nil {
		return nil, false, nil, err
	}
	defer func() {
		if err != nil {
			src.Close()
		}
	}()
	if src.Kind != archive.SourceDir {
		return nil, false, nil, fmt.Errorf("%q is an archive: give the run or sweep folder", arg)
	}
	runs := archive.Under(archive.Find(src), inner)
	if len(runs) == 0 {
		return nil, false, nil, fmt.Errorf("%q holds no agentrace run (%s) nor a sweep of c<N>/ runs", arg, schemas.TurnLogFile)
	}
	for _, r := range runs {
		if r.Err != nil {
			return nil, false, nil, fmt.Errorf("run %q: %w", r.Label, r.Err)
		}
		if !runread.HasTurnLog(r) {
			return nil, false, nil, fmt.Errorf("%q is a %s run: only agentrace runs are published (audit reads the others as they are)", r.Label, r.Kind)
		}
	}
	pts, err = iter.MapErr(runs, func(run **archive.Run) (*curve.Point, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ro := o
		if onRecord != nil {
			ro.OnRecord = onRecord(*run)
		}
		return curve.LoadRunWith(ctx, *run, ro)
	})
	if err != nil {
		return nil, false, nil, err
	}
	return pts, len(runs) > 1 || runs[0].Dir != inner, src, nil
}

// PublishSystem writes the published files of a system's points (agentrace runs,
// folded by LoadRun or a report) into their run folders, and its
// sweep_summary.csv into sweepDir ("" for none). tokenizerDir names the tokenizer
// the points were counted with (an input the files may not overlap). Each file
// written is a progress event to events, its path the text.
func PublishSystem(ctx context.Context, s *curve.System, sweepDir, tokenizerDir string, events notice.Sink) error {
	var runs []*archive.Run
	for _, p := range s.Points {
		if p.Run() == nil || !runread.HasTurnLog(p.Run()) || p.Run().Source.Kind != archive.SourceDir {
			return fmt.Errorf("publish: %q is not an agentrace run folder", p.RunDir)
		}
		runs = append(runs, p.Run())
		if err := publishPoint(ctx, s, p, tokenizerDir, events); err != nil {
			return err
		}
	}
	if sweepDir == "" {
		return nil
	}
	path := filepath.Join(sweepDir, PublishedSweep)
	if err := writePublished(path, SweepSummaryCSV(s), isOurSweepSummary(ctx), runInputs(runs, tokenizerDir)...); err != nil {
		return err
	}
	events.Say(notice.Progress, "", "%s", path)
	return nil
}

// runInputs are the files of the runs that Publish reads (outguard inputs: the
// published files sit in the run folders, beside them).
func runInputs(runs []*archive.Run, extra ...string) []string {
	var in []string
	for _, r := range runs {
		dir := r.Source.Label(r.Dir)
		in = append(in, filepath.Join(dir, schemas.TurnLogFile), filepath.Join(dir, schemas.RunManifestFile), filepath.Join(dir, schemas.ScoresFile))
	}
	return append(in, extra...)
}

func publishPoint(ctx context.Context, s *curve.System, p *curve.Point, tokenizerDir string, events notice.Sink) error {
	dir := p.Run().Source.Label(p.Run().Dir)
	in := runInputs([]*archive.Run{p.Run()}, tokenizerDir)
	b, err := json.MarshalIndent(p.Summary, "", "  ")
	if err != nil {
		return fmt.Errorf("publish: encode %s: %w", PublishedSummary, err)
	}
	for _, f := range []struct {
		name string
		data []byte
		ours func(string) bool
	}{
		{PublishedSummary, append(b, '\n'), isOurJSON(ctx)},
		{PublishedAccuracy, AccuracyResults(p), isOurJSON(ctx)},
		{PublishedPoint, PointYAML(s, p, nil), isOurPointYAML},
	} {
		if f.data == nil {
			continue
		}
		path := filepath.Join(dir, filepath.FromSlash(f.name))
		if err := writePublished(path, f.data, f.ours, in...); err != nil {
			return err
		}
		events.Say(notice.Progress, "", "%s", path)
	}
	return nil
}

// writePublished writes one published file atomically after the output guard's
// checks: never over a file agentrace did not write.
func writePublished(path string, data []byte, ours func(string) bool, inputs ...string) error {
	out := outguard.Output{Path: path, Kind: PublishedKind, Overwrite: true, Ours: ours}
	if err := outguard.WriteFile(out, inputs, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

// isOurJSON recognizes, reading under ctx, a published JSON file agentrace
// wrote: an object with an "agentrace" member naming its tool version.
func isOurJSON(ctx context.Context) func(path string) bool {
	return func(path string) bool {
		b, err := infile.ReadFile(ctx, path, infile.LargeFile)
		return err == nil && isOurJSONData(b)
	}
}

func isOurJSONData(b []byte) bool {
	var m struct {
		Agentrace struct {
			ToolVersion string `json:"tool_version"`
		} `json:"agentrace"`
	}
	return json.Unmarshal(b, &m) == nil && m.Agentrace.ToolVersion != ""
}

func isOurPointYAML(path string) bool {
	b, err := infile.ReadSmall(path, 1<<20)
	return err == nil && isPointYAMLHeader(b)
}

// isPointYAMLHeader tells whether a point.yaml starts with agentrace's comment.
func isPointYAMLHeader(b []byte) bool {
	first, _, _ := bytes.Cut(b, []byte("\n"))
	return bytes.HasPrefix(first, []byte("# ")) && bytes.Contains(first, []byte(pointYAMLHeader))
}

// isOurSweepSummary recognizes, reading under ctx, a sweep_summary.csv
// agentrace wrote: its header row, ending in written_by.
func isOurSweepSummary(ctx context.Context) func(path string) bool {
	return func(path string) bool {
		b, err := infile.ReadFile(ctx, path, infile.LargeFile)
		if err != nil {
			return false
		}
		first, _, _ := bytes.Cut(b, []byte("\n"))
		return bytes.HasPrefix(first, []byte(sweepHeader[0])) && bytes.HasSuffix(bytes.TrimSpace(first), []byte(",written_by"))
	}
}

// AccuracyResults is a point's accuracy/accuracy_results.json, as the reference
// client writes it (commands/benchmark/accuracy.py): a list of per-dataset
// entries, the inline one ("performance", dataset_type performance: the score
// over every turn sent or skipped, total_samples those turns) and, when the run
// was scored with a SWE-bench harness report, a swe_bench entry (dataset_type
// accuracy) and average_accuracy over the accuracy entries. nil when the run has
// no scores.json.
func AccuracyResults(p *curve.Point) []byte {
	s := p.Scores()
	if s == nil {
		return nil
	}
	unit := datasetClientTurns(p.DatasetDir())
	var entries [][]byte
	entry := func(name string, score float64, unit, total any, dur float64, complete bool, typ string) {
		var e metrics.JSONObject
		_ = e.Val("dataset_name", name)
		e.Raw("extractor", []byte("null"))
		e.Raw("ground_truth_column", []byte("null"))
		if math.IsNaN(score) {
			e.Raw("score", []byte("null"))
		} else {
			e.Raw("score", jsontext.AppendPyFloat(nil, score))
		}
		_ = e.Val("unit_samples", unit)
		e.Raw("num_repeats", []byte("1"))
		_ = e.Val("total_samples", total)
		e.Raw("duration_s", jsontext.AppendPyFloat(nil, dur))
		e.Raw("complete", strconv.AppendBool(nil, complete))
		_ = e.Val("dataset_type", typ)
		entries = append(entries, e.Bytes())
	}
	dur := 0.0
	if p.Manifest.EndedNs > 0 {
		dur = python.Round(float64(p.Manifest.EndedNs)/1e9, 3)
	}
	inline := s.Score
	if s.Turns.Scored == 0 {
		inline = math.NaN() // no turn scored: null, as the reference scorer writes it
	}
	entry(score.PerformanceDatasetType, inline, unit, s.Turns.Issued, dur, p.Manifest.State == schemas.RunComplete, score.PerformanceDatasetType)
	var o metrics.JSONObject
	if sw := s.SWEBench; sw != nil {
		entry(score.SWEBenchDataset, sw.Score, sw.Evaluated, sw.Evaluated, 0, !sw.Incomplete, "accuracy")
		o.Raw("average_accuracy", jsontext.AppendPyFloat(nil, sw.Score))
	}
	o.Raw("accuracy_scores", append(append([]byte("["), bytes.Join(entries, []byte(","))...), ']'))
	var ag metrics.JSONObject
	_ = ag.Val("tool_version", schemas.ToolVersion)
	_ = ag.Val("source", "scores.json (agentrace score): inline accuracy as the reference scorer computes it")
	o.Raw("agentrace", ag.Bytes())
	var b bytes.Buffer
	if err := json.Indent(&b, o.Bytes(), "", "  "); err != nil {
		return nil
	}
	return append(b.Bytes(), '\n')
}

// datasetClientTurns reads the number of client turns from a dataset's manifest
// (the reference's unit_samples), nil when unknown.
func datasetClientTurns(dir string) any {
	if dir == "" {
		return nil
	}
	b, err := infile.ReadSmall(filepath.Join(dir, schemas.RunManifestFile), 1<<20)
	if err != nil {
		return nil
	}
	var m schemas.DatasetManifest
	if json.Unmarshal(b, &m) != nil || m.Counts.ClientTurns == 0 {
		return nil
	}
	return m.Counts.ClientTurns
}

// sweepHeader are the columns of sweep_summary.csv.
var sweepHeader = []string{"concurrency", "region", "n_samples_issued", "n_samples_completed", "n_samples_failed",
	"duration_ns", "qps", "system_tps", "tps_per_user", "e2e_avg_interactivity",
	"ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p90_ms", "tpot_p99_ms",
	"latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "osl_mean", "osl_full_run_mean",
	"inline_accuracy", "gates_pass", "curve_verdict", "written_by"}

// SweepSummaryCSV is a curve's sweep_summary.csv: one row per point with its
// region (point.yaml's), the figures of its result_summary.json as the checker
// derives them (times in ms), its inline accuracy and gates, and the curve's
// verdict. A value not available is an empty cell.
func SweepSummaryCSV(s *curve.System) []byte {
	var b strings.Builder
	b.WriteString(strings.Join(sweepHeader, ",") + "\n")
	verdict := "pass"
	for _, c := range s.Checks {
		if !c.Pass() {
			verdict = "fail"
		}
	}
	num := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	ms := func(blk *metrics.StatBlock, p float64) string {
		if blk == nil || blk.Count == 0 {
			return ""
		}
		return num(blk.Percentile(p) / 1e6)
	}
	avg := func(blk *metrics.StatBlock) string {
		if blk == nil || blk.Count == 0 {
			return ""
		}
		return num(blk.Avg)
	}
	for _, p := range s.Points {
		rs := p.Summary
		acc, gates := "", ""
		if p.Scores() != nil {
			acc = num(p.Scores().Score)
		}
		if p.GatesPass != nil {
			gates = strconv.FormatBool(*p.GatesPass)
		} else if p.GatesOutcome == schemas.OutcomeNotEvaluated {
			gates = "not_evaluated"
		}
		cells := []string{strconv.Itoa(p.Concurrency), pointRegion(p),
			strconv.Itoa(rs.NSamplesIssued), strconv.Itoa(rs.NSamplesCompleted), strconv.Itoa(rs.NSamplesFailed),
			strconv.FormatInt(rs.DurationNs, 10), num(float64(rs.QPS)), num(float64(rs.SystemTPS)), num(float64(rs.TPSPerUser)),
			num(float64(rs.E2EAvgInteractivity)),
			ms(rs.TTFT, 50), ms(rs.TTFT, 90), ms(rs.TTFT, 99), ms(rs.TPOT, 50), ms(rs.TPOT, 90), ms(rs.TPOT, 99),
			ms(rs.Latency, 50), ms(rs.Latency, 90), ms(rs.Latency, 99), avg(rs.OSL), avg(rs.OSLFullRun),
			acc, gates, verdict, "agentrace " + schemas.ToolVersion}
		b.WriteString(strings.Join(cells, ",") + "\n")
	}
	return []byte(b.String())
}

// counting loads the reference tokenizer folder dir ("" for none: the server's
// usage counts) into the options that count a run's tokens as it is evaluated:
// its output tokens and its ISL.
func counting(ctx context.Context, dir string) (curve.LoadOptions, error) {
	var lo curve.LoadOptions
	var tk *tokens.Tokenizer
	if dir != "" {
		var err error
		if tk, err = tokens.Load(ctx, dir); err != nil {
			return lo, err
		}
		lo.Tokenizer = tk
	}
	lo.ISLFor = metrics.NewISLSource(ctx, tk)
	return lo, nil
}
