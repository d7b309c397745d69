package score

import (
	"bufio"
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
func ReadReferenceEvents(path string, truth *Truth) (*ReferenceRun, error) {
	f, err := infile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read reference events: %w", err)
	}
	defer f.Close()
	run, err := readReferenceEvents(f, truth)
	if err != nil {
		return nil, fmt.Errorf("read reference events %q: %w", path, err)
	}
	return run, nil
}

func readReferenceEvents(r io.Reader, truth *Truth) (*ReferenceRun, error) {
	run := &ReferenceRun{}
	uuidKey := map[string]eventKey{}
	issuedAt := map[eventKey]int64{}
	var issuedOrder []eventKey
	issued := map[eventKey]bool{}
	completedByUUID := map[string]*Output{}
	seenComplete := map[string]bool{}
	model := map[eventKey]*Output{}
	hasModel := map[eventKey]bool{}
	lastOutput := map[string]int{} // uuid -> index in run.Completed
	var windowStart, windowStop int64 = -1, -1

	br := bufio.NewReaderSize(r, 1<<20)
	lineNo := 0
	var long []byte
	for {
		line, err := runread.ReadLine(br, &long)
		if len(line) > 0 {
			lineNo++
			if e, ok, why := runread.DecodeEvent(line, false); !ok {
				if why != "" {
					run.Skipped++
					if run.FirstSkipped == "" {
						run.FirstSkipped = fmt.Sprintf("line %d: %s", lineNo, why)
					}
				}
			} else {
				switch e.Type {
				case "session.start_performance_tracking":
					if windowStart < 0 {
						windowStart = e.TimestampNs
					}
				case "session.stop_performance_tracking":
					if windowStop < 0 {
						windowStop = e.TimestampNs
					}
				case "sample.issued", "sample.complete":
					handleSampleEvent(run, e, lineNo, truth, uuidKey, issuedAt, &issuedOrder, issued, completedByUUID, seenComplete, model, hasModel, lastOutput)
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	for _, k := range issuedOrder {
		ts := issuedAt[k]
		in := (windowStart < 0 || ts >= windowStart) && (windowStop < 0 || ts <= windowStop)
		run.Attempts = append(run.Attempts, Attempt{
			SessionID: sessionID(k.conv, k.repeat), ConversationID: k.conv, Repeat: k.repeat, Turn: k.turn,
			Output: model[k], InWindow: in, OSL: -1,
		})
	}
	return run, nil
}

func handleSampleEvent(run *ReferenceRun, e *runread.Event, line int, truth *Truth, uuidKey map[string]eventKey,
	issuedAt map[eventKey]int64, issuedOrder *[]eventKey, issued map[eventKey]bool,
	completedByUUID map[string]*Output, seenComplete map[string]bool,
	model map[eventKey]*Output, hasModel map[eventKey]bool, lastOutput map[string]int) {
	var out *Output
	if e.Type == "sample.complete" {
		resp, calls, err := runread.TextModelOutput(e.Data)
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
			if i, ok := lastOutput[e.UUID]; ok && e.UUID != "" {
				run.Completed[i] = *resp
				out.completed = i + 1
			} else {
				lastOutput[e.UUID] = len(run.Completed)
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
	if _, ok := truth.Lookup(conv, turn); !ok {
		return
	}
	k := eventKey{conv, repeat, turn}
	if e.Type == "sample.issued" {
		uuidKey[e.UUID] = k
		if !issued[k] {
			issued[k] = true
			issuedAt[k] = e.TimestampNs
			*issuedOrder = append(*issuedOrder, k)
		}
		if seenComplete[e.UUID] {
			model[k] = completedByUUID[e.UUID]
			hasModel[k] = true
		}
		return
	}
	if out != nil || !seenComplete[e.UUID] {
		completedByUUID[e.UUID] = out
		seenComplete[e.UUID] = true
	}
	if ik, ok := uuidKey[e.UUID]; ok {
		if out != nil || !hasModel[ik] {
			model[ik] = out
			hasModel[ik] = true
		}
	}
}
