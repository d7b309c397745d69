package score

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/jsonscan"
	"github.com/agentrace/agentrace/internal/toolcall"
	"github.com/agentrace/agentrace/schemas"
)

// EventsFile is the reference client's event log in its report directory.
const EventsFile = "events.jsonl"

// knownEventType tells whether t is an event type of the reference's event log
// (spec §7); its decoder rejects a line of any other type.
func knownEventType(t string) bool {
	switch t {
	case "session.started", "session.ended", "session.stop_loadgen",
		"session.start_performance_tracking", "session.stop_performance_tracking",
		"sample.issued", "sample.recv_first", "sample.recv_non_first", "sample.complete",
		"error.generic", "error.loadgen", "error.session", "error.client":
		return true
	}
	return false
}

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

// rawEvent is one decoded line; fields keep their raw JSON for validation.
type rawEvent struct {
	typ     string
	ts      int64
	uuid    string
	conv    string
	turn    int64
	hasTurn bool
	data    json.RawMessage
	finish  string
	line    int // the line of the log it was read from
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
		line, err := readLine(br, &long)
		if len(line) > 0 {
			lineNo++
			if e, ok, why := decodeEventLine(line); !ok {
				if why != "" {
					run.Skipped++
					if run.FirstSkipped == "" {
						run.FirstSkipped = fmt.Sprintf("line %d: %s", lineNo, why)
					}
				}
			} else {
				e.line = lineNo
				switch e.typ {
				case "session.start_performance_tracking":
					if windowStart < 0 {
						windowStart = e.ts
					}
				case "session.stop_performance_tracking":
					if windowStop < 0 {
						windowStop = e.ts
					}
				case "sample.issued", "sample.complete":
					handleSampleEvent(run, e, truth, uuidKey, issuedAt, &issuedOrder, issued, completedByUUID, seenComplete, model, hasModel, lastOutput)
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

func handleSampleEvent(run *ReferenceRun, e *rawEvent, truth *Truth, uuidKey map[string]eventKey,
	issuedAt map[eventKey]int64, issuedOrder *[]eventKey, issued map[eventKey]bool,
	completedByUUID map[string]*Output, seenComplete map[string]bool,
	model map[eventKey]*Output, hasModel map[eventKey]bool, lastOutput map[string]int) {
	var out *Output
	if e.typ == "sample.complete" {
		var resp *schemas.Response
		var err error
		out, resp, err = textModelOutput(e.data)
		if err != nil {
			run.Malformed++
			if run.FirstMalformed == "" {
				run.FirstMalformed = fmt.Sprintf("line %d: %v", e.line, err)
			}
		}
		if resp != nil {
			// Every completed sample counts for the OSL mean; a second complete
			// of one sample replaces the first.
			if i, ok := lastOutput[e.uuid]; ok && e.uuid != "" {
				run.Completed[i] = *resp
				out.completed = i + 1
			} else {
				lastOutput[e.uuid] = len(run.Completed)
				run.Completed = append(run.Completed, *resp)
				out.completed = len(run.Completed)
			}
		}
	}
	if !e.hasTurn || e.conv == "" {
		return
	}
	conv, repeat, ok := datasets.ParseReferenceSessionID(e.conv)
	if !ok || e.turn < -1<<31 || e.turn >= 1<<31 {
		return
	}
	turn := int32(e.turn)
	if _, ok := truth.Lookup(conv, turn); !ok {
		return
	}
	k := eventKey{conv, repeat, turn}
	if e.typ == "sample.issued" {
		uuidKey[e.uuid] = k
		if !issued[k] {
			issued[k] = true
			issuedAt[k] = e.ts
			*issuedOrder = append(*issuedOrder, k)
		}
		if seenComplete[e.uuid] {
			model[k] = completedByUUID[e.uuid]
			hasModel[k] = true
		}
		return
	}
	if out != nil || !seenComplete[e.uuid] {
		completedByUUID[e.uuid] = out
		seenComplete[e.uuid] = true
	}
	if ik, ok := uuidKey[e.uuid]; ok {
		if out != nil || !hasModel[ik] {
			model[ik] = out
			hasModel[ik] = true
		}
	}
}

// decodeEventLine decodes one line. ok is false for a line to skip; why is empty
// for a blank line and says what is wrong with a malformed one. The line is
// scanned without building it in memory: issued events carry whole prompts.
func decodeEventLine(line []byte) (*rawEvent, bool, string) {
	return decodeEvent(line, false)
}

// eventKeys are the members of an event line that are read.
var eventKeys = [7]string{"event_type", "timestamp_ns", "sample_uuid", "conversation_id", "turn", "data", "finish_reason"}

// decodeEvent decodes one line; all asks for every event type (chunk and error
// events too), else only the ones scoring reads.
func decodeEvent(line []byte, all bool) (*rawEvent, bool, string) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, false, ""
	}
	// Lines of other event types are never looked at beyond their type; skip the
	// full decode for the many chunk events.
	if !all && !bytes.Contains(line, []byte("sample.issued")) && !bytes.Contains(line, []byte("sample.complete")) &&
		!bytes.Contains(line, []byte("_performance_tracking")) {
		return nil, false, ""
	}
	// One validating pass (strict JSON, as msgspec decodes the line) keeping the
	// raw values of the keys read; prompts are skipped, never decoded.
	var vals [len(eventKeys)][]byte
	sc := jsonscan.NewScanner(line, jsonscan.JSON)
	if line[0] != '{' || sc.Fields(eventKeys[:], vals[:]) != nil {
		return nil, false, "not a JSON object"
	}
	if sc.End() != nil {
		return nil, false, "text after the JSON object"
	}
	typ, uuid, conv, turn, data := vals[0], vals[2], vals[3], vals[4], vals[5]
	e := &rawEvent{}
	if fr := vals[6]; fr != nil {
		e.finish, _ = jsonscan.Unquote(fr)
	}
	var ok bool
	if e.typ, ok = jsonscan.Unquote(typ); !ok {
		return nil, false, "event_type missing or not a string"
	}
	if !knownEventType(e.typ) {
		return nil, false, fmt.Sprintf("unknown event_type %q", e.typ)
	}
	if ts := vals[1]; ts != nil {
		n, err := jsonInt(json.RawMessage(ts))
		if err != nil {
			return nil, false, "timestamp_ns: " + err.Error()
		}
		e.ts = n
	}
	if uuid != nil {
		if e.uuid, ok = jsonscan.Unquote(uuid); !ok {
			return nil, false, "sample_uuid is not a string"
		}
	}
	if conv != nil {
		if e.conv, ok = jsonscan.Unquote(conv); !ok {
			return nil, false, "conversation_id is not a string"
		}
	}
	if turn != nil && string(turn) != "null" {
		n, err := jsonInt(json.RawMessage(turn))
		if err != nil {
			return nil, false, "turn: " + err.Error()
		}
		e.turn, e.hasTurn = n, true
	}
	if data != nil && string(data) != "null" {
		if why := checkEventData(data); why != "" {
			return nil, false, "data: " + why
		}
		e.data = json.RawMessage(data)
	}
	return e, true, ""
}

// jsonInt parses a JSON integer (not a float, bool or string) that fits int64.
func jsonInt(v json.RawMessage) (int64, error) {
	s := string(bytes.TrimSpace(v))
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not an integer", s)
	}
	return n, nil
}

// checkEventData validates a tagged array: ["TextModelOutput", output, reasoning,
// tool_calls], ["PromptData", ...] or ["ErrorData", type, message].
func checkEventData(v []byte) string {
	var first []byte
	jsonscan.EachElement(v, func(_ int, e []byte) bool { first = e; return false })
	if first == nil {
		return "not a tagged array"
	}
	tag, ok := jsonscan.Unquote(first)
	if !ok {
		return "tag is not a string"
	}
	if tag == "PromptData" {
		return "" // the prompt itself is not needed
	}
	var arr []json.RawMessage
	if err := json.Unmarshal(v, &arr); err != nil {
		return "not a tagged array: " + err.Error()
	}
	switch tag {
	case "TextModelOutput":
		if len(arr) > 4 {
			return "TextModelOutput has more than 3 fields"
		}
		if len(arr) > 1 && !isTextOrChunks(arr[1], false) {
			return "output is neither a string nor a list of strings"
		}
		if len(arr) > 2 && !isTextOrChunks(arr[2], true) {
			return "reasoning is neither a string nor a list of strings"
		}
		if len(arr) > 3 && jsonscan.KindOf(arr[3]) != jsonscan.Array && string(bytes.TrimSpace(arr[3])) != "null" {
			return "tool_calls is not a list"
		}
	case "ErrorData":
		if len(arr) < 2 || len(arr) > 3 {
			return "ErrorData needs a type and at most a message"
		}
	default:
		return fmt.Sprintf("unknown tag %q", tag)
	}
	return ""
}

func isTextOrChunks(v json.RawMessage, nullable bool) bool {
	if nullable && string(bytes.TrimSpace(v)) == "null" {
		return true
	}
	if jsonscan.KindOf(v) == jsonscan.String {
		return true
	}
	if jsonscan.KindOf(v) != jsonscan.Array {
		return false
	}
	var parts []json.RawMessage
	if json.Unmarshal(v, &parts) != nil {
		return false
	}
	for _, p := range parts {
		if jsonscan.KindOf(p) != jsonscan.String {
			return false
		}
	}
	return true
}

// textModelOutput rebuilds a complete event's TextModelOutput as one assistant
// message; both results are nil when data is not one. A malformed entry of the
// output (a tool-call delta that is not one) is left out, as the first error says.
func textModelOutput(data json.RawMessage) (*Output, *schemas.Response, error) {
	if data == nil {
		return nil, nil, nil
	}
	var arr []json.RawMessage
	if err := json.Unmarshal(data, &arr); err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	}
	if len(arr) == 0 || string(bytes.TrimSpace(arr[0])) != `"TextModelOutput"` {
		return nil, nil, nil
	}
	field := func(i int) json.RawMessage {
		if i < len(arr) {
			return arr[i]
		}
		return nil
	}
	content, err := joinChunks(field(1))
	if err != nil {
		return nil, nil, fmt.Errorf("output: %w", err)
	}
	reasoning, err := joinChunks(field(2))
	if err != nil {
		return nil, nil, fmt.Errorf("reasoning: %w", err)
	}
	out := &Output{Content: content, Reasoning: reasoning}
	calls, merged, err := mergeToolCalls(field(3))
	if calls != nil {
		out.ToolCalls = calls
	}
	resp := &schemas.Response{Content: out.Content, Reasoning: out.Reasoning, ToolCalls: merged}
	return out, resp, err
}

