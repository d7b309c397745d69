package ingest

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzParseLine feeds arbitrary lines to the line parsers. They must never panic,
// must agree with encoding/json on what is a JSON object, and must give every
// accepted flat row either a role or a problem.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{u1, a2, t3, a4, other, `{"_type": "dataset_metadata"}`, `{"a": [1, {"b": null}], "c": "\u00e9\ud83d\ude00"}`,
		`{"conversation_id": "x", "turn": 1e3}`, `[]`, `{"a":1,}`, `{"a" 1}`, `"x"`, `{"a": "\q"}`, `{"a": -01}`, `{}`,
		`{"conversation_id": "sim_1", "conversation_idx": 2, "messages": [{"role": "user", "content": "x"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		it := parseLine(line, 1, FormatFlat)
		_ = parseLine(line, 1, FormatSnapshot)
		if !utf8.Valid(line) {
			if it.err == nil {
				t.Fatalf("invalid UTF-8 accepted: %q", line)
			}
			return
		}
		var obj map[string]json.RawMessage
		stdErr := json.Unmarshal(line, &obj)
		var se *syntaxError
		blank := it.err == nil && it.row == nil
		switch {
		case blank:
			if stdErr == nil {
				t.Fatalf("object %q taken for a blank line", line)
			}
		case stdErr == nil && it.err != nil:
			t.Fatalf("encoding/json accepts %q, ingest says %v", line, it.err)
		case stdErr != nil && it.err == nil:
			var ute *json.UnmarshalTypeError
			if !errors.As(stdErr, &ute) { // a non-object is our error too
				t.Fatalf("encoding/json rejects %q (%v), ingest accepts it", line, stdErr)
			}
			t.Fatalf("non-object %q accepted", line)
		case it.err != nil && errors.As(it.err, &se) && (se.off < 0 || se.off > len(line)):
			t.Fatalf("error offset %d outside the line of %d bytes", se.off, len(line))
		}
		if it.row != nil && !it.row.metadata && it.row.role == "" && len(it.row.problems) == 0 {
			t.Fatalf("row %q has no role and no problem", line)
		}
		if it.row != nil && !it.row.metadata && it.row.convID == "" && len(it.row.problems) == 0 {
			t.Fatalf("row %q has no conversation id and no problem", line)
		}
	})
}
