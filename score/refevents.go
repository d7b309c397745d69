package score

import (
	"context"
	"fmt"
	"io"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/runread"
)

// ReferenceRun is what scoring takes from a reference client's events.jsonl.
type ReferenceRun struct {
	// Attempts are the issued turns of expected (conversation, turn) pairs, one per
	// (conversation, repeat, turn), with the output the reference scorer would pair
	// with each.
	Attempts []Attempt
	// Completed are the responses of every completed sample (expected or not), in
	// completion order, for the OSL mean.
	Completed []schemas.Response
	// Skipped counts the lines the reference would skip as malformed.
	Skipped int
	// FirstSkipped describes the first of them.
	FirstSkipped string
	// Malformed counts the complete events kept with a malformed entry left out of
	// their output (a tool-call delta that is not one); FirstMalformed says the
	// first one's line and what is wrong.
	Malformed      int
	FirstMalformed string
}

type eventKey struct {
	conv   string
	repeat int
	turn   int32
}

// ReadReferenceEvents reads a reference events.jsonl and pairs issued turns with
// their outputs exactly as the reference scorer does: only sample.issued and
// sample.complete events with a turn and a conversation id count; the id's
// __repeat_N suffix gives the repeat (1 by default); only (conversation, turn)
// pairs that truth expects are kept; a complete event is joined to its issue by
// sample_uuid (in either order) and a null (failed) complete never replaces an
// output. Streamed output and reasoning chunks are joined and streamed tool-call
// deltas merged by index with their arguments concatenated. Lines that the
// reference's decoder would reject are skipped and counted.
func ReadReferenceEvents(ctx context.Context, path string, truth *Truth) (*ReferenceRun, error) {
	f, err := infile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read reference events: %w", err)
	}
	defer f.Close()
	run, err := readReferenceEvents(ctx, f, truth)
	if err != nil {
		return nil, fmt.Errorf("read reference events %q: %w", path, err)
	}
	return run, nil
}

// readReferenceEvents reads an open event log for scoring alone.
func readReferenceEvents(ctx context.Context, r io.Reader, truth *Truth) (*ReferenceRun, error) {
	ref := newRefEvents(truth)
	var scan runread.TurnScan
	if err := runread.ScanEvents(ctx, r, runread.ScanOptions{Events: ref.handle}, &scan); err != nil {
		return nil, err
	}
	return ref.finish(scan), nil
}

// refEvents pairs an event log's issued turns with their outputs, event by
// event (handle is a runread.ScanOptions.Events consumer), as the reference
// scorer does.
type refEvents struct {
	run                     *ReferenceRun
	truth                   *Truth
	uuidKey                 map[string]eventKey
	issuedAt                map[eventKey]int64
	issuedOrder             []eventKey
	issued                  map[eventKey]bool
	completedByUUID         map[string]*Output
	seenComplete            map[string]bool
	model                   map[eventKey]*Output
	hasModel                map[eventKey]bool
	lastOutput              map[string]int // uuid -> index in run.Completed
	windowStart, windowStop int64
}

func newRefEvents(truth *Truth) *refEvents {
	return &refEvents{run: &ReferenceRun{}, truth: truth, uuidKey: map[string]eventKey{}, issuedAt: map[eventKey]int64{},
		issued: map[eventKey]bool{}, completedByUUID: map[string]*Output{}, seenComplete: map[string]bool{},
		model: map[eventKey]*Output{}, hasModel: map[eventKey]bool{}, lastOutput: map[string]int{},
		windowStart: -1, windowStop: -1}
}

// handle takes one event of the log.
func (r *refEvents) handle(e *runread.Event, line int) error {
	switch e.Type {
	case "session.start_performance_tracking":
		if r.windowStart < 0 {
			r.windowStart = e.TimestampNs
		}
	case "session.stop_performance_tracking":
		if r.windowStop < 0 {
			r.windowStop = e.TimestampNs
		}
	case "sample.issued", "sample.complete":
		r.sample(e, line)
	}
	return nil
}

// finish gives the run once the log is read; scan is what the pass read.
func (r *refEvents) finish(scan runread.TurnScan) *ReferenceRun {
	run := r.run
	run.Skipped, run.FirstSkipped = scan.ScoringSkipped, scan.FirstScoringSkipped
	for _, k := range r.issuedOrder {
		ts := r.issuedAt[k]
		in := (r.windowStart < 0 || ts >= r.windowStart) && (r.windowStop < 0 || ts <= r.windowStop)
		run.Attempts = append(run.Attempts, Attempt{
			SessionID: sessionID(k.conv, k.repeat), ConversationID: k.conv, Repeat: k.repeat, Turn: k.turn,
			Output: r.model[k], InWindow: in, OSL: -1,
		})
	}
	return run
}

func (r *refEvents) sample(e *runread.Event, line int) {
	run := r.run
	var out *Output
	if e.Type == "sample.complete" {
		resp, calls, err := e.Output()
		if err != nil {
			run.Malformed++
			if run.FirstMalformed == "" {
				run.FirstMalformed = fmt.Sprintf("line %d: %v", line, err)
			}
		}
		if resp != nil {
			out = &Output{Content: resp.Content, Reasoning: resp.Reasoning, ToolCalls: calls}
			// Every completed sample counts for the OSL mean; a second complete
			// of one sample replaces the first.
			if i, ok := r.lastOutput[e.UUID]; ok && e.UUID != "" {
				run.Completed[i] = *resp
				out.completed = i + 1
			} else {
				r.lastOutput[e.UUID] = len(run.Completed)
				run.Completed = append(run.Completed, *resp)
				out.completed = len(run.Completed)
			}
		}
	}
	if !e.HasTurn || e.Conv == "" {
		return
	}
	conv, repeat, ok := datasets.ParseReferenceSessionID(e.Conv)
	if !ok || e.Turn < -1<<31 || e.Turn >= 1<<31 {
		return
	}
	turn := int32(e.Turn)
	if _, ok := r.truth.Lookup(conv, turn); !ok {
		return
	}
	k := eventKey{conv, repeat, turn}
	if e.Type == "sample.issued" {
		r.uuidKey[e.UUID] = k
		if !r.issued[k] {
			r.issued[k] = true
			r.issuedAt[k] = e.TimestampNs
			r.issuedOrder = append(r.issuedOrder, k)
		}
		if r.seenComplete[e.UUID] {
			r.model[k] = r.completedByUUID[e.UUID]
			r.hasModel[k] = true
		}
		return
	}
	if out != nil || !r.seenComplete[e.UUID] {
		r.completedByUUID[e.UUID] = out
		r.seenComplete[e.UUID] = true
	}
	if ik, ok := r.uuidKey[e.UUID]; ok {
		if out != nil || !r.hasModel[ik] {
			r.model[ik] = out
			r.hasModel[ik] = true
		}
	}
}
