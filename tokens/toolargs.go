package tokens

import (
	"bytes"

	"github.com/agentrace/agentrace/internal/jsontext"
)

// NormalizeToolCallArguments returns the messages array messagesJSON with every
// tool call's function.arguments that is a JSON string holding a JSON object
// replaced by that object, as the reference's token metrics do before rendering
// the chat template for ISL (token_metrics.py, _normalize_prompt_messages_for_template
// at mlcommons/endpoints ea332753): a template then renders the arguments with
// tojson instead of pasting the string. Arguments that are not a string, or whose
// string is not a JSON object, stay as they are. messagesJSON must be valid JSON;
// it is returned unchanged (not copied) when there is nothing to replace.
func NormalizeToolCallArguments(messagesJSON []byte) []byte {
	if !bytes.Contains(messagesJSON, []byte(`"arguments"`)) || jsontext.KindOf(messagesJSON) != jsontext.Array {
		return messagesJSON
	}
	var out []byte
	copied := 0 // messagesJSON[:copied] is in out, with replacements
	// members calls fn with the value of each member named key of the object v.
	members := func(v []byte, key string, fn func(val []byte)) {
		jsontext.EachMember(v, func(k, val []byte) {
			if jsontext.StringIs(k, key) {
				fn(val)
			}
		})
	}
	jsontext.EachElement(messagesJSON, func(_ int, m []byte) bool {
		members(m, "tool_calls", func(calls []byte) {
			jsontext.EachElement(calls, func(_ int, call []byte) bool {
				members(call, "function", func(fn []byte) {
					members(fn, "arguments", func(args []byte) {
						s, ok := jsontext.Unquote(args)
						b := bytes.TrimLeft([]byte(s), " \t\r\n")
						if !ok || len(b) == 0 || b[0] != '{' || !jsontext.Valid(b, jsontext.JSON) {
							return
						}
						at := cap(messagesJSON) - cap(args) // args is a subslice of messagesJSON
						out = append(out, messagesJSON[copied:at]...)
						out = jsontext.AppendCompact(out, b)
						copied = at + len(args)
					})
				})
				return true
			})
		})
		return true
	})
	if out == nil {
		return messagesJSON
	}
	return append(out, messagesJSON[copied:]...)
}
