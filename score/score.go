package score

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/agentrace/agentrace/score/runread"
	"github.com/agentrace/agentrace/tokens"
	"github.com/sourcegraph/conc/pool"
)

// OSLCounter counts a response's output tokens the way the rules do (the
// reference tokenizer and chat template); *tokens.Tokenizer is one.
type OSLCounter interface {
	Name() string
	CountOSL(r schemas.Response) (int, error)
}

// Options configures ScoreRun.
type Options struct {
	// Run is the run directory: a replay run (turns.arrows) or a reference client
	// report directory (events.jsonl).
	Run string
	// Dataset is a dataset directory or a trace file (ingested on the fly); ""
	// takes the dataset the run names.
	Dataset string
	// Ruleset is an embedded ruleset's name, a ruleset file, rulesets.Auto, or ""
	// for rulesets.Default.
	Ruleset string
	// Tokenizer is the reference tokenizer's folder for the OSL counts; without
	// one, the server's usage counts are used and the OSL gate is unofficial.
	Tokenizer string
	// SWEBench is a SWE-bench harness report to judge with the run, "" for none.
	SWEBench string
	// Overwrite lets ScoreAndWrite replace the scores.json and scores.parquet an
	// earlier score wrote into the run folder (never a file agentrace did not write).
	Overwrite bool

	// Truth and Counter, when set, are used instead of loading Dataset and
	// Tokenizer (rescore shares them across runs).
	Truth   *Truth
	Counter OSLCounter
	// Workers bounds the goroutines scoring one run (0: GOMAXPROCS); rescore sets
	// 1 and runs several runs at once instead.
	Workers int

	// Source, when set, is the run to score (already found in a source); Run then
	// only names it. Otherwise Run is opened with archive.OpenRun: a run folder, an
	// archive holding one run, or a run folder inside an archive
	// (sub.tgz/sys/model/r8).
	Source *archive.Run

	// MaxExpansion is as archive.Limits.MaxExpansion when Run names an archive (0:
	// 10x, negative: no limit).
	MaxExpansion float64

	// PublishedOnly judges a reference run or a submission point on its published
	// accuracy_results.json and result summary alone, without re-deriving them from
	// its event log (no dataset at hand).
	PublishedOnly bool

	// reuse, set by rescore, hands buffers and slices from one run to the next,
	// and keeps no per-turn scores (a rescore row holds totals only); nil scores
	// one run alone.
	reuse *recycler
}

// ScoreRun scores one run: inline accuracy against the dataset's ground truth, the
// OSL window, optionally a SWE-bench report, and the verdict under the ruleset. It
// is Evaluate without a fold: a run whose gates cannot be judged is an error. It
// writes nothing; WriteScores does.
func ScoreRun(ctx context.Context, opts Options) (*schemas.Scores, error) {
	run := opts.Source
	if run == nil {
		var err error
		if run, err = archive.OpenRun(opts.Run, archive.Limits{MaxExpansion: opts.MaxExpansion}); err != nil {
			return nil, fmt.Errorf("score run: %w", err)
		}
		defer run.Source.Close()
	}
	ev, err := Evaluate(ctx, run, EvalOptions{Dataset: opts.Dataset, Ruleset: opts.Ruleset, Tokenizer: opts.Tokenizer,
		SWEBench: opts.SWEBench, Truth: opts.Truth, Counter: opts.Counter, Workers: opts.Workers,
		PublishedOnly: opts.PublishedOnly, reuse: opts.reuse})
	if err != nil {
		return nil, err
	}
	if ev.ScoreErr != nil {
		return nil, ev.ScoreErr
	}
	return ev.Scores, nil
}

