package score

import (
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// pyConst is one of Python json's extra constants NaN, Infinity and -Infinity: a
// truthy number.
type pyConst string

// parsePyJSON parses one JSON document as Python's json.loads does (strict: no
// control characters in strings, nothing but whitespace after the value; the
// constants NaN, Infinity and -Infinity accepted). Objects become map[string]any
// (the last of duplicate keys wins), arrays []any, strings string, numbers
// json.Number, the constants pyConst, and true, false and null bool and nil. It is
// the scorer's hot path, several times faster than encoding/json's reflection.
func parsePyJSON(data []byte) (any, bool) {
	p := pyParser{data: data}
	p.space()
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.i == len(p.data)
}

type pyParser struct {
	data []byte
	i    int
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

func (p *pyParser) value(depth int) (any, bool) {
	if p.i >= len(p.data) || depth > maxDepth {
		return nil, false
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.lit("true")
	case c == 'f':
		return false, p.lit("false")
	case c == 'n':
		return nil, p.lit("null")
	case c == 'N':
		return pyConst("NaN"), p.lit("NaN")
	case c == 'I':
		return pyConst("Infinity"), p.lit("Infinity")
	case c == '-' && p.i+1 < len(p.data) && p.data[p.i+1] == 'I':
		return pyConst("-Infinity"), p.lit("-Infinity")
	default:
		return p.number()
	}
}

func (p *pyParser) object(depth int) (any, bool) {
	p.i++ // {
	obj := map[string]any{}
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return obj, true
	}
	for {
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return nil, false
		}
		p.i++
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		obj[k.(string)] = v
		p.space()
		if p.i >= len(p.data) {
			return nil, false
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return obj, true
		default:
			return nil, false
		}
	}
}

func (p *pyParser) array(depth int) (any, bool) {
	p.i++ // [
	var arr []any
	p.space()
	if p.i < len(p.data) && p.data[p.i] == ']' {
		p.i++
		return []any{}, true
	}
	for {
		p.space()
		v, ok := p.value(depth + 1)
		if !ok {
			return nil, false
		}
		arr = append(arr, v)
		p.space()
		if p.i >= len(p.data) {
			return nil, false
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return arr, true
		default:
			return nil, false
		}
	}
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
