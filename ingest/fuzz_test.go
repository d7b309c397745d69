package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/agentrace/agentrace/internal/jsontext"
)

// FuzzParseLine feeds arbitrary lines to the line parsers. They must never panic;
// a flat line must be accepted exactly when it is one object (by encoding/json's
// grammar, or by pandas' with a warning; nested at most maxDepth deep), a blank
// line skipped; and every accepted flat row must have a role and a conversation
// id or a problem.
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
		// A flat line is read as pandas' reader reads it: JSON, plus NaN, Infinity
		// and -Infinity as values and raw control characters inside strings,
		// each such line accepted with a warning.
		isObject := func(v []byte) bool {
			return json.Valid(v) && bytes.TrimLeft(v, " \t\n\r")[0] == '{' && nesting(v) <= maxDepth
		}
		object, pandas := isObject(text), false
		if !object {
			pandas = isObject(pandasAsJSON(text))
		}
		if (object || pandas) != (it.err == nil) {
			t.Fatalf("%q: a JSON object: %v, a pandas object: %v; ingest's error: %v", line, object, pandas, it.err)
		}
		if pandas && !it.row.metadata && len(it.row.warnings) == 0 {
			t.Fatalf("%q: a line pandas reads but JSON does not was accepted without a warning", line)
		}
		var se *jsontext.SyntaxError
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

// pandasAsJSON writes the text that pandas' JSON reader takes as JSON of the same
// shape: NaN, Infinity and -Infinity outside strings as null (null cannot be a
// key nor run into a neighbouring token), raw control characters inside strings
// as \u escapes.
func pandasAsJSON(v []byte) []byte {
	var out []byte
	inString := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		if inString {
			switch {
			case c == '\\' && i+1 < len(v):
				out = append(out, c, v[i+1])
				i++
			case c == '"':
				inString = false
				out = append(out, c)
			case c < 0x20:
				out = fmt.Appendf(out, "\\u%04x", c)
			default:
				out = append(out, c)
			}
			continue
		}
		matched := false
		for _, k := range []string{"-Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(v[i:], []byte(k)) {
				out, i, matched = append(out, "null"...), i+len(k)-1, true
				break
			}
		}
		if !matched {
			inString = c == '"'
			out = append(out, c)
		}
	}
	return out
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
