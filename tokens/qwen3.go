package tokens

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unsafe"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/ardanlabs/jinja"
)

// qwen3TemplateSHA256 is the SHA-256 of the Qwen3 chat template (the one of
// Qwen/Qwen3-8B, Qwen3-30B-A3B, ... tokenizer_config.json; after jinjaSource's
// line-ending normalization). When a tokenizer's template is exactly this one,
// ISLCounter builds the rendered text in Go (renderQwen3) instead of running the
// template engine over the whole history for every turn.
const qwen3TemplateSHA256 = "87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5"

// isQwen3Template reports whether src (after jinjaSource) is the Qwen3 template.
func isQwen3Template(src string) bool {
	sum := sha256.Sum256([]byte(src))
	return hex.EncodeToString(sum[:]) == qwen3TemplateSHA256
}

// The fixed text of the Qwen3 template.
const (
	q3ToolsHead  = "<|im_start|>system\n"
	q3ToolsIntro = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	q3ToolsTail = "\n</tools>\n\nFor each function call, return a json object with function name and arguments " +
		"within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": " +
		"<args-json-object>}\n</tool_call><|im_end|>\n"
	q3Start     = "<|im_start|>"
	q3End       = "<|im_end|>\n"
	q3Generate  = "<|im_start|>assistant\n"
	q3NoThink   = "<think>\n\n</think>\n\n"
	q3ToolOpen  = "\n<tool_response>\n"
	q3ToolClose = "\n</tool_response>"
)

// qwenMessage is one message as the Qwen3 template reads it.
type qwenMessage struct {
	ok      bool // the native build covers it
	role    string
	content string // "" when absent or null, as Render passes it
	// query: a user message that is not a wrapped tool response (the template's
	// last_query_index candidates).
	query bool
	// Assistant messages: the content and reasoning the template shows, and the
	// rendered tool calls.
	aContent, aReasoning string
	calls                []string
}

var qwenKeys = []string{"role", "content", "reasoning_content", "tool_calls"}

// parseQwen3 reads one wire message as the template sees it.
func (c *ISLCounter) parseQwen3(frag []byte) *qwenMessage {
	m := &qwenMessage{}
	if hasPlaceholderRunes(frag) {
		return m
	}
	norm := NormalizeToolCallArguments(append(append([]byte{'['}, frag...), ']'))
	obj := bytes.TrimSpace(norm[1 : len(norm)-1])
	var vals [4][]byte
	if jsontext.KindOf(obj) != jsontext.Object || !jsontext.Lookup(obj, qwenKeys, vals[:]) {
		return m
	}
	role, ok := jsonString(vals[0])
	if !ok {
		return m
	}
	m.role = role
	switch jsontext.KindOf(vals[1]) {
	case jsontext.Nothing, jsontext.Null:
	case jsontext.String:
		m.content, _ = jsonString(vals[1])
	default:
		return m
	}
	hasReasoning, reasoning := false, ""
	switch jsontext.KindOf(vals[2]) {
	case jsontext.Nothing, jsontext.Null:
	case jsontext.String:
		hasReasoning = true
		reasoning, _ = jsonString(vals[2])
	default:
		return m
	}
	switch role {
	case "user":
		m.query = !(strings.HasPrefix(m.content, "<tool_response>") && strings.HasSuffix(m.content, "</tool_response>"))
	case "assistant":
		// {%- set content = message.content %} ... the reasoning from
		// reasoning_content, else split out of the content at </think>.
		m.aContent = m.content
		if hasReasoning {
			m.aReasoning = reasoning
		} else if strings.Contains(m.content, "</think>") {
			parts := strings.Split(m.content, "</think>")
			m.aContent = strings.TrimLeft(parts[len(parts)-1], "\n")
			r := strings.Split(strings.TrimRight(parts[0], "\n"), "<think>")
			m.aReasoning = strings.TrimLeft(r[len(r)-1], "\n")
		}
		switch jsontext.KindOf(vals[3]) {
		case jsontext.Nothing, jsontext.Null:
		case jsontext.Array:
			good := true
			jsontext.EachElement(vals[3], func(_ int, call []byte) bool {
				s, ok := c.qwenToolCall(call)
				m.calls = append(m.calls, s)
				good = ok
				return ok
			})
			if !good {
				return m
			}
		default:
			return m
		}
	}
	m.ok = true
	return m
}

