package datasets

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/agentrace/agentrace/schemas"
)

// The wire encoding: how a message and the other JSON values of a request are
// serialized. Strings are escaped as Go's encoding/json escapes them with HTML
// escaping off: '"', '\\' and control characters are escaped, U+2028 and U+2029 are
// written as \u2028 and \u2029, invalid UTF-8 becomes U+FFFD, and every other
// character, ASCII or not, is written as is. Objects and arrays are compact (no
// whitespace) and keep their key order.

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string (with quotes) to dst.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = AppendEscaped(dst, s)
	return append(dst, '"')
}

// AppendEscaped appends s JSON-escaped, without the surrounding quotes, to dst.
func AppendEscaped(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

// DecodeString decodes a JSON string token (with its quotes). It reports false when
// raw is not a well-formed string token.
func DecodeString(raw []byte) (string, bool) {
	s, _, ok := DecodeStringCanonical(raw)
	return s, ok
}

// DecodeStringCanonical decodes a JSON string token like DecodeString and also
// reports whether raw is already in the wire encoding, that is, whether
// AppendString(nil, s) equals raw (raw must be valid UTF-8), so that a caller can
// copy raw instead of re-encoding.
func DecodeStringCanonical(raw []byte) (s string, canonical, ok bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false, false
	}
	body := raw[1 : len(raw)-1]
	canonical = true
	esc := -1
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '\\' {
			esc = i
			break
		}
		if c == '"' || c < 0x20 {
			return "", false, false
		}
		if c == 0xE2 && i+2 < len(body) && body[i+1] == 0x80 && (body[i+2] == 0xA8 || body[i+2] == 0xA9) {
			canonical = false
		}
	}
	if esc < 0 {
		return string(body), canonical, true
	}
	out := make([]byte, 0, len(body))
	out = append(out, body[:esc]...)
	for i := esc; i < len(body); {
		c := body[i]
		if c != '\\' {
			if c == '"' || c < 0x20 {
				return "", false, false
			}
			if c == 0xE2 && i+2 < len(body) && body[i+1] == 0x80 && (body[i+2] == 0xA8 || body[i+2] == 0xA9) {
				canonical = false
			}
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(body) {
			return "", false, false
		}
		if b, ok := unescapeSimple(body[i+1]); ok {
			out = append(out, b)
			canonical = canonical && b != '/'
			i += 2
			continue
		}
		switch body[i+1] {
		case 'u':
			r, ok := hex4(body, i+2)
			if !ok {
				return "", false, false
			}
			if canonical {
				switch {
				case r < 0x20 && r != '\b' && r != '\f' && r != '\n' && r != '\r' && r != '\t':
				case r == '\u2028' || r == '\u2029':
				default:
					canonical = false
				}
				for _, h := range body[i+2 : i+6] {
					if h >= 'A' && h <= 'F' {
						canonical = false
					}
				}
			}
			i += 6
			if utf16.IsSurrogate(r) {
				canonical = false
				if r2, ok := hex4(body, i+2); ok && i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false, false
		}
	}
	return string(out), canonical, true
}

// unescapeSimple returns the byte that the one-character escape \c stands for, and
// false for \u and anything that is not an escape. "\/" is valid but not the
// canonical form of "/".
func unescapeSimple(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// AppendCompact appends the valid JSON value raw to dst in the wire encoding: no
// whitespace, key order kept, numbers and literals verbatim, every string re-encoded
// as AppendString does (so the same value always serializes to the same bytes,
// whatever escapes the input used). raw must be valid JSON.
func AppendCompact(dst []byte, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			j := stringEnd(raw, i)
			if tok := raw[i:j]; canonicalToken(tok) && utf8.Valid(tok) {
				dst = append(dst, tok...)
			} else {
				s, _ := DecodeValidString(tok)
				dst = AppendString(dst, s)
			}
			i = j
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
}

// canonicalToken reports whether the valid string token raw is in the wire
// encoding already (DecodeValidString's canonical), without decoding it.
func canonicalToken(raw []byte) bool {
	if len(raw) < 2 {
		return false
	}
	body := raw[1 : len(raw)-1]
	if hasLineSep(body) {
		return false
	}
	for {
		i := bytes.IndexByte(body, '\\')
		if i < 0 {
			return true
		}
		if i+1 >= len(body) {
			return false
		}
		switch body[i+1] {
		case '"', '\\', 'b', 'f', 'n', 'r', 't':
			body = body[i+2:]
		case 'u':
			if i+6 > len(body) {
				return false
			}
			r, ok := hex4(body, i+2)
			if !ok || (r >= 0x20 && r != '\u2028' && r != '\u2029') || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t' {
				return false
			}
			for _, h := range body[i+2 : i+6] {
				if h >= 'A' && h <= 'F' {
					return false
				}
			}
			body = body[i+6:]
		default:
			return false
		}
	}
}

// stringEnd returns the offset just past the string token starting at raw[i].
func stringEnd(raw []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(raw[j:], '"')
		if k < 0 {
			return len(raw)
		}
		j += k
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for p := j - 1; p > i && raw[p] == '\\'; p-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j
		}
	}
}

