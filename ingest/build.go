package ingest

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"unsafe"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/schemas"
)

// built is one conversation ready for the dataset writer.
type built struct {
	conv  schemas.Conversation
	msgs  []schemas.Message
	turns []schemas.Turn
}

// sortByTurn orders a conversation's rows by turn number, as the reference does
// before anything else (rows whose turn cannot be read go last, in file order), and
// reports whether the file order differed.
func sortByTurn(rows []*row) bool {
	for i, r := range rows {
		r.order = i
	}
	sorted := sort.SliceIsSorted(rows, func(i, j int) bool { return turnLess(rows[i], rows[j]) })
	if !sorted {
		sort.SliceStable(rows, func(i, j int) bool { return turnLess(rows[i], rows[j]) })
	}
	return !sorted
}

func turnLess(a, b *row) bool {
	if a.turnSeen != b.turnSeen {
		return a.turnSeen
	}
	return a.turnSeen && a.turnVal < b.turnVal
}

// validateSequence checks the rows of one conversation, sorted by turn, against
// each other as the reference's loader does (role order, tool rows after tool
// calls, turns 1..N), reporting each problem through report; warn gets what the
// reference does not check (a tool_call_id answering no call of the assistant row
// before it, a tool call that the tool row after it does not answer).
func validateSequence(rows []*row, report, warn func(r *row, msg string)) {
	numbered := true
	for _, r := range rows {
		numbered = numbered && r.turnSeen && r.turnOK
	}
	if numbered {
		for k, r := range rows {
			switch {
			case k == 0 && r.turnVal != 1:
				report(r, fmt.Sprintf("turn numbers start at %d, not 1", r.turn))
			case k > 0 && r.turnVal == rows[k-1].turnVal:
				report(r, fmt.Sprintf("turn %d duplicated", r.turn))
			case k > 0 && r.turnVal != rows[k-1].turnVal+1:
				report(r, fmt.Sprintf("turn %d follows turn %d (a gap)", r.turn, rows[k-1].turn))
			}
		}
	}
	state := "start"
	var prev *row
	prevCalls := false // the previous row is an assistant row with tool calls
	var calls []string
	for _, r := range rows {
		switch r.role {
		case schemas.RoleUser:
			switch state {
			case schemas.RoleUser:
				report(r, "user row after a user row")
			case schemas.RoleAssistant:
				if prevCalls {
					report(r, "user row right after an assistant row with tool_calls")
				}
			}
		case schemas.RoleAssistant:
			switch state {
			case "start":
				report(r, "first row is assistant, not user")
			case schemas.RoleAssistant:
				report(r, "assistant row after an assistant row")
			}
		case schemas.RoleTool:
			switch state {
			case "start":
				report(r, "first row is tool, not user")
			case schemas.RoleUser:
				report(r, "tool row after a user row")
			case schemas.RoleTool:
				report(r, "tool row after a tool row (parallel results belong in one row)")
			case schemas.RoleAssistant:
				if !prevCalls {
					report(r, "tool row after an assistant row without tool_calls")
					break
				}
				for i, res := range r.results {
					if res.callID != "" && !contains(calls, res.callID) {
						warn(r, fmt.Sprintf("tool_results[%d].tool_call_id %q answers no tool call of the assistant row before it (turn %d)", i, res.callID, prev.turn))
					}
				}
				for _, id := range calls {
					answered := false
					for _, res := range r.results {
						answered = answered || res.callID == id
					}
					if !answered {
						warn(prev, fmt.Sprintf("tool call %q has no result in the tool row after it (turn %d): the reference sends the call unanswered", id, r.turn))
					}
				}
			}
		default:
			continue // an unknown role is reported with its row
		}
		prevCalls = r.role == schemas.RoleAssistant && kind(r.toolCalls) == "array" && !emptyValue(r.toolCalls)
		if prevCalls {
			calls = r.toolCallIDs()
		}
		state, prev = r.role, r
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// appendObject appends fields as a JSON object, each value as value appends it
// (jsontext.AppendCompact; appendParamValue for generation parameters).
func appendObject(dst []byte, fs []field, value func(dst, raw []byte) []byte) []byte {
	dst = append(dst, '{')
	for i, f := range fs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsontext.AppendString(dst, f.key)
		dst = append(dst, ':')
		dst = value(dst, f.val)
	}
	return append(dst, '}')
}

// appendParamValue appends a generation parameter's raw value compacted, except
// that a number that overflows to an infinity (Infinity in the file, read as
// 1e999) is kept as 1e999 or -1e999: the reference sends such a value as null but
// takes it as set (and true), where a null parameter is unset.
func appendParamValue(dst, raw []byte) []byte {
	if kind(raw) == "number" {
		if f, err := strconv.ParseFloat(string(raw), 64); err != nil && math.IsInf(f, 0) {
			if f < 0 {
				return append(dst, "-1e999"...)
			}
			return append(dst, "1e999"...)
		}
	}
	return jsontext.AppendCompact(dst, raw)
}

func strPtr(raw []byte) *string {
	if isNull(raw) {
		return nil
	}
	s, ok := jsontext.DecodeString(raw)
	if !ok {
		return nil
	}
	return &s
}

// appendStringToken appends the raw JSON string token in the wire encoding (a
// copy when it already is) and returns the decoded string.
func appendStringToken(w, raw []byte) ([]byte, *string) {
	if len(raw) < 2 {
		return w, nil
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		// No escapes: the decoded string is the token's body, shared with the wire
		// fragment (which is never modified once built).
		n := len(w)
		w = append(w, raw...)
		s := unsafe.String(&w[n+1], len(body))
		if len(body) == 0 {
			s = ""
		}
		return w, &s
	}
	s, canonical := jsontext.DecodeValidString(raw)
	if canonical {
		w = append(w, raw...)
	} else {
		w = jsontext.AppendString(w, s)
	}
	return w, &s
}

// appendContentField stores a raw content value in m (text, structured JSON, or
// nothing when absent or null) and appends its wire member to w.
func appendContentField(w []byte, m *schemas.Message, raw []byte) []byte {
	if isNull(raw) {
		return w
	}
	w = append(w, `,"content":`...)
	if kind(raw) == "string" {
		w, m.Content = appendStringToken(w, raw)
		return w
	}
	n := len(w)
	w = jsontext.AppendCompact(w, raw)
	s := string(w[n:])
	m.Content, m.ContentJSON = &s, true
	return w
}

// appendOptional appends a message member that Message keeps as a string: a JSON
// string is stored in *dst and sent; any other value is sent as is (canonical) and
// kept for export in the message's extra fields.
func appendOptional(w []byte, key string, raw []byte, dst **string, extra *[]field) []byte {
	w = append(w, ',', '"')
	w = append(w, key...)
	w = append(w, '"', ':')
	if kind(raw) == "string" {
		w, *dst = appendStringToken(w, raw)
		return w
	}
	*extra = append(*extra, field{key, raw})
	return jsontext.AppendCompact(w, raw)
}

// inheritedKeys are the values the first user row of a conversation passes on to
// the client rows that lack them (tools aside, which ingest resolves itself).
var inheritedKeys = [...]string{"model", "max_completion_tokens", "max_new_tokens", "stream"}

// buildConversation turns the validated rows of one conversation, sorted by turn,
// into its dataset rows, building each message as the reference's loader does.
func buildConversation(id string, index int32, source string, rows []*row) built {
	var b built
	c := &b.conv
	c.ConversationID, c.Index, c.Domain, c.Source = id, index, datasets.Domain(id), source
	c.Rows = int32(len(rows))
	// The system prompt: the first non-empty string `system` in turn order.
	sysRow := -1
	for k, r := range rows {
		if kind(r.system) == "string" && string(r.system) != `""` {
			c.System, c.HasSystem = *strPtr(r.system), true
			sysRow = k
			break
		}
	}
	c.SystemEscaped = string(jsontext.AppendEscaped(nil, c.System))
	// The first user row in file order passes its tools and inheritedKeys on.
	var firstUser *row
	for _, r := range rows {
		if r.role == schemas.RoleUser && (firstUser == nil || r.order < firstUser.order) {
			firstUser = r
		}
	}
	var firstTools, inherited string
	if firstUser != nil {
		if !isNull(firstUser.tools) {
			firstTools = string(jsontext.AppendCompact(nil, firstUser.tools))
		}
		var fs []field
		for _, k := range inheritedKeys {
			for _, p := range firstUser.params {
				if p.key == k && !isNull(p.val) {
					fs = append(fs, p)
				}
			}
		}
		if len(fs) > 0 {
			inherited = string(appendObject(nil, fs, appendParamValue))
		}
	}
	// Unsalted system message, for HistoryBytes.
	sysLen := 0
	if c.HasSystem {
		sysLen = len(datasets.AppendSystemMessage(nil, c.SystemEscaped, "", ""))
	}
	histLen := 0 // bytes of the joined wire fragments so far (with commas)
	nmsg, nturns := 0, 0
	for _, r := range rows {
		nmsg += max(1, len(r.results))
		if r.role == schemas.RoleUser || r.role == schemas.RoleTool {
			nturns++
		}
	}
	b.msgs = make([]schemas.Message, 0, nmsg)
	b.turns = make([]schemas.Turn, 0, nturns)
	var extra []field
	var buf []byte
	for k, r := range rows {
		extra = append(extra[:0], r.extra...)
		if !isNull(r.system) && k != sysRow {
			extra = append(extra, field{"system", r.system})
		}
		client := r.role == schemas.RoleUser || r.role == schemas.RoleTool
		// A row with a non-empty tool_results list is sent as its tool results (the
		// reference expands any row's list); its own message fields are kept for
		// export.
		expand := kind(r.toolResults) == "array" && !emptyValue(r.toolResults)
		if r.role == schemas.RoleTool && r.results != nil {
			expand = true
		}
		if expand {
			for _, f := range []field{{"content", r.content}, {"name", r.name}, {"reasoning_content", r.reasoning}, {"intent_codes", r.intentCodes}} {
				if f.val != nil {
					extra = append(extra, f)
				}
			}
			if r.role != schemas.RoleTool && !isNull(r.toolCalls) {
				extra = append(extra, field{"tool_calls", r.toolCalls})
			}
		}
		if !client {
			if !isNull(r.tools) {
				extra = append(extra, field{"tools", r.tools})
			}
			if !isNull(r.delay) {
				extra = append(extra, field{"delay_seconds", r.delay})
			}
		}
		if client && !isNull(r.delay) {
			// A delay that is not a non-negative number, or is capped, is kept as
			// given (for export); Turn.DelaySeconds holds what replay waits: the
			// reference's, at most MaxDelaySeconds.
			if d, why := delayValue(r.delay); why != "" || d > MaxDelaySeconds {
				extra = append(extra, field{"delay_seconds", r.delay})
			}
		}
		extra = append(extra, r.params...)
		start := int32(len(b.msgs))
		newMsg := func(part int32) *schemas.Message {
			b.msgs = append(b.msgs, schemas.Message{
				ConversationID: id, Seq: int32(len(b.msgs)), Turn: r.turn, Part: part, Role: r.role,
			})
			return &b.msgs[len(b.msgs)-1]
		}
		switch r.role {
		case schemas.RoleUser:
			c.ClientTurns++
		case schemas.RoleTool:
			c.ClientTurns++
		default:
			c.AssistantTurns++
		}
		if expand {
			rowExtra := ""
			if len(extra) > 0 {
				buf = appendObject(buf[:0], extra, jsontext.AppendCompact)
				rowExtra = string(buf)
			}
			for i, res := range r.results {
				m := newMsg(int32(i))
				m.Role = schemas.RoleTool
				w := append(make([]byte, 0, len(res.content)+64), `{"role":"tool"`...)
				w = appendContentField(w, m, res.content)
				w = append(w, `,"tool_call_id":`...)
				var resExtra []field
				if res.callIDRaw != nil {
					w = jsontext.AppendCompact(w, res.callIDRaw)
					resExtra = append(resExtra, field{"tool_call_id", res.callIDRaw})
				} else {
					callID := res.callID
					m.ToolCallID = &callID
					w = jsontext.AppendString(w, callID)
				}
				resExtra = append(resExtra, res.extra...)
				m.Wire = append(w, '}')
				var ex []byte
				if i == 0 && rowExtra != "" {
					ex = append(ex, rowExtra...)
				}
				if r.role != schemas.RoleTool && i == 0 {
					ex = mergeExtra(ex, field{"row_role", jsontext.AppendString(nil, r.role)})
				}
				if len(resExtra) > 0 {
					ex = mergeExtra(ex, field{"tool_result_extra", appendObject(nil, resExtra, jsontext.AppendCompact)})
				}
				m.Extra = string(ex)
			}
		} else {
			m := newMsg(0)
			w := make([]byte, 0, len(r.content)+len(r.reasoning)+len(r.toolCalls)+64)
			w = append(w, `{"role":`...)
			w = jsontext.AppendString(w, r.role)
			w = appendContentField(w, m, r.content)
			if !isNull(r.name) {
				w = appendOptional(w, "name", r.name, &m.Name, &extra)
			}
			if !isNull(r.toolCalls) {
				w = append(w, `,"tool_calls":`...)
				n := len(w)
				w = jsontext.AppendCompact(w, r.toolCalls)
				// Shared with the wire fragment, whose bytes are never modified once
				// written (later appends go after them, or to a new array).
				m.ToolCalls = unsafe.String(&w[n], len(w)-n)
				if r.role == schemas.RoleAssistant {
					c.ToolCallCount += int32(len(r.toolCallIDs()))
				}
			}
			if !isNull(r.reasoning) {
				w = appendOptional(w, "reasoning_content", r.reasoning, &m.ReasoningContent, &extra)
			}
			m.Wire = append(w, '}')
			if !isNull(r.intentCodes) {
				m.IntentCodesJSON = string(jsontext.AppendCompact(nil, r.intentCodes))
			}
			if len(extra) > 0 {
				m.Extra = string(appendObject(nil, extra, jsontext.AppendCompact))
			}
		}
		for i := start; i < int32(len(b.msgs)); i++ {
			if histLen > 0 {
				histLen++
			}
			histLen += len(b.msgs[i].Wire)
		}
		if !client {
			continue
		}
		t := schemas.Turn{
			ConversationID: id, ConvIndex: index, Domain: c.Domain, Turn: r.turn,
			ClientIndex: int32(len(b.turns)), Role: r.role, MsgStart: start, MsgEnd: int32(len(b.msgs)),
			Inherited: inherited,
		}
		if !isNull(r.delay) {
			if d := waitedDelay(r.delay); d > 0 {
				t.DelaySeconds = d
				c.DelaySeconds += d
			}
		}
		switch {
		case !isNull(r.tools) && firstUser != nil && bytes.Equal(r.tools, firstUser.tools):
			t.Tools = firstTools
		case !isNull(r.tools):
			t.Tools = string(jsontext.AppendCompact(nil, r.tools))
		default:
			t.Tools = firstTools
		}
		t.Params, _ = encodeParams(r.params)
		var inherited []field
		if firstUser != nil {
			inherited = firstUser.params
		}
		t.MaxTokens = sentMaxTokens(r.params, inherited)
		if k+1 < len(rows) && rows[k+1].role == schemas.RoleAssistant {
			t.ExpectedTurn = rows[k+1].turn
		}
		// [ system , messages ]
		t.HistoryBytes = int64(2 + sysLen + histLen)
		if sysLen > 0 && histLen > 0 {
			t.HistoryBytes++
		}
		c.HistoryBytes = t.HistoryBytes
		b.turns = append(b.turns, t)
	}
	c.Messages = int32(len(b.msgs))
	return b
}

// mergeExtra adds member f to the JSON object ex ("" counts as {}).
func mergeExtra(ex []byte, f field) []byte {
	if len(ex) == 0 {
		ex = append(ex, "{}"...)
	}
	ex = ex[:len(ex)-1]
	if len(ex) > 1 {
		ex = append(ex, ',')
	}
	ex = jsontext.AppendString(ex, f.key)
	ex = append(ex, ':')
	ex = append(ex, f.val...)
	return append(ex, '}')
}

// sentMaxTokens is the max_completion_tokens a request of a row with own
// parameters ps sends, in the order datasets.AppendBody resolves it (the
// reference loader's): the row's max_new_tokens, else the one the
// conversation's first user row passes on (inh), else the row's
// max_completion_tokens, each when it is a positive integer; 0 when none, for
// the run's setting then applies (--max-tokens, the profile's, else
// datasets.DefaultRunMaxTokens). A later row's own max_completion_tokens never
// overrides an inherited max_new_tokens.
func sentMaxTokens(ps, inh []field) int32 {
	positive := func(fs []field, key string) (n int32, present bool) {
		for _, p := range fs {
			if p.key != key || isNull(p.val) {
				continue
			}
			if v, err := strconv.ParseInt(string(p.val), 10, 32); err == nil && v > 0 {
				return int32(v), true
			}
			return 0, true
		}
		return 0, false
	}
	n, own := positive(ps, "max_new_tokens")
	if !own {
		n, _ = positive(inh, "max_new_tokens")
	}
	if n > 0 {
		return n
	}
	n, _ = positive(ps, "max_completion_tokens")
	return n
}

// encodeParams returns the non-null generation parameters as a JSON object in
// genParamOrder, and the first positive integer among max_new_tokens,
// max_completion_tokens and max_tokens (0 when none).
func encodeParams(ps []field) (string, int32) {
	if len(ps) == 0 {
		return "", 0
	}
	var b []byte
	var maxTokens int32
	for _, key := range genParamOrder {
		for _, p := range ps {
			if p.key != key || isNull(p.val) {
				continue
			}
			if len(b) == 0 {
				b = append(b, '{')
			} else {
				b = append(b, ',')
			}
			b = jsontext.AppendString(b, key)
			b = append(b, ':')
			b = appendParamValue(b, p.val)
			switch key {
			case "max_new_tokens", "max_completion_tokens", "max_tokens":
				if maxTokens == 0 {
					if n, err := strconv.ParseInt(string(p.val), 10, 32); err == nil && n > 0 {
						maxTokens = int32(n)
					}
				}
			}
		}
	}
	if len(b) == 0 {
		return "", 0
	}
	return string(append(b, '}')), maxTokens
}
