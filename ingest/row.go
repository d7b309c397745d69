package ingest

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/python"
)

// genParams are the generation parameters a client row may carry, in the order
// Turn.Params lists them.
var genParamOrder = [...]string{
	"model", "max_new_tokens", "max_completion_tokens", "max_tokens", "temperature", "stream",
	"seed", "top_p", "top_k", "repetition_penalty", "n", "stop", "presence_penalty",
	"frequency_penalty", "logit_bias", "user", "chat_template", "chat_template_kwargs", "tool_choice",
}

func isGenParam(k string) bool {
	for _, p := range genParamOrder {
		if p == k {
			return true
		}
	}
	return false
}

// field is one member of a JSON object: its decoded key and raw value.
type field struct {
	key string
	val []byte
}

// row is one flat dataset row (or one row made from a snapshot), with its values as
// raw JSON (nil when absent). Raw slices point into the input buffer.
type row struct {
	line     int64
	chunk    int64 // sequence number of the input chunk its raw slices point into
	size     int   // bytes of its line (flat files)
	convID   string
	hasID    bool
	idRaw    []byte
	turn     int32
	turnOK   bool    // the turn reads as a whole number (turnVal)
	turnSeen bool    // the row has a turn value the reference can sort
	turnVal  float64 // the number the reference reads (pandas: a float, 2.0 for "2")
	order    int     // position in the file among the conversation's rows
	// callIDs are the ids of the tool calls (toolCallIDs, computed once).
	callIDs     []string
	callIDsDone bool

	role        string
	roleRaw     []byte
	content     []byte
	system      []byte
	tools       []byte
	toolCalls   []byte
	toolResults []byte
	reasoning   []byte
	name        []byte
	delay       []byte
	intentCodes []byte
	params      []field
	extra       []field
	// noNumbers are the values among tools, tool_calls, tool_results and
	// content (numberFields) that the line's scan found no number in.
	noNumbers numberFields

	// metadata is set for a `_type: dataset_metadata` record, which is kept as
	// provenance and is not a row.
	metadata bool

	// Set by snapshot conversion: results are given directly.
	results []toolResult
	// problems found in the row alone: the reference refuses the file.
	problems []string
	// warnings found in the row alone: the reference accepts the row (and
	// agentrace does too, unless --strict).
	warnings []string
}

// toolResult is one item of a tool row's tool_results.
type toolResult struct {
	callID    string
	callIDRaw []byte // a tool_call_id that is not a string (rows other than tool rows)
	content   []byte // raw JSON; nil when absent
	extra     []field
}

// numberFields is a set of the values a row's check looks for numbers in, in
// the order it looks: tools, tool_calls, tool_results and content.
type numberFields uint8

const (
	numTools numberFields = 1 << iota
	numToolCalls
	numToolResults
	numContent
)

// with is fs with f in it when in is true, without it otherwise.
func (fs numberFields) with(f numberFields, in bool) numberFields {
	if in {
		return fs | f
	}
	return fs &^ f
}

// keyText is the text of a key token, to compare as string(keyText(k)), which
// does not allocate; keyString copies it.
func keyText(k []byte) []byte {
	if bytes.IndexByte(k, '\\') < 0 {
		return k[1 : len(k)-1]
	}
	s, _ := jsontext.DecodeString(k)
	return []byte(s)
}

func keyString(k []byte) string { return string(keyText(k)) }

func isNull(raw []byte) bool { return raw == nil || (len(raw) == 4 && string(raw) == "null") }

