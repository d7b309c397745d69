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
	return t.count(text)
}

// count is Count that returns the encoding's error.
func (t *Tokenizer) count(text string) (int, error) {
	ids, err := t.EncodeErr(text, false)
	return len(ids), err
}

// emptyUser is the user message both OSL renderings start with.
const emptyUser = `{"role":"user","content":""}`

// CountOSL counts the output tokens of a completed response as the rules do:
// tokens(render([user "", assistant(r)])) - tokens(render([user "", assistant
// ""])), both without a generation prompt, clamped at 0. A response with neither
// reasoning nor tool calls counts its plain text without special tokens.
func (t *Tokenizer) CountOSL(r schemas.Response) (int, error) {
	if r.Reasoning == "" && len(r.ToolCalls) == 0 {
		return t.count(r.Content)
	}
	return t.countMessage(r)
}

// countMessage counts r as an assistant message: tokens(render([user "",
// assistant(r)])) - tokens(render([user "", assistant ""])), clamped at 0.
func (t *Tokenizer) countMessage(r schemas.Response) (int, error) {
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
	n, err := t.count(full)
	return max(0, n-base), err
}

// baseOSL is the token count of [user "", assistant ""].
func (t *Tokenizer) baseOSL() (int, error) {
	t.baseOnce.Do(func() {
		text, err := t.Render([]byte("["+emptyUser+`,{"role":"assistant","content":""}]`), nil, false, nil)
		if err != nil {
			t.baseErr = fmt.Errorf("count output tokens: %w", err)
			return
		}
		t.base, t.baseErr = t.count(text)
	})
	return t.base, t.baseErr
}

// TPOTSuffix returns what the reference client's TPOT counts after a streamed
// response's first chunk (core/types.py, as_message_parts_after_first_chunk and
// text_after_first_chunk at ea332753), from a turn log row: when the response
// has reasoning, its reasoning less the first reasoning chunk
// (firstReasoningBytes) and all its content; otherwise its content less the
// first content chunk (firstContentBytes). Its tool calls are r's, except that
// when dropFirstToolChunk (the response has tool calls and nothing else, the
// row's tpot_tool_calls is set) they are afterFirst, the calls merged without
// their first tool-call chunk. asMessage tells how the reference counts it: as
// an assistant message when the whole response has reasoning or tool calls,
// else as plain text.
func TPOTSuffix(r schemas.Response, firstContentBytes, firstReasoningBytes int, afterFirst []schemas.ToolCall, dropFirstToolChunk bool) (suffix schemas.Response, asMessage bool) {
	asMessage = r.Reasoning != "" || len(r.ToolCalls) > 0
	if r.Reasoning != "" {
		suffix.Reasoning = r.Reasoning[min(max(firstReasoningBytes, 0), len(r.Reasoning)):]
		suffix.Content = r.Content
	} else {
		suffix.Content = r.Content[min(max(firstContentBytes, 0), len(r.Content)):]
	}
	suffix.ToolCalls = r.ToolCalls
	if dropFirstToolChunk {
		suffix.ToolCalls = afterFirst
	}
	return suffix, asMessage
}

// CountTPOTSuffix counts a TPOT suffix (TPOTSuffix) as the reference does: as
// an assistant message, like CountOSL counts a response with reasoning or tool
// calls, when asMessage; else its content as plain text.
func (t *Tokenizer) CountTPOTSuffix(suffix schemas.Response, asMessage bool) (int, error) {
	if !asMessage {
		return t.count(suffix.Content)
	}
	return t.countMessage(suffix)
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
