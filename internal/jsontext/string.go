package jsontext

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// SWAR: test 8 bytes at a time for the bytes a string scan must stop at.
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

// scanString validates the string starting at b[i] == '"' and returns the offset
// just past its closing quote. A raw control character is an error unless rawCtl
// lets it through (the Pandas dialect).
func scanString(b []byte, i int, rawCtl bool) (int, error) {
	start := i
	i++
	for {
		for i+8 <= len(b) && !stopWord(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return i, &SyntaxError{start, "unterminated string"}
		}
		switch b[i] {
		case '"':
			return i + 1, nil
		case '\\':
			var err error
			if i, err = scanEscape(b, i); err != nil {
				return i, err
			}
		default:
			if !rawCtl {
				return i, &SyntaxError{i, "control character in string"}
			}
			i++
		}
	}
}

// scanString validates the string at b[i] == '"' in the scanner's dialect.
func (s *Scanner) scanString(b []byte, i int) (int, error) {
	return scanString(b, i, s.rawCtl)
}

// scanEscape validates the escape at b[i] == '\\' and returns the offset just past
// it.
func scanEscape(b []byte, i int) (int, error) {
	if i+1 >= len(b) {
		return i, &SyntaxError{i, "unterminated escape"}
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2, nil
	case 'u':
		if _, ok := hex4(b[i+2:]); !ok {
			return i, &SyntaxError{i, "bad \\u escape"}
		}
		return i + 6, nil
	}
	return i, &SyntaxError{i, fmt.Sprintf("bad escape \\%c", b[i+1])}
}

// hex4 decodes the four hex digits at the start of h.
func hex4(h []byte) (rune, bool) {
	if len(h) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range h[:4] {
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

// Unescape returns the byte that the one-character escape \c stands for; false
// for \u and for anything that is not an escape.
func Unescape(c byte) (byte, bool) {
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

// Verbatim returns the text between the quotes of a string token when that is the
// string's value (no escapes, valid UTF-8); ok is false when the token needs
// decoding or is not a string token.
func Verbatim(tok []byte) (body []byte, ok bool) {
	if len(tok) < 2 || tok[0] != '"' {
		return nil, false
	}
	body = tok[1 : len(tok)-1]
	return body, bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body)
}

// StringIs reports whether the raw value v is a string token whose text is
// text, without decoding it when it has no escapes.
func StringIs(v []byte, text string) bool {
	if body, ok := Verbatim(v); ok {
		return string(body) == text
	}
	s, ok := Unquote(v)
	return ok && s == text
}

// Unquote decodes a string token (quotes included, as the scanner returns it); ok
// is false when tok does not start with a quote.
func Unquote(tok []byte) (s string, ok bool) {
	if len(tok) < 2 || tok[0] != '"' {
		return "", false
	}
	body, ok := Verbatim(tok)
	if ok {
		return string(body), true
	}
	// The text is at most as long as the token, but for invalid UTF-8 (one byte
	// becomes three): one allocation, which the string then owns.
	b := AppendUnquote(make([]byte, 0, len(body)), tok)
	if len(b) == 0 {
		return "", true
	}
	return unsafe.String(&b[0], len(b)), true
}

// AppendUnquote appends the decoded text of a string token to dst, as
// encoding/json decodes it: escapes resolved, surrogate pairs combined, and a
// lone surrogate or a byte of invalid UTF-8 replaced by U+FFFD. tok must be a
// token the scanner accepted; for anything else the result is unspecified, but it
// does not panic.
func AppendUnquote(dst, tok []byte) []byte {
	if len(tok) < 2 {
		return dst
	}
	b := tok[1 : len(tok)-1]
	for len(b) > 0 {
		j := bytes.IndexByte(b, '\\')
		if j < 0 {
			return appendUTF8(dst, b)
		}
		dst = appendUTF8(dst, b[:j])
		if b = b[j:]; len(b) < 2 {
			return dst
		}
		if c, ok := Unescape(b[1]); ok {
			dst = append(dst, c)
			b = b[2:]
			continue
		}
		r, ok := hex4(b[2:])
		if b[1] != 'u' || !ok {
			return dst
		}
		b = b[6:]
		if utf16.IsSurrogate(r) {
			r2, ok := hex4(b[min(2, len(b)):])
			if dec := utf16.DecodeRune(r, r2); ok && b[0] == '\\' && b[1] == 'u' && dec != utf8.RuneError {
				r, b = dec, b[6:]
			} else {
				r = utf8.RuneError // the next escape, if any, is read on its own
			}
		}
		dst = utf8.AppendRune(dst, r)
	}
	return dst
}

// appendUTF8 appends b, each byte of invalid UTF-8 replaced by U+FFFD.
func appendUTF8(dst, b []byte) []byte {
	if utf8.Valid(b) {
		return append(dst, b...)
	}
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, b[:size]...)
		}
		b = b[size:]
	}
	return dst
}
