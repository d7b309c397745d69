package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/agentrace/agentrace/internal/jsonscan"
)

// FuzzParseLine feeds arbitrary lines to the line parsers. They must never panic;
// a line must be accepted exactly when it is one JSON object (by encoding/json's
// grammar, nested at most maxDepth deep), a blank line skipped; and every accepted
// flat row must have a role and a conversation id or a problem.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{u1, a2, t3, a4, other, `{"_type": "dataset_metadata"}`, `{"a": [1, {"b": null}], "c": "\u00e9\ud83d\ude00"}`,
		`{"conversation_id": "x", "turn": 1e3}`, `[]`, `{"a":1,}`, `{"a" 1}`, `"x"`, `{"a": "\q"}`, `{"a": -01}`, `{}`,
		`{"conversation_id": "sim_1", "conversation_idx": 2, "messages": [{"role": "user", "content": "x"}]}`,
		`null`, `{"a":1}` + "\x00 garbage", "{}\x00", " \t", "{}\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		it := parseLine(line, 1, FormatFlat)
		_ = parseLine(line, 1, FormatSnapshot)
		text := bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(text)) == 0 {
			if it.err != nil || it.row != nil {
				t.Fatalf("blank line %q not skipped: %v", line, it.err)
			}
			return
		}
		if !utf8.Valid(line) {
			if it.err == nil {
				t.Fatalf("invalid UTF-8 accepted: %q", line)
			}
			return
		}
		object := json.Valid(text) && bytes.TrimLeft(text, " \t\n\r")[0] == '{' && nesting(text) <= maxDepth
		if object != (it.err == nil) {
			t.Fatalf("%q: a JSON object: %v; ingest's error: %v", line, object, it.err)
		}
		var se *jsonscan.SyntaxError
		if errors.As(it.err, &se) && (se.Offset < 0 || se.Offset > len(line)) {
			t.Fatalf("error offset %d outside the line of %d bytes", se.Offset, len(line))
		}
		if it.row != nil && !it.row.metadata && it.row.role == "" && len(it.row.problems) == 0 {
			t.Fatalf("row %q has no role and no problem", line)
		}
		if it.row != nil && !it.row.metadata && it.row.convID == "" && len(it.row.problems) == 0 {
			t.Fatalf("row %q has no conversation id and no problem", line)
		}
	})
}

// nesting is how deep arrays and objects nest in the valid JSON value v, by
// encoding/json's tokens.
func nesting(v []byte) int {
	d := json.NewDecoder(bytes.NewReader(v))
	depth, most := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return most
		}
		if err != nil {
			panic(err)
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
			most = max(most, depth)
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
}
