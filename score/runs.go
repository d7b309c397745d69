package score

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/runread"
)

// Kinds of run (RunIdentity.Kind, RescoreRow.Kind).
const (
	KindAgentrace  = archive.KindAgentrace  // a replay run: turns.arrows and manifest.json
	KindReference  = archive.KindReference  // a reference client run folder: events.jsonl, config.yaml, ...
	KindSubmission = archive.KindSubmission // a submission point r<N>/: point.yaml, summaries, events when shipped
)

// Files the reference client writes into its report directory besides events.jsonl.
const (
	ReferenceConfigFile  = archive.ConfigFile
	ReferenceSummaryFile = "result_summary.json"
)

// runData is a run reduced to what scoring needs.
type runData struct {
	attempts []Attempt
	// completed are the completed responses, rebuilt only when a tokenizer counts
	// them (agentrace runs) or as read (reference runs).
	completed []schemas.Response
	// usage is the server's completion token count of each completed response, -1
	// when unknown (reference runs have none); its length is the number of
	// completed responses.
	usage []int32
	// rawCalls holds, for agentrace runs, each completed response's tool calls as
	// logged (JSON), decoded only when a tokenizer needs them.
	rawCalls []string
	warnings []string
	// log identifies the turn log read (an agentrace run), nil for an event log.
	log *schemas.TurnLogIdentity
	// release frees what the outputs point into; nil when nothing.
	release func()
}

// response returns completed response i, its tool calls decoded.
func (rd *runData) response(i int) (schemas.Response, error) {
	r := rd.completed[i]
	if rd.rawCalls != nil && rd.rawCalls[i] != "" {
		if err := json.Unmarshal([]byte(rd.rawCalls[i]), &r.ToolCalls); err != nil {
			return r, fmt.Errorf("output_tool_calls: %w", err)
		}
	}
	return r, nil
}

// agentraceRunData reduces the rows of an agentrace run's turn log (read once,
// runread.TurnLogRows; scan says what the pass read) to what scoring needs. A
// truncated log (a crashed run) is scored on its complete batches, with a
// warning. re recycles the attempts and outputs across runs: they are valid
// until rd.release is called, which hands them to re; the outputs point into
// the log's buffers unless clone is set (a tokenizer may keep pieces of them).
//
// Turns never sent because issuing stopped (not_issued) are left out, as the
// reference publishes nothing for them; turns skipped after a failure
// (aborted) count as issued without output, as its register_skipped publishes
// them. The log read is recorded (runData.log) for scores.json.
func agentraceRunData(run *archive.Run, recs []runread.TurnLogRow, scan runread.TurnScan, re *recycler, clone bool) (*runData, error) {
	dir := run.Label
	rd := &runData{log: scan.Log}
	var outs []Output
	release := func() {
		give(&re.attempts, rd.attempts)
		give(&re.outs, outs)
		give(&re.usage, rd.usage)
		rd.attempts, outs, rd.usage = nil, nil, nil
	}
	rd.release = release
	if scan.Note != "" {
		rd.warnings = append(rd.warnings, "scored as read: "+scan.Note)
	}
	ok, notIssued := 0, 0
	for i := range recs {
		switch recs[i].Status {
		case schemas.StatusOK:
			ok++
		case schemas.StatusNotIssued:
			notIssued++
		}
	}
	if notIssued > 0 {
		rd.warnings = append(rd.warnings, english.Count(notIssued, "turn", "turns")+" never issued (not_issued: issuing stopped): not counted, as the reference publishes nothing for a turn it never issued")
	}
	rd.attempts = take[Attempt](&re.attempts, len(recs))
	outs = take[Output](&re.outs, ok)
	rd.usage = take[int32](&re.usage, ok)
	if clone { // responses are rebuilt only for a tokenizer
		rd.completed = make([]schemas.Response, 0, ok)
		rd.rawCalls = make([]string, 0, ok)
	}
	for i := range recs {
		r := &recs[i]
		if r.Status == schemas.StatusNotIssued {
			continue
		}
		a := Attempt{SessionID: r.Session, ConversationID: r.Conv, Repeat: int(r.Repeat),
			Turn: r.Turn, InWindow: r.InWindow, OSL: -1}
		if a.ConversationID == "" {
			var ok bool
			a.ConversationID, a.Repeat, ok = datasets.ParseReferenceSessionID(r.Session)
			if !ok {
				release()
				return nil, fmt.Errorf("run %q: turn log row %d: bad session id %q", dir, i, r.Session)
			}
		}
		if a.Repeat <= 0 {
			a.Repeat = 1
		}
		if r.Status == schemas.StatusOK {
			outs = append(outs, Output{Content: r.Content, Reasoning: r.Reasoning})
			out := &outs[len(outs)-1]
			if r.Calls != "" {
				// Read-only view of the logged JSON, without a copy.
				out.ToolCalls = unsafe.Slice(unsafe.StringData(r.Calls), len(r.Calls))
			}
			if clone {
				rd.completed = append(rd.completed, schemas.Response{Content: r.Content, Reasoning: r.Reasoning})
				rd.rawCalls = append(rd.rawCalls, r.Calls)
			}
			rd.usage = append(rd.usage, r.Usage)
			out.completed = len(rd.usage)
			a.Output = out
		}
		rd.attempts = append(rd.attempts, a)
	}
	return rd, nil
}