// parseFlatLine parses one line of a flat trace file into a row. A syntax error (or
// a line that is not an object) is returned as an error; problems and warnings
// about the row's values are recorded in the row. It never panics, whatever the
// input.
func parseFlatLine(line []byte, lineNo int64) (*row, error) {
	r := &row{line: lineNo, size: len(line)}
	var typ, turn []byte
	err := parseObjectNumbers(line, func(k, v []byte, numbers int) {
		name := keyText(k)
		switch string(name) {
		case "conversation_id":
			r.idRaw = v
		case "turn":
			turn = v
		case "role":
			r.roleRaw = v
		case "content":
			r.content = v
			r.noNumbers = r.noNumbers.with(numContent, numbers == 0)
		case "system":
			r.system = v
		case "tools":
			r.tools = v
			r.noNumbers = r.noNumbers.with(numTools, numbers == 0)
		case "tool_calls":
			r.toolCalls = v
			r.noNumbers = r.noNumbers.with(numToolCalls, numbers == 0)
		case "tool_results":
			r.toolResults = v
			r.noNumbers = r.noNumbers.with(numToolResults, numbers == 0)
		case "reasoning_content":
			r.reasoning = v
		case "name":
			r.name = v
		case "delay_seconds":
			r.delay = v
		case "intent_codes":
			r.intentCodes = v
		case "_type":
			typ = v
			r.extra = setField(r.extra, "_type", v)
		default:
			key := string(name)
			if isGenParam(key) {
				r.params = setField(r.params, key, v)
			} else {
				r.extra = setField(r.extra, key, v)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if typ != nil {
		if s, ok := jsontext.DecodeString(typ); ok && s == "dataset_metadata" {
			r.metadata = true
			return r, nil
		}
	}
	r.checkID()
	if isNull(r.roleRaw) {
		r.problem("role missing")
	} else if s, ok := jsontext.DecodeString(r.roleRaw); ok {
		r.role = s
	} else {
		r.problemf("role is a JSON %s, not a string", kind(r.roleRaw))
	}
	if isNull(turn) {
		r.problem("turn missing")
	} else {
		r.turnRaw(turn)
	}
	r.check()
	return r, nil
}

// setField sets key to v, a later duplicate key replacing an earlier one (as
// Python's json module does).
func setField(fs []field, key string, v []byte) []field {
	for i := range fs {
		if fs[i].key == key {
			fs[i].val = v
			return fs
		}
	}
	return append(fs, field{key, v})
}

func (r *row) problem(s string) { r.problems = append(r.problems, s) }
func (r *row) problemf(format string, a ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, a...))
}
func (r *row) warnf(format string, a ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, a...))
}

// turnRaw reads the turn number as the reference does: pandas makes the column
// numeric (a numeric string or a boolean becomes its number), the rows of a
// conversation are sorted by it, and the sorted values must be exactly 1..N. A
// value that cannot be a number makes the reference fail.
func (r *row) turnRaw(v []byte) {
	r.turnOK, r.turnSeen = false, false
	var f float64
	switch kind(v) {
	case "number":
		if n, err := strconv.ParseInt(string(v), 10, 32); err == nil {
			r.turn, r.turnVal, r.turnOK, r.turnSeen = int32(n), float64(n), true, true
			return
		}
		f, _ = strconv.ParseFloat(string(v), 64)
		if !numberIsInt(v) && f == math.Trunc(f) {
			r.warnf("turn %s is a float: the reference reads it as %d", v, int64(f))
		}
	case "string":
		s, _ := jsontext.DecodeString(v)
		x, ok := python.Float(s)
		if !ok {
			r.problemf("turn %s is not a number", orMissing(v))
			return
		}
		f = x
		r.warnf("turn %s is a string: the reference reads it as the number %s", v, python.FloatRepr(f))
	case "boolean":
		if string(v) == "true" {
			f = 1
		}
		r.warnf("turn %s is a boolean: the reference reads it as %g", v, f)
	default:
		r.problemf("turn is a JSON %s, not a number", kind(v))
		return
	}
	r.turnVal, r.turnSeen = f, true
	if f == math.Trunc(f) && f >= math.MinInt32 && f <= math.MaxInt32 {
		r.turn, r.turnOK = int32(f), true
	} else {
		r.problemf("turn %s is not a whole number (turn numbers must run 1, 2, ... N)", orMissing(v))
	}
}

