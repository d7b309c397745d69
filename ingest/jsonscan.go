package ingest

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// A small validating JSON scanner for trace lines. It finds the extent of values
// without decoding them, so a row's large strings are decoded once, straight into
// their column, and the rest is kept as raw JSON.

// maxDepth bounds nesting, so hostile input cannot exhaust the stack.
const maxDepth = 512

// syntaxError is a JSON syntax problem at a byte offset of the line.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.off+1, e.msg)
}

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// strSafe marks the bytes that may appear unescaped in a string and need no
// attention: everything but '"', '\\' and control characters.
func strSafe(c byte) bool { return c >= 0x20 && c != '"' && c != '\\' }

// SWAR helpers: test 8 bytes at a time for the bytes a string scan must stop at.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// stopWord reports whether the little-endian word w holds a '"', a '\\' or a
// control character (< 0x20).
func stopWord(w uint64) bool {
	quote := w ^ (lsb * '"')
	bslash := w ^ (lsb * '\\')
	// A zero byte in quote or bslash, or a byte below 0x20 in w; bytes >= 0x80 are
	// masked out by &^ w.
	return ((quote-lsb)&^quote|(bslash-lsb)&^bslash|(w-lsb*0x20))&^w&msb != 0
}

// scanString returns the offset just past the string starting at b[i] == '"'.
func scanString(b []byte, i int) (int, error) {
	start := i
	i++
	for {
		for i+8 <= len(b) && !stopWord(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && strSafe(b[i]) {
			i++
		}
		if i >= len(b) {
			return i, &syntaxError{start, "unterminated string"}
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			if i+1 >= len(b) {
				return i, &syntaxError{i, "unterminated escape"}
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return i, &syntaxError{i, "short \\u escape"}
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, &syntaxError{i, "bad \\u escape"}
					}
				}
				i += 6
			default:
				return i, &syntaxError{i, fmt.Sprintf("bad escape \\%c", b[i+1])}
			}
		default:
			return i, &syntaxError{i, "control character in string"}
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber returns the offset just past the number starting at b[i].
func scanNumber(b []byte, i int) (int, error) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return i, &syntaxError{start, "bad number"}
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return i, &syntaxError{start, "bad number"}
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, &syntaxError{start, "bad number"}
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

// scanValue returns the offset just past the value starting at b[i] (no leading
// whitespace).
func scanValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, &syntaxError{i, "unexpected end of input"}
	}
	switch c := b[i]; {
	case c == '"':
		return scanString(b, i)
	case c == '{':
		if depth >= maxDepth {
			return i, &syntaxError{i, "nested too deeply"}
		}
		return scanObject(b, i, depth+1, nil)
	case c == '[':
		if depth >= maxDepth {
			return i, &syntaxError{i, "nested too deeply"}
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = scanValue(b, i, depth+1); err != nil {
				return i, err
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return i, &syntaxError{i, "unterminated array"}
			}
			if b[i] == ']' {
				return i + 1, nil
			}
			if b[i] != ',' {
				return i, &syntaxError{i, fmt.Sprintf("expected ',' or ']', found %q", b[i])}
			}
			i = skipWS(b, i+1)
		}
	case c == '-' || isDigit(c):
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	default:
		return i, &syntaxError{i, fmt.Sprintf("unexpected %s", quoteByte(b, i))}
	}
}

func quoteByte(b []byte, i int) string {
	r, _ := utf8.DecodeRune(b[i:])
	return fmt.Sprintf("%q", r)
}

func scanLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, &syntaxError{i, "bad literal"}
	}
	return i + len(lit), nil
}

// scanObject scans the object starting at b[i] == '{', calling field (when not nil)
// with each key's raw string token and the value's raw bytes.
func scanObject(b []byte, i, depth int, field func(key, val []byte)) (int, error) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return i, &syntaxError{i, "unterminated object"}
		}
		if b[i] != '"' {
			return i, &syntaxError{i, fmt.Sprintf("expected a key, found %s", quoteByte(b, i))}
		}
		ks := i
		var err error
		if i, err = scanString(b, i); err != nil {
			return i, err
		}
		ke := i
		i = skipWS(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, &syntaxError{i, "expected ':' after key"}
		}
		i = skipWS(b, i+1)
		vs := i
		if i, err = scanValue(b, i, depth); err != nil {
			return i, err
		}
		if field != nil {
			field(b[ks:ke], b[vs:i])
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return i, &syntaxError{i, "unterminated object"}
		}
		if b[i] == '}' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return i, &syntaxError{i, fmt.Sprintf("expected ',' or '}', found %s", quoteByte(b, i))}
		}
		i = skipWS(b, i+1)
	}
}

// parseObject checks that b is exactly one JSON object (surrounding whitespace
// allowed) and calls field for each of its members.
func parseObject(b []byte, field func(key, val []byte)) error {
	i := skipWS(b, 0)
	if i >= len(b) {
		return &syntaxError{i, "empty line"}
	}
	if b[i] != '{' {
		if _, err := scanValue(b, i, 0); err != nil {
			return err
		}
		return fmt.Errorf("line is a JSON %s, not an object", kind(b[i:]))
	}
	i, err := scanObject(b, i, 1, field)
	if err != nil {
		return err
	}
	if i = skipWS(b, i); i < len(b) {
		return &syntaxError{i, "trailing data after the object"}
	}
	return nil
}

// eachElement calls fn for every element of the JSON array raw (already scanned).
func eachElement(raw []byte, fn func(k int, val []byte) error) error {
	i := skipWS(raw, 1)
	k := 0
	for i < len(raw) && raw[i] != ']' {
		end, err := scanValue(raw, i, 1)
		if err != nil {
			return err
		}
		if err := fn(k, raw[i:end]); err != nil {
			return err
		}
		k++
		i = skipWS(raw, end)
		if i < len(raw) && raw[i] == ',' {
			i = skipWS(raw, i+1)
		}
	}
	return nil
}

// eachMember calls fn for every member of the JSON object raw (already scanned).
func eachMember(raw []byte, fn func(key, val []byte)) {
	_, _ = scanObject(raw, 0, 1, fn)
}

// kind names the JSON type of the raw value.
func kind(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}