// runData reduces a reference or submission run's event log (events.jsonl, or
// mlperf_endpoints_log_detail.json as a JSON array), read as name, to what
// scoring needs.
func (ref *ReferenceRun) runData(name string) *runData {
	rd := &runData{attempts: ref.Attempts, completed: ref.Completed}
	rd.usage = make([]int32, len(ref.Completed))
	for i := range rd.usage {
		rd.usage[i] = -1
	}
	if ref.Skipped > 0 {
		rd.warnings = append(rd.warnings, fmt.Sprintf("%s: skipped %d malformed lines, as the reference does (first: %s)",
			name, ref.Skipped, ref.FirstSkipped))
	}
	if ref.Malformed > 0 {
		rd.warnings = append(rd.warnings, fmt.Sprintf("%s: %d complete events have a malformed output entry, left out (first: %s)",
			name, ref.Malformed, ref.FirstMalformed))
	}
	return rd
}

// SummaryOSL is the full-run OSL per-turn mean a run's published result summary
// holds.
type SummaryOSL struct {
	Mean  float64
	Total int64
	// N is the summary's n_samples_completed (0 when absent).
	N int
	// Field is the JSON path the mean was read from.
	Field string
	// Checker tells that Mean is the submission checker's field; otherwise Problem
	// says why that field gives no value, with the checker's severity.
	Checker bool
	Problem *schemas.Problem
}

// ReadSummaryOSL reads the full-run OSL per-turn mean from a run's published
// result summary as the submission checker does (its agentic OSL gate):
// output_sequence_lengths_full_run.output_sequence_lengths.avg, a JSON number
// (a boolean reads as 0 or 1, as Python's isinstance(avg, int) takes it), never
// the windowed output_sequence_lengths. An absent or non-numeric field is a
// warning there, never a fallback. For reference runs a summary with the stat
// block directly under output_sequence_lengths_full_run (agentrace's earlier
// drafts) is read too, with Checker false and Field saying so. ok is false when
// the summary has neither, and when the block is marked partial (the reference's
// output_sequence_lengths_full_run.partial: errored, undecodable or missing
// turns), whose mean is over a subset and never feeds the gate (Problem says so).
func ReadSummaryOSL(run *archive.Run) (SummaryOSL, bool, error) {
	name := run.SummaryName()
	if name == "" {
		return SummaryOSL{Problem: &schemas.Problem{Severity: schemas.SeverityError, Reason: "no result summary"}}, false, nil
	}
	data, err := run.ReadFile(name)
	if err != nil {
		return SummaryOSL{}, false, err
	}
	s, err := DecodeSummary(data)
	if err != nil {
		return SummaryOSL{}, false, fmt.Errorf("parse %q: %w", run.FileLabel(name), err)
	}
	const field = "output_sequence_lengths_full_run.output_sequence_lengths.avg"
	out := SummaryOSL{Field: name + ": " + field}
	if why := summaryInvalid(s); why != "" && runread.IsPoint(run) {
		out.Problem = &schemas.Problem{Severity: schemas.SeverityError, Reason: fmt.Sprintf("%s does not validate (the checker's result-file-valid): %s", run.FileLabel(name), why)}
		return out, false, nil
	}
	if n, ok := s["n_samples_completed"].(json.Number); ok {
		if v, err := n.Int64(); err == nil {
			out.N = int(v)
		}
	}
	number := func(v any) (float64, bool) {
		switch x := v.(type) {
		case json.Number:
			f, err := x.Float64()
			return f, err == nil
		case bool:
			if x {
				return 1, true
			}
			return 0, true
		}
		return 0, false
	}
	full, _ := s["output_sequence_lengths_full_run"].(map[string]any)
	inner, _ := full["output_sequence_lengths"].(map[string]any)
	avg, has := inner["avg"]
	if f, ok := number(avg); ok && full["partial"] == true {
		// The reference marks a block over a subset of the turns partial: its mean
		// must not feed the OSL gate.
		out.Mean = f
		out.Problem = &schemas.Problem{Severity: schemas.SeverityWarning, Reason: fmt.Sprintf(
			"%s: output_sequence_lengths_full_run is partial (n_errors %s, n_undecodable %s, n_missing %s): its mean covers a subset of the turns and is not used by the OSL gate",
			run.FileLabel(name), pyRepr(full["n_errors"]), pyRepr(full["n_undecodable"]), pyRepr(full["n_missing"]))}
		return out, false, nil
	}
	if f, ok := number(avg); ok {
		out.Mean, out.Checker = f, true
		if t, ok := number(inner["total"]); ok {
			out.Total = int64(t)
		}
		return out, true, nil
	}
	switch {
	case full == nil:
		out.Problem = &schemas.Problem{Severity: schemas.SeverityWarning, Reason: run.FileLabel(name) + ": no output_sequence_lengths_full_run block (the windowed output_sequence_lengths is never used in its place)"}
	case !has || avg == nil:
		out.Problem = &schemas.Problem{Severity: schemas.SeverityWarning, Reason: run.FileLabel(name) + ": no " + field}
	default:
		out.Problem = &schemas.Problem{Severity: schemas.SeverityWarning, Reason: fmt.Sprintf("%s: %s is %s, not a number", run.FileLabel(name), field, pyRepr(avg))}
	}
	if f, ok := number(full["avg"]); ok {
		out.Mean, out.Field = f, name+": output_sequence_lengths_full_run.avg (not the checker's field)"
		if t, ok := number(full["total"]); ok {
			out.Total = int64(t)
		}
		return out, true, nil
	}
	return out, false, nil
}