var qwenCallKeys = []string{"function"}
var qwenFunctionKeys = []string{"name", "arguments"}

// qwenToolCall renders one tool call: <tool_call>\n{"name": "NAME", "arguments":
// ARGS}\n</tool_call>, ARGS the arguments string as it is or tojson of any other
// value. Only calls whose function is an object with a string name are covered.
func (c *ISLCounter) qwenToolCall(call []byte) (string, bool) {
	var fv [1][]byte
	if jsontext.KindOf(call) != jsontext.Object || !jsontext.Lookup(call, qwenCallKeys, fv[:]) ||
		jsontext.KindOf(fv[0]) != jsontext.Object || !jsontext.Truthy(fv[0]) {
		return "", false
	}
	var vals [2][]byte
	if !jsontext.Lookup(fv[0], qwenFunctionKeys, vals[:]) {
		return "", false
	}
	name, ok := jsonString(vals[0])
	if !ok {
		return "", false
	}
	var args string
	switch jsontext.KindOf(vals[1]) {
	case jsontext.Nothing:
		return "", false
	case jsontext.String:
		args, _ = jsonString(vals[1])
	default:
		var err error
		if args, err = c.t.toJSON(vals[1]); err != nil {
			return "", false
		}
	}
	return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>", true
}

// toolsCache is the rendered tool list of the last tools seen.
type toolsCache struct {
	src    []byte
	ok     bool
	truthy bool
	text   string // "\n" + tojson(tool) for each tool
}

func (c *ISLCounter) qwenTools(toolsJSON []byte) *toolsCache {
	tc := &c.tools
	if tc.src != nil && sameBytes(tc.src, toolsJSON) {
		return tc
	}
	*tc = toolsCache{src: toolsJSON}
	if toolsJSON == nil {
		tc.src = []byte{}
	}
	switch jsontext.KindOf(toolsJSON) {
	case jsontext.Nothing, jsontext.Null:
		tc.ok = true
		return tc
	case jsontext.Array:
	default:
		return tc
	}
	if hasPlaceholderRunes(toolsJSON) || !jsontext.Valid(toolsJSON, jsontext.JSON) {
		return tc
	}
	var b strings.Builder
	good := true
	jsontext.EachElement(toolsJSON, func(_ int, tool []byte) bool {
		s, err := c.t.toJSON(tool)
		if err != nil {
			good = false
			return false
		}
		b.WriteByte('\n')
		b.WriteString(s)
		tc.truthy = true
		return true
	})
	tc.ok, tc.text = good, b.String()
	return tc
}