// joinChunks is a string, or the concatenation of a list of strings; "" for
// null or nothing.
func joinChunks(v json.RawMessage) (string, error) {
	if jsonscan.KindOf(v) == jsonscan.String {
		return stringValue(v), nil
	}
	if len(bytes.TrimSpace(v)) == 0 || string(bytes.TrimSpace(v)) == "null" {
		return "", nil
	}
	var parts []string
	if err := json.Unmarshal(v, &parts); err != nil {
		return "", err
	}
	return strings.Join(parts, ""), nil
}

// mergeToolCalls merges a TextModelOutput's tool_calls by the reference's rule
// (internal/toolcall): a list of streamed chunks (each a list of deltas) is merged
// by index and ordered by index; a plain list of calls is kept as is. It returns
// the JSON array for the accuracy rules and the calls for token counting; an entry
// that is not a delta (or not a call) is left out, and the error says where the
// first one is.
func mergeToolCalls(v json.RawMessage) (json.RawMessage, []schemas.ToolCall, error) {
	if jsonscan.KindOf(v) != jsonscan.Array {
		return nil, nil, nil // null or none (checkEventData refused anything else)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, nil, fmt.Errorf("tool_calls: %w", err)
	}
	if len(items) == 0 {
		return nil, nil, nil
	}
	var first error
	note := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	if jsonscan.KindOf(items[0]) != jsonscan.Array {
		// Already whole calls (a non-streamed response).
		var calls []schemas.ToolCall
		for i, it := range items {
			name, args, ok := splitToolCall(it)
			if !ok {
				note(fmt.Errorf("tool_calls[%d] is not a call object with a function object", i))
				continue
			}
			tc := schemas.ToolCall{Index: i}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(it, &m); err != nil {
				note(fmt.Errorf("tool_calls[%d]: %w", i, err))
				continue
			}
			tc.ID, tc.Type, tc.Function.Name = stringValue(m["id"]), stringValue(m["type"]), stringValue(name)
			if jsonscan.KindOf(args) == jsonscan.String {
				tc.Function.Arguments = stringValue(args)
			} else if len(args) > 0 {
				tc.Function.Arguments = string(args)
			}
			calls = append(calls, tc)
		}
		return v, calls, first
	}
	var list toolcall.List
	for i, chunk := range items {
		var deltas []json.RawMessage
		if jsonscan.KindOf(chunk) != jsonscan.Array {
			note(fmt.Errorf("tool_calls[%d] is not a list of deltas", i))
			continue
		}
		if err := json.Unmarshal(chunk, &deltas); err != nil {
			note(fmt.Errorf("tool_calls[%d]: %w", i, err))
			continue
		}
		for j, raw := range deltas {
			d, err := toolCallDelta(raw)
			if err != nil {
				note(fmt.Errorf("tool_calls[%d][%d]: %w", i, j, err))
				if d == nil {
					continue
				}
			}
			list.Merge(*d, nil)
		}
	}
	calls := list.Calls()
	var buf bytes.Buffer
	str := func(s string) {
		b, err := json.Marshal(s)
		note(err)
		buf.Write(b)
	}
	buf.WriteByte('[')
	for i, tc := range calls {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(`{"type":`)
		str(tc.Type)
		if tc.ID != "" {
			buf.WriteString(`,"id":`)
			str(tc.ID)
		}
		buf.WriteString(`,"function":{"arguments":`)
		str(tc.Function.Arguments)
		if tc.Function.Name != "" {
			buf.WriteString(`,"name":`)
			str(tc.Function.Name)
		}
		buf.WriteString("}}")
	}
	buf.WriteByte(']')
	return buf.Bytes(), calls, first
}