// summaryInvalid says why a result summary (decoded with UseNumber) fails the
// submission checker's schema of it, "" when it validates: n_samples_completed
// (an integer) and duration_ns (a number) are required, n_samples_issued and
// n_samples_failed are integers, ttft, tpot and output_sequence_lengths are
// mappings whose total is a number and whose percentiles map to numbers, and
// the agentic totals are numbers or null. As pydantic's lax mode reads them, a
// numeric string is a number, and an integer may be written 11.0.
// ReadSummaryOSL applies it to submission points, whose summaries the checker
// reads.
func summaryInvalid(s map[string]any) string {
	for _, k := range []string{"n_samples_completed", "duration_ns"} {
		if v, ok := s[k]; !ok || v == nil {
			return k + " is required"
		}
	}
	for _, k := range []string{"n_samples_completed", "n_samples_issued", "n_samples_failed"} {
		if v, ok := s[k]; ok && !laxInt(v) {
			return fmt.Sprintf("%s %s is not an integer", k, pyRepr(v))
		}
	}
	for _, k := range []string{"duration_ns", "output_tokens_per_turn_total", "e2e_turn_time_seconds_total"} {
		if v, ok := s[k]; ok && (v != nil || k == "duration_ns") && !laxFloat(v) {
			return fmt.Sprintf("%s %s is not a number", k, pyRepr(v))
		}
	}
	for _, k := range []string{"ttft", "tpot", "output_sequence_lengths"} {
		v, ok := s[k]
		if !ok {
			continue
		}
		m, isMap := v.(map[string]any)
		if !isMap {
			return fmt.Sprintf("%s %s is not a mapping", k, pyRepr(v))
		}
		if t, ok := m["total"]; ok && !laxFloat(t) {
			return fmt.Sprintf("%s.total %s is not a number", k, pyRepr(t))
		}
		if pv, ok := m["percentiles"]; ok {
			pm, isMap := pv.(map[string]any)
			if !isMap {
				return fmt.Sprintf("%s.percentiles %s is not a mapping", k, pyRepr(pv))
			}
			for pk, x := range pm {
				if !laxFloat(x) {
					return fmt.Sprintf("%s.percentiles.%s %s is not a number", k, pk, pyRepr(x))
				}
			}
		}
	}
	return ""
}

// laxFloat tells whether pydantic's float takes v (lax mode): a number or a
// numeric string.
func laxFloat(v any) bool {
	switch x := v.(type) {
	case json.Number:
		return true
	case string:
		_, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return err == nil
	}
	return false
}

// laxInt tells whether pydantic's int takes v (lax mode): an integer, a number
// without a fractional part, or a string of an integer.
func laxInt(v any) bool {
	switch x := v.(type) {
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return true
		}
		f, err := x.Float64()
		return err == nil && f == math.Trunc(f)
	case string:
		_, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return err == nil
	}
	return false
}
