package audit

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Row statuses.
const (
	Agree        = "agree"
	Disagree     = "disagree"
	Follows      = "follows"
	Unchecked    = "unchecked"
	NotPublished = "not_published"
	// Finding is a rule of the submission checker that makes an error or warning
	// finding (Rule, Severity, Level, Point, Note): a finding, not a disagreeing
	// number, so it does not fail the audit.
	Finding = "finding"
	// Error marks a run or file that could not be read: the audit fails.
	Error = "error"
)

// Tolerance is the rules' relative tolerance when a checker re-derives a stored
// metric (1%).
const Tolerance = 0.01

// Row is one published field of one point or curve, with both values. A field
// the row does not have ("" or a zero concurrency) is null in audit.json and
// audit.parquet (written one row per call: internal/outguard.WriteParquet).
type Row struct {
	// Source is the input the row comes from (a folder or an archive), Curve its
	// curve (<system>/<model>, or the folder holding the runs), Run the run's label
	// ("" for a curve's rows), Kind the run's kind.
	Source      string `json:"source" parquet:"source,dict"`
	Curve       string `json:"curve" parquet:"curve,dict"`
	Run         string `json:"run" parquet:"run,dict,optional"`
	Kind        string `json:"kind" parquet:"kind,dict,optional"`
	Concurrency int32  `json:"concurrency" parquet:"concurrency,optional"`
	// Field names the figure: a path in the published file
	// ("ttft.percentiles.90.0", "accuracy.performance.score",
	// "sweep_summary.system_tps", "point.region", "curve.verdict").
	Field string `json:"field" parquet:"field,dict"`
	// File is the published file the value was read from (relative to the run or
	// curve folder), "" when nothing was published.
	File string `json:"file" parquet:"file,dict,optional"`
	// Published and Recomputed are the two numbers (null when absent); texts
	// (regions, verdicts) are in PublishedText and RecomputedText.
	Published      *float64 `json:"published" parquet:"published,optional"`
	Recomputed     *float64 `json:"recomputed" parquet:"recomputed,optional"`
	PublishedText  string   `json:"published_text" parquet:"published_text,optional"`
	RecomputedText string   `json:"recomputed_text" parquet:"recomputed_text,optional"`
	// RelDiff is |published - recomputed| / max(|published|, |recomputed|), null
	// when either is absent; Tolerance the relative difference allowed (0: equal).
	RelDiff   *float64 `json:"rel_diff" parquet:"rel_diff,optional"`
	Tolerance float64  `json:"tolerance" parquet:"tolerance"`
	Status    string   `json:"status" parquet:"status,dict"`
	// Note says why a row is unchecked, which input a following row follows, or
	// where a derived published figure comes from.
	Note string `json:"note" parquet:"note,optional"`
	// Rule, Severity, Level and Point are a submission checker finding's rule id,
	// severity (error, warning), level (tree, system, curve, point, file) and
	// point folder (r<N>, "" for a curve's or tree's); Note is its reason.
	Rule     string `json:"rule" parquet:"rule,dict,optional"`
	Severity string `json:"severity" parquet:"severity,dict,optional"`
	Level    string `json:"level" parquet:"level,dict,optional"`
	Point    string `json:"point" parquet:"point,dict,optional"`
	// DerivedFrom lists the published fields a derived figure is computed from.
	DerivedFrom []string `json:"derived_from" parquet:"-"`
}

// MarshalJSON writes the row as audit.json holds it: every key in every row, a
// value the row does not have (a curve's run, kind and concurrency, a text or
// note it lacks, a finding's fields on a figure's row) as null. audit.parquet's
// optional columns hold the same nulls.
func (r Row) MarshalJSON() ([]byte, error) {
	type plain Row // Row's fields and tags, without this method
	text := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	var c *int32
	if r.Concurrency != 0 {
		c = &r.Concurrency
	}
	return json.Marshal(struct {
		plain
		Run            *string `json:"run"`
		Kind           *string `json:"kind"`
		Concurrency    *int32  `json:"concurrency"`
		File           *string `json:"file"`
		PublishedText  *string `json:"published_text"`
		RecomputedText *string `json:"recomputed_text"`
		Note           *string `json:"note"`
		Rule           *string `json:"rule"`
		Severity       *string `json:"severity"`
		Level          *string `json:"level"`
		Point          *string `json:"point"`
	}{plain(r), text(r.Run), text(r.Kind), c, text(r.File), text(r.PublishedText), text(r.RecomputedText),
		text(r.Note), text(r.Rule), text(r.Severity), text(r.Level), text(r.Point)})
}

func fp(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

// judge sets the row's status from its values.
func (r *Row) judge() {
	switch {
	case r.Status != "":
		return
	case r.Published == nil && r.Recomputed == nil:
		r.Status = Agree // neither has it: both absent, as the reference writes null
		if r.File == "" {
			r.Status = NotPublished
		}
	case r.Published == nil:
		r.Status = NotPublished
	case r.Recomputed == nil:
		r.Status = Disagree
		if r.Note == "" {
			r.Note = "published, but the events give no such value"
		}
	default:
		d := relDiff(*r.Published, *r.Recomputed)
		r.RelDiff = &d
		if d <= r.Tolerance {
			r.Status = Agree
		} else {
			r.Status = Disagree
		}
	}
}

// Failed tells whether the row fails the audit.
func (r Row) Failed() bool { return r.Status == Disagree || r.Status == Error }

func fmtVal(p *float64, text string) string {
	if text != "" {
		return text
	}
	if p == nil {
		return "-"
	}
	v := *p
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatInt(int64(v), 10)
	case math.Abs(v) >= 1e6 || math.Abs(v) < 1e-3:
		return strconv.FormatFloat(v, 'g', 7, 64)
	default:
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
}

func (r Row) diffText() string {
	if r.RelDiff == nil {
		return ""
	}
	return fmt.Sprintf("%.3g%%", 100**r.RelDiff)
}