// checkID reads conversation_id as the reference does: a string is its id, a
// number or a boolean is read as its Python str(); it must not be "" or "nan" and
// must be printable ASCII; an array or an object cannot group rows.
func (r *row) checkID() {
	if isNull(r.idRaw) {
		r.problem("conversation_id missing")
		return
	}
	var s string
	switch kind(r.idRaw) {
	case "string":
		s, _ = jsontext.DecodeString(r.idRaw)
	case "number":
		s = pyNumberStr(r.idRaw)
		r.warnf("conversation_id %s is a number: the reference uses its Python str() %q as the id (in the session id and the salt)", r.idRaw, s)
	case "boolean":
		s = "True"
		if string(r.idRaw) == "false" {
			s = "False"
		}
		r.warnf("conversation_id %s is a boolean: the reference uses %q as the id", r.idRaw, s)
	default:
		r.problemf("conversation_id is a JSON %s, not a string", kind(r.idRaw))
		return
	}
	r.convID, r.hasID = s, true
	switch {
	case s == "":
		r.problem("conversation_id is empty")
	case s == "nan":
		r.problemf("conversation_id is %q", s)
	default:
		for i := 0; i < len(s); i++ {
			if s[i] < 32 || s[i] > 126 {
				r.problemf("conversation_id %q has a control or non-ASCII character at byte %d", s, i)
				break
			}
		}
	}
}

func emptyValue(raw []byte) bool {
	if isNull(raw) {
		return true
	}
	switch string(raw) {
	case `""`, `[]`, `{}`:
		return true
	}
	return false
}

// check validates the row's values by themselves: problems for what the
// reference's loader refuses, warnings for what it accepts but agentrace would not
// without --strict. Sequence checks come later, per conversation.
func (r *row) check() {
	switch r.role {
	case "user":
		switch k := kind(r.content); {
		case isNull(r.content):
			r.problem("user row without content")
		case string(r.content) == `""`:
			r.problem("user row with empty content")
		case k == "array" && emptyValue(r.content):
			r.warnf("user content is an empty list: the reference sends it as is")
		case k != "string" && k != "array":
			r.warnf("user content is a JSON %s: the reference sends it as is", k)
		}
		if !isNull(r.toolCalls) {
			r.warnf("tool_calls on a user row: the reference sends them in the user message")
		}
	case "assistant":
		hasCalls := kind(r.toolCalls) == "array" && !emptyValue(r.toolCalls)
		if hasCalls {
			r.checkToolCalls()
		} else if !isNull(r.toolCalls) {
			r.problem("tool_calls present but not a non-empty list")
		}
		if !hasCalls && (isNull(r.content) || string(r.content) == `""`) {
			r.problem("assistant row with neither content nor tool_calls")
		}
		if k := kind(r.content); !isNull(r.content) && k != "string" && k != "array" {
			r.warnf("assistant content is a JSON %s: the reference sends it as is", k)
		}
	case "tool":
		if r.results == nil {
			r.checkToolResults()
		}
	case "":
		if r.roleRaw != nil && !isNull(r.roleRaw) {
			r.problem(`unknown role ""`)
		}
	default:
		r.problemf("unknown role %q", r.role)
	}
	if r.role != "tool" && kind(r.toolResults) == "array" && !emptyValue(r.toolResults) {
		// The reference's message builder expands any row's tool_results list.
		r.warnf("tool_results on a %s row: the reference sends its results as tool messages in place of the %s message", r.role, r.role)
		r.checkToolResults()
	}
	if !isNull(r.reasoning) && kind(r.reasoning) != "string" {
		r.warnf("reasoning_content is a JSON %s: the reference sends it as is", kind(r.reasoning))
	}
	if !isNull(r.name) && kind(r.name) != "string" {
		r.warnf("name is a JSON %s: the reference sends it as is", kind(r.name))
	}
	if !isNull(r.system) && kind(r.system) != "string" {
		r.warnf("system is a JSON %s, not a string: not a system prompt (the reference ignores it)", kind(r.system))
	}
	if !isNull(r.tools) && kind(r.tools) != "array" {
		r.warnf("tools is a JSON %s, not a list: the reference sends it as is", kind(r.tools))
	}
	if !isNull(r.intentCodes) && kind(r.intentCodes) != "array" {
		r.warnf("intent_codes is a JSON %s, not a list", kind(r.intentCodes))
	}
	if !isNull(r.delay) {
		d, why := delayValue(r.delay)
		switch {
		case d > MaxDelaySeconds:
			r.warnf("delay_seconds %s is more than %d s: replay waits %d s (the reference would wait %ss, and never issue the next turn)", orMissing(r.delay), MaxDelaySeconds, MaxDelaySeconds, python.FloatRepr(d))
		case why != "":
			r.warnf("delay_seconds %s %s: the reference waits %ss", orMissing(r.delay), why, python.FloatRepr(d))
		}
	}
	for i, f := range [...]field{{"tools", r.tools}, {"tool_calls", r.toolCalls}, {"tool_results", r.toolResults}, {"content", r.content}} {
		if r.noNumbers&(1<<i) != 0 {
			continue
		}
		if kind(f.val) == "array" || kind(f.val) == "object" || kind(f.val) == "number" {
			if note := pandasNumberNote(f.val); note != "" {
				r.warnf("%s: %s", f.key, note)
			}
		}
	}
	for _, p := range r.params {
		if isNull(p.val) {
			continue
		}
		if k := kind(p.val); k != "string" && k != "boolean" {
			if note := pandasNumberNote(p.val); note != "" {
				r.warnf("%s: %s", p.key, note)
			}
		}
		switch p.key {
		case "max_new_tokens", "max_completion_tokens", "max_tokens":
			if f, err := strconv.ParseFloat(string(p.val), 64); kind(p.val) == "number" && err != nil && math.IsInf(f, 0) {
				r.warnf("%s %s is infinite: the reference takes it as set and sends null", p.key, orMissing(p.val))
			} else if n, err := strconv.ParseInt(string(p.val), 10, 32); err != nil || n < 1 {
				r.warnf("%s %s is not a positive integer: the reference sends it as is (a zero or empty value falls through to the next max-tokens setting)", p.key, orMissing(p.val))
			}
		case "stream":
			if kind(p.val) != "boolean" {
				r.warnf("stream %s is not a boolean: the reference sends it as is", orMissing(p.val))
			}
		case "model":
			if kind(p.val) != "string" {
				r.warnf("model is a JSON %s: the reference sends it as is", kind(p.val))
			}
		}
	}
}

