package score

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/agentrace/agentrace/schemas"
)

// Gate names of a verdict.
const (
	GateAccuracy = "inline_accuracy"
	GateOSL      = "osl_window"
	GateSWEBench = "swebench"
)

// Judge applies a ruleset's gates to a run's scores: inline accuracy, the OSL
// window (not evaluated, so failing, when no count is available; unofficial with
// server usage counts) and, when a report was given, SWE-bench.
func Judge(rs Ruleset, s *schemas.Scores) schemas.Verdict {
	v := schemas.Verdict{Ruleset: rs.Name, Pass: true}
	acc := schemas.Gate{Name: GateAccuracy, Value: s.Score, Threshold: rs.AccuracyThreshold()}
	switch {
	case s.AccuracySource == AccuracyPublished:
		acc.Pass = rs.AccuracyPass(s.Score)
		acc.Note = "published accuracy_results.json, not re-derived (no event log)"
	case s.Turns.Scored == 0:
		acc.Note = "not evaluated: no scorable turn was issued"
	default:
		acc.Pass = rs.AccuracyPass(s.Score)
	}
	v.Gates = append(v.Gates, acc)

	osl := schemas.Gate{Name: GateOSL, Threshold: rs.OSLThreshold()}
	switch {
	case s.OSL == nil:
		osl.Note = "not evaluated: no output token counts (give --tokenizer)"
	case s.OSL.Turns == 0:
		osl.Note = "not evaluated: no completed turn"
	default:
		osl.Value = s.OSL.Mean
		osl.Pass = rs.OSLPass(s.OSL.Mean)
		switch {
		case s.OSL.Unofficial && s.OSL.Tokenizer != nil && s.OSL.Tokenizer.StandIn:
			osl.Note = "unofficial: " + s.OSL.Tokenizer.Note
		case s.OSL.Unofficial:
			osl.Note = "unofficial: server usage counts, not the reference tokenizer"
		case s.OSL.Source == OSLSourceSummary:
			osl.Note = "from the reference's result_summary.json, not re-derived"
		}
	}
	v.Gates = append(v.Gates, osl)

	for _, g := range v.Gates {
		v.Pass = v.Pass && g.Pass
	}
	if s.SWEBench != nil {
		// SWE-bench is judged per curve, on the mean of one result per mandatory
		// region (SWEBenchMeanOfN): a single run's result is one input to that mean
		// and never fails the run's own verdict.
		g := schemas.Gate{Name: GateSWEBench, Value: s.SWEBench.Score, Threshold: rs.SWEBenchThreshold(),
			Pass: rs.SWEBenchPass(s.SWEBench.Score), Informational: true,
			Note: "one input to the curve's mean of 4 region results (judged by report), not this run's verdict"}
		if s.SWEBench.Incomplete {
			g.Note += fmt.Sprintf("; incomplete: %d of %d submitted", s.SWEBench.Submitted, s.SWEBench.Evaluated)
		}
		v.Gates = append(v.Gates, g)
	}
	return v
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
		if strings.HasPrefix(g.Note, "not evaluated") {
			val = "-"
		}
		res := "FAIL"
		if g.Pass {
			res = "pass"
		}
		if g.Informational {
			res = "(" + map[bool]string{true: "above", false: "below"}[g.Pass] + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", g.Name, val, g.Threshold, res, g.Note)
	}
	overall := "FAIL"
	if s.Verdict.Pass {
		overall = "PASS"
	}
	fmt.Fprintf(tw, "verdict\t\t\t%s\t\n", overall)
	return tw.Flush()
}
