package schemas

import "strings"

// Scores is scores.json of a run directory. The inline-accuracy fields use the
// reference scorer's names (score, turns, domains, per_turn, excluded_turns); osl,
// swebench and verdict are agentrace's own sections.
type Scores struct {
	SchemaVersion string                 `json:"schema_version"`
	Score         float64                `json:"score"`
	Turns         TurnCounts             `json:"turns"`
	Domains       map[string]DomainScore `json:"domains"`
	PerTurn       []TurnScore            `json:"per_turn"`
	ExcludedTurns []ExcludedTurn         `json:"excluded_turns"`
	OSL           *OSLResult             `json:"osl,omitempty"`
	SWEBench      *SWEBenchResult        `json:"swebench,omitempty"`
	Verdict       Verdict                `json:"verdict"`
	// AccuracySource says where score comes from: "events" (re-derived from the
	// run's turn or event log) or "published" (a submission point's
	// accuracy_results.json, when it ships no event log).
	AccuracySource string `json:"accuracy_source,omitempty"`
	// Run identifies what was scored.
	Run RunIdentity `json:"run"`
	// Warnings are problems that did not stop scoring (a truncated turn log, a
	// model the ruleset does not name, ...).
	Warnings []string `json:"warnings,omitempty"`
	// Published is what a submission point's own files give the gates, read as
	// the submission checker reads them; the verdict judges these, and Score and
	// OSL (agentrace's re-derivation) stand beside them. Nil for other runs.
	Published *PublishedFigures `json:"published,omitempty"`
}

// ScoresVersion is the schema version of scores.json (Scores.SchemaVersion):
// version 3 added the gates' outcomes (value and pass null when not evaluated,
// severity, reason, source, rederived), the verdict's outcome and counts, and
// the published figures of a submission point; version 4 writes a per-turn osl
// that is not known as null (before, -1), in scores.json and scores.parquet.
const ScoresVersion = "4"

// PublishedFigures are the gate inputs a submission point publishes. A nil value
// is absent or malformed; its Problem says which, with the checker's severity.
type PublishedFigures struct {
	// AccuracyFile is the accuracy results file ("" when the point has none);
	// AccuracyProblem is set when it is absent or does not validate (the point
	// then carries no accuracy results).
	AccuracyFile    string   `json:"accuracy_file,omitempty"`
	AccuracyProblem *Problem `json:"accuracy_problem,omitempty"`
	// Inline is the inline entry's score (the entry of dataset_type
	// "performance", else an untyped entry named "performance"), a fraction.
	Inline        *float64 `json:"inline"`
	InlineDataset string   `json:"inline_dataset,omitempty"`
	InlineProblem *Problem `json:"inline_problem,omitempty"`
	// SWEBench is the swe_bench entry's score, a fraction.
	SWEBench        *float64 `json:"swebench"`
	SWEBenchProblem *Problem `json:"swebench_problem,omitempty"`
	// OSL is output_sequence_lengths_full_run.output_sequence_lengths.avg of the
	// result summary (OSLFile), never the windowed block.
	OSL        *float64 `json:"osl"`
	OSLFile    string   `json:"osl_file,omitempty"`
	OSLProblem *Problem `json:"osl_problem,omitempty"`
}

// Problem is why a published value was not used: its severity is the
// submission checker's (SeverityWarning or SeverityError).
type Problem struct {
	Severity string `json:"severity"`
	Reason   string `json:"reason"`
}

// RunIdentity names a scored run.
type RunIdentity struct {
	Path        string `json:"path"`
	Kind        string `json:"kind"` // "agentrace" (turns.arrows) or "reference" (events.jsonl)
	Model       string `json:"model,omitempty"`
	Concurrency int    `json:"concurrency,omitempty"`
	DatasetHash string `json:"dataset_hash,omitempty"`
	Ruleset     string `json:"ruleset"`
	// TurnLog identifies the turn log scored (an agentrace run), so that a reader
	// can tell a scores.json of another state of the run (one scored while it was
	// still going) from one of its log as it is.
	TurnLog *TurnLogIdentity `json:"turn_log,omitempty"`
}