// renderQwen3 builds the Qwen3 template's text for messages with
// add_generation_prompt true, as Render would; ok is false when a message or
// the tools are not covered (the caller renders with the engine then).
func (c *ISLCounter) renderQwen3(messages [][]byte, toolsJSON []byte) (string, bool) {
	k := len(messages)
	if k == 0 || c.kwargsPlaceholders() {
		return "", false
	}
	if len(c.src) > k {
		c.src, c.parsed = c.src[:k], c.parsed[:k]
	}
	for i, frag := range messages {
		if i < len(c.src) {
			if sameBytes(c.src[i], frag) {
				continue
			}
			c.src[i], c.parsed[i] = frag, c.parseQwen3(frag)
			continue
		}
		c.src = append(c.src, frag)
		c.parsed = append(c.parsed, c.parseQwen3(frag))
	}
	ms := c.parsed
	for _, m := range ms {
		if !m.ok {
			return "", false
		}
	}
	tools := c.qwenTools(toolsJSON)
	if !tools.ok {
		return "", false
	}
	c.turn++
	b := c.bufs[c.turn%2][:0]
	if tools.truthy {
		b = append(b, q3ToolsHead...)
		if ms[0].role == "system" {
			b = append(b, ms[0].content...)
			b = append(b, "\n\n"...)
		}
		b = append(b, q3ToolsIntro...)
		b = append(b, tools.text...)
		b = append(b, q3ToolsTail...)
	} else if ms[0].role == "system" {
		b = append(b, q3Start+"system\n"...)
		b = append(b, ms[0].content...)
		b = append(b, q3End...)
	}
	lastQuery := k - 1
	for i := k - 1; i >= 0; i-- {
		if ms[i].query {
			lastQuery = i
			break
		}
	}
	for i, m := range ms {
		switch {
		case m.role == "user" || (m.role == "system" && i > 0):
			b = append(b, q3Start...)
			b = append(b, m.role...)
			b = append(b, '\n')
			b = append(b, m.content...)
			b = append(b, q3End...)
		case m.role == "assistant":
			if i > lastQuery && (i == k-1 || m.aReasoning != "") {
				b = append(b, q3Start+"assistant\n<think>\n"...)
				b = append(b, strings.Trim(m.aReasoning, "\n")...)
				b = append(b, "\n</think>\n\n"...)
				b = append(b, strings.TrimLeft(m.aContent, "\n")...)
			} else {
				b = append(b, q3Start+"assistant\n"...)
				b = append(b, m.aContent...)
			}
			for j, call := range m.calls {
				if j > 0 || m.aContent != "" {
					b = append(b, '\n')
				}
				b = append(b, call...)
			}
			b = append(b, q3End...)
		case m.role == "tool":
			if i == 0 || ms[i-1].role != "tool" {
				b = append(b, q3Start+"user"...)
			}
			b = append(b, q3ToolOpen...)
			b = append(b, m.content...)
			b = append(b, q3ToolClose...)
			if i == k-1 || ms[i+1].role != "tool" {
				b = append(b, q3End...)
			}
		}
	}
	b = append(b, q3Generate...)
	if c.enableThinkingFalse() {
		b = append(b, q3NoThink...)
	}
	c.bufs[c.turn%2] = b
	return unsafe.String(unsafe.SliceData(b), len(b)), true
}

// enableThinkingFalse is the template's `enable_thinking is defined and
// enable_thinking is false`.
func (c *ISLCounter) enableThinkingFalse() bool {
	v, ok := c.kwargs["enable_thinking"]
	if !ok {
		return false
	}
	var vb valueBuilder
	jv, err := vb.fromGo(v)
	return err == nil && jv.IsBool() && !jv.AsBool()
}

// kwargsPlaceholders reports whether a kwarg holds the render's placeholder
// characters (Render then turns its placeholders off for the whole render).
func (c *ISLCounter) kwargsPlaceholders() bool {
	for _, v := range c.kwargs {
		switch x := v.(type) {
		case []byte:
			if hasPlaceholderRunes(x) {
				return true
			}
		case string:
			if hasPlaceholderRunes([]byte(x)) {
				return true
			}
		case interface{ MarshalJSON() ([]byte, error) }:
			if data, err := x.MarshalJSON(); err != nil || hasPlaceholderRunes(data) {
				return true
			}
		}
	}
	return false
}

// hasPlaceholderRunes reports whether JSON text holds the noncharacters Render
// uses for placeholders or the incremental render for its markers (U+FDD0 to
// U+FDD5), raw or escaped.
func hasPlaceholderRunes(data []byte) bool {
	if bytes.Contains(data, []byte(phOpen)) || bytes.Contains(data, []byte(phClose)) ||
		bytes.Contains(data, []byte(markIter)) || bytes.Contains(data, []byte(markState)) ||
		bytes.Contains(data, []byte(markEnd)) || bytes.Contains(data, []byte(markOpaque)) {
		return true
	}
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += j + 2
		if i+4 <= len(data) && strings.EqualFold(string(data[i:i+3]), "fdd") && data[i+3] >= '0' && data[i+3] <= '5' {
			return true
		}
	}
}

// jsonString decodes a raw JSON string value.
func jsonString(raw []byte) (string, bool) {
	if jsontext.KindOf(raw) != jsontext.String {
		return "", false
	}
	return jsontext.Unquote(bytes.TrimSpace(raw))
}

// toJSON renders the JSON value raw with the template engine's tojson filter,
// as a chat template's `value | tojson` prints it in Render.
func (t *Tokenizer) toJSON(raw []byte) (string, error) {
	var vb valueBuilder
	vb.check(raw)
	v, err := vb.fromJSON(raw)
	if err != nil {
		return "", err
	}
	out, err := t.template.tojson.RenderValues(map[string]jinja.Value{"v": v})
	if err != nil {
		return "", err
	}
	return vb.restore(out), nil
}
