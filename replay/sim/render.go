package sim

import (
	"bytes"
	"encoding/json"
	"strings"
)

// chatRequest is the part of a chat completion request the sim reads.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []message       `json:"messages"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Tools               json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	CacheSalt           string          `json:"cache_salt"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// message is one chat message of a request.
type message struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name"`
	ToolCalls        []wireToolCall  `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        *string         `json:"reasoning"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
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

// argumentsText returns tool-call arguments as the text a model would have
// generated: a JSON string's value, or any other JSON value compacted.
func argumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
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

// segment is one piece of an assistant message's rendering: markup that is
// generated but not streamed, or streamed text of one kind.
type segment struct {
	kind int
	call int // tool call index for segToolName and segToolArgs
	text string
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

// segments returns the rendering of a as the template renders an assistant
// message after its header, <|im_end|> included. Concatenated, the segments'
// texts are exactly what renderMessage gives for the same message in a later
// prompt after "<|im_start|>assistant\n"; every boundary between segments sits
// next to a newline or punctuation byte, so tokenizing segment by segment equals
// tokenizing the whole.
func (a *answer) segments() []segment {
	segs := make([]segment, 0, 4+4*len(a.ToolCalls))
	segs = append(segs, segment{kind: segMarkup, text: thinkOpen},
		segment{kind: segReasoning, text: a.Reasoning},
		segment{kind: segMarkup, text: thinkClose},
		segment{kind: segContent, text: a.Content})
	for i, c := range a.ToolCalls {
		segs = append(segs, segment{kind: segMarkup, text: toolCallOpen},
			segment{kind: segToolName, call: i, text: c.Name},
			segment{kind: segMarkup, text: toolCallMid},
			segment{kind: segToolArgs, call: i, text: c.Arguments},
			segment{kind: segMarkup, text: toolCallEnd})
	}
	return append(segs, segment{kind: segMarkup, text: imEnd})
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
		b.WriteString(argumentsText(c.Function.Arguments))
		b.WriteString(toolCallEnd)
	}
	b.WriteString(imEnd)
}

// promptTokens renders the request with the simulated chat template and returns
// its token identities, generation prompt included. Each message is rendered and
// tokenized on its own (every rendering starts with "<" and ends with a newline),
// so a conversation's prompt is a prefix of its next turn's prompt.
func promptTokens(dst []uint64, tt textTokens, req *chatRequest) []uint64 {
	var b strings.Builder
	tools := bytes.TrimSpace(req.Tools)
	hasTools := len(tools) > 0 && string(tools) != "null" && string(tools) != "[]"
	for i := range req.Messages {
		m := &req.Messages[i]
		b.Reset()
		b.WriteString(imStart)
		switch m.Role {
		case "tool":
			b.WriteString("user\n<tool_response>\n")
			b.WriteString(contentText(m.Content))
			b.WriteString("\n</tool_response>")
			b.WriteString(imEnd)
		case "assistant":
			b.WriteString("assistant\n")
			renderAssistantBody(&b, m)
		default:
			b.WriteString(m.Role)
			b.WriteString("\n")
			b.WriteString(contentText(m.Content))
			if i == 0 && (m.Role == "system" || m.Role == "developer") && hasTools {
				writeTools(&b, tools)
				hasTools = false
			}
			b.WriteString(imEnd)
		}
		if i == 0 && hasTools {
			// No system message: the template opens with one holding the tools.
			var s strings.Builder
			s.WriteString(imStart)
			s.WriteString("system\n")
			writeTools(&s, tools)
			s.WriteString(imEnd)
			dst = tt.append(dst, s.String())
			hasTools = false
		}
		dst = tt.append(dst, b.String())
	}
	return tt.append(dst, genPrompt)
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