// AppendWire appends m's wire form to dst: a JSON object with the keys role,
// content, name, tool_calls, tool_call_id and reasoning_content in that order, absent
// and null values omitted. ToolCalls and structured content are inserted as stored
// (they are already compact wire JSON).
func AppendWire(dst []byte, m *schemas.Message) []byte {
	dst = append(dst, `{"role":`...)
	dst = AppendString(dst, m.Role)
	if m.Content != nil {
		dst = append(dst, `,"content":`...)
		if m.ContentJSON {
			dst = append(dst, *m.Content...)
		} else {
			dst = AppendString(dst, *m.Content)
		}
	}
	if m.Name != nil {
		dst = append(dst, `,"name":`...)
		dst = AppendString(dst, *m.Name)
	}
	if m.ToolCalls != "" {
		dst = append(dst, `,"tool_calls":`...)
		dst = append(dst, m.ToolCalls...)
	}
	if m.ToolCallID != nil {
		dst = append(dst, `,"tool_call_id":`...)
		dst = AppendString(dst, *m.ToolCallID)
	}
	if m.ReasoningContent != nil {
		dst = append(dst, `,"reasoning_content":`...)
		dst = AppendString(dst, *m.ReasoningContent)
	}
	return append(dst, '}')
}

// appendFloat appends v as a JSON number, formatted as encoding/json formats a
// float64.
func appendFloat(dst []byte, v float64) []byte {
	abs := math.Abs(v)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, v, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// DecodeValidString is DecodeStringCanonical for a token already known to be a
// valid JSON string of valid UTF-8 (as a validating scanner leaves it): it skips
// the checks and copies the runs between escapes in bulk. On a malformed token its
// result is unspecified (but it does not panic).
func DecodeValidString(raw []byte) (s string, canonical bool) {
	if len(raw) < 2 {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	canonical = !hasLineSep(body)
	esc := bytes.IndexByte(body, '\\')
	if esc < 0 {
		return string(body), canonical
	}
	out := make([]byte, 0, len(body))
	for esc >= 0 {
		out = append(out, body[:esc]...)
		if esc+1 >= len(body) {
			return string(out), false
		}
		c := body[esc+1]
		b, ok := unescapeSimple(c)
		if !ok {
			if c != 'u' {
				return string(out), false
			}
			// Rare: decode the rest exactly.
			rest, canon, ok := DecodeStringCanonical(append(append([]byte{'"'}, body[esc:]...), '"'))
			if !ok {
				return string(out), false
			}
			return string(out) + rest, canonical && canon
		}
		out = append(out, b)
		canonical = canonical && b != '/'
		body = body[esc+2:]
		esc = bytes.IndexByte(body, '\\')
	}
	out = append(out, body...)
	// out is not used again: the string can own its bytes.
	return unsafe.String(unsafe.SliceData(out), len(out)), canonical
}

// hasLineSep reports whether b holds U+2028 or U+2029 (E2 80 A8 or E2 80 A9).
func hasLineSep(b []byte) bool {
	for {
		i := bytes.IndexByte(b, 0xE2)
		if i < 0 || i+2 >= len(b) {
			return false
		}
		if b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9) {
			return true
		}
		b = b[i+1:]
	}
}
