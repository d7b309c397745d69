package tokens

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrace/agentrace/schemas"
)

// CountISL counts the input tokens of a client turn as the rules do: the
// (salted) messages and tools rendered with the chat template,
// add_generation_prompt true and the chat_template_kwargs in kwargs, then
// encoded with special-token strings recognized.
func (t *Tokenizer) CountISL(messagesJSON, toolsJSON []byte, kwargs map[string]any) (int, error) {
	text, err := t.Render(NormalizeToolCallArguments(messagesJSON), toolsJSON, true, kwargs)
	if err != nil {
		return 0, err
	}
	return len(t.Encode(text, false)), nil
}

// emptyUser is the user message both OSL renderings start with.
const emptyUser = `{"role":"user","content":""}`

// CountOSL counts the output tokens of a completed response as the rules do:
// tokens(render([user "", assistant(r)])) - tokens(render([user "", assistant
// ""])), both without a generation prompt, clamped at 0. A response with neither
// reasoning nor tool calls counts its plain text without special tokens.
func (t *Tokenizer) CountOSL(r schemas.Response) (int, error) {
	if r.Reasoning == "" && len(r.ToolCalls) == 0 {
		return len(t.Encode(r.Content, false)), nil
	}
	msg, err := AssistantMessage(r)
	if err != nil {
		return 0, err
	}
	full, err := t.Render([]byte("["+emptyUser+","+string(msg)+"]"), nil, false, nil)
	if err != nil {
		return 0, fmt.Errorf("count output tokens: %w", err)
	}
	base, err := t.baseOSL()
	if err != nil {
		return 0, err
	}
	return max(0, len(t.Encode(full, false))-base), nil
}

// baseOSL is the token count of [user "", assistant ""].
func (t *Tokenizer) baseOSL() (int, error) {
	t.baseOnce.Do(func() {
		text, err := t.Render([]byte("["+emptyUser+`,{"role":"assistant","content":""}]`), nil, false, nil)
		if err != nil {
			t.baseErr = fmt.Errorf("count output tokens: %w", err)
			return
		}
		t.base = len(t.Encode(text, false))
	})
	return t.base, t.baseErr
}

// CountTPOTSuffix counts the tokens of what followed the first output-bearing
// chunk: the response less the first firstContentBytes of its content and the
// first firstReasoningBytes of its reasoning (tool calls, which a first chunk
// of text cannot carry whole, stay), counted once as CountOSL counts.
func (t *Tokenizer) CountTPOTSuffix(r schemas.Response, firstContentBytes, firstReasoningBytes int) (int, error) {
	r.Content = r.Content[min(max(firstContentBytes, 0), len(r.Content)):]
	r.Reasoning = r.Reasoning[min(max(firstReasoningBytes, 0), len(r.Reasoning)):]
	return t.CountOSL(r)
}

// AssistantMessage builds the assistant message a response is counted as, in
// the wire key order (role, content, tool_calls, reasoning_content): tool calls
// in index order, each {"id", "type", "function": {"name", "arguments"}} with
// the arguments parsed when they are a JSON object string (kept as a string
// otherwise). Empty reasoning and tool calls are left out.
func AssistantMessage(r schemas.Response) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"role":"assistant","content":`)
	writeJSONString(&b, r.Content)
	if len(r.ToolCalls) > 0 {
		b.WriteString(`,"tool_calls":[`)
		for i, tc := range r.ToolCalls {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('{')
			if tc.ID != "" {
				b.WriteString(`"id":`)
				writeJSONString(&b, tc.ID)
				b.WriteByte(',')
			}
			typ := tc.Type
			if typ == "" {
				typ = "function"
			}
			b.WriteString(`"type":`)
			writeJSONString(&b, typ)
			b.WriteString(`,"function":{"name":`)
			writeJSONString(&b, tc.Function.Name)
			b.WriteString(`,"arguments":`)
			if args := strings.TrimSpace(tc.Function.Arguments); strings.HasPrefix(args, "{") && json.Valid([]byte(args)) {
				b.WriteString(args)
			} else {
				writeJSONString(&b, tc.Function.Arguments)
			}
			b.WriteString("}}")
		}
		b.WriteByte(']')
	}
	if r.Reasoning != "" {
		b.WriteString(`,"reasoning_content":`)
		writeJSONString(&b, r.Reasoning)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}
