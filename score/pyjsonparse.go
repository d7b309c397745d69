package score

import (
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// pyValid tells whether Python's json.loads accepts data (strict: no control
// characters in strings, nothing but whitespace after the value; the constants
// NaN, Infinity and -Infinity accepted).
func pyValid(data []byte) bool {
	p := pyParser{data: data}
	p.space()
	if !p.skip(0) {
		return false
	}
	p.space()
	return p.i == len(p.data)
}

// pyParser scans JSON as Python's json module reads it. The scorer's hot path
// uses it instead of encoding/json: it allocates nothing but the strings it is
// asked to decode.
type pyParser struct {
	data []byte
	i    int
	// strict refuses NaN, Infinity and -Infinity (strict JSON, as msgspec reads
	// the reference's event log).
	strict bool
}

// maxDepth bounds nesting (Python stops near its recursion limit, 1000).
const maxDepth = 1000

func (p *pyParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *pyParser) lit(s string) bool {
	if len(p.data)-p.i >= len(s) && string(p.data[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// number reads -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?
func (p *pyParser) number() (any, bool) {
	start := p.i
	if p.i < len(p.data) && p.data[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.data) && p.data[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, false
	}
	if p.i < len(p.data) && p.data[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.data) && (p.data[p.i] == 'e' || p.data[p.i] == 'E') {
		p.i++
		if p.i < len(p.data) && (p.data[p.i] == '+' || p.data[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return json.Number(p.data[start:p.i]), true
}

// str reads a string; the opening quote is at p.i.
func (p *pyParser) str() (any, bool) {
	p.i++
	start := p.i
	// Fast path: no escapes.
	for p.i < len(p.data) {
		c := p.data[p.i]
		if c == '"' {
			s := string(p.data[start:p.i])
			p.i++
			if !utf8.ValidString(s) {
				s = string([]rune(s)) // invalid bytes become U+FFFD
			}
			return s, true
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.i++
	}
	buf := append([]byte(nil), p.data[start:p.i]...)
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			p.i++
			s := string(buf)
			if !utf8.ValidString(s) {
				s = string([]rune(s))
			}
			return s, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(p.data) {
			return nil, false
		}
		e := p.data[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return nil, false
			}
			if utf16.IsSurrogate(r) {
				// A pair combines; a lone surrogate (kept by Python) becomes U+FFFD.
				if p.i+1 < len(p.data) && p.data[p.i] == '\\' && p.data[p.i+1] == 'u' {
					save := p.i
					p.i += 2
					r2, ok := p.hex4()
					if ok {
						if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
							buf = utf8.AppendRune(buf, c)
							continue
						}
					}
					p.i = save
				}
				r = utf8.RuneError
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, false
		}
	}
	return nil, false
}

func (p *pyParser) hex4() (rune, bool) {
	if len(p.data)-p.i < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.data[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(n), true
}
