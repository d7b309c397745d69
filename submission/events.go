package submission

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/runread"
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

// WriteEvents writes an agentrace run's turn log as the reference client's event
// log (events.jsonl: session events, and per turn its sample.issued, recv and
// sample.complete events, an error.generic event before a failed one's complete,
// in time order), so that readers of reference runs (report, audit, the scorer)
// fold it as they fold the reference's: the same counts, times, outputs and
// finish reasons, and the performance window as the turn log marks it. A turn
// never issued publishes nothing; a turn cut in flight, no complete event; a
// turn skipped after its trajectory failed, an issue and a complete without
// output, as the reference's register_skipped does. The prompts are not written
// (the issued events' PromptData is empty): they are the dataset's, named by its
// content hash in point.yaml.
func WriteEvents(ctx context.Context, run *archive.Run, windowEndNs int64, w io.Writer) error {
	var evs []event
	add := func(ts int64, m eventLine) error {
		m.TS = eventBase + ts
		b, err := m.marshal()
		if err != nil {
			return err
		}
		evs = append(evs, event{eventBase + ts, b})
		return nil
	}
	stop := windowEndNs
	last := int64(0)
	n := 0
	_, err := runread.ScanTurns(ctx, run, func(r *schemas.TurnRecord) error {
		if r.Status == schemas.StatusNotIssued {
			return nil
		}
		n++
		uuid := fmt.Sprintf("%032x", n)
		e := eventLine{UUID: uuid, Conv: r.SessionID, Turn: &r.Turn}
		issued := r.IssuedNs
		if issued <= 0 {
			issued = r.CompletedNs
		}
		// Keep the turn log's window: issued at or before the stop event is in it.
		if stop > 0 {
			switch {
			case r.InWindow && issued > stop:
				issued = stop
			case !r.InWindow && issued <= stop:
				issued = stop + 1
			}
		}
		e.Type, e.Data = "sample.issued", json.RawMessage(`["PromptData",null,null,null,null,null,null,null]`)
		if err := add(issued, e); err != nil {
			return err
		}
		last = max(last, issued)
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
				if err := add(r.FirstTokenNs+t, e); err != nil {
					return err
				}
			}
		}
		if r.Status == schemas.StatusCancelled || r.CompletedNs <= 0 {
			return nil // cut in flight: no complete event
		}
		done := max(r.CompletedNs, issued)
		last = max(last, done)
		if r.Status != schemas.StatusOK {
			typ := "TurnAbortedByPriorFailure"
			if r.Status != schemas.StatusAborted {
				typ = r.Status
			}
			e.Type, e.Data = "error.generic", mustJSON([]any{"ErrorData", typ, r.Error})
			if err := add(done, e); err != nil {
				return err
			}
			e.Type, e.Data = "sample.complete", nil
			return add(done, e)
		}
		out, err := textModelOutput(r)
		if err != nil {
			return fmt.Errorf("turn %d of %q: %w", r.Turn, r.SessionID, err)
		}
		e.Type, e.Data, e.Finish = "sample.complete", out, r.FinishReason
		return add(done, e)
	})
	if err != nil {
		return err
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].ts < evs[j].ts })
	bw := bufio.NewWriter(w)
	for _, l := range []struct {
		ts  int64
		typ string
	}{{0, "session.started"}, {0, "session.start_performance_tracking"}} {
		if err := writeSession(bw, l.ts, l.typ); err != nil {
			return err
		}
	}
	stopWritten := false
	for _, e := range evs {
		if !stopWritten && stop > 0 && e.ts > eventBase+stop {
			if err := writeSession(bw, stop, "session.stop_performance_tracking"); err != nil {
				return err
			}
			stopWritten = true
		}
		bw.Write(e.line)
		bw.WriteByte('\n')
	}
	if !stopWritten && stop > 0 {
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
