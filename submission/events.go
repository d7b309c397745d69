package submission

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
)

// EventsFile is a point's event log, as the reference client names it.
const EventsFile = archive.EventsFile

// eventBase is the timestamp of the run's start in the event log (a turn log's
// times are on the run's clock, from 0).
const eventBase = int64(1_000_000_000)

// event is one line of the event log and when it happened.
type event struct {
	ts   int64
	line []byte
}

// issue is a turn's sample.issued event, placed when the window's end is known.
type issue struct {
	ts       int64
	inWindow bool
	e        eventLine
}

// eventLog builds an agentrace run's turn log as the reference client's event
// log (events.jsonl: session events, and per turn its sample.issued, recv and
// sample.complete events, an error.generic event before a failed one's complete,
// in time order), so that readers of reference runs (report, audit, the scorer)
// fold it as they fold the reference's: the same counts, times, outputs and
// finish reasons, and the performance window as the turn log marks it. A turn
// never issued publishes nothing; a turn cut in flight, no complete event; a
// turn skipped after its trajectory failed, an issue and a complete without
// output, as the reference's register_skipped does. The prompts are not written
// (the issued events' PromptData is empty): they are the dataset's, named by its
// content hash in point.yaml. Records are added as a run is read (add), and the
// log written once its window is known (write).
type eventLog struct {
	evs    []event
	issues []issue
	n      int
}

// add adds a turn's events.
func (l *eventLog) add(r *schemas.TurnRecord) error {
	if r.Status == schemas.StatusNotIssued {
		return nil
	}
	l.n++
	turn := r.Turn
	e := eventLine{UUID: fmt.Sprintf("%032x", l.n), Conv: r.SessionID, Turn: &turn}
	issued := r.IssuedNs
	if issued <= 0 {
		issued = r.CompletedNs
	}
	e.Type, e.Data = "sample.issued", json.RawMessage(`["PromptData",null,null,null,null,null,null,null]`)
	l.issues = append(l.issues, issue{issued, r.InWindow, e})
	put := func(ts int64, m eventLine) error {
		m.TS = eventBase + ts
		b, err := m.marshal()
		if err != nil {
			return err
		}
		l.evs = append(l.evs, event{m.TS, b})
		return nil
	}
	e.Data = nil
	if r.FirstTokenNs > 0 {
		times := r.ChunkTimesNs
		if len(times) == 0 {
			times = []int64{0}
		}
		for i, t := range times {
			e.Type = "sample.recv_non_first"
			if i == 0 {
				e.Type = "sample.recv_first"
			}
			if err := put(r.FirstTokenNs+t, e); err != nil {
				return err
			}
		}
	}
	if r.Status == schemas.StatusCancelled || r.CompletedNs <= 0 && r.Status != schemas.StatusAborted {
		return nil // cut in flight: no complete event
	}
	done := max(r.CompletedNs, issued)
	if r.Status != schemas.StatusOK {
		typ := "TurnAbortedByPriorFailure"
		if r.Status != schemas.StatusAborted {
			typ = r.Status
		}
		e.Type, e.Data = "error.generic", mustJSON([]any{"ErrorData", typ, r.Error})
		if err := put(done, e); err != nil {
			return err
		}
		e.Type, e.Data = "sample.complete", nil
		return put(done, e)
	}
	out, err := textModelOutput(r)
	if err != nil {
		return fmt.Errorf("turn %d of %q: %w", r.Turn, r.SessionID, err)
	}
	e.Type, e.Data, e.Finish = "sample.complete", out, r.FinishReason
	return put(done, e)
}

