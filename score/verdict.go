package score

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/rulesets"
)

// Gate names of a verdict.
const (
	GateAccuracy = "inline_accuracy"
	GateOSL      = "osl_window"
	GateSWEBench = "swebench"
)

// Judge applies a ruleset's gates to a run's scores: inline accuracy, the OSL
// window and, when a report was given, SWE-bench. Each gate passes, fails or is
// not evaluated (no input: a null value, a reason and the submission checker's
// severity). A submission point is judged on its published figures
// (s.Published), as the checker judges it, with agentrace's re-derived values
// beside them; other runs on what agentrace derives (OSL unofficial with server
// usage counts).
func Judge(rs rulesets.Ruleset, s *schemas.Scores) schemas.Verdict {
	v := schemas.Verdict{Ruleset: rs.Name}
	if s.Published != nil {
		v.Gates = append(v.Gates, judgePublished(rs, s)...)
	} else {
		v.Gates = append(v.Gates, judgeAccuracy(rs, s), judgeOSL(rs, s))
	}
	if s.SWEBench != nil {
		// SWE-bench is judged per curve, on the mean of one result per mandatory
		// region (SWEBenchMeanOfN): a single run's result is one input to that mean
		// and never fails the run's own verdict.
		g := schemas.Gate{Name: GateSWEBench, Value: s.SWEBench.Score, Threshold: rs.SWEBenchThreshold(),
			Informational: true, Source: "swebench_report",
			Note: "one input to the curve's mean of 4 region results (judged by report), not this run's verdict"}
		decide(&g, rs.SWEBenchPass(s.SWEBench.Score))
		if s.SWEBench.Incomplete {
			g.Note += fmt.Sprintf("; incomplete: %d of %d submitted", s.SWEBench.Submitted, s.SWEBench.Evaluated)
		}
		v.Gates = append(v.Gates, g)
	}
	v.Tally()
	return v
}

// decide sets an evaluated gate's outcome.
func decide(g *schemas.Gate, pass bool) {
	g.Pass = pass
	g.Outcome = schemas.OutcomeFail
	if pass {
		g.Outcome = schemas.OutcomePass
	}
}

// notEvaluated marks a gate without an input.
func notEvaluated(g *schemas.Gate, severity, reason string) {
	g.Value, g.Pass, g.Outcome, g.Severity, g.Reason = 0, false, schemas.OutcomeNotEvaluated, severity, reason
}

func judgeAccuracy(rs rulesets.Ruleset, s *schemas.Scores) schemas.Gate {
	g := schemas.Gate{Name: GateAccuracy, Value: s.Score, Threshold: rs.AccuracyThreshold(), Source: s.AccuracySource}
	switch {
	case s.AccuracySource == AccuracyPublished:
		decide(&g, rs.AccuracyPass(s.Score))
		g.Note = "published accuracy_results.json, not re-derived"
	case s.Turns.Scored == 0:
		notEvaluated(&g, schemas.SeverityWarning, "no scorable turn was issued")
	default:
		decide(&g, rs.AccuracyPass(s.Score))
	}
	return g
}

func judgeOSL(rs rulesets.Ruleset, s *schemas.Scores) schemas.Gate {
	g := schemas.Gate{Name: GateOSL, Threshold: rs.OSLThreshold()}
	switch {
	case s.OSL == nil:
		notEvaluated(&g, schemas.SeverityWarning, "no output token counts (they need the reference tokenizer)")
	case s.OSL.Turns == 0:
		notEvaluated(&g, schemas.SeverityWarning, "no completed turn")
	default:
		g.Value, g.Source = s.OSL.Mean, s.OSL.Source
		decide(&g, rs.OSLPass(s.OSL.Mean))
		switch {
		case s.OSL.Unofficial && s.OSL.Tokenizer != nil && s.OSL.Tokenizer.StandIn:
			g.Note = "unofficial: " + s.OSL.Tokenizer.Note
		case s.OSL.Unofficial:
			g.Note = "unofficial: server usage counts, not the reference tokenizer"
		case s.OSL.Source == OSLSourceSummary:
			g.Note = "from the reference's result_summary.json, not re-derived"
		}
	}
	return g
}

