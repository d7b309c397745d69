package runread

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
)

// TurnScan says what ScanTurns read.
type TurnScan struct {
	// File is the file the turns came from (turns.arrows, events.jsonl or
	// mlperf_endpoints_log_detail.json).
	File string
	// Truncated is set when a turn log was cut short (the turns before the cut were
	// read).
	Truncated error
	// Note says what a reader must tell of a turn log that is not a finished
	// run's (runlog.LogRead.Note), "" otherwise.
	Note string
	// Log identifies the turn log read (runlog.ScanRun), nil for an event log:
	// what a scores.json must have scored to be of this run as it is.
	Log *schemas.TurnLogIdentity
	// Skipped counts event lines the reference's decoder would reject (of every
	// type when records are read, else of the types scoring reads); FirstSkipped
	// describes the first.
	Skipped      int
	FirstSkipped string
	// ScoringSkipped counts those of the lines that may be of a type scoring
	// reads (sample.issued, sample.complete, performance tracking): what a score
	// warns of whatever else the pass read. FirstScoringSkipped describes the
	// first.
	ScoringSkipped      int
	FirstScoringSkipped string
	// Malformed counts the complete events kept with a malformed entry left out of
	// their output (a tool-call delta that is not one); FirstMalformed says the
	// first one's line and what is wrong.
	Malformed      int
	FirstMalformed string
	// HasStream tells that the event log records streamed chunks (recv events).
	HasStream bool
	// WindowStopNs is when the reference stopped performance tracking, on the
	// records' clock; 0 when it never did.
	WindowStopNs int64
	// WindowStartNs is when it started performance tracking, on the records' clock
	// (1 when it did: the clock's 0 is just before); 0 for a turn log.
	WindowStartNs int64
}

// ScanTurns streams a run's turns to fn, one schemas.TurnRecord per client turn,
// from its turn log (turns.arrows) or its event log (events.jsonl, or a
// submission's mlperf_endpoints_log_detail.json). Records are reused after fn
// returns.
//
// From an event log, each sample becomes a record when its complete event arrives
// (records of samples never completed come last): times are on a clock whose 0 is
// just before the start of performance tracking (else the first event), so the
// fields mean what they mean in a turn log; in_window is "issued while tracking
// was on"; a complete with a TextModelOutput is ok, a null one an error (its
// error event's type and message in Error), one skipped after an earlier failure
// (TurnAbortedByPriorFailure) aborted, and a sample issued without a complete
// event cancelled: a request in flight when the log ended, which the reference's
// aggregator counts as issued but neither completed nor failed (it publishes no
// complete or error event for it), and its inline accuracy scores 0 (an issued
// turn without output).
// Session ids carry the __repeat_N suffix; trajectories are numbered by first
// appearance and client_index counts a session's issued turns. first_token_ns is
// the recv_first event, chunk_times the recv events. Server usage is unknown (-1).
// Lines the reference would reject are skipped and counted, as scoring does.
// A turn log is checked against the run's manifest as every reader checks it
// (runlog.ScanRun): one that disagrees with a finished run's is refused.
func ScanTurns(ctx context.Context, run *archive.Run, fn func(*schemas.TurnRecord) error) (TurnScan, error) {
	return ScanTurnsWith(ctx, run, ScanOptions{}, func(rec *schemas.TurnRecord, _ TurnExtra) error { return fn(rec) })
}

// TurnExtra is what an event log says of a record beyond the turn log's columns.
type TurnExtra struct {
	// ISL is the input token count ScanOptions.Prompt gave (HasISL false when none).
	ISL    int
	HasISL bool
}

// ScanTurnsWith is ScanTurns with options (Scan with fn as its Records); fn
// also receives what the event log says of each record beyond its columns.
func ScanTurnsWith(ctx context.Context, run *archive.Run, o ScanOptions, fn func(*schemas.TurnRecord, TurnExtra) error) (TurnScan, error) {
	o.Records = fn
	return Scan(ctx, run, o)
}

// OpenEvents opens a run's event log (events.jsonl, or a submission's
// mlperf_endpoints_log_detail.json, a JSON array read one element a line) as
// lines of events, and names it; an error matching ErrNoTurns says the run has
// none.
func OpenEvents(run *archive.Run) (io.ReadCloser, string, error) {
	name, format := run.EventsName()
	if name == "" {
		return nil, "", fmt.Errorf("run %q: %w", run.Label, ErrNoTurns)
	}
	rc, err := run.Open(name)
	if err != nil {
		return nil, name, err
	}
	if format == archive.EventsArray {
		return struct {
			io.Reader
			io.Closer
		}{newArrayLines(rc), rc}, name, nil
	}
	return rc, name, nil
}

// pendingTurn is a sample issued and not yet completed.
type pendingTurn struct {
	rec      schemas.TurnRecord
	extra    TurnExtra
	uuid     string
	issuedTs int64
	errType  string
	errMsg   string
}

