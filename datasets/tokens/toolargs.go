package tokens

import (
	"bytes"
	"encoding/json"

	"github.com/agentrace/agentrace/datasets"
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
	if !bytes.Contains(messagesJSON, []byte(`"arguments"`)) {
		return messagesJSON
	}
	n := &argsNormalizer{in: messagesJSON}
	i := skipWS(messagesJSON, 0)
	if i >= len(messagesJSON) || messagesJSON[i] != '[' {
		return messagesJSON
	}
	n.forEachElement(i, func(j int) { n.object(j, n.message) })
	if !n.changed {
		return messagesJSON
	}
	return append(n.out, messagesJSON[n.copied:]...)
}

type argsNormalizer struct {
	in      []byte
	out     []byte
	copied  int // in[:copied] is in out (with replacements)
	changed bool
}

// message looks at one member of a message object.
func (n *argsNormalizer) message(key string, v int) {
	if key == "tool_calls" && v < len(n.in) && n.in[v] == '[' {
		n.forEachElement(v, func(j int) { n.object(j, n.toolCall) })
	}
}

func (n *argsNormalizer) toolCall(key string, v int) {
	if key == "function" {
		n.object(v, n.function)
	}
}

func (n *argsNormalizer) function(key string, v int) {
	if key != "arguments" || v >= len(n.in) || n.in[v] != '"' {
		return
	}
	end := valueEnd(n.in, v)
	s, ok := datasets.DecodeString(n.in[v:end])
	if !ok {
		return
	}
	b := bytes.TrimLeft([]byte(s), " \t\r\n")
	if len(b) == 0 || b[0] != '{' || !json.Valid(b) {
		return
	}
	n.out = append(n.out, n.in[n.copied:v]...)
	n.out = datasets.AppendCompact(n.out, b)
	n.copied, n.changed = end, true
}

// object calls member for each member of the object at in[i] (when it is one),
// with the offset of the member's value.
func (n *argsNormalizer) object(i int, member func(key string, v int)) {
	if i >= len(n.in) || n.in[i] != '{' {
		return
	}
	j := skipWS(n.in, i+1)
	for j < len(n.in) && n.in[j] == '"' {
		kend := valueEnd(n.in, j)
		key, _ := datasets.DecodeString(n.in[j:kend])
		v := skipWS(n.in, skipWS(n.in, kend)+1) // past the colon
		member(key, v)
		j = skipWS(n.in, valueEnd(n.in, v))
		if j < len(n.in) && n.in[j] == ',' {
			j = skipWS(n.in, j+1)
		}
	}
}

// forEachElement calls fn with the offset of each element of the array at in[i].
func (n *argsNormalizer) forEachElement(i int, fn func(j int)) {
	j := skipWS(n.in, i+1)
	for j < len(n.in) && n.in[j] != ']' {
		fn(j)
		j = skipWS(n.in, valueEnd(n.in, j))
		if j < len(n.in) && n.in[j] == ',' {
			j = skipWS(n.in, j+1)
		}
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the offset just past the valid JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		j := i + 1
		for {
			k := bytes.IndexByte(b[j:], '"')
			if k < 0 {
				return len(b)
			}
			j += k
			bs := 0
			for p := j - 1; p > i && b[p] == '\\'; p-- {
				bs++
			}
			j++
			if bs%2 == 0 {
				return j
			}
		}
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = valueEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
			j++
		}
		return j
	}
}
