package runread

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/toolcall"
	"github.com/agentrace/agentrace/schemas"
)

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

// Event is one decoded line of an event log; Data keeps its raw JSON.
type Event struct {
	Type        string
	TimestampNs int64
	UUID        string
	Conv        string // the conversation_id, with its __repeat_N suffix
	Turn        int64
	HasTurn     bool // Turn was given (not absent or null)
	Data        json.RawMessage
	Finish      string

	// The complete event's output, decoded once for every reader (Output).
	out     *schemas.Response
	calls   json.RawMessage
	outErr  error
	outRead bool
}

// Output is TextModelOutput of the event's data, decoded on the first call and
// shared by every later one: the readers of one pass over a log decode each
// complete event's output once.
func (e *Event) Output() (resp *schemas.Response, calls json.RawMessage, err error) {
	if !e.outRead {
		e.out, e.calls, e.outErr = TextModelOutput(e.Data)
		e.outRead = true
	}
	return e.out, e.calls, e.outErr
}

// scoredLine tells whether an event log line may be of a type scoring reads
// (sample.issued, sample.complete, the performance tracking ones): the many
// chunk events are not.
func scoredLine(line []byte) bool {
	return bytes.Contains(line, []byte("sample.issued")) || bytes.Contains(line, []byte("sample.complete")) ||
		bytes.Contains(line, []byte("_performance_tracking"))
}

// eventKeys are the members of an event line that are read.
var eventKeys = [7]string{"event_type", "timestamp_ns", "sample_uuid", "conversation_id", "turn", "data", "finish_reason"}