// TurnLogIdentity identifies a turn log exactly: the complete rows read from it,
// and the size and SHA-256 of the whole file.
type TurnLogIdentity struct {
	Rows   int    `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// TurnCounts are the reference scorer's turn counts.
type TurnCounts struct {
	Issued   int `json:"issued"`
	Expected int `json:"expected"`
	Observed int `json:"observed"`
	Missing  int `json:"missing"`
	Scored   int `json:"scored"`
}

// DomainScore is the inline accuracy of one domain.
type DomainScore struct {
	Score  float64 `json:"score"`
	Scored int     `json:"scored"`
}

// TurnScore is one scored turn; it is also a row of scores.parquet. Its JSON form
// (MarshalJSON) is the reference scorer's per_turn row: conversation_id, repeat,
// turn (the expected assistant row's turn), domain, missing (only when true),
// gt_intents and model_intent (workflow) or gt_actions and model_actions (coding),
// and score; agentrace's own fields follow.
type TurnScore struct {
	ConversationID string `json:"conversation_id" parquet:"conversation_id,dict"`
	Repeat         int32  `json:"repeat" parquet:"repeat"`
	// Turn is the dataset turn of the expected assistant row (the reference's
	// "turn" in scores.json; the column expected_turn of scores.parquet, the name
	// every analysis table joins on); ClientTurn is the issued client row's turn
	// (the turn log's, client_turn in every table).
	Turn   int32  `json:"turn" parquet:"expected_turn"`
	Domain string `json:"domain" parquet:"domain,dict"`
	// Missing tells that the turn was issued but produced no output (scores 0).
	Missing bool `json:"missing,omitempty" parquet:"missing"`
	// Ground truth and the model's answer: intent codes for workflow turns
	// (ModelIntent nil when the output has none), bash actions for coding turns.
	GTIntents    []string `json:"gt_intents,omitempty" parquet:"gt_intents,list"`
	ModelIntent  *string  `json:"model_intent,omitempty" parquet:"model_intent,optional"`
	GTActions    []string `json:"gt_actions,omitempty" parquet:"gt_actions,list"`
	ModelActions []string `json:"model_actions,omitempty" parquet:"model_actions,list"`
	// Score is the turn's score rounded to 4 places (Python round).
	Score float64 `json:"score" parquet:"score"`

	SessionID  string `json:"session_id" parquet:"session_id"`
	ClientTurn int32  `json:"client_turn" parquet:"client_turn"`
	InWindow   bool   `json:"in_window" parquet:"in_window"`
	// OSL is the turn's output tokens (reference tokenizer, else server usage);
	// nil (null) when the turn did not complete or the count is unknown.
	OSL *int32 `json:"osl" parquet:"osl,optional"`
}

// ExcludedTurn is an expected turn of the dataset without ground truth, which is
// not scored (the reference's excluded_turns row).
type ExcludedTurn struct {
	ConversationID string `json:"conversation_id"`
	// Turn is the dataset turn of the expected assistant row.
	Turn   int32  `json:"turn"`
	Domain string `json:"domain"`
	Reason string `json:"exclude_reason"`
}

// OSLResult is the OSL-window gate's input: the per-turn mean over all completed
// turns of the run.
type OSLResult struct {
	Mean       float64 `json:"mean"`
	Turns      int     `json:"turns"`
	Total      int64   `json:"total"`
	Source     string  `json:"source"` // "tokenizer:<name>", "server_usage" or "result_summary"
	Unofficial bool    `json:"unofficial"`
	// Tokenizer is the tokenizer the counts were made with (source
	// tokenizer:<name>) and whether it is a stand-in; a stand-in's counts are
	// Unofficial.
	Tokenizer *TokenizerUse `json:"tokenizer,omitempty"`
	// Field is the published summary field the mean was read from (source
	// result_summary), "" otherwise.
	Field  string     `json:"field,omitempty"`
	Window [2]float64 `json:"window"`
}

// StandInLabel starts the note of counts made with a tokenizer other than the
// model's own.
const StandInLabel = "stand-in, not the model's tokenizer"

// NotComparableLabel marks numbers counted with another tokenizer (or another
// way: the server's usage counts) than the one the run recorded: they cannot be
// compared with the run's own.
const NotComparableLabel = "counted with another tokenizer, not comparable"

// TokenizerUse is the tokenizer token counts were made with and whether it is
// the model's own: the one whose tokenizer file and chat template digests the
// ruleset records for its model. Counts made with a stand-in are unofficial.
type TokenizerUse struct {
	// Name is the tokenizer's name (its config's name_or_path, else its folder's);
	// Spec what it was asked for (--tokenizer: a folder or a model id).
	Name string `json:"name"`
	Spec string `json:"spec,omitempty"`
	// File is the vocabulary file (tokenizer.json or tiktoken.model); the digests
	// are SHA-256 in hex of it and of the chat template's text.
	File            string `json:"file"`
	TokenizerSHA256 string `json:"tokenizer_sha256"`
	TemplateSHA256  string `json:"template_sha256"`
	// Ruleset and Model are the ruleset judged by and its model.
	Ruleset string `json:"ruleset"`
	Model   string `json:"model"`
	StandIn bool   `json:"stand_in"`
	// Note says it in words: StandInLabel and why, or that it is the model's.
	Note string `json:"note"`
}

// SWEBenchResult is a SWE-bench Verified harness report, validated.
type SWEBenchResult struct {
	Report     string  `json:"report"`
	Submitted  int     `json:"submitted"`
	Resolved   int     `json:"resolved"`
	Evaluated  int     `json:"evaluated"`
	Score      float64 `json:"score"`
	Incomplete bool    `json:"incomplete"`
}

// Outcomes of a gate and of a verdict. A gate is not evaluated when its input is
// absent or malformed: its value is then null (never 0), Reason says why and
// Severity is what the submission checker reports for it (SeverityWarning: the
// checker warns and does not fail the submission; SeverityError: it errors).
const (
	OutcomePass         = "pass"
	OutcomeFail         = "fail"
	OutcomeNotEvaluated = "not_evaluated"

	SeverityWarning = "warning"
	SeverityError   = "error"
)

// Gate is one accuracy gate of a verdict. Its JSON form writes value and pass as
// null when the gate was not evaluated.
type Gate struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	Threshold string  `json:"threshold"` // e.g. ">= 0.5586" or "[355, 434]"
	Pass      bool    `json:"pass"`
	// Outcome is OutcomePass, OutcomeFail or OutcomeNotEvaluated.
	Outcome string `json:"outcome"`
	// Severity and Reason are set when the gate was not evaluated.
	Severity string `json:"severity,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Source says where Value comes from: "published" (the upload's own file, as
	// the submission checker reads it), "events" (re-derived from the run's log),
	// "tokenizer:<name>", "server_usage" or "result_summary".
	Source string `json:"source,omitempty"`
	// Rederived is agentrace's own value, shown beside a published Value (or
	// beside a published value that is absent or malformed); it never decides the
	// gate.
	Rederived *float64 `json:"rederived,omitempty"`
	Note      string   `json:"note,omitempty"` // e.g. "unofficial: server usage counts"
	// Informational marks a gate shown with a run but judged elsewhere (a run's
	// SWE-bench result, one input to its curve's mean): it does not count in the
	// run's verdict.
	Informational bool `json:"informational,omitempty"`
}