// eventTurns turns a stream of events into turn records.
type eventTurns struct {
	scan      *TurnScan
	fn        func(*schemas.TurnRecord, TurnExtra) error
	opts      ScanOptions
	origin    int64
	originSet bool
	start     int64 // start_performance_tracking, -1 until seen
	stop      int64 // stop_performance_tracking, -1 until seen
	pending   map[string]*pendingTurn
	order     []string // uuids in issue order, for samples never completed
	traj      map[string]int32
	nextIndex map[string]int32
	out       schemas.TurnRecord
}

func newEventTurns(scan *TurnScan, o ScanOptions) *eventTurns {
	return &eventTurns{scan: scan, fn: o.Records, opts: o, start: -1, stop: -1, pending: map[string]*pendingTurn{},
		traj: map[string]int32{}, nextIndex: map[string]int32{}}
}

// finish emits the samples never completed and records the window, once the
// log is read.
func (et *eventTurns) finish() error {
	// Samples never completed: in flight when the log ended (the reference
	// publishes nothing for a request the end of its run cut), so cancelled.
	for _, u := range et.order {
		p := et.pending[u]
		if p != nil && p.uuid != u {
			p = nil
		}
		if p == nil {
			continue
		}
		p.rec.Status = schemas.StatusCancelled
		p.rec.Error = "cancelled: no complete event in the event log (still in flight when the log ended)"
		if err := et.emit(p); err != nil {
			return err
		}
	}
	if et.stop >= 0 {
		et.scan.WindowStopNs = et.stop - et.origin
	}
	if et.start >= 0 {
		et.scan.WindowStartNs = et.start - et.origin
	}
	return nil
}

func (et *eventTurns) clock(ts int64) int64 {
	if !et.originSet {
		et.origin, et.originSet = ts-1, true
	}
	return ts - et.origin
}

func (et *eventTurns) handle(e *Event, line int) error {
	switch e.Type {
	case "session.start_performance_tracking":
		if et.start < 0 {
			et.start = e.TimestampNs
			if !et.originSet {
				et.clock(e.TimestampNs)
			}
		}
	case "session.stop_performance_tracking":
		if et.stop < 0 {
			et.stop = e.TimestampNs
		}
	case "sample.issued":
		return et.issued(e)
	case "sample.recv_first", "sample.recv_non_first":
		p := et.pending[e.UUID]
		if p == nil {
			return nil
		}
		et.scan.HasStream = true
		t := et.clock(e.TimestampNs)
		if p.rec.FirstTokenNs == 0 {
			p.rec.FirstTokenNs = t
		}
		p.rec.ChunkTimesNs = append(p.rec.ChunkTimesNs, t-p.rec.FirstTokenNs)
		p.rec.Chunks++
	case "sample.complete":
		p := et.pending[e.UUID]
		if p == nil {
			return nil
		}
		p.rec.CompletedNs = et.clock(e.TimestampNs)
		p.rec.FinishReason = e.Finish
		out, err := textOutput(e)
		if err != nil {
			et.scan.Malformed++
			if et.scan.FirstMalformed == "" {
				et.scan.FirstMalformed = fmt.Sprintf("line %d: %v", line, err)
			}
		}
		if out != nil {
			p.rec.Status = schemas.StatusOK
			p.rec.OutputContent, p.rec.OutputReasoning, p.rec.OutputToolCalls = out.content, out.reasoning, out.calls
			p.rec.FirstContentBytes, p.rec.FirstReasoningBytes = out.firstContent, out.firstReasoning
		} else {
			p.rec.Status = schemas.StatusError
			p.rec.Error = "failed (null output)"
			if p.errType != "" {
				p.rec.Error = p.errType + ": " + p.errMsg
			}
			if p.errType == "TurnAbortedByPriorFailure" {
				p.rec.Status = schemas.StatusAborted
			}
		}
		return et.emit(p)
	default:
		if len(e.Type) > 6 && e.Type[:6] == "error." && e.UUID != "" {
			if p := et.pending[e.UUID]; p != nil && p.errType == "" {
				var arr []json.RawMessage
				if json.Unmarshal(e.Data, &arr) == nil && len(arr) >= 2 {
					// A type or message that is not a string leaves the field as it is.
					if t, ok := jsontext.Unquote(bytes.TrimSpace(arr[1])); ok {
						p.errType = t
					}
					if len(arr) >= 3 {
						if m, ok := jsontext.Unquote(bytes.TrimSpace(arr[2])); ok {
							p.errMsg = m
						}
					}
				}
				if p.errType == "" {
					p.errType = e.Type
				}
			}
		}
	}
	return nil
}

