package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/python"
)

// A flat trace line that is not JSON but that the reference's reader (pandas'
// read_json, its ujson decoder) accepts: NaN, Infinity and -Infinity as numbers,
// raw control characters inside strings. Such a line is read only after the strict
// scan failed (the hot path never comes here), rewritten into JSON with the same
// meaning for the reference, and read as usual; each kind of liberty becomes a
// warning, so that --strict refuses the line as before.
//
//   - NaN becomes null. pandas makes a top-level NaN a missing value, as null is;
//     inside a list or an object it is a float NaN, which the reference's encoder
//     (msgspec) sends as null.
//   - Infinity and -Infinity become 1e999 and -1e999: numbers that overflow to the
//     same float infinities, which msgspec sends as null; a delay of 1e999 is
//     capped like any overlong delay (MaxDelaySeconds), -1e999 is no delay.
//   - A raw control character in a string becomes its \u escape: the same string.
//
// Lowercase nan and inf are refused, as pandas refuses them.

// pandasLine rewrites the line l, which the strict scan refused, into JSON when
// pandas' reader accepts it; ok is false when it does not (the strict error
// stands). warnings say what was rewritten.
func pandasLine(l []byte) (out []byte, warnings []string, ok bool) {
	if !jsontext.Valid(l, jsontext.Pandas) {
		return nil, nil, false
	}
	out = make([]byte, 0, len(l)+16)
	var nan, inf, ninf int
	var ctl [32]int
	inString := false
	for i := 0; i < len(l); i++ {
		c := l[i]
		if inString {
			switch {
			case c == '\\':
				out = append(out, c, l[i+1])
				i++
			case c == '"':
				inString = false
				out = append(out, c)
			case c < 0x20:
				ctl[c]++
				out = append(out, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
			default:
				out = append(out, c)
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
			out = append(out, c)
		case c == 'N': // NaN (the scan validated every literal)
			nan++
			out = append(out, "null"...)
			i += len("NaN") - 1
		case c == 'I':
			inf++
			out = append(out, "1e999"...)
			i += len("Infinity") - 1
		case c == '-' && i+1 < len(l) && l[i+1] == 'I':
			ninf++
			out = append(out, "-1e999"...)
			i += len("-Infinity") - 1
		default:
			out = append(out, c)
		}
	}
	if nan > 0 {
		warnings = append(warnings, fmt.Sprintf("NaN (%d on this line) is not JSON: the reference's reader (pandas) takes it as a missing value at the top level and as a float NaN inside a list or object, which it sends as null; agentrace reads it as null", nan))
	}
	if inf+ninf > 0 {
		warnings = append(warnings, fmt.Sprintf("Infinity or -Infinity (%d on this line) is not JSON: the reference's reader (pandas) takes it as a float infinity, which it sends as null; agentrace reads it as 1e999 or -1e999 (the same overflow), sent as null", inf+ninf))
	}
	var cs []string
	for c, n := range ctl {
		if n > 0 {
			cs = append(cs, fmt.Sprintf("U+%04X", c))
		}
	}
	if len(cs) > 0 {
		warnings = append(warnings, fmt.Sprintf("raw control character %s in a string is not JSON: the reference's reader (pandas) takes it and sends it escaped; so does agentrace", strings.Join(cs, ", ")))
	}
	return out, warnings, true
}

// parseFlatPandas parses a flat line as parseFlatLine does, and when it is not
// JSON, as pandas' reader would take it (pandasLine), with its warnings.
func parseFlatPandas(l []byte, line int64) (*row, error) {
	r, err := parseFlatLine(l, line)
	if err != nil {
		// Not JSON: pandas' reader may still take it (NaN, raw control characters).
		if l2, warnings, ok := pandasLine(l); ok {
			if r2, err2 := parseFlatLine(l2, line); err2 == nil {
				r, err = r2, nil
				r.size = len(l)
				r.warnings = append(warnings, r.warnings...)
			}
		}
	}
	return r, err
}

// endsInString reports whether the line l, which pandas' dialect does not take,
// ends inside a string: a raw newline in a string split it.
func endsInString(l []byte) bool {
	s := jsontext.NewScanner(l, jsontext.Pandas)
	_, err := s.Document()
	var se *jsontext.SyntaxError
	return errors.As(err, &se) && se.Msg == "unterminated string"
}

// maxSpliceLines bounds the lines one spliced record may span.
const maxSpliceLines = 1000

// A raw newline inside a string splits a flat line in two. pandas' reader splits
// the file at every newline, strips each piece of whitespace (Python's
// str.strip), drops the empty ones and joins the rest with commas into one JSON
// array: the two pieces become one record whose string has a comma where the
// newline was (and no whitespace around it). The splicer does the same to the
// lines that end inside a string, with a warning; lines that do not come
// together into a record keep their own errors.
type splicer struct {
	held    []item // the lines of the record being spliced
	buf     []byte
	size    int
	maxLine int
}

// pyStrip is Python's str.strip() (python.IsSpace) on bytes.
func pyStrip(b []byte) []byte {
	return bytes.TrimFunc(b, python.IsSpace)
}

// feed takes the next items of a flat file in order and returns them with split
// records spliced.
func (sp *splicer) feed(items []item) []item {
	out := items[:0:0]
	for _, it := range items {
		if len(sp.held) > 0 {
			if it.err != nil && it.raw != nil {
				sp.held = append(sp.held, it)
				sp.buf = append(sp.buf, ',')
				sp.buf = append(sp.buf, pyStrip(it.raw)...)
				sp.size += len(it.raw)
				first, last := sp.held[0].line, it.line
				r, err := parseFlatPandas(sp.buf, first)
				switch {
				case err == nil:
					r.size = sp.size
					r.warnings = append([]string{fmt.Sprintf("a raw newline inside a string splits this record over lines %d-%d: the reference's reader (pandas) joins the pieces, stripped of whitespace, with a comma, and sends that; so does agentrace", first, last)}, r.warnings...)
					out = append(out, item{line: first, row: r})
					sp.held = sp.held[:0]
				case endsInString(sp.buf) && len(sp.held) < maxSpliceLines && len(sp.buf) <= sp.maxLine:
				default:
					out = append(out, sp.flush()...)
				}
				continue
			}
			out = append(out, sp.flush()...)
		}
		if it.err != nil && it.raw != nil && endsInString(it.raw) {
			sp.held = append(sp.held[:0], it)
			sp.buf = append(sp.buf[:0], pyStrip(it.raw)...)
			sp.size = len(it.raw)
			continue
		}
		out = append(out, it)
	}
	return out
}

// flush gives back the lines held, with their own errors.
func (sp *splicer) flush() []item {
	held := append([]item(nil), sp.held...)
	sp.held = sp.held[:0]
	return held
}

// hasRaw reports whether any item keeps its line for the splicer.
func hasRaw(items []item) bool {
	for i := range items {
		if items[i].raw != nil {
			return true
		}
	}
	return false
}