// toolCallDelta decodes one streamed delta of an event log's tool_calls. A delta
// that is not an object is nil; an id, type, name or arguments that is truthy but
// not a string (the reference's merge would keep it or fail on it) is left out,
// and the error says which.
func toolCallDelta(raw json.RawMessage) (*toolcall.Delta, error) {
	var m map[string]json.RawMessage
	if jsonscan.KindOf(raw) != jsonscan.Object {
		return nil, errors.New("not an object")
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	d := &toolcall.Delta{}
	var bad []string
	str := func(name string, v json.RawMessage) string {
		if !jsonscan.Truthy(v) {
			return ""
		}
		if jsonscan.KindOf(v) != jsonscan.String {
			bad = append(bad, name+" is not a string")
			return ""
		}
		return stringValue(v)
	}
	if idx := bytes.TrimSpace(m["index"]); len(idx) > 0 && string(idx) != "null" {
		n, err := strconv.ParseInt(string(idx), 10, 64)
		if err != nil || n != int64(int(n)) {
			d.Key = string(idx) // kept apart, as the reference keys it by value
		} else {
			d.Index = int(n)
		}
	}
	d.ID = str("id", m["id"])
	d.Type = str("type", m["type"])
	if fn := m["function"]; jsonscan.KindOf(fn) == jsonscan.Object {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(fn, &f); err != nil {
			return d, fmt.Errorf("function: %w", err)
		}
		d.Name = str("function.name", f["name"])
		d.Arguments = str("function.arguments", f["arguments"])
	} else if jsonscan.Truthy(fn) {
		bad = append(bad, "function is not an object")
	}
	if len(bad) > 0 {
		return d, errors.New(strings.Join(bad, "; "))
	}
	return d, nil
}

// readLine returns the next line of br, its newline included, without copying it
// when it fits br's buffer; a longer line is gathered into *long (reused). The
// line is valid until the next call.
func readLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	*long = append((*long)[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		*long = append(*long, line...)
	}
	return *long, err
}

// stringValue is the value of a JSON string; "" for any other value (null, a
// number, absent): a tool call's id, type or name that is not a string counts
// as none, as encoding/json leaves a string field it cannot store into.
func stringValue(v []byte) string {
	s, ok := jsonscan.Unquote(bytes.TrimSpace(v))
	if !ok {
		return ""
	}
	return s
}