func (et *eventTurns) issued(e *Event) error {
	if e.UUID == "" || et.pending[e.UUID] != nil {
		return nil
	}
	conv, repeat, ok := datasets.ParseReferenceSessionID(e.Conv)
	if !ok {
		conv, repeat = e.Conv, 1
	}
	p := &pendingTurn{uuid: e.UUID, issuedTs: e.TimestampNs}
	rec := &p.rec
	rec.SessionID, rec.ConversationID, rec.Repeat = e.Conv, conv, int32(repeat)
	tr, seen := et.traj[e.Conv]
	if !seen {
		tr = int32(len(et.traj))
		et.traj[e.Conv] = tr
	}
	rec.Trajectory = tr
	if e.HasTurn && e.Turn >= math.MinInt32 && e.Turn <= math.MaxInt32 {
		rec.Turn = int32(e.Turn)
	}
	rec.ClientIndex = et.nextIndex[e.Conv]
	et.nextIndex[e.Conv]++
	rec.Domain = datasets.Domain(conv)
	t := et.clock(e.TimestampNs)
	rec.IssuedNs, rec.ScheduledNs = t, t
	rec.InWindow = (et.start < 0 || e.TimestampNs >= et.start) && (et.stop < 0 || e.TimestampNs <= et.stop)
	rec.UsagePromptTokens, rec.UsageCompletionTokens, rec.UsageCachedTokens = -1, -1, -1
	if et.opts.Prompt != nil && rec.InWindow {
		p.extra.ISL, p.extra.HasISL = et.opts.Prompt(e.Data)
	}
	et.pending[e.UUID] = p
	et.order = append(et.order, e.UUID)
	return nil
}

func (et *eventTurns) emit(p *pendingTurn) error {
	delete(et.pending, p.uuid)
	et.out = p.rec
	return et.fn(&et.out, p.extra)
}

// turnOutput is a TextModelOutput rebuilt for the turn log.
type turnOutput struct {
	content, reasoning, calls    string
	firstContent, firstReasoning int32
}

// textOutput rebuilds a complete event's TextModelOutput (nil when it has none):
// content and reasoning joined, tool calls merged as the reference merges them,
// and the bytes of the first streamed chunk (reasoning first when the response
// has any, as servers stream it). A malformed entry of the output is left out,
// as the error says.
func textOutput(e *Event) (*turnOutput, error) {
	data := e.Data
	resp, _, err := e.Output()
	if resp == nil {
		return nil, err
	}
	t := &turnOutput{content: resp.Content, reasoning: resp.Reasoning}
	if len(resp.ToolCalls) > 0 {
		b, err := json.Marshal(resp.ToolCalls)
		if err == nil {
			t.calls = string(b)
		}
	}
	var arr []json.RawMessage
	if json.Unmarshal(data, &arr) == nil {
		first := func(i int) int32 {
			if i >= len(arr) {
				return 0
			}
			v := bytes.TrimSpace(arr[i])
			if len(v) > 0 && v[0] == '[' {
				var parts []string
				if json.Unmarshal(v, &parts) == nil {
					for _, p := range parts {
						if p != "" {
							return int32(len(p))
						}
					}
				}
				return 0
			}
			var s string
			if json.Unmarshal(v, &s) == nil {
				return int32(len(s))
			}
			return 0
		}
		if t.reasoning != "" {
			t.firstReasoning = first(2)
		} else {
			t.firstContent = first(1)
		}
	}
	return t, err
}

// arrayLines turns a JSON array of objects (the submission tools' detail log,
// pretty-printed) into one object a line: newlines outside strings become
// spaces, and each top-level comma a newline. JSON has no raw newline inside a
// string, so the objects are unchanged.
type arrayLines struct {
	r       *bufio.Reader
	depth   int
	inStr   bool
	esc     bool
	started bool
	done    bool
}

func newArrayLines(r io.Reader) io.Reader { return &arrayLines{r: bufio.NewReaderSize(r, 1<<20)} }

func (a *arrayLines) Read(p []byte) (int, error) {
	if a.done {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) {
		c, err := a.r.ReadByte()
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		if !a.started {
			switch c {
			case '[':
				a.started = true
			case '{':
				// Not an array: pass an object (the "no events" {} placeholder) through.
				a.started, a.depth = true, 1
				p[n] = c
				n++
			}
			continue
		}
		switch {
		case a.inStr:
			switch {
			case a.esc:
				a.esc = false
			case c == '\\':
				a.esc = true
			case c == '"':
				a.inStr = false
			}
		case c == '"':
			a.inStr = true
		case c == '{' || c == '[':
			a.depth++
		case c == '}' || c == ']':
			if a.depth == 0 { // the array's closing bracket
				a.done = true
				p[n] = '\n'
				return n + 1, nil
			}
			a.depth--
		case c == ',' && a.depth == 0:
			c = '\n'
		case c == '\n' || c == '\r':
			c = ' '
		}
		p[n] = c
		n++
	}
	return n, nil
}
