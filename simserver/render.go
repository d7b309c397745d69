package simserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/schemas"
)

// chatRequest is the part of a chat completion request the sim reads.
type chatRequest struct {
	Model               string            `json:"model"`
	Messages            []json.RawMessage `json:"messages"`
	Stream              laxBool           `json:"stream"`
	StreamOptions       *streamOptions    `json:"stream_options"`
	MaxTokens           *laxInt           `json:"max_tokens"`
	MaxCompletionTokens *laxInt           `json:"max_completion_tokens"`
	Tools               json.RawMessage   `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	CacheSalt           string            `json:"cache_salt"`
}

// laxBool is a boolean read as vLLM's request model (pydantic, lax mode) reads
// one: true and false, the numbers 0 and 1 (0.0 and 1.0 too), and the strings
// pydantic takes ("true", "yes", "on", "1", ... case-insensitive); null is
// false. Datasets carry stream values such as 1.0, and a server must answer them
// as vLLM does.
type laxBool bool

func (b *laxBool) UnmarshalJSON(data []byte) error {
	v := strings.TrimSpace(string(data))
	switch v {
	case "true":
		*b = true
		return nil
	case "false", "null":
		*b = false
		return nil
	}
	if v != "" && v[0] == '"' {
		var str string
		if err := json.Unmarshal(data, &str); err != nil {
			return err
		}
		switch strings.ToLower(strings.TrimSpace(str)) {
		case "1", "on", "t", "true", "y", "yes":
			*b = true
			return nil
		case "0", "off", "f", "false", "n", "no":
			*b = false
			return nil
		}
		return fmt.Errorf("input should be a valid boolean, unable to interpret %s", v)
	}
	var f float64
	if err := json.Unmarshal(data, &f); err == nil && (f == 0 || f == 1) {
		*b = f == 1
		return nil
	}
	return fmt.Errorf("input should be a valid boolean, got %.40s", v)
}

// laxInt is an integer read as pydantic's lax mode reads one: a JSON integer or
// a number with no fractional part (8192.0, as datasets typed by pandas carry it).
type laxInt int

func (n *laxInt) UnmarshalJSON(data []byte) error {
	var f json.Number
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("input should be a valid integer, got %.40s", data)
	}
	if i, err := f.Int64(); err == nil {
		*n = laxInt(i)
		return nil
	}
	v, err := f.Float64()
	if err != nil || v != float64(int64(v)) || v > 1<<53 || v < -(1<<53) {
		return fmt.Errorf("input should be a valid integer, got a number with a fractional part: %s", f)
	}
	*n = laxInt(int64(v))
	return nil
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// message is one chat message of a request.
type message struct {
	Role             string                  `json:"role"`
	Content          json.RawMessage         `json:"content"`
	Name             string                  `json:"name"`
	ToolCalls        []datasets.WireToolCall `json:"tool_calls"`
	ToolCallID       string                  `json:"tool_call_id"`
	ReasoningContent *string                 `json:"reasoning_content"`
	Reasoning        *string                 `json:"reasoning"`
}

// contentText returns a message content as text: a JSON string as is, a list of
// parts as the concatenation of their text, null or absent as "".
func contentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case '[':
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &parts) == nil {
			var b strings.Builder
			for _, p := range parts {
				b.WriteString(p.Text)
			}
			return b.String()
		}
	}
	return string(raw)
}

// Chat markup of the simulated chat template (ChatML, as Qwen3 uses).
const (
	imStart      = "<|im_start|>"
	imEnd        = "<|im_end|>\n"
	genPrompt    = imStart + "assistant\n"
	thinkOpen    = "<think>\n"
	thinkClose   = "\n</think>\n\n"
	toolCallOpen = "\n<tool_call>\n{\"name\": \""
	toolCallMid  = "\", \"arguments\": "
	toolCallEnd  = "}\n</tool_call>"
)

// Segment kinds of an assistant message's rendering.
const (
	segMarkup = iota
	segReasoning
	segContent
	segToolName
	segToolArgs
)

// segment is a streamed part of an assistant message's rendering: the byte
// range [start, end) of one kind (reasoning, content, a tool call's name or
// arguments). What lies between segments is template markup, generated but not
// streamed.
type segment struct {
	kind       int
	call       int // tool call index for segToolName and segToolArgs
	start, end int
}

// answer is an assistant message the sim generates.
type answer struct {
	Reasoning string
	Content   string
	ToolCalls []answerCall
}

type answerCall struct {
	ID, Name, Arguments string
}

// render returns the text the template renders for a as an assistant message
// after its "<|im_start|>assistant\n" header, <|im_end|> included — exactly what
// renderAssistantBody gives for the same message in a later prompt — and the
// spans of its streamed parts.
func (a *answer) render() (string, []segment) {
	var b strings.Builder
	b.Grow(len(a.Reasoning) + len(a.Content) + 64)
	segs := make([]segment, 0, 2+2*len(a.ToolCalls))
	add := func(kind, call int, text string) {
		start := b.Len()
		b.WriteString(text)
		if kind != segMarkup && text != "" {
			segs = append(segs, segment{kind: kind, call: call, start: start, end: b.Len()})
		}
	}
	add(segMarkup, 0, thinkOpen)
	add(segReasoning, 0, a.Reasoning)
	add(segMarkup, 0, thinkClose)
	add(segContent, 0, a.Content)
	for i, c := range a.ToolCalls {
		add(segMarkup, 0, toolCallOpen)
		add(segToolName, i, c.Name)
		add(segMarkup, 0, toolCallMid)
		add(segToolArgs, i, c.Arguments)
		add(segMarkup, 0, toolCallEnd)
	}
	add(segMarkup, 0, imEnd)
	return b.String(), segs
}

// renderAssistantBody is the assistant part of the template: the same text as the
// segments of the equivalent answer.
func renderAssistantBody(b *strings.Builder, m *message) {
	reasoning := ""
	if m.ReasoningContent != nil {
		reasoning = *m.ReasoningContent
	} else if m.Reasoning != nil {
		reasoning = *m.Reasoning
	}
	b.WriteString(thinkOpen)
	b.WriteString(reasoning)
	b.WriteString(thinkClose)
	b.WriteString(contentText(m.Content))
	for _, c := range m.ToolCalls {
		b.WriteString(toolCallOpen)
		b.WriteString(c.Function.Name)
		b.WriteString(toolCallMid)
		b.WriteString(schemas.ArgumentsText(c.Function.Arguments))
		b.WriteString(toolCallEnd)
	}
	b.WriteString(imEnd)
}

// promptTokens renders the request with the simulated chat template and returns
// its token identities, generation prompt included, or what is wrong with a
// message. Each message is rendered and tokenized on its own (each rendering
// ends with a newline and the next starts with a marker), so a conversation's
// prompt is a prefix of its next turn's prompt; and each message's tokens are
// remembered by its raw JSON (the first message's with the tools), so a history
// resent turn after turn is decoded and tokenized once.
func (s *Server) promptTokens(dst []uint64, req *chatRequest) ([]uint64, string) {
	toks, bad, _ := s.promptTokensUpTo(dst, req, -1)
	return toks, bad
}

// promptTokensUpTo is promptTokens that stops once limit tokens are reached (limit
// < 0: none), so that an oversized prompt is refused without being tokenized
// whole; complete tells whether every message was counted.
func (s *Server) promptTokensUpTo(dst []uint64, req *chatRequest, limit int) ([]uint64, string, bool) {
	dst, bad, complete := s.messageTokens(dst, req, 0, 0, limit)
	if bad != "" || !complete {
		return dst, bad, complete
	}
	return s.tt.append(dst, genPrompt), "", true
}

// messageTokens appends the tokens of the request's messages from index from on,
// without the generation prompt; the prompt's tokens so far are base + len(dst)
// (base: those of the messages before from, when not in dst), which the limit
// bounds as in promptTokensUpTo; complete tells whether every message was
// counted.
func (s *Server) messageTokens(dst []uint64, req *chatRequest, from, base, limit int) ([]uint64, string, bool) {
	var b strings.Builder
	tools := bytes.TrimSpace(req.Tools)
	hasTools := len(tools) > 0 && string(tools) != "null" && string(tools) != "[]"
	toolsKey := uint64(0)
	if hasTools && from == 0 {
		toolsKey = s.memo.key(tools)
	}
	for i := from; i < len(req.Messages); i++ {
		raw := req.Messages[i]
		key := s.memo.key(raw)
		if i == 0 {
			key = mix(key, toolsKey)
		}
		if limit >= 0 && base+len(dst) >= limit {
			return dst, "", false
		}
		if toks, ok := s.memo.get(key); ok {
			dst = append(dst, toks...)
			continue
		}
		var m message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Sprintf("messages[%d]: %v", i, err), false
		}
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		case "":
			return nil, fmt.Sprintf("messages[%d]: missing role", i), false
		default:
			return nil, fmt.Sprintf("messages[%d]: unknown role %q", i, m.Role), false
		}
		start := len(dst)
		if i == 0 && hasTools && m.Role != "system" && m.Role != "developer" {
			// No system message: the template opens with one holding the tools.
			b.Reset()
			b.WriteString(imStart)
			b.WriteString("system\n")
			writeTools(&b, tools)
			b.WriteString(imEnd)
			dst = s.tt.append(dst, b.String())
		}
		b.Reset()
		b.WriteString(imStart)
		switch m.Role {
		case "tool":
			b.WriteString("user\n<tool_response>\n")
			b.WriteString(contentText(m.Content))
			b.WriteString("\n</tool_response>")
		case "assistant":
			b.WriteString("assistant\n")
			renderAssistantBody(&b, &m)
		default:
			b.WriteString(m.Role)
			b.WriteString("\n")
			b.WriteString(contentText(m.Content))
			if i == 0 && hasTools {
				writeTools(&b, tools)
			}
		}
		if m.Role != "assistant" {
			b.WriteString(imEnd)
		}
		text := b.String()
		if limit >= 0 {
			// A text of more than (limit - tokens so far) tokens at the longest is
			// over the limit: only the prefix that proves it is tokenized.
			if most := (limit - (base + len(dst)) + 1) * s.tt.maxTokenBytes(); len(text) > most {
				return s.tt.append(dst, text[:most]), "", false
			}
		}
		dst = s.tt.append(dst, text)
		s.memo.put(key, append([]uint64(nil), dst[start:]...))
	}
	return dst, "", true
}

func writeTools(b *strings.Builder, tools []byte) {
	b.WriteString("\n\n# Tools\n\n<tools>\n")
	var c bytes.Buffer
	if json.Compact(&c, tools) == nil {
		b.Write(c.Bytes())
	} else {
		b.Write(tools)
	}
	b.WriteString("\n</tools>")
}