// DecodeEvent decodes one line of an event log as the reference's decoder reads
// it; all asks for every event type (chunk and error events too), else only the
// ones scoring reads (issued, complete, performance tracking). ok is false for a
// line to skip; why is empty for a blank line (or one of a type not asked for)
// and says what is wrong with a malformed one. The line is scanned without
// building it in memory: issued events carry whole prompts.
func DecodeEvent(line []byte, all bool) (e *Event, ok bool, why string) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, false, ""
	}
	// Lines of other event types are never looked at beyond their type; skip the
	// full decode for the many chunk events.
	if !all && !scoredLine(line) {
		return nil, false, ""
	}
	// One validating pass (strict JSON, as msgspec decodes the line) keeping the
	// raw values of the keys read; prompts are skipped, never decoded.
	var vals [len(eventKeys)][]byte
	sc := jsontext.NewScanner(line, jsontext.JSON)
	if line[0] != '{' || sc.Fields(eventKeys[:], vals[:]) != nil {
		return nil, false, "not a JSON object"
	}
	if sc.End() != nil {
		return nil, false, "text after the JSON object"
	}
	typ, uuid, conv, turn, data := vals[0], vals[2], vals[3], vals[4], vals[5]
	e = &Event{}
	if fr := vals[6]; fr != nil {
		e.Finish, _ = jsontext.Unquote(fr)
	}
	if e.Type, ok = jsontext.Unquote(typ); !ok {
		return nil, false, "event_type missing or not a string"
	}
	if !knownEventType(e.Type) {
		return nil, false, fmt.Sprintf("unknown event_type %q", e.Type)
	}
	if ts := vals[1]; ts != nil {
		n, err := jsonInt(json.RawMessage(ts))
		if err != nil {
			return nil, false, "timestamp_ns: " + err.Error()
		}
		e.TimestampNs = n
	}
	if uuid != nil {
		if e.UUID, ok = jsontext.Unquote(uuid); !ok {
			return nil, false, "sample_uuid is not a string"
		}
	}
	if conv != nil {
		if e.Conv, ok = jsontext.Unquote(conv); !ok {
			return nil, false, "conversation_id is not a string"
		}
	}
	if turn != nil && string(turn) != "null" {
		n, err := jsonInt(json.RawMessage(turn))
		if err != nil {
			return nil, false, "turn: " + err.Error()
		}
		e.Turn, e.HasTurn = n, true
	}
	if data != nil && string(data) != "null" {
		if why := checkEventData(data); why != "" {
			return nil, false, "data: " + why
		}
		e.Data = json.RawMessage(data)
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
	jsontext.EachElement(v, func(_ int, e []byte) bool { first = e; return false })
	if first == nil {
		return "not a tagged array"
	}
	tag, ok := jsontext.Unquote(first)
	if !ok {
		return "tag is not a string"
	}
	if tag == "PromptData" {
		return "" // the prompt itself is not needed
	}
	var arr []json.RawMessage
	if err := json.Unmarshal(v, &arr); err != nil {
		return "not a tagged array"
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
		if len(arr) > 3 && jsontext.KindOf(arr[3]) != jsontext.Array && string(bytes.TrimSpace(arr[3])) != "null" {
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
	if jsontext.KindOf(v) == jsontext.String {
		return true
	}
	if jsontext.KindOf(v) != jsontext.Array {
		return false
	}
	var parts []json.RawMessage
	if json.Unmarshal(v, &parts) != nil {
		return false
	}
	for _, p := range parts {
		if jsontext.KindOf(p) != jsontext.String {
			return false
		}
	}
	return true
}

// TextModelOutput rebuilds a complete event's TextModelOutput as one assistant
// message (output and reasoning chunks joined, tool calls merged as the
// reference merges them, mergeToolCalls), with the merged tool calls as the JSON
// array the accuracy rules read (nil when none); resp is nil when data is not a
// TextModelOutput. A malformed entry of the output (a tool-call delta that is
// not one) is left out, as the first error says.
func TextModelOutput(data json.RawMessage) (resp *schemas.Response, calls json.RawMessage, err error) {
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
	calls, merged, err := mergeToolCalls(field(3))
	return &schemas.Response{Content: content, Reasoning: reasoning, ToolCalls: merged}, calls, err
}

// joinChunks is a string, or the concatenation of a list of strings; "" for
// null or nothing.
func joinChunks(v json.RawMessage) (string, error) {
	if jsontext.KindOf(v) == jsontext.String {
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
	if jsontext.KindOf(v) != jsontext.Array {
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
	if jsontext.KindOf(items[0]) != jsontext.Array {
		// Already whole calls (a non-streamed response).
		var calls []schemas.ToolCall
		for i, it := range items {
			name, args, ok := SplitToolCall(it)
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
			if jsontext.KindOf(args) == jsontext.String {
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
		if jsontext.KindOf(chunk) != jsontext.Array {
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
	if jsontext.KindOf(raw) != jsontext.Object {
		return nil, errors.New("not an object")
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	d := &toolcall.Delta{}
	var bad []string
	str := func(name string, v json.RawMessage) string {
		if !jsontext.Truthy(v) {
			return ""
		}
		if jsontext.KindOf(v) != jsontext.String {
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
	if fn := m["function"]; jsontext.KindOf(fn) == jsontext.Object {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(fn, &f); err != nil {
			return d, fmt.Errorf("function: %w", err)
		}
		d.Name = str("function.name", f["name"])
		d.Arguments = str("function.arguments", f["arguments"])
	} else if jsontext.Truthy(fn) {
		bad = append(bad, "function is not an object")
	}
	if len(bad) > 0 {
		return d, errors.New(strings.Join(bad, "; "))
	}
	return d, nil
}

// ReadLine returns the next line of br, its newline included, without copying it
// when it fits br's buffer; a longer line is gathered into *long (reused). The
// line is valid until the next call.
func ReadLine(br *bufio.Reader, long *[]byte) ([]byte, error) {
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
	s, ok := jsontext.Unquote(bytes.TrimSpace(v))
	if !ok {
		return ""
	}
	return s
}

// SplitToolCall returns a tool call object's function.name and function.arguments
// (raw JSON, nil when absent); ok is false when the call or its function is not an
// object. Keys are matched exactly, the last of duplicates winning, as in Python
// dictionaries. call is a value already read by a jsontext.Scanner.
func SplitToolCall(call []byte) (name, args []byte, ok bool) {
	function := [...]string{"function"}
	var fn [1][]byte
	if jsontext.KindOf(call) != jsontext.Object || !jsontext.Lookup(call, function[:], fn[:]) || jsontext.KindOf(fn[0]) != jsontext.Object {
		return nil, nil, false
	}
	keys := [...]string{"name", "arguments"}
	var vals [len(keys)][]byte
	jsontext.Lookup(fn[0], keys[:], vals[:])
	return vals[0], vals[1], true
}
