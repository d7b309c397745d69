package datasets

import (
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/schemas"
)

// AppendWire appends m's wire form to dst: a JSON object with the keys role,
// content, name, tool_calls, tool_call_id and reasoning_content in that order, absent
// and null values omitted. ToolCalls and structured content are inserted as stored
// (they are already compact wire JSON).
func AppendWire(dst []byte, m *schemas.Message) []byte {
	dst = append(dst, `{"role":`...)
	dst = jsontext.AppendString(dst, m.Role)
	if m.Content != nil {
		dst = append(dst, `,"content":`...)
		if m.ContentJSON {
			dst = append(dst, *m.Content...)
		} else {
			dst = jsontext.AppendString(dst, *m.Content)
		}
	}
	if m.Name != nil {
		dst = append(dst, `,"name":`...)
		dst = jsontext.AppendString(dst, *m.Name)
	}
	if m.ToolCalls != "" {
		dst = append(dst, `,"tool_calls":`...)
		dst = append(dst, m.ToolCalls...)
	}
	if m.ToolCallID != nil {
		dst = append(dst, `,"tool_call_id":`...)
		dst = jsontext.AppendString(dst, *m.ToolCallID)
	}
	if m.ReasoningContent != nil {
		dst = append(dst, `,"reasoning_content":`...)
		dst = jsontext.AppendString(dst, *m.ReasoningContent)
	}
	return append(dst, '}')
}
