package ingest

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/datasets"
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
	convID   string
	hasID    bool
	idRaw    []byte
	turn     int32
	turnOK   bool
	turnSeen bool

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

	// metadata is set for a `_type: dataset_metadata` record, which is kept as
	// provenance and is not a row.
	metadata bool

	// Set by snapshot conversion: results are given directly.
	results []toolResult
	// problems found in the row alone.
	problems []string
}

// toolResult is one item of a tool row's tool_results.
type toolResult struct {
	callID  string
	content []byte // raw JSON; nil when absent
	extra   []field
}

func keyString(k []byte) string {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k[1 : len(k)-1])
	}
	s, _ := datasets.DecodeString(k)
	return s
}

func isNull(raw []byte) bool { return raw == nil || (len(raw) == 4 && string(raw) == "null") }

// ParseLine parses one line of a flat trace file into a row. A syntax error (or a
// line that is not an object) is returned as an error; problems with the row's
// values are recorded in the row. It never panics, whatever the input.
func parseFlatLine(line []byte, lineNo int64) (*row, error) {
	r := &row{line: lineNo}
	var typ []byte
	err := parseObject(line, func(k, v []byte) {
		key := keyString(k)
		switch key {
		case "conversation_id":
			r.idRaw = v
		case "turn":
			r.turnRaw(v)
		case "role":
			r.roleRaw = v
		case "content":
			r.content = v
		case "system":
			r.system = v
		case "tools":
			r.tools = v
		case "tool_calls":
			r.toolCalls = v
		case "tool_results":
			r.toolResults = v
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
			r.extra = setField(r.extra, key, v)
		default:
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
		if s, ok := datasets.DecodeString(typ); ok && s == "dataset_metadata" {
			r.metadata = true
			return r, nil
		}
	}
	r.checkID()
	if r.roleRaw == nil {
		r.problem("role missing")
	} else if s, ok := datasets.DecodeString(r.roleRaw); ok {
		r.role = s
	} else {
		r.problemf("role is a JSON %s, not a string", kind(r.roleRaw))
	}
	if !r.turnSeen {
		r.problem("turn missing")
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

// turnRaw decodes the turn number: it must be an integer literal.
func (r *row) turnRaw(v []byte) {
	r.turnOK, r.turnSeen = false, true
	n, err := strconv.ParseInt(string(v), 10, 32)
	if err != nil {
		if kind(v) == "number" {
			r.problemf("turn %s is not an integer", v)
		} else {
			r.problemf("turn is a JSON %s, not an integer", kind(v))
		}
		return
	}
	r.turn, r.turnOK = int32(n), true
}

// checkID validates conversation_id: a non-empty printable-ASCII string, not "nan".
func (r *row) checkID() {
	if r.idRaw == nil {
		r.problem("conversation_id missing")
		return
	}
	s, ok := datasets.DecodeString(r.idRaw)
	if !ok {
		r.problemf("conversation_id is a JSON %s, not a string", kind(r.idRaw))
		return
	}
	r.convID, r.hasID = s, true
	switch {
	case s == "":
		r.problem("conversation_id is empty")
	case strings.EqualFold(s, "nan"):
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

// check validates the row's values by themselves (spec §1); sequence checks come
// later, per conversation.
func (r *row) check() {
	if r.idRaw != nil && r.turnOK && r.turn < 1 {
		r.problemf("turn %d is below 1", r.turn)
	}
	switch r.role {
	case "user":
		if isNull(r.content) {
			r.problem("user row without content")
		} else if emptyValue(r.content) {
			r.problem("user row with empty content")
		} else if k := kind(r.content); k != "string" && k != "array" {
			r.problemf("user content is a JSON %s, not a string or a list", k)
		}
	case "assistant":
		hasCalls := !isNull(r.toolCalls)
		if hasCalls {
			r.checkToolCalls()
		}
		if !hasCalls && emptyValue(r.content) {
			r.problem("assistant row with neither content nor tool_calls")
		}
		if !isNull(r.content) {
			if k := kind(r.content); k != "string" && k != "array" {
				r.problemf("assistant content is a JSON %s, not a string or a list", k)
			}
		}
	case "tool":
		if r.results == nil {
			r.checkToolResults()
		}
	case "":
		if r.roleRaw != nil {
			r.problem(`unknown role ""`)
		}
	default:
		r.problemf("unknown role %q", r.role)
	}
	if !isNull(r.toolCalls) && r.role != "assistant" && r.role != "" {
		r.problemf("tool_calls on a %s row", r.role)
	}
	if !isNull(r.reasoning) && kind(r.reasoning) != "string" {
		r.problemf("reasoning_content is a JSON %s, not a string", kind(r.reasoning))
	}
	if !isNull(r.name) && kind(r.name) != "string" {
		r.problemf("name is a JSON %s, not a string", kind(r.name))
	}
	if !isNull(r.system) && kind(r.system) != "string" {
		r.problemf("system is a JSON %s, not a string", kind(r.system))
	}
	if !isNull(r.tools) && kind(r.tools) != "array" {
		r.problemf("tools is a JSON %s, not a list", kind(r.tools))
	}
	if !isNull(r.intentCodes) && kind(r.intentCodes) != "array" {
		r.problemf("intent_codes is a JSON %s, not a list", kind(r.intentCodes))
	}
	if !isNull(r.delay) {
		d, err := strconv.ParseFloat(string(r.delay), 64)
		if kind(r.delay) != "number" || err != nil || d < 0 {
			r.problemf("delay_seconds %s is not a non-negative number", r.delay)
		}
	}
	for _, p := range r.params {
		switch p.key {
		case "max_new_tokens", "max_completion_tokens", "max_tokens":
			if isNull(p.val) {
				continue
			}
			if n, err := strconv.ParseInt(string(p.val), 10, 32); err != nil || n < 1 {
				r.problemf("%s %s is not a positive integer", p.key, p.val)
			}
		}
	}
}

func (r *row) checkToolCalls() {
	if kind(r.toolCalls) != "array" || emptyValue(r.toolCalls) {
		r.problem("tool_calls present but not a non-empty list")
		return
	}
	_ = eachElement(r.toolCalls, func(k int, v []byte) error {
		if kind(v) != "object" {
			r.problemf("tool_calls[%d] is a JSON %s, not an object", k, kind(v))
			return nil
		}
		var id, typ, fn []byte
		eachMember(v, func(key, val []byte) {
			switch keyString(key) {
			case "id":
				id = val
			case "type":
				typ = val
			case "function":
				fn = val
			}
		})
		if s, ok := datasets.DecodeString(id); !ok || s == "" {
			r.problemf("tool_calls[%d] has an empty or missing id", k)
		}
		if s, ok := datasets.DecodeString(typ); !ok || s != "function" {
			r.problemf("tool_calls[%d] type is %s, not \"function\"", k, orMissing(typ))
		}
		if kind(fn) != "object" || fn == nil {
			r.problemf("tool_calls[%d].function is not an object", k)
			return nil
		}
		var name, args []byte
		eachMember(fn, func(key, val []byte) {
			switch keyString(key) {
			case "name":
				name = val
			case "arguments":
				args = val
			}
		})
		if s, ok := datasets.DecodeString(name); !ok || s == "" {
			r.problemf("tool_calls[%d].function.name is empty or missing", k)
		}
		if k2 := kind(args); args == nil || (k2 != "string" && k2 != "object") {
			r.problemf("tool_calls[%d].function.arguments is %s, neither a string nor an object", k, orMissing(args))
		}
		return nil
	})
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

func (r *row) checkToolResults() {
	if isNull(r.toolResults) {
		r.problem("tool row without tool_results")
		return
	}
	if kind(r.toolResults) != "array" || emptyValue(r.toolResults) {
		r.problem("tool_results is not a non-empty list")
		return
	}
	r.results = []toolResult{}
	_ = eachElement(r.toolResults, func(k int, v []byte) error {
		if kind(v) != "object" {
			r.problemf("tool_results[%d] is a JSON %s, not an object", k, kind(v))
			return nil
		}
		var res toolResult
		var id []byte
		eachMember(v, func(key, val []byte) {
			switch ks := keyString(key); ks {
			case "tool_call_id":
				id = val
			case "content":
				res.content = val
			default:
				res.extra = setField(res.extra, ks, val)
			}
		})
		if s, ok := datasets.DecodeString(id); !ok || s == "" {
			r.problemf("tool_results[%d] has an empty or missing tool_call_id", k)
		} else {
			res.callID = s
		}
		if res.content == nil {
			r.problemf("tool_results[%d] lacks content", k)
		}
		r.results = append(r.results, res)
		return nil
	})
}

// toolCallIDs returns the ids of an assistant row's tool calls.
func (r *row) toolCallIDs() []string {
	var ids []string
	if kind(r.toolCalls) != "array" {
		return nil
	}
	_ = eachElement(r.toolCalls, func(k int, v []byte) error {
		if kind(v) == "object" {
			eachMember(v, func(key, val []byte) {
				if keyString(key) == "id" {
					if s, ok := datasets.DecodeString(val); ok {
						ids = append(ids, s)
					}
				}
			})
		}
		return nil
	})
	return ids
}