// judgeFigure judges g on the published figure v; without one g is not
// evaluated, for problem (a warning that says missing when there is none).
func judgeFigure(g *schemas.Gate, v *float64, pass func(float64) bool, problem *schemas.Problem, missing string) {
	if v != nil {
		g.Value = *v
		decide(g, pass(*v))
		return
	}
	if problem == nil {
		problem = &schemas.Problem{Severity: schemas.SeverityWarning, Reason: missing}
	}
	notEvaluated(g, problem.Severity, problem.Reason)
}

// judgePublished judges a submission point's inline accuracy and OSL gates on
// its published figures, re-derived values beside them.
func judgePublished(rs rulesets.Ruleset, s *schemas.Scores) []schemas.Gate {
	pf := s.Published
	acc := schemas.Gate{Name: GateAccuracy, Threshold: rs.AccuracyThreshold(), Source: AccuracyPublished}
	if s.AccuracySource == AccuracyFromEvents && s.Turns.Scored > 0 {
		acc.Rederived = f64(s.Score)
	}
	judgeFigure(&acc, pf.Inline, rs.AccuracyPass, pf.InlineProblem, "no inline accuracy result")
	if acc.Rederived != nil {
		acc.Note = fmt.Sprintf("the gate judges the published value, as the submission checker does; re-derived from the events: %.4f", *acc.Rederived)
	}

	osl := schemas.Gate{Name: GateOSL, Threshold: rs.OSLThreshold(), Source: OSLSourceSummary}
	if s.OSL != nil && s.OSL.Turns > 0 && s.OSL.Source != OSLSourceSummary {
		osl.Rederived = f64(s.OSL.Mean)
	}
	judgeFigure(&osl, pf.OSL, rs.OSLPass, pf.OSLProblem, "no published full-run OSL")
	switch {
	case osl.Rederived != nil:
		osl.Note = fmt.Sprintf("the gate judges the published output_sequence_lengths_full_run, as the submission checker does; re-derived (%s): %.2f", s.OSL.Source, *osl.Rederived)
		if s.OSL.Unofficial {
			osl.Note += ", unofficial"
		}
	case pf.OSL != nil:
		osl.Note = "from the published result summary, not re-derived"
	}
	return []schemas.Gate{acc, osl}
}

// WriteVerdict prints the verdict table: each gate, its value, its threshold,
// pass/fail and any note.
func WriteVerdict(w io.Writer, s *schemas.Scores) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "ruleset %s\n", s.Verdict.Ruleset)
	fmt.Fprintln(tw, "GATE\tVALUE\tTHRESHOLD\tRESULT\tNOTE")
	for _, g := range s.Verdict.Gates {
		val := fmt.Sprintf("%.4f", g.Value)
		if g.Name == GateOSL {
			val = fmt.Sprintf("%.2f", g.Value)
		}
		if !g.Evaluated() {
			val = "-"
		}
		res := g.OutcomeText()
		if res == "fail" {
			res = "FAIL"
		}
		if g.Informational {
			res = "(" + map[bool]string{true: "above", false: "below"}[g.Pass] + ")"
		}
		note := g.Note
		if g.Reason != "" {
			note = strings.TrimSuffix(g.Reason+"; "+note, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", g.Name, val, g.Threshold, res, note)
	}
	overall := map[string]string{schemas.OutcomePass: "PASS", schemas.OutcomeFail: "FAIL",
		schemas.OutcomeNotEvaluated: "NOT EVALUATED"}[s.Verdict.Outcome]
	if overall == "" {
		overall = "FAIL"
	}
	c := s.Verdict.Counts
	overall += fmt.Sprintf(" (%d pass, %d fail, %d not evaluated)", c.Pass, c.Fail, c.NotEvaluated)
	fmt.Fprintf(tw, "verdict\t\t\t%s\t\n", overall)
	return tw.Flush()
}