// MaxDelaySeconds caps the delay replay waits before a client turn: a longer one
// (1e308, an overflow to infinity) is a warning at ingest, and replay waits this
// long instead. Real traces' delays are seconds to a few minutes.
const MaxDelaySeconds = 3600

// waitedDelay is the delay replay waits for a raw delay_seconds value: the
// reference's (delayValue), capped at MaxDelaySeconds.
func waitedDelay(raw []byte) float64 {
	d, _ := delayValue(raw)
	return min(d, MaxDelaySeconds)
}

// delayValue returns the delay the reference waits before a client turn with the
// raw delay_seconds value: Python's float() of it when that works and is positive,
// else 0; why says what is unusual about the value ("" when it is a non-negative
// number).
func delayValue(raw []byte) (float64, string) {
	switch kind(raw) {
	case "number":
		d, _ := strconv.ParseFloat(string(raw), 64)
		if d < 0 {
			return 0, "is negative"
		}
		if math.IsInf(d, 0) {
			return d, "overflows a float"
		}
		return d, ""
	case "string":
		s, _ := jsontext.DecodeString(raw)
		d, ok := python.Float(s)
		if !ok {
			return 0, "is a string that is not a number"
		}
		if !(d > 0) {
			return 0, "is a string"
		}
		return d, "is a string"
	case "boolean":
		if string(raw) == "true" {
			return 1, "is a boolean"
		}
		return 0, "is a boolean"
	case "null":
		return 0, ""
	}
	return 0, "is a JSON " + kind(raw)
}

