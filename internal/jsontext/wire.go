package jsontext

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// The wire encoding: how a message and the other JSON values of a request are
// serialized, byte for byte as the reference client's encoder (msgspec) writes the
// same Python values. Strings: '"', '\\' and the control characters U+0000..U+001F
// are escaped (\b \t \n \f \r, else \u00xx in lowercase hex); every other
// character, ASCII or not (U+2028 and U+2029 included), is written as is; invalid
// UTF-8 becomes \ufffd. Numbers: an integer literal is written as the integer it is
// (-0 as 0); any other number as msgspec writes a float (AppendPyFloat: 1.0, 0.95,
// 1e16, 1e-6). Objects and arrays are compact (no whitespace) and keep their key
// order; a key given twice keeps its first place and its last value, as a Python
// dict does.

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
	sc := NewScanner(raw, JSON)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false, false
	}
	if tok, err := sc.String(); err != nil || len(tok) != len(raw) {
		return "", false, false
	}
	s, canonical = DecodeValidString(raw)
	return s, canonical, true
}

// AppendCompact appends the valid JSON value raw to dst in the wire encoding: no
// whitespace, key order kept (a repeated key keeps its first place and its last
// value), strings re-encoded as AppendString does, integers as integers and other
// numbers as AppendPyFloat writes them, so that the same value always serializes to
// the same bytes, the bytes the reference client's msgspec encoder writes for it.
// raw must be valid JSON.
func AppendCompact(dst []byte, raw []byte) []byte {
	dst, _ = appendValue(dst, raw, SkipSpace(raw, 0))
	return dst
}

// appendValue appends the value starting at raw[i] and returns the offset after it.
func appendValue(dst, raw []byte, i int) ([]byte, int) {
	if i >= len(raw) {
		return dst, i
	}
	switch c := raw[i]; c {
	case '"':
		j := StringEnd(raw, i)
		if tok := raw[i:j]; canonicalToken(tok) && utf8.Valid(tok) {
			dst = append(dst, tok...)
		} else {
			s, _ := DecodeValidString(tok)
			dst = AppendString(dst, s)
		}
		return dst, j
	case '{':
		return appendObjectValue(dst, raw, i)
	case '[':
		dst = append(dst, '[')
		i = SkipSpace(raw, i+1)
		if i < len(raw) && raw[i] == ']' {
			return append(dst, ']'), i + 1
		}
		for i < len(raw) {
			dst, i = appendValue(dst, raw, i)
			i = SkipSpace(raw, i)
			if i >= len(raw) || raw[i] == ']' {
				return append(dst, ']'), i + 1
			}
			dst = append(dst, ',')
			i = SkipSpace(raw, i+1)
		}
		return append(dst, ']'), i
	case 't', 'f', 'n':
		j := i
		for j < len(raw) && raw[j] >= 'a' && raw[j] <= 'z' {
			j++
		}
		return append(dst, raw[i:j]...), j
	default:
		j := i
		for j < len(raw) && (raw[j] == '-' || raw[j] == '+' || raw[j] == '.' || raw[j] == 'e' || raw[j] == 'E' || (raw[j] >= '0' && raw[j] <= '9')) {
			j++
		}
		return AppendNumber(dst, raw[i:j]), j
	}
}

// member is one member of an object being encoded: its decoded key and where its
// value lies in the output.
type member struct {
	key        string
	start, end int // the whole member "key":value in the output
	vstart     int // its value
}

func appendObjectValue(dst, raw []byte, i int) ([]byte, int) {
	base := len(dst)
	dst = append(dst, '{')
	var buf [8]member
	ms := buf[:0]
	dup := false
	i = SkipSpace(raw, i+1)
	for i < len(raw) && raw[i] != '}' {
		j := StringEnd(raw, i)
		tok := raw[i:j]
		var key string
		plain := len(tok) >= 2 && bytes.IndexByte(tok, '\\') < 0 && utf8.Valid(tok)
		if plain {
			// No escapes: the key is the token's body, read in place (raw outlives
			// this call) and written as it is.
			key = unsafe.String(unsafe.SliceData(tok[1:]), len(tok)-2)
		} else {
			key, _ = DecodeValidString(tok)
		}
		start := len(dst)
		if len(ms) > 0 {
			dst = append(dst, ',')
			start++
		}
		for k := range ms {
			if ms[k].key == key {
				dup = true
				break
			}
		}
		if plain && canonicalToken(tok) {
			dst = append(dst, tok...)
		} else {
			dst = AppendString(dst, key)
		}
		dst = append(dst, ':')
		i = SkipSpace(raw, j)
		i = SkipSpace(raw, i+1) // the colon
		vstart := len(dst)
		dst, i = appendValue(dst, raw, i)
		ms = append(ms, member{key: key, start: start, end: len(dst), vstart: vstart})
		i = SkipSpace(raw, i)
		if i < len(raw) && raw[i] == ',' {
			i = SkipSpace(raw, i+1)
		}
	}
	dst = append(dst, '}')
	if !dup {
		return dst, i + 1
	}
	// A repeated key: as a Python dict, the key keeps its first place and takes
	// its last value.
	out := make([]byte, 0, len(dst)-base)
	out = append(out, '{')
	for k := range ms {
		first := true
		for p := 0; p < k; p++ {
			if ms[p].key == ms[k].key {
				first = false
				break
			}
		}
		if !first {
			continue
		}
		last := k
		for p := k + 1; p < len(ms); p++ {
			if ms[p].key == ms[k].key {
				last = p
			}
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, dst[ms[k].start:ms[k].vstart]...)
		out = append(out, dst[ms[last].vstart:ms[last].end]...)
	}
	out = append(out, '}')
	return append(dst[:base], out...), i + 1
}