// Evaluated tells whether the gate had an input to judge.
func (g Gate) Evaluated() bool { return g.Outcome != OutcomeNotEvaluated }

// Blocking tells whether the gate fails its verdict: it failed, or it was not
// evaluated with the checker's severity error.
func (g Gate) Blocking() bool {
	return g.Outcome == OutcomeFail || (g.Outcome == OutcomeNotEvaluated && g.Severity == SeverityError)
}

// OutcomeText is the gate's outcome for tables: "pass", "fail", or "not
// evaluated (warning)" / "not evaluated (error)".
func (g Gate) OutcomeText() string {
	switch g.Outcome {
	case OutcomePass:
		return "pass"
	case OutcomeNotEvaluated:
		return "not evaluated (" + g.Severity + ")"
	}
	return "fail"
}

// GateCounts counts a verdict's gates by outcome (informational gates apart).
type GateCounts struct {
	Pass         int `json:"pass"`
	Fail         int `json:"fail"`
	NotEvaluated int `json:"not_evaluated"`
}

// Verdict is the result of a run's gates under a ruleset. Outcome is OutcomeFail
// when a gate blocks (failed, or not evaluated with severity error),
// OutcomeNotEvaluated when none blocks but one was not evaluated, else
// OutcomePass; Pass is Outcome == OutcomePass.
type Verdict struct {
	Ruleset string     `json:"ruleset"`
	Gates   []Gate     `json:"gates"`
	Pass    bool       `json:"pass"`
	Outcome string     `json:"outcome"`
	Counts  GateCounts `json:"counts"`
}

// ReadOutcomes fills the outcomes of a verdict read from a scores.json older than
// ScoresVersion 3, which has none: a gate whose note begins "not evaluated" was
// not evaluated (a warning), the others passed or failed as Pass says; then
// Tally.
func (v *Verdict) ReadOutcomes() {
	if v.Outcome != "" {
		return
	}
	for i := range v.Gates {
		g := &v.Gates[i]
		if g.Outcome != "" {
			continue
		}
		switch {
		case strings.HasPrefix(g.Note, "not evaluated"):
			g.Outcome, g.Severity = OutcomeNotEvaluated, SeverityWarning
			g.Reason = strings.TrimPrefix(strings.TrimPrefix(g.Note, "not evaluated"), ": ")
		case g.Pass:
			g.Outcome = OutcomePass
		default:
			g.Outcome = OutcomeFail
		}
	}
	v.Tally()
}

