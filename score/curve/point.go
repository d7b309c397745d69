package curve

import (
	"encoding/json"

	"github.com/agentrace/agentrace/internal/official"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/checker"
	"github.com/agentrace/agentrace/score/runread"
)

// Point is one evaluated measurement point of the curve: one run at one
// concurrency, its measured figures (metrics.Point) with what the evaluation
// found of its scores, files and published figures (Judgement), and what the
// curve's rules read of the run. It is not a file format: report writes
// points.json from it.
type Point struct {
	System      string
	RunDir      string
	Concurrency int
	// Region is the §5.5 region of Concurrency ("" outside every region: null in
	// points.json and points.parquet).
	Region string

	metrics.Point

	Judgement

	// PublishedSummary is a reference run's or submission point's published result
	// summary, as read (nil for agentrace runs).
	PublishedSummary json.RawMessage

	// Manifest is the run's manifest (settings, dataset hash).
	Manifest schemas.RunManifest
	// conditions are the official settings as the run's files record them.
	conditions official.Conditions
	// point: the run is a submission tree's point (runread.IsPoint), whose
	// published files the checker's point rules read. eventLog: its turns come
	// from an event log, not agentrace's turn log (runread.HasTurnLog), so its
	// state is a result summary's, when it publishes one.
	point, eventLog bool
	// checkerJudged is set when the submission checker judged the point.
	checkerJudged bool
	// source is the run the point was read from (its turn log feeds the report's
	// turns.parquet) and datasetDir its dataset folder, "" when unknown;
	// systemDesc is a submission point's own system_desc.json as the curve's
	// C_max reads it (archive.CurveCMax).
	source     *archive.Run
	systemDesc *archive.SystemDescCopy
	datasetDir string

	// ServerTelemetry is what the server's scraped metrics said over the window
	// (server-reported, not a rules metric; its fields null without them).
	ServerTelemetry

	// ScoresNote says the run's scores.json was stale (another state of its turn
	// log) and the run was scored again on the spot, "" otherwise.
	ScoresNote string

	scores *schemas.Scores
	// evaluation is how the run was evaluated (score.Evaluate), nil when its
	// gates were not judged.
	evaluation *score.Evaluation
	// log identifies the turn log the point was folded from (an agentrace run).
	log *schemas.TurnLogIdentity
}

// Judgement is what evaluating a point found beyond its measured figures: its
// accuracy gates, what its files declare, the submission checker's findings, and
// the published figures it stands on. Its JSON fields are part of points.json.
type Judgement struct {
	// Gates are the accuracy gates of scores.json when present.
	// GatesPass is null when the point was not scored or its verdict is "not
	// evaluated" (GatesOutcome); GateCounts counts the gates by outcome.
	Gates        []schemas.Gate `json:"gates,omitempty"`
	GatesPass    *bool          `json:"gates_pass,omitempty"`
	GatesOutcome string         `json:"gates_outcome,omitempty"`
	// GatesBasis is what the gates were judged on (score.Basis: the run's log,
	// its own scores.json, or its published figures) and GatesBasisNote why;
	// empty when they were not judged.
	GatesBasis     string              `json:"gates_basis,omitempty"`
	GatesBasisNote string              `json:"gates_basis_note,omitempty"`
	GateCounts     *schemas.GateCounts `json:"gate_counts,omitempty"`
	Ruleset        string              `json:"ruleset,omitempty"`

	// Kind is the run's kind (agentrace, reference, submission).
	Kind string `json:"kind,omitempty"`
	// DeclaredRegion, MaxSupportedConcurrency, LoadPattern and DatasetName are what
	// a submission point's point.yaml (and system_desc.json) declare.
	DeclaredRegion          string `json:"declared_region,omitempty"`
	MaxSupportedConcurrency int    `json:"max_supported_concurrency,omitempty"`
	LoadPattern             string `json:"load_pattern,omitempty"`
	DatasetName             string `json:"dataset_name,omitempty"`
	// MissingFiles lists the files a submission point lacks that the checker
	// requires (point.yaml, a result summary): measurement-points-present and
	// result-summary-present.
	MissingFiles []string `json:"missing_files,omitempty"`
	// FileChecks are the submission checker's findings on a submission point's
	// point.yaml and system_desc.json (malformed, out-of-range or inconsistent
	// values), each with the checker's rule id and severity.
	FileChecks []archive.FileCheck `json:"file_checks,omitempty"`
	// CheckerFindings are the submission checker's errors and warnings that
	// concern a submission point, in a folder or an archive (its own, its curve's, system's and
	// tree's: rule, severity, level, scope, point, path, reason), judged as the
	// checker judges the tree (score/checker); null where the point was not judged.
	CheckerFindings []checker.Finding `json:"checker_findings,omitempty"`
	// CheckerNotEvaluated are the structure rules not evaluated because only a
	// system folder, not a whole submission, was given.
	CheckerNotEvaluated []string `json:"checker_not_evaluated,omitempty"`
	// SWEBench is the point's SWE-bench result (its scores.json, or a submission's
	// published accuracy results), one input to the curve's mean; nil when none.
	SWEBench *float64 `json:"swebench,omitempty"`
	// SWEBenchProblem says why a submission point's published swe_bench entry was
	// not used, with the checker's severity (an error fails the curve's gate).
	SWEBenchProblem *schemas.Problem `json:"swebench_problem,omitempty"`

	// AsPublished lists the metrics taken from the point's published result
	// summary because nothing re-derived them (no token counts: give --tokenizer);
	// PublishedDiffers holds the published value of each metric re-derived more
	// than 1% away from it (the re-derived value is the one shown).
	AsPublished      []string           `json:"as_published,omitempty"`
	PublishedDiffers map[string]float64 `json:"published_differs,omitempty"`
}

// NewPoint is the evaluated point of a run's folded figures (m the run's manifest),
// before any of its files, scores or checks are read: a point of records alone.
func NewPoint(m schemas.RunManifest, mp *metrics.Point) *Point {
	return &Point{
		Concurrency: m.Config.Concurrency,
		Point:       *mp,
		Manifest:    m,
		conditions:  runread.Conditions(archive.Facts{Manifest: &m}, 0),
	}
}

// Speedup is the simulated server's speed-up of a point's run, 0 when the run
// was not against it (or ran at the modelled speed).
func (p *Point) Speedup() float64 {
	if sp := p.Manifest.SimSpeedup; sp > 0 && sp != 1 {
		return sp
	}
	return 0
}

// ModelledRate is a rate of the point's run (tokens/s, turns/s) on the modelled
// hardware's clock: the run's own divided by the simulated server's speed-up.
func (p *Point) ModelledRate(v metrics.Num) metrics.Num {
	if sp := p.Speedup(); sp > 0 {
		return v / metrics.Num(sp)
	}
	return v
}

// ModelledTime is a time of the point's run on the modelled hardware's clock.
func (p *Point) ModelledTime(v metrics.Num) metrics.Num {
	if sp := p.Speedup(); sp > 0 {
		return v * metrics.Num(sp)
	}
	return v
}

// DatasetDir is the folder of the dataset the point's run replayed, "" when
// unknown.
func (p *Point) DatasetDir() string { return p.datasetDir }