// AppendNumber appends the JSON number literal tok as the reference client sends
// the value Python reads from it: an integer literal as that integer (-0 as 0), any
// other literal as a float in AppendPyFloat's form (1.50 as 1.5, 1e5 as 100000.0).
func AppendNumber(dst, tok []byte) []byte {
	if bytes.IndexAny(tok, ".eE") < 0 {
		if string(tok) == "-0" {
			return append(dst, '0')
		}
		return append(dst, tok...)
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil && !math.IsInf(v, 0) {
		return append(dst, tok...)
	}
	return AppendPyFloat(dst, v)
}

// AppendPyFloat appends v as the reference client's JSON encoder (msgspec) writes a
// Python float: the shortest digits that read back as v, in positional notation
// with at least one fractional digit when the decimal exponent allows (1.0, 0.95,
// 1000000000000000.0, 0.0001), otherwise as d.ddde±x without a plus sign or leading
// zeros (1e16, 1.5e-7); NaN and infinities as null.
func AppendPyFloat(dst []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(dst, "null"...)
	}
	if math.Signbit(v) {
		dst = append(dst, '-')
		v = -v
	}
	if v == 0 {
		return append(dst, "0.0"...)
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], v, 'e', -1, 64) // d.ddde±xx
	p := bytes.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(string(e[p+1:]))
	digits := make([]byte, 0, p)
	for _, c := range e[:p] {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	n := len(digits)
	k := exp - (n - 1) // v = digits × 10^k
	kk := n + k        // position of the decimal point
	switch {
	case k >= 0 && kk <= 16:
		dst = append(dst, digits...)
		for range k {
			dst = append(dst, '0')
		}
		return append(dst, '.', '0')
	case kk > 0 && kk <= 16:
		dst = append(dst, digits[:kk]...)
		dst = append(dst, '.')
		return append(dst, digits[kk:]...)
	case kk > -5 && kk <= 0:
		dst = append(dst, '0', '.')
		for range -kk {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if n > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		return strconv.AppendInt(dst, int64(kk-1), 10)
	}
}

// canonicalToken reports whether the valid string token raw is in the wire
// encoding already (DecodeValidString's canonical), without decoding it: its only
// escapes are \" \\ \b \f \n \r \t and \u00xx (lowercase) for the other control
// characters.
func canonicalToken(raw []byte) bool {
	if len(raw) < 2 {
		return false
	}
	body := raw[1 : len(raw)-1]
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
			if i+6 > len(body) || string(body[i+2:i+4]) != "00" || !strings.Contains(controlEscapes, string(body[i+4:i+6])) {
				return false
			}
			body = body[i+6:]
		default:
			return false
		}
	}
}

// controlEscapes lists the xx of the control characters written as \u00xx: all
// but \b, \t, \n, \f and \r, which have their own escapes.
const controlEscapes = "00 01 02 03 04 05 06 07 0b 0e 0f 10 11 12 13 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f"

// DecodeValidString is DecodeStringCanonical for a token already known to be a
// valid JSON string of valid UTF-8 (as a validating scanner leaves it): it skips
// the checks and copies the runs between escapes in bulk. On a malformed token its
// result is unspecified (but it does not panic).
func DecodeValidString(raw []byte) (s string, canonical bool) {
	if len(raw) < 2 {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	canonical = true
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
		b, ok := Unescape(body[esc+1])
		if !ok {
			// Rare (\u): the rest decoded by jsontext, from the byte before the
			// backslash (AppendUnquote skips a token's first and last bytes).
			at := len(raw) - 1 - len(body) + esc // the backslash
			rest := raw[at-1:]
			out = AppendUnquote(out, rest)
			return unsafe.String(unsafe.SliceData(out), len(out)), canonical && canonicalToken(rest)
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
