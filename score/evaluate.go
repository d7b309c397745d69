package score

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/agentrace/agentrace/score/runread"
	"github.com/agentrace/agentrace/tokens"
	"github.com/apache/arrow-go/v18/arrow"
)

// Basis is what a run's gates were judged on (Evaluation.Basis).
type Basis string

// Bases of an evaluation.
const (
	// BasisNone: the gates were not judged (Evaluation.BasisWhy says why).
	BasisNone Basis = ""
	// BasisEvents: scored from the run's log (its turn log or event log) against
	// the dataset's ground truth.
	BasisEvents Basis = AccuracyFromEvents
	// BasisRecorded: an agentrace run's own scores.json, which scored its turn
	// log as it is now.
	BasisRecorded Basis = "recorded"
	// BasisPublished: a reference run or submission point judged on its published
	// accuracy_results.json and result summary, as the submission checker judges
	// it, nothing re-derived.
	BasisPublished Basis = AccuracyPublished
)

// EvalOptions configure Evaluate.
type EvalOptions struct {
	// Dataset is a dataset directory or a trace file; "" takes the dataset the run
	// names. A dataset given here must be read: the published figures never stand
	// in for it.
	Dataset string
	// Ruleset is an embedded ruleset's name, a ruleset file, rulesets.Auto, or ""
	// for rulesets.Default.
	Ruleset string
	// Tokenizer is the reference tokenizer's folder for the OSL counts; without
	// one, the server's usage counts are used and the OSL gate is unofficial.
	Tokenizer string
	// SWEBench is a SWE-bench harness report to judge with the run, "" for none.
	SWEBench string
	// Truth and Counter, when set, are used instead of loading Dataset and
	// Tokenizer (shared across runs).
	Truth   *Truth
	Counter OSLCounter
	// TruthOf loads a dataset's ground truth (nil: LoadTruth); rescore shares
	// each dataset's across the runs naming it.
	TruthOf func(ctx context.Context, dataset string) (*Truth, error)
	// Workers bounds the goroutines scoring the run (0: GOMAXPROCS).
	Workers int

	// PublishedOnly judges a reference run or a submission point on its
	// published figures alone, without re-deriving them from its log.
	PublishedOnly bool
	// OrPublished judges a reference run or a submission point on its published
	// figures when no dataset is at hand (it names none, or the one it names
	// cannot be read), instead of failing.
	OrPublished bool
	// Recorded judges an agentrace run by its own scores.json when that scored
	// the turn log as it is now; one of another state of the log is never used
	// (the run is scored again, BasisWhy saying so), and a run with none is not
	// judged.
	Recorded bool

	// Info, when set, is what the run says about itself as the caller read it
	// (runread.ReadInfo: to build its fold, or to name the run) and is not read
	// again; nil: Evaluate reads it.
	Info *runread.Info

	// Fold, when set, is given every turn record of the run as its log is read
	// (the same pass that scores it; runread.ScanOptions.Records); the record is
	// reused after the call. Prompt counts an event log's prompts for it
	// (runread.ScanOptions.Prompt).
	Fold   func(*schemas.TurnRecord, runread.TurnExtra) error
	Prompt func(promptData json.RawMessage) (isl int, ok bool)
	// Batches, when set, is given each batch of a turn log as it is read, before
	// Fold gets its rows (runread.ScanOptions.Batches).
	Batches func(arrow.RecordBatch) error

	// reuse, set by rescore, hands buffers and slices from one run to the next,
	// and keeps no per-turn scores (a rescore row holds totals only); nil
	// evaluates one run alone.
	reuse *recycler
}

