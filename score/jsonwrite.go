package score

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/agentrace/agentrace/internal/jsontext"
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
	b = jsontext.AppendString(b, t.ConversationID)
	b = append(b, `,"repeat":`...)
	b = strconv.AppendInt(b, int64(t.Repeat), 10)
	b = append(b, `,"turn":`...)
	b = strconv.AppendInt(b, int64(t.Turn), 10)
	b = append(b, `,"domain":`...)
	b = jsontext.AppendString(b, t.Domain)
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
			b = jsontext.AppendString(b, *t.ModelIntent)
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
	b = jsontext.AppendString(b, t.SessionID)
	b = append(b, `,"client_turn":`...)
	b = strconv.AppendInt(b, int64(t.ClientTurn), 10)
	b = append(b, `,"in_window":`...)
	b = strconv.AppendBool(b, t.InWindow)
	b = append(b, `,"osl":`...)
	if t.OSL != nil {
		b = strconv.AppendInt(b, int64(*t.OSL), 10)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

func appendJSONStrings(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, s)
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