// judge scores a run read into rd (published: judged on its published
// figures, rd empty) and judges its gates.
func (j *judging) judge(ctx context.Context, rd *runData, published bool) (*schemas.Scores, error) {
	run, o, s, rs, truth, counter := j.run, j.o, j.s, j.rs, j.truth, j.counter
	osl, err := computeOSL(ctx, rd, counter, run, o.Workers, published)
	if err != nil {
		return nil, fmt.Errorf("score run %q: %w", run.Label, err)
	}
	if osl != nil {
		osl.Window = rs.OSLWindow
		s.OSL = osl
		if strings.HasPrefix(osl.Source, OSLSourceTokenizer) {
			osl.Tokenizer = CounterUse(&rs, counter)
			if osl.Tokenizer.StandIn {
				osl.Unofficial = true
				s.Warnings = append(s.Warnings, "token counts: "+osl.Tokenizer.Note)
			}
		}
	}
	s.Warnings = append(s.Warnings, rd.warnings...)
	s.Run.TurnLog = rd.log

	acc := scoreAccuracy(truth, rd.attempts, o.Workers, j.re, o.reuse == nil)
	s.Score, s.Turns, s.Domains, s.PerTurn, s.ExcludedTurns = acc.Score, acc.Turns, acc.Domains, acc.PerTurn, acc.Excluded
	s.AccuracySource = AccuracyFromEvents
	var pa PublishedAccuracy
	if runread.IsPoint(run) || published {
		if pa, err = ReadPublishedAccuracy(run); err != nil {
			s.Warnings = append(s.Warnings, err.Error())
		}
	}
	if runread.IsPoint(run) {
		s.Published = publishedFigures(run, pa)
		if pointRulesSkipped(j.info.Facts.FileChecks) {
			// The checker keeps such a point (_UnparsedPoint) but runs none of the
			// rules that read its config, agentic-osl-range among them.
			s.Published.OSL = nil
			s.Published.OSLProblem = &schemas.Problem{Severity: schemas.SeverityWarning, Reason: PointRulesSkippedReason}
		}
	}
	if published {
		s.AccuracySource = ""
		if pa.Inline != nil {
			s.Score, s.AccuracySource = *pa.Inline, AccuracyPublished
		}
		why := "the point ships no event log"
		if o.PublishedOnly {
			why = "no dataset to re-derive them from"
		}
		s.Warnings = append(s.Warnings, why+": inline accuracy and OSL are the published figures, not re-derived")
	} else if acc.Turns.Issued == 0 {
		s.Warnings = append(s.Warnings, "no issued turn of the run matches an expected turn of the dataset: is it the right dataset?")
	}

	if o.SWEBench != "" {
		res, warn, err := ReadSWEBenchReport(ctx, o.SWEBench, rs.SWEBenchEvaluated)
		if err != nil {
			return nil, fmt.Errorf("score run %q: %w", run.Label, err)
		}
		s.SWEBench = res
		s.Warnings = append(s.Warnings, warn...)
	}
	s.Verdict = Judge(rs, s)
	return s, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// rulesetModel is the model a run's ruleset is chosen by: a submission point's
// model folder name, as the submission checker matches it
// (get_agentic_targets(model_dir.name)), else the model the run names.
func rulesetModel(run *archive.Run, named string) string {
	if runread.IsPoint(run) && run.Model != "" {
		return run.Model
	}
	return named
}

// FileCheckPrefix begins the warning line of a submission checker finding on a
// point's point.yaml or system_desc.json (archive.FileCheck), as rescore's
// warnings carry it.
const FileCheckPrefix = "submission checker "

// ModelFolderWarningPrefix begins the warning of a submission point whose config
// names a model of another ruleset than its model folder's name.
const ModelFolderWarningPrefix = "the model folder is"

// modelFolderWarning reports a submission point whose config names a model of
// another ruleset than its folder's name.
func modelFolderWarning(run *archive.Run, named string) string {
	if !runread.IsPoint(run) || run.Model == "" || named == "" {
		return ""
	}
	byDir, okDir := rulesets.ForModel(run.Model)
	byName, okName := rulesets.ForModel(named)
	if okDir == okName && byDir.Name == byName.Name {
		return ""
	}
	return fmt.Sprintf("%s %q and the run's config names model %q (another ruleset): the ruleset is chosen by the folder's name, as the submission checker chooses it", ModelFolderWarningPrefix, run.Model, named)
}

// PointRulesSkippedReason is why a submission point whose point.yaml does not
// validate has no OSL gate: the submission checker's point-rules-skipped.
const PointRulesSkippedReason = "point-rules-skipped: point.yaml does not validate, so the submission checker runs none of the rules that read it for this point (its OSL range among them)"

// pointRulesSkipped tells whether a point's point.yaml does not validate (the
// checker's point-config-valid error): the checker then skips the point's rules.
func pointRulesSkipped(cs []archive.FileCheck) bool {
	for _, c := range cs {
		if c.Rule == "point-config-valid" && c.Severity == schemas.SeverityError {
			return true
		}
	}
	return false
}

// publishedFigures gathers a submission point's published gate inputs.
func publishedFigures(run *archive.Run, pa PublishedAccuracy) *schemas.PublishedFigures {
	pf := &schemas.PublishedFigures{AccuracyFile: pa.File, AccuracyProblem: pa.FileProblem, Inline: pa.Inline, InlineDataset: pa.InlineDataset,
		InlineProblem: pa.InlineProblem, SWEBench: pa.SWEBench, SWEBenchProblem: pa.SWEBenchProblem}
	so, _, err := ReadSummaryOSL(run)
	switch {
	case err != nil:
		pf.OSLProblem = &schemas.Problem{Severity: schemas.SeverityError, Reason: err.Error()}
	case so.Checker:
		v := so.Mean
		pf.OSL, pf.OSLFile = &v, run.SummaryName()
	default:
		pf.OSLProblem, pf.OSLFile = so.Problem, run.SummaryName()
	}
	return pf
}

// chooseRuleset resolves the ruleset option for a run's model.
func chooseRuleset(name, model string) (rulesets.Ruleset, []string, error) {
	if name == rulesets.Auto {
		rs, ok := rulesets.ForModel(model)
		if !ok {
			return rs, []string{fmt.Sprintf("no ruleset names model %q; using %s", model, rs.Name)}, nil
		}
		return rs, nil, nil
	}
	rs, err := rulesets.Load(name)
	if err != nil {
		return rs, nil, err
	}
	if model != "" && len(rs.ModelPatterns) > 0 && !rs.MatchesModel(model) {
		return rs, []string{fmt.Sprintf("ruleset %s is for %s, the run's model is %q", rs.Name, rs.Model, model)}, nil
	}
	return rs, nil, nil
}

// LoadTruth reads a dataset directory, or ingests a trace file into a temporary
// one, and builds its ground truth. Only the columns of messages.parquet that
// ground truth needs are read.
func LoadTruth(ctx context.Context, dataset string) (*Truth, error) {
	st, err := os.Stat(dataset)
	if err != nil {
		return nil, fmt.Errorf("load dataset: %w", err)
	}
	dir := dataset
	if !st.IsDir() {
		tmp, err := os.MkdirTemp("", "agentrace-score-*")
		if err != nil {
			return nil, fmt.Errorf("ingest %q: %w", dataset, err)
		}
		defer os.RemoveAll(tmp)
		dir = filepath.Join(tmp, "dataset")
		if _, err := ingest.Run(ctx, ingest.Options{Out: dir, Inputs: []string{dataset}}); err != nil {
			return nil, fmt.Errorf("ingest %q: %w", dataset, err)
		}
	}
	return readTruthDir(ctx, dir)
}

// OSL sources.
const (
	OSLSourceTokenizer = "tokenizer:" // followed by the tokenizer's name
	OSLSourceUsage     = "server_usage"
	OSLSourceSummary   = "result_summary"
)

// CounterUse is rs.TokenizerUse of the counter's tokenizer; a counter that
// cannot tell its identity (no Identity method) is a stand-in.
func CounterUse(rs *rulesets.Ruleset, counter any) *schemas.TokenizerUse {
	if c, ok := counter.(interface{ Identity() tokens.Identity }); ok {
		return rs.TokenizerUse(c.Identity())
	}
	name := "an unidentified counter"
	if c, ok := counter.(interface{ Name() string }); ok {
		name = c.Name()
	}
	return rs.TokenizerUse(tokens.Identity{Name: name, File: "no file"})
}

// computeOSL computes the per-turn OSL mean over every completed turn of the run,
// and fills each attempt's OSL. It returns nil when no count is available.
func computeOSL(ctx context.Context, rd *runData, counter OSLCounter, run *archive.Run, workers int, published bool) (*schemas.OSLResult, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	counts := make([]int32, len(rd.usage))
	res := &schemas.OSLResult{}
	switch {
	case counter != nil && !published:
		res.Source = OSLSourceTokenizer + counter.Name()
		p := pool.New().WithErrors().WithContext(ctx).WithMaxGoroutines(workers)
		const chunk = 256
		for start := 0; start < len(counts); start += chunk {
			end := min(start+chunk, len(counts))
			p.Go(func(ctx context.Context) error {
				for i := start; i < end; i++ {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					resp, err := rd.response(i)
					if err != nil {
						return fmt.Errorf("completed response %d: %w", i, err)
					}
					n, err := counter.CountOSL(resp)
					if err != nil {
						return fmt.Errorf("count output tokens of completed response %d: %w", i, err)
					}
					counts[i] = int32(n)
				}
				return nil
			})
		}
		if err := p.Wait(); err != nil {
			return nil, err
		}
	case rd.log == nil: // no turn log (an event log, or published figures only): no server token counts
		so, ok, err := ReadSummaryOSL(run)
		if err != nil {
			rd.warnings = append(rd.warnings, "no OSL: "+err.Error())
			return nil, nil
		}
		if !ok {
			rd.warnings = append(rd.warnings, "no OSL: a reference run needs the reference tokenizer (or a result summary with output_sequence_lengths_full_run.output_sequence_lengths.avg)")
			return nil, nil
		}
		n := so.N
		if n <= 0 {
			n = max(len(rd.completed), 1)
		}
		res.Source, res.Mean, res.Total, res.Turns, res.Field = OSLSourceSummary, so.Mean, so.Total, n, so.Field
		return res, nil
	default:
		res.Source, res.Unofficial = OSLSourceUsage, true
		copy(counts, rd.usage)
	}
	known := 0
	for _, c := range counts {
		if c >= 0 {
			res.Total += int64(c)
			known++
		}
	}
	if missing := len(counts) - known; missing > 0 {
		rd.warnings = append(rd.warnings, fmt.Sprintf("%d of %d completed turns have no server usage count; the OSL mean leaves them out", missing, len(counts)))
	}
	if known == 0 {
		if len(counts) > 0 {
			return nil, nil
		}
	} else {
		res.Mean = float64(res.Total) / float64(known)
	}
	res.Turns = known
	for i := range rd.attempts {
		if o := rd.attempts[i].Output; o != nil && o.completed > 0 {
			rd.attempts[i].OSL = counts[o.completed-1]
		}
	}
	return res, nil
}