func (r *row) checkToolCalls() {
	// The walk also collects the calls' ids, as toolCallIDs would with a walk of
	// its own.
	var ids []string
	jsontext.EachElementMembers(r.toolCalls, func(k int, v []byte, members []jsontext.Member) bool {
		if members == nil {
			r.problemf("tool_calls[%d] is a JSON %s, not an object", k, kind(v))
			return true
		}
		var typ, fn []byte
		var id string
		idOK := false
		for _, m := range members {
			switch string(keyText(m.Key)) {
			case "id":
				if id, idOK = jsontext.DecodeString(m.Val); idOK {
					ids = append(ids, id)
				}
			case "type":
				typ = m.Val
			case "function":
				fn = m.Val
			}
		}
		if !idOK || id == "" {
			r.problemf("tool_calls[%d] has an empty or missing id", k)
		}
		if s, ok := jsontext.DecodeString(typ); !ok || s != "function" {
			r.problemf("tool_calls[%d] type is %s, not \"function\"", k, orMissing(typ))
		}
		if kind(fn) != "object" || fn == nil {
			r.problemf("tool_calls[%d].function is not an object", k)
			return true
		}
		var name, args []byte
		jsontext.EachMember(fn, func(key, val []byte) {
			switch string(keyText(key)) {
			case "name":
				name = val
			case "arguments":
				args = val
			}
		})
		if s, ok := jsontext.DecodeString(name); !ok || s == "" {
			r.problemf("tool_calls[%d].function.name is empty or missing", k)
		}
		if k2 := kind(args); args == nil || (k2 != "string" && k2 != "object") {
			r.problemf("tool_calls[%d].function.arguments is %s, neither a string nor an object", k, orMissing(args))
		}
		return true
	})
	r.callIDs, r.callIDsDone = ids, true
}

func orMissing(raw []byte) string {
	if raw == nil {
		return "missing"
	}
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}

// checkToolResults reads a row's tool_results as the reference does: a tool row
// needs a non-empty list of objects, each with a non-empty string tool_call_id and
// a content member that is not null. (Another row's list only needs objects whose
// tool_call_id and content are not null.)
func (r *row) checkToolResults() {
	tool := r.role == "tool"
	if tool && (kind(r.toolResults) != "array" || emptyValue(r.toolResults)) {
		if isNull(r.toolResults) {
			r.problem("tool row without tool_results")
		} else {
			r.problem("tool_results is not a non-empty list")
		}
		return
	}
	r.results = []toolResult{}
	jsontext.EachElementMembers(r.toolResults, func(k int, v []byte, members []jsontext.Member) bool {
		if members == nil {
			r.problemf("tool_results[%d] is a JSON %s, not an object", k, kind(v))
			return true
		}
		var res toolResult
		var id []byte
		for _, m := range members {
			switch name := keyText(m.Key); string(name) {
			case "tool_call_id":
				id = m.Val
			case "content":
				res.content = m.Val
			default:
				res.extra = setField(res.extra, string(name), m.Val)
			}
		}
		if s, ok := jsontext.DecodeString(id); ok && s != "" {
			res.callID = s
		} else if tool || isNull(id) {
			r.problemf("tool_results[%d] has an empty or missing tool_call_id", k)
		} else {
			res.callIDRaw = id
		}
		switch {
		case res.content == nil:
			r.problemf("tool_results[%d] lacks content", k)
		case isNull(res.content):
			r.problemf("tool_results[%d].content is null", k)
		}
		r.results = append(r.results, res)
		return true
	})
}

// toolCallIDs returns the ids of an assistant row's tool calls.
func (r *row) toolCallIDs() []string {
	if r.callIDsDone {
		return r.callIDs
	}
	r.callIDsDone = true
	var ids []string
	if kind(r.toolCalls) != "array" {
		return nil
	}
	defer func() { r.callIDs = ids }()
	_ = eachElement(r.toolCalls, func(k int, v []byte) error {
		if kind(v) == "object" {
			jsontext.EachMember(v, func(key, val []byte) {
				if string(keyText(key)) == "id" {
					if s, ok := jsontext.DecodeString(val); ok {
						ids = append(ids, s)
					}
				}
			})
		}
		return nil
	})
	return ids
}