// write writes the log: the session's start and performance tracking from 0,
// its stop at windowEndNs (0: never stopped), every turn's events in time order
// (a turn issued in the window at or before the stop, one issued after it
// after), and the session's end.
func (l *eventLog) write(w io.Writer, windowEndNs int64) error {
	stop := windowEndNs
	last := int64(0)
	// A turn's issue goes before its other events of the same instant (a turn
	// skipped after a failure is issued and completed at once).
	issued := make([]event, 0, len(l.issues))
	for _, is := range l.issues {
		ts := is.ts
		if stop > 0 {
			switch {
			case is.inWindow && ts > stop:
				ts = stop
			case !is.inWindow && ts <= stop:
				ts = stop + 1
			}
		}
		is.e.TS = eventBase + ts
		b, err := is.e.marshal()
		if err != nil {
			return err
		}
		issued = append(issued, event{is.e.TS, b})
	}
	l.evs = append(issued, l.evs...)
	for _, e := range l.evs {
		last = max(last, e.ts-eventBase)
	}
	sort.SliceStable(l.evs, func(i, j int) bool { return l.evs[i].ts < l.evs[j].ts })
	bw := bufio.NewWriter(w)
	for _, typ := range []string{"session.started", "session.start_performance_tracking"} {
		if err := writeSession(bw, 0, typ); err != nil {
			return err
		}
	}
	stopWritten := stop <= 0
	for _, e := range l.evs {
		if !stopWritten && e.ts > eventBase+stop {
			if err := writeSession(bw, stop, "session.stop_performance_tracking"); err != nil {
				return err
			}
			stopWritten = true
		}
		bw.Write(e.line)
		bw.WriteByte('\n')
	}
	if !stopWritten {
		if err := writeSession(bw, stop, "session.stop_performance_tracking"); err != nil {
			return err
		}
		last = max(last, stop)
	}
	if err := writeSession(bw, last+1, "session.ended"); err != nil {
		return err
	}
	return bw.Flush()
}

// writeSession writes a session event at ts on the run's clock.
func writeSession(w *bufio.Writer, ts int64, typ string) error {
	b, err := eventLine{Type: typ, TS: eventBase + ts}.marshal()
	if err != nil {
		return err
	}
	w.Write(b)
	return w.WriteByte('\n')
}

// eventLine is one event, written with the reference's keys in its order.
type eventLine struct {
	Type   string          `json:"event_type"`
	TS     int64           `json:"timestamp_ns"`
	UUID   string          `json:"sample_uuid"`
	Conv   string          `json:"conversation_id"`
	Turn   *int32          `json:"turn"`
	Data   json.RawMessage `json:"data"`
	Finish string          `json:"finish_reason,omitempty"`
}

func (e eventLine) marshal() ([]byte, error) {
	if e.Data == nil {
		e.Data = json.RawMessage("null")
	}
	return json.Marshal(e)
}

// textModelOutput is a completed turn's output as the reference's
// TextModelOutput: the content and the reasoning as streamed chunks (the first
// chunk as many bytes as the turn log's first fragment, so that a reader finds
// the same), and the tool calls as one streamed delta each.
func textModelOutput(r *schemas.TurnRecord) (json.RawMessage, error) {
	chunks := func(s string, first int32) any {
		if s == "" {
			return nil
		}
		if first > 0 && int(first) < len(s) {
			return []string{s[:first], s[first:]}
		}
		return []string{s}
	}
	content := chunks(r.OutputContent, r.FirstContentBytes)
	if content == nil {
		content = ""
	}
	out := []any{"TextModelOutput", content, chunks(r.OutputReasoning, r.FirstReasoningBytes)}
	if r.OutputToolCalls != "" {
		var calls []schemas.ToolCall
		if err := json.Unmarshal([]byte(r.OutputToolCalls), &calls); err != nil {
			return nil, fmt.Errorf("tool calls: %w", err)
		}
		deltas := make([]any, len(calls))
		for i, c := range calls {
			typ := c.Type
			if typ == "" {
				typ = "function"
			}
			deltas[i] = []any{map[string]any{"index": c.Index, "id": c.ID, "type": typ,
				"function": map[string]any{"name": c.Function.Name, "arguments": c.Function.Arguments}}}
		}
		out = append(out, deltas)
	}
	return mustJSON(out), nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}