// Tally fills the verdict's Outcome, Counts and Pass from its gates.
func (v *Verdict) Tally() {
	v.Counts = GateCounts{}
	blocked, open := false, false
	for _, g := range v.Gates {
		if g.Informational {
			continue
		}
		switch g.Outcome {
		case OutcomePass:
			v.Counts.Pass++
		case OutcomeFail:
			v.Counts.Fail++
		default:
			v.Counts.NotEvaluated++
			open = true
		}
		blocked = blocked || g.Blocking()
	}
	switch {
	case blocked:
		v.Outcome = OutcomeFail
	case open:
		v.Outcome = OutcomeNotEvaluated
	default:
		v.Outcome = OutcomePass
	}
	v.Pass = v.Outcome == OutcomePass
}

// RescoreRow is one row of rescore's results table: one archived run. A value that
// was not evaluated (the run could not be scored, no OSL count, no SWE-bench
// result) is null, never 0 or false; so is a text that says nothing (no error,
// no warnings, no curve or region): null in the table, never "".
type RescoreRow struct {
	Path            string   `parquet:"path" json:"path"`
	Kind            string   `parquet:"kind,dict" json:"kind"`
	Model           string   `parquet:"model,dict" json:"model"`
	Concurrency     int32    `parquet:"concurrency" json:"concurrency"`
	Ruleset         string   `parquet:"ruleset,dict" json:"ruleset"`
	Dataset         string   `parquet:"dataset" json:"dataset"`
	Score           *float64 `parquet:"score,optional" json:"score"`
	ScoredTurns     *int32   `parquet:"scored_turns,optional" json:"scored_turns"`
	AccuracyPass    *bool    `parquet:"accuracy_pass,optional" json:"accuracy_pass"`
	OSLMean         *float64 `parquet:"osl_mean,optional" json:"osl_mean"`
	OSLUnofficial   *bool    `parquet:"osl_unofficial,optional" json:"osl_unofficial"`
	OSLPass         *bool    `parquet:"osl_pass,optional" json:"osl_pass"`
	SWEBenchScore   *float64 `parquet:"swebench_score,optional" json:"swebench_score"`
	Pass            *bool    `parquet:"pass,optional" json:"pass"`
	Error           string   `parquet:"error,optional" json:"error"`
	DurationSeconds float64  `parquet:"duration_s" json:"duration_s"`
	// Agentrace additions: per-domain accuracy, the OSL source, SWE-bench
	// completeness and the warnings, joined with "; ".
	CodingScore        *float64 `parquet:"coding_score,optional" json:"coding_score"`
	WorkflowScore      *float64 `parquet:"workflow_score,optional" json:"workflow_score"`
	OSLSource          string   `parquet:"osl_source,dict,optional" json:"osl_source"`
	SWEBenchIncomplete *bool    `parquet:"swebench_incomplete,optional" json:"swebench_incomplete"`
	SWEBenchPass       *bool    `parquet:"swebench_pass,optional" json:"swebench_pass"`
	Warnings           string   `parquet:"warnings,optional" json:"warnings"`
	// Submission points: the curve folder (<system>/<model>), the point's region
	// (by the ruleset's region form), the accuracy source ("events": re-derived,
	// "published": the point's accuracy_results.json) and the published inline
	// accuracy, for comparison.
	Curve             string   `parquet:"curve,dict,optional" json:"curve"`
	Region            string   `parquet:"region,dict,optional" json:"region"`
	AccuracySource    string   `parquet:"accuracy_source,dict,optional" json:"accuracy_source"`
	PublishedAccuracy *float64 `parquet:"published_accuracy,optional" json:"published_accuracy"`
	// The gates' outcomes (pass, fail, not_evaluated), the verdict's, and for each
	// gate not evaluated "gate (severity): reason", joined with "; ". A submission
	// point is judged on its published figures, as the submission checker judges
	// it; agentrace's re-derived inline accuracy and OSL mean are beside them.
	AccuracyOutcome   string   `parquet:"accuracy_outcome,dict" json:"accuracy_outcome"`
	OSLOutcome        string   `parquet:"osl_outcome,dict" json:"osl_outcome"`
	Outcome           string   `parquet:"outcome,dict" json:"outcome"`
	NotEvaluated      string   `parquet:"not_evaluated,optional" json:"not_evaluated"`
	RederivedAccuracy *float64 `parquet:"rederived_accuracy,optional" json:"rederived_accuracy"`
	RederivedOSLMean  *float64 `parquet:"rederived_osl_mean,optional" json:"rederived_osl_mean"`
	// CheckerFindings are the submission checker's errors and warnings that
	// concern a submission point on disk (its own, its curve's, system's and
	// tree's), a JSON array of {rule, severity, level, scope, point, path,
	// reason}; null where the run is not judged (an archive, a reference or
	// agentrace run).
	CheckerFindings string `parquet:"checker_findings,optional" json:"checker_findings"`
}
