package score

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/agentrace/agentrace/schemas"
)

// marshalScores writes scores.json: the document indented, each per_turn row on
// one line, < > & left as they are. It is the same JSON value as json.Marshal(s),
// written many times faster for runs with tens of thousands of turns
// (TestAppendTurnScoreJSON checks each row against encoding/json byte for byte).
func marshalScores(s *schemas.Scores) ([]byte, error) {
	head := *s
	head.PerTurn = nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(head); err != nil {
		return nil, err
	}
	doc := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	const empty = "\n  \"per_turn\": [],"
	i := bytes.Index(doc, []byte(empty))
	if i < 0 || len(s.PerTurn) == 0 {
		return append(doc, '\n'), nil
	}
	out := make([]byte, 0, len(doc)+len(s.PerTurn)*256)
	out = append(out, doc[:i]...)
	out = append(out, "\n  \"per_turn\": ["...)
	for k := range s.PerTurn {
		if k > 0 {
			out = append(out, ',')
		}
		out = append(out, "\n    "...)
		out = appendTurnScoreJSON(out, &s.PerTurn[k])
	}
	out = append(out, "\n  ],"...)
	out = append(out, doc[i+len(empty):]...)
	return append(out, '\n'), nil
}

// appendTurnScoreJSON appends t as TurnScore.MarshalJSON writes it.
func appendTurnScoreJSON(b []byte, t *schemas.TurnScore) []byte {
	b = append(b, `{"conversation_id":`...)
	b = appendJSONString(b, t.ConversationID)
	b = append(b, `,"repeat":`...)
	b = strconv.AppendInt(b, int64(t.Repeat), 10)
	b = append(b, `,"turn":`...)
	b = strconv.AppendInt(b, int64(t.Turn), 10)
	b = append(b, `,"domain":`...)
	b = appendJSONString(b, t.Domain)
	if t.Missing {
		b = append(b, `,"missing":true`...)
	}
	if t.Domain == schemas.DomainWorkflow {
		b = append(b, `,"gt_intents":`...)
		b = appendJSONStrings(b, t.GTIntents)
		b = append(b, `,"model_intent":`...)
		if t.ModelIntent == nil {
			b = append(b, "null"...)
		} else {
			b = appendJSONString(b, *t.ModelIntent)
		}
	} else {
		b = append(b, `,"gt_actions":`...)
		b = appendJSONStrings(b, t.GTActions)
		b = append(b, `,"model_actions":`...)
		b = appendJSONStrings(b, t.ModelActions)
	}
	b = append(b, `,"score":`...)
	b = appendJSONFloat(b, t.Score)
	b = append(b, `,"session_id":`...)
	b = appendJSONString(b, t.SessionID)
	b = append(b, `,"client_turn":`...)
	b = strconv.AppendInt(b, int64(t.ClientTurn), 10)
	b = append(b, `,"in_window":`...)
	b = strconv.AppendBool(b, t.InWindow)
	b = append(b, `,"osl":`...)
	b = strconv.AppendInt(b, int64(t.OSL), 10)
	return append(b, '}')
}

func appendJSONStrings(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendJSONFloat formats like encoding/json.
func appendJSONFloat(b []byte, f float64) []byte {
	abs := f
	if abs < 0 {
		abs = -abs
	}
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		v, _ := json.Marshal(f)
		return append(b, v...)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// appendJSONString escapes like encoding/json without HTML escaping: quotes,
// backslashes, control characters, U+2028 and U+2029; invalid UTF-8 becomes
// U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