// Evaluation is one run evaluated: its facts, its log read once (feeding the
// caller's fold and the scorer) and its gates judged on one basis.
type Evaluation struct {
	// Info is what the run says about itself (its facts, read once).
	Info runread.Info
	// Scan says what the pass over the run's log read: the file, a log cut short,
	// the turn log's identity, lines skipped, the performance window. Zero when
	// the log was not read (no fold, and nothing to score from it).
	Scan runread.TurnScan
	// Scores are the run's scores as judged (nil when not judged: Basis is
	// BasisNone).
	Scores *schemas.Scores
	// Basis is what the gates were judged on, and BasisWhy why that basis.
	Basis    Basis
	BasisWhy string
	// ScoreErr is why the gates could not be judged (Scores nil): no dataset, a
	// dataset of another run, a tokenizer that failed. The log was read whole,
	// and the fold given every record.
	ScoreErr error
}

// Evaluate evaluates one run of any kind (a replay run, a reference run folder,
// a submission point, in a folder or an archive): its facts are read once, its
// log is read once, feeding o.Fold and the scorer in the same pass, and one
// policy decides what its gates are judged on, saying which in Basis and why in
// BasisWhy:
//
//   - BasisRecorded: with o.Recorded, an agentrace run whose scores.json scored
//     its turn log as it is now (runlog.CheckScored) keeps those scores. One of
//     another state of the log is never used: the run is scored again from the
//     log read. A run without one is not judged (BasisNone).
//   - BasisPublished: a reference run or a submission point is judged on its
//     published accuracy_results.json and result summary when it ships no event
//     log, with o.PublishedOnly, and with o.OrPublished when no dataset is at
//     hand (it names none, or the one it names cannot be read). Its log, if
//     any, is still read for the fold.
//   - BasisEvents: otherwise the run is scored from its log against the
//     dataset's ground truth: inline accuracy, the OSL window, optionally a
//     SWE-bench report, and the verdict under the ruleset.
//
// The error says that the run or its log could not be read; a run read whole
// whose gates could not be judged has ScoreErr. Evaluate writes nothing.
func Evaluate(ctx context.Context, run *archive.Run, o EvalOptions) (*Evaluation, error) {
	if run.Err != nil {
		return nil, fmt.Errorf("score run %q: %w", run.Label, run.Err)
	}
	var info runread.Info
	if o.Info != nil {
		info = *o.Info
	} else {
		var err error
		if info, err = runread.ReadInfo(run); err != nil {
			return nil, fmt.Errorf("score run %q: %w", run.Label, err)
		}
	}
	ev := &Evaluation{Info: info}
	j := &judging{run: run, info: info, o: o, re: o.reuse}
	if j.re == nil {
		j.re = &recycler{}
	}

	// The policy, before the log is read: what the log is read for.
	var recorded *schemas.Scores
	var err error
	switch {
	case runread.HasTurnLog(run) && o.Recorded && !run.Has(schemas.ScoresFile):
		ev.BasisWhy = "the run has no scores.json"
	case runread.HasTurnLog(run) && o.Recorded:
		// Kept only when it scored the log read below.
		if recorded, err = readScores(run); err != nil {
			return nil, err
		}
		ev.Basis = BasisRecorded
	case runread.HasTurnLog(run):
		ev.Basis, ev.ScoreErr = BasisEvents, j.prepare(ctx)
	case o.PublishedOnly:
		ev.Basis, ev.BasisWhy = BasisPublished, "no dataset to re-derive them from"
	case !hasEventLog(run):
		ev.Basis, ev.BasisWhy = BasisPublished, "the point ships no event log"
	default:
		ev.Basis, ev.ScoreErr = BasisEvents, j.prepare(ctx)
		if ev.ScoreErr != nil && o.OrPublished && o.Dataset == "" && j.noDataset {
			ev.Basis, ev.BasisWhy, ev.ScoreErr = BasisPublished, "no dataset to re-derive them from: "+ev.ScoreErr.Error(), nil
			j.o.PublishedOnly, j.prepared = true, false
		}
	}
	if ev.ScoreErr != nil {
		ev.Basis = BasisNone
	}

	// One pass over the log, for the fold and the scorer.
	so := runread.ScanOptions{Records: o.Fold, Prompt: o.Prompt, Batches: o.Batches, Manifest: info.Facts.Manifest, Allocator: j.re.allocator()}
	var rows *runread.TurnLogRows
	var ref *refEvents
	clone := j.counterWanted()
	switch {
	case ev.Basis == BasisNone || ev.Basis == BasisPublished:
	case runread.HasTurnLog(run):
		// Responses are rebuilt (cloned out of the log) only for a tokenizer.
		rows = runread.NewTurnLogRows(clone, take[runread.TurnLogRow](&j.re.rows, 0))
		so.Batches = rows.Add
		if o.Batches != nil {
			so.Batches = func(b arrow.RecordBatch) error {
				if err := o.Batches(b); err != nil {
					return err
				}
				return rows.Add(b)
			}
		}
	default:
		ref = newRefEvents(j.truth)
		so.Events = ref.handle
	}
	if so.Records != nil || so.Batches != nil || so.Events != nil {
		ev.Scan, err = runread.Scan(ctx, run, so)
		if rows != nil {
			defer func() { rows.Release(); give(&j.re.rows, rows.Rows) }()
		}
		if err != nil && !(errors.Is(err, runread.ErrNoTurns) && runread.IsPoint(run)) {
			if errors.Is(err, runlog.ErrDisagree) {
				return nil, fmt.Errorf("score run %q: %w; it cannot be scored as it is (replay it again)", run.Label, err)
			}
			return nil, fmt.Errorf("score run %q: %w", run.Label, err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}

	// The policy, after the log is read: a recorded score of another state of
	// the log is never used.
	if recorded != nil {
		serr := runlog.CheckScored(recorded.Run.TurnLog, *ev.Scan.Log)
		if serr == nil {
			ev.Scores, ev.BasisWhy = recorded, "its scores.json scored the turn log as it is"
			return ev, nil
		}
		ev.Basis, ev.BasisWhy = BasisEvents, fmt.Sprintf("%s: %v: scored again here instead (not written)", run.FileLabel(schemas.ScoresFile), serr)
		if ev.ScoreErr = j.prepare(ctx); ev.ScoreErr != nil {
			ev.ScoreErr = fmt.Errorf("run %q: %s: %w; scoring it again here failed: %v", run.Label, run.FileLabel(schemas.ScoresFile), serr, ev.ScoreErr)
			ev.Basis = BasisNone
			return ev, nil
		}
	}
	if ev.Basis == BasisNone {
		return ev, nil
	}
	var rd *runData
	switch {
	case ev.Basis == BasisPublished:
		if err := j.prepare(ctx); err != nil {
			ev.Basis, ev.ScoreErr = BasisNone, err
			return ev, nil
		}
		rd = &runData{}
	case rows != nil:
		if rd, err = agentraceRunData(run, rows.Rows, ev.Scan, j.re, clone); err != nil {
			ev.Basis, ev.ScoreErr = BasisNone, fmt.Errorf("score run %q: %w", run.Label, err)
			return ev, nil
		}
		defer rd.release()
	default:
		rd = ref.finish(ev.Scan).runData(ev.Scan.File)
	}
	if ev.BasisWhy == "" {
		ev.BasisWhy = "scored from " + ev.Scan.File
	}
	if ev.Scores, err = j.judge(ctx, rd, ev.Basis == BasisPublished); err != nil {
		ev.Basis, ev.ScoreErr, ev.Scores = BasisNone, err, nil
	}
	return ev, nil
}

// hasEventLog tells whether a run ships an event log.
func hasEventLog(run *archive.Run) bool {
	n, _ := run.EventsName()
	return n != ""
}

// readScores reads a run's scores.json.
func readScores(run *archive.Run) (*schemas.Scores, error) {
	data, err := run.ReadFile(schemas.ScoresFile)
	if err != nil {
		return nil, fmt.Errorf("read scores of run %q: %w", run.Label, err)
	}
	var s schemas.Scores
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("parse %s: %w", run.FileLabel(schemas.ScoresFile), err)
	}
	s.Verdict.ReadOutcomes()
	return &s, nil
}

// judging is what judging a run's gates takes: its ruleset, ground truth and
// token counter, ready before its log is read.
type judging struct {
	run     *archive.Run
	info    runread.Info
	o       EvalOptions
	re      *recycler
	s       *schemas.Scores
	rs      rulesets.Ruleset
	truth   *Truth
	counter OSLCounter
	// prepared: prepare ran (err its outcome); noDataset: it failed for want
	// of a dataset.
	prepared  bool
	err       error
	noDataset bool
}

// counterWanted tells whether a token counter will count the run's outputs.
func (j *judging) counterWanted() bool { return j.o.Counter != nil || j.o.Tokenizer != "" }

// prepare chooses the ruleset, loads the ground truth (unless the run is
// judged on its published figures) and the token counter, and starts the
// scores with the warnings of the run's facts. It runs once.
func (j *judging) prepare(ctx context.Context) error {
	if j.prepared {
		return j.err
	}
	j.prepared = true
	j.err = j.prepareOnce(ctx)
	return j.err
}

func (j *judging) prepareOnce(ctx context.Context) error {
	run, info, o := j.run, j.info, j.o
	s := &schemas.Scores{SchemaVersion: schemas.ScoresVersion}
	s.Run = schemas.RunIdentity{Path: run.Label, Kind: info.Kind, Model: info.Model, Concurrency: info.Concurrency}
	if info.Facts.Manifest != nil && info.State != "" && info.State != schemas.RunComplete {
		s.Warnings = append(s.Warnings, fmt.Sprintf("the run's state is %q, not complete: turns it never issued (not_issued) are not counted", info.State))
	}
	rs, warn, err := chooseRuleset(o.Ruleset, rulesetModel(run, info.Model))
	if err != nil {
		return err
	}
	s.Warnings = append(s.Warnings, warn...)
	if w := modelFolderWarning(run, info.Model); w != "" {
		s.Warnings = append(s.Warnings, w)
	}
	s.Run.Ruleset = rs.Name

	truth := o.Truth
	published := !runread.HasTurnLog(run) && (o.PublishedOnly || !hasEventLog(run))
	if truth == nil && published {
		truth = &Truth{}
	}
	if truth == nil {
		ds := o.Dataset
		if ds == "" {
			ds = info.Dataset
		}
		if ds == "" {
			j.noDataset = true
			return notice.Errorf("dataset", "score run %q: the run names no dataset: give the dataset it was replayed from", run.Label)
		}
		load := o.TruthOf
		if load == nil {
			load = LoadTruth
		}
		if truth, err = load(ctx, ds); err != nil {
			j.noDataset = true
			return fmt.Errorf("score run %q: %w", run.Label, err)
		}
	}
	s.Run.DatasetHash = truth.Hash
	if info.DatasetHash != "" && truth.Hash != "" && info.DatasetHash != truth.Hash {
		return fmt.Errorf("score run %q: it was replayed from dataset %s, the ground truth given is dataset %s",
			run.Label, short(info.DatasetHash), short(truth.Hash))
	}
	counter := o.Counter
	if counter == nil && o.Tokenizer != "" {
		tok, err := tokens.Load(ctx, o.Tokenizer)
		if err != nil {
			return fmt.Errorf("score run %q: %w", run.Label, err)
		}
		counter = tok
	}
	s.Warnings = append(s.Warnings, info.Facts.Warnings...)
	for _, c := range info.Facts.FileChecks {
		s.Warnings = append(s.Warnings, FileCheckPrefix+c.String())
	}
	j.s, j.rs, j.truth, j.counter = s, rs, truth, counter
	return nil
}
