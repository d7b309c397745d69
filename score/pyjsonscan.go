package score

// Allocation-free scanning for the tool-call shapes the scorer reads. The scanner
// validates exactly what parsePyJSON accepts, but keeps only the byte spans of the
// few values it needs (the last of duplicate keys, as in a Python dict).

// skip validates one value at p.i and moves past it.
func (p *pyParser) skip(depth int) bool {
	if p.i >= len(p.data) || depth > maxDepth {
		return false
	}
	switch c := p.data[p.i]; {
	case c == '{':
		return p.skipObject(depth, nil)
	case c == '[':
		p.i++
		p.space()
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.i++
			return true
		}
		for {
			p.space()
			if !p.skip(depth + 1) {
				return false
			}
			p.space()
			if p.i >= len(p.data) {
				return false
			}
			switch p.data[p.i] {
			case ',':
				p.i++
			case ']':
				p.i++
				return true
			default:
				return false
			}
		}
	case c == '"':
		_, ok := p.skipString()
		return ok
	case c == 't':
		return p.lit("true")
	case c == 'f':
		return p.lit("false")
	case c == 'n':
		return p.lit("null")
	case c == 'N':
		return !p.strict && p.lit("NaN")
	case c == 'I':
		return !p.strict && p.lit("Infinity")
	case c == '-' && p.i+1 < len(p.data) && p.data[p.i+1] == 'I':
		return !p.strict && p.lit("-Infinity")
	default:
		_, ok := p.number()
		return ok
	}
}

// skipString validates a string at p.i and moves past it; plain tells that it has
// no escapes (so its raw bytes are its value).
func (p *pyParser) skipString() (plain bool, ok bool) {
	p.i++
	plain = true
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			p.i++
			return plain, true
		case c < 0x20:
			return false, false
		case c == '\\':
			plain = false
			p.i++
			if p.i >= len(p.data) {
				return false, false
			}
			switch p.data[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				p.i++
				if _, ok := p.hex4(); !ok {
					return false, false
				}
			default:
				return false, false
			}
		default:
			p.i++
		}
	}
	return false, false
}

// span is a value's raw bytes within the scanned document.
type span []byte

// wanted names up to eight keys whose last values skipObject records.
type wanted struct {
	keys [8]string
	vals [8]span
}

func (w *wanted) slot(key []byte) *span {
	for i, k := range w.keys {
		if k != "" && string(key) == k {
			return &w.vals[i]
		}
	}
	return nil
}

// skipObject validates an object at p.i; for each key of want (matched on its
// decoded text) it records the span of the key's last value.
func (p *pyParser) skipObject(depth int, want *wanted) bool {
	p.i++ // {
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return true
	}
	for {
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != '"' {
			return false
		}
		ks := p.i
		plain, ok := p.skipString()
		if !ok {
			return false
		}
		key := p.data[ks+1 : p.i-1]
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return false
		}
		p.i++
		p.space()
		vs := p.i
		if !p.skip(depth + 1) {
			return false
		}
		if want != nil {
			var dst *span
			if plain {
				dst = want.slot(key)
			} else if k, ok := (&pyParser{data: p.data[ks:p.i]}).str(); ok {
				dst = want.slot([]byte(k.(string)))
			}
			if dst != nil {
				*dst = span(p.data[vs:p.i])
			}
		}
		p.space()
		if p.i >= len(p.data) {
			return false
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return true
		default:
			return false
		}
	}
}

// stringValue decodes a string span.
func (s span) stringValue() (string, bool) {
	if len(s) == 0 || s[0] != '"' {
		return "", false
	}
	v, ok := (&pyParser{data: s}).str()
	if !ok {
		return "", false
	}
	return v.(string), true
}

// isString tells whether a span is the JSON string of text (fast for plain text).
func (s span) isString(text string) bool {
	if len(s) == len(text)+2 && s[0] == '"' && string(s[1:len(s)-1]) == text {
		return true
	}
	v, ok := s.stringValue()
	return ok && v == text
}

// scanToolCalls validates a tool_calls document as json.loads would and calls fn
// with the function name and arguments spans of each call whose "function" is an
// object (nil spans when absent). ok is false when the document is invalid JSON
// (nothing is reported then) or not an array.
func scanToolCalls(data []byte, fn func(name, args span)) bool {
	p := pyParser{data: data}
	p.space()
	if p.i >= len(p.data) || p.data[p.i] != '[' {
		// Valid JSON that is not a list counts for nothing either way.
		return false
	}
	// First validate the whole document, so that nothing is reported for invalid
	// input; then walk the calls.
	if !p.skip(0) {
		return false
	}
	p.space()
	if p.i != len(p.data) {
		return false
	}
	p.i = 0
	p.space()
	p.i++ // [
	for {
		p.space()
		if p.i < len(p.data) && p.data[p.i] == ']' {
			return true
		}
		var call wanted
		call.keys[0] = "function"
		if p.data[p.i] == '{' {
			p.skipObject(1, &call)
		} else {
			p.skip(1)
		}
		if function := call.vals[0]; len(function) > 0 && function[0] == '{' {
			var f wanted
			f.keys[0], f.keys[1] = "name", "arguments"
			(&pyParser{data: function}).skipObject(0, &f)
			fn(f.vals[0], f.vals[1])
		}
		p.space()
		if p.data[p.i] == ',' {
			p.i++
		}
	}
}

// bashArgsCommand extracts the command from a bash call's arguments span: a JSON
// string holding a JSON object, or the object itself; "command" when truthy, else
// "cmd"; it must be a string.
func bashArgsCommand(args span) (string, bool) {
	if len(args) > 0 && args[0] == '"' {
		s, ok := args.stringValue()
		if !ok {
			return "", false
		}
		args = span(s)
		q := pyParser{data: args}
		q.space()
		if q.i >= len(args) || args[q.i] != '{' {
			return "", false // not an object (or not JSON at all): skipped either way
		}
		if !q.skip(0) {
			return "", false
		}
		q.space()
		if q.i != len(args) {
			return "", false
		}
	}
	var w wanted
	w.keys[0], w.keys[1] = "command", "cmd"
	q := pyParser{data: args}
	q.space()
	if q.i >= len(args) || args[q.i] != '{' || !q.skipObject(0, &w) {
		return "", false
	}
	v := w.vals[0]
	if !pyTruthy(v) {
		v = w.vals[1]
	}
	return v.stringValue()
}

// firstElement returns the span of an array span's first element (the array
// already validated); ok is false for an empty array or a non-array.
func (s span) firstElement() (span, bool) {
	p := pyParser{data: s}
	p.space()
	if p.i >= len(s) || s[p.i] != '[' {
		return nil, false
	}
	p.i++
	p.space()
	if p.i >= len(s) || s[p.i] == ']' {
		return nil, false
	}
	start := p.i
	if !p.skip(1) {
		return nil, false
	}
	return s[start:p.i], true
}
