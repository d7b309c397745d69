package ingest

import (
	"bytes"
	"fmt"
	"strconv"
	"unsafe"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/schemas"
)

// built is one conversation ready for the dataset writer.
type built struct {
	conv  schemas.Conversation
	msgs  []schemas.Message
	turns []schemas.Turn
}

// validateSequence checks the rows of one conversation against each other (spec
// §1 plus agentrace's own checks), reporting each problem through report.
func validateSequence(rows []*row, report func(r *row, msg string)) {
	var prev *row
	var prevCalls []string
	for k, r := range rows {
		if r.turnOK {
			switch {
			case k == 0 && r.turn != 1:
				report(r, fmt.Sprintf("turn numbers start at %d, not 1", r.turn))
			case prev != nil && prev.turnOK && r.turn == prev.turn:
				report(r, fmt.Sprintf("turn %d duplicated", r.turn))
			case prev != nil && prev.turnOK && r.turn != prev.turn+1:
				report(r, fmt.Sprintf("turn %d follows turn %d (a gap or out of order)", r.turn, prev.turn))
			}
		}
		prevRole := ""
		if prev != nil {
			prevRole = prev.role
		}
		switch r.role {
		case schemas.RoleUser:
			switch {
			case prevRole == schemas.RoleUser:
				report(r, "user row after a user row")
			case prevRole == schemas.RoleAssistant && !isNull(prev.toolCalls):
				report(r, "user row right after an assistant row with tool_calls")
			}
		case schemas.RoleAssistant:
			switch {
			case prev == nil:
				report(r, "first row is assistant, not user")
			case prevRole == schemas.RoleAssistant:
				report(r, "assistant row after an assistant row")
			}
		case schemas.RoleTool:
			switch {
			case prev == nil:
				report(r, "first row is tool, not user")
			case prevRole == schemas.RoleUser:
				report(r, "tool row after a user row")
			case prevRole == schemas.RoleTool:
				report(r, "tool row after a tool row (parallel results belong in one row)")
			case prevRole == schemas.RoleAssistant && isNull(prev.toolCalls):
				report(r, "tool row after an assistant row without tool_calls")
			case prevRole == schemas.RoleAssistant:
				for i, res := range r.results {
					if res.callID != "" && !contains(prevCalls, res.callID) {
						report(r, fmt.Sprintf("tool_results[%d].tool_call_id %q answers no tool call of the preceding assistant row (turn %d)", i, res.callID, prev.turn))
					}
				}
			}
		}
		if r.role == schemas.RoleAssistant {
			prevCalls = r.toolCallIDs()
		}
		prev = r
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

// appendObject appends fields as a compact JSON object.
func appendObject(dst []byte, fs []field) []byte {
	dst = append(dst, '{')
	for i, f := range fs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = datasets.AppendString(dst, f.key)
		dst = append(dst, ':')
		dst = datasets.AppendCompact(dst, f.val)
	}
	return append(dst, '}')
}

func strPtr(raw []byte) *string {
	if isNull(raw) {
		return nil
	}
	s, ok := datasets.DecodeString(raw)
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
	if bytes.IndexByte(body, '\\') < 0 && !hasLineSep(body) {
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
	s, canonical := datasets.DecodeValidString(raw)
	if canonical {
		w = append(w, raw...)
	} else {
		w = datasets.AppendString(w, s)
	}
	return w, &s
}

// hasLineSep reports whether b holds U+2028 or U+2029 (E2 80 A8 or E2 80 A9),
// which the wire encoding escapes.
func hasLineSep(b []byte) bool {
	for {
		i := bytes.IndexByte(b, 0xE2)
		if i < 0 || i+2 >= len(b) {
			return false
		}
		if b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9) {
			return true
		}
		b = b[i+1:]
	}
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
	w = datasets.AppendCompact(w, raw)
	s := string(w[n:])
	m.Content, m.ContentJSON = &s, true
	return w
}

// buildConversation turns the validated rows of one conversation into its
// dataset rows. scratch is reused between calls.
func buildConversation(id string, index int32, source string, rows []*row) built {
	var b built
	c := &b.conv
	c.ConversationID, c.Index, c.Domain, c.Source = id, index, datasets.Domain(id), source
	c.Rows = int32(len(rows))
	// The system prompt: the first non-empty string `system` on any row.
	sysRow := -1
	for k, r := range rows {
		if kind(r.system) == "string" && string(r.system) != `""` {
			c.System, c.HasSystem = *strPtr(r.system), true
			sysRow = k
			break
		}
	}
	c.SystemEscaped = string(datasets.AppendEscaped(nil, c.System))
	var firstUser *row
	for _, r := range rows {
		if r.role == schemas.RoleUser {
			firstUser = r
			break
		}
	}
	// The first user row's tools, compacted once.
	var firstToolsStr string
	firstTools := func() string {
		if firstToolsStr == "" {
			firstToolsStr = string(datasets.AppendCompact(nil, firstUser.tools))
		}
		return firstToolsStr
	}
	// Unsalted system message, for HistoryBytes.
	sysLen := 0
	if c.HasSystem {
		sysLen = len(datasets.AppendSystemMessage(nil, c.SystemEscaped, "", ""))
	}
	histLen := 0 // bytes of the joined wire fragments so far (with commas)
	var extra []field
	var buf []byte
	for k, r := range rows {
		extra = append(extra[:0], r.extra...)
		if !isNull(r.system) && k != sysRow {
			extra = append(extra, field{"system", r.system})
		}
		client := r.role == schemas.RoleUser || r.role == schemas.RoleTool
		if r.role == schemas.RoleTool {
			// A tool row's own message fields are not sent (its results are); keep
			// them for export.
			for _, f := range []field{{"content", r.content}, {"name", r.name}, {"reasoning_content", r.reasoning}, {"intent_codes", r.intentCodes}} {
				if f.val != nil {
					extra = append(extra, f)
				}
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
		extra = append(extra, r.params...)
		rowExtra := ""
		if len(extra) > 0 {
			buf = appendObject(buf[:0], extra)
			rowExtra = string(buf)
		}
		start := int32(len(b.msgs))
		newMsg := func(part int32) *schemas.Message {
			b.msgs = append(b.msgs, schemas.Message{
				ConversationID: id, Seq: int32(len(b.msgs)), Turn: r.turn, Part: part, Role: r.role,
			})
			return &b.msgs[len(b.msgs)-1]
		}
		switch r.role {
		case schemas.RoleTool:
			c.ClientTurns++
			for i, res := range r.results {
				m := newMsg(int32(i))
				w := append(make([]byte, 0, len(res.content)+64), `{"role":"tool"`...)
				w = appendContentField(w, m, res.content)
				callID := res.callID
				m.ToolCallID = &callID
				w = append(w, `,"tool_call_id":`...)
				w = datasets.AppendString(w, callID)
				m.Wire = append(w, '}')
				var ex []byte
				if i == 0 && rowExtra != "" {
					ex = append(ex, rowExtra...)
				}
				if len(res.extra) > 0 {
					if len(ex) == 0 {
						ex = append(ex, "{}"...)
					}
					ex = ex[:len(ex)-1]
					if len(ex) > 1 {
						ex = append(ex, ',')
					}
					ex = append(ex, `"tool_result_extra":`...)
					ex = appendObject(ex, res.extra)
					ex = append(ex, '}')
				}
				m.Extra = string(ex)
			}
		default:
			if r.role == schemas.RoleUser {
				c.ClientTurns++
			} else {
				c.AssistantTurns++
			}
			m := newMsg(0)
			w := make([]byte, 0, len(r.content)+len(r.reasoning)+len(r.toolCalls)+64)
			w = append(w, `{"role":`...)
			w = datasets.AppendString(w, r.role)
			w = appendContentField(w, m, r.content)
			if !isNull(r.name) {
				w = append(w, `,"name":`...)
				w, m.Name = appendStringToken(w, r.name)
			}
			if !isNull(r.toolCalls) {
				tc := datasets.AppendCompact(nil, r.toolCalls)
				m.ToolCalls = string(tc)
				w = append(w, `,"tool_calls":`...)
				w = append(w, tc...)
				c.ToolCalls += int32(len(r.toolCallIDs()))
			}
			if !isNull(r.reasoning) {
				w = append(w, `,"reasoning_content":`...)
				w, m.ReasoningContent = appendStringToken(w, r.reasoning)
			}
			m.Wire = append(w, '}')
			if !isNull(r.intentCodes) {
				m.IntentCodesJSON = string(datasets.AppendCompact(nil, r.intentCodes))
			}
			m.Extra = rowExtra
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
		}
		if !isNull(r.delay) {
			t.DelaySeconds, _ = strconv.ParseFloat(string(r.delay), 64)
			c.DelaySeconds += t.DelaySeconds
		}
		switch {
		case !isNull(r.tools) && firstUser != nil && bytes.Equal(r.tools, firstUser.tools):
			t.Tools = firstTools()
		case !isNull(r.tools):
			t.Tools = string(datasets.AppendCompact(nil, r.tools))
		case r.role == schemas.RoleTool && firstUser != nil && !isNull(firstUser.tools):
			t.Tools = firstTools()
		}
		params := r.params
		if r.role == schemas.RoleTool && firstUser != nil {
			params = inheritParams(params, firstUser.params)
		}
		t.Params, t.MaxTokens = encodeParams(params)
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

// inheritParams adds the first user row's parameters that a tool row lacks.
func inheritParams(own, first []field) []field {
	out := append([]field(nil), own...)
	for _, f := range first {
		found := false
		for _, o := range own {
			if o.key == f.key {
				found = true
				break
			}
		}
		if !found {
			out = append(out, f)
		}
	}
	return out
}

// encodeParams returns the non-null generation parameters as a JSON object in
// genParamOrder, and the max tokens they set.
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
			b = datasets.AppendString(b, key)
			b = append(b, ':')
			b = datasets.AppendCompact(b, p.val)
			switch key {
			case "max_new_tokens", "max_completion_tokens", "max_tokens":
				if maxTokens == 0 {
					if n, err := strconv.ParseInt(string(p.val), 10, 32); err == nil {
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
