package replay

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The streaming path parses each chat.completion.chunk with a small scanner
// instead of encoding/json: it reads only the fields the client records, takes
// strings without escapes as slices of the input, and skips the rest. A chunk is
// checked as it is read (json.Valid-strict: any malformed value, trailing data or
// truncation is an error). The rare sub-values with structure (tool_calls, usage,
// error) go through encoding/json. FuzzChunk checks it against encoding/json.

var errSyntax = errors.New("invalid JSON")

// fastMsg is a delta or message object: raw JSON values, nil when absent or null.
type fastMsg struct {
	present                              bool
	content, reasoningContent, reasoning []byte   // string tokens with quotes
	toolCalls                            [][]byte // arrays, decoded in order into one slice
}

// fastChoice is one element of "choices".
type fastChoice struct {
	index          int64
	delta, message fastMsg
	finish         []byte // string token
}

type chunkScanner struct {
	b   []byte
	i   int
	chs []fastChoice
}

func (s *chunkScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *chunkScanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *chunkScanner) expect(c byte) error {
	if s.peek() != c {
		return errSyntax
	}
	s.i++
	return nil
}

// str scans a string token and returns it with its quotes.
func (s *chunkScanner) str() ([]byte, error) {
	if s.peek() != '"' {
		return nil, errSyntax
	}
	start := s.i
	s.i++
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start:s.i], nil
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return nil, errSyntax
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, errSyntax
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !isHex(h) {
						return nil, errSyntax
					}
				}
				s.i += 6
			default:
				return nil, errSyntax
			}
		case c < 0x20:
			return nil, errSyntax
		default:
			s.i++
		}
	}
	return nil, errSyntax
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// value skips any JSON value and returns its bytes.
func (s *chunkScanner) value(depth int) ([]byte, error) {
	if depth > 10000 {
		return nil, errSyntax
	}
	c := s.peek()
	start := s.i
	switch {
	case c == '"':
		return s.str()
	case c == '{':
		s.i++
		if s.peek() == '}' {
			s.i++
			return s.b[start:s.i], nil
		}
		for {
			if _, err := s.str(); err != nil {
				return nil, err
			}
			if err := s.expect(':'); err != nil {
				return nil, err
			}
			if _, err := s.value(depth + 1); err != nil {
				return nil, err
			}
			switch s.peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return s.b[start:s.i], nil
			default:
				return nil, errSyntax
			}
		}
	case c == '[':
		s.i++
		if s.peek() == ']' {
			s.i++
			return s.b[start:s.i], nil
		}
		for {
			if _, err := s.value(depth + 1); err != nil {
				return nil, err
			}
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return s.b[start:s.i], nil
			default:
				return nil, errSyntax
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return nil, errSyntax
}

func (s *chunkScanner) literal(l string) ([]byte, error) {
	if len(s.b)-s.i < len(l) || string(s.b[s.i:s.i+len(l)]) != l {
		return nil, errSyntax
	}
	s.i += len(l)
	return s.b[s.i-len(l) : s.i], nil
}

// number scans a JSON number strictly (RFC 8259 grammar).
func (s *chunkScanner) number() ([]byte, error) {
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return nil, errSyntax
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, errSyntax
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, errSyntax
		}
	}
	return s.b[start:s.i], nil
}

// nullable returns nil for a null value, else the value's bytes.
func (s *chunkScanner) nullable() ([]byte, error) {
	v, err := s.value(1)
	if err != nil || string(v) == "null" {
		return nil, err
	}
	return v, nil
}

// object calls field for each key of an object (the key without quotes when it
// has no escapes; keys with escapes are compared decoded).
func (s *chunkScanner) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return err
		}
		key := k[1 : len(k)-1]
		for _, c := range key {
			if c == '\\' {
				key = appendUnquoted(nil, k)
				break
			}
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// message reads a delta or message object into m, merging into what m holds (a
// repeated key merges, as encoding/json does through a pointer).
func (s *chunkScanner) message(m *fastMsg) error {
	if s.peek() == 'n' {
		_, err := s.literal("null")
		*m = fastMsg{}
		return err
	}
	m.present = true
	return s.object(func(key []byte) error {
		var err error
		switch {
		case keyIs(key, "content"):
			m.content, err = s.stringOrNull()
		case keyIs(key, "reasoning_content"):
			m.reasoningContent, err = s.stringOrNull()
		case keyIs(key, "reasoning"):
			m.reasoning, err = s.stringOrNull()
		case keyIs(key, "tool_calls"):
			var v []byte
			if v, err = s.nullable(); err == nil {
				if v == nil {
					m.toolCalls = m.toolCalls[:0]
				} else {
					m.toolCalls = append(m.toolCalls, v)
				}
			}
		default:
			_, err = s.value(1)
		}
		return err
	})
}

// keyIs matches a key as encoding/json does for ASCII names: case-insensitively.
func keyIs(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range len(key) {
		c := key[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// stringOrNull returns a string value's token, nil for null; any other value is
// an error (encoding/json cannot store it in a string).
func (s *chunkScanner) stringOrNull() ([]byte, error) {
	if s.peek() == '"' {
		return s.str()
	}
	_, err := s.literal("null")
	return nil, err
}

// parse scans one chunk. It returns the choices (valid until the next parse),
// the raw usage and error values (nil when absent or null).
func (s *chunkScanner) parse(b []byte) (chs []fastChoice, usageRaw, errRaw []byte, err error) {
	s.b, s.i = b, 0
	clear(s.chs[:cap(s.chs)])
	s.chs = s.chs[:0]
	if s.peek() == 'n' { // null decodes to nothing, as with encoding/json
		if _, err := s.literal("null"); err != nil || s.peek() != 0 {
			return nil, nil, nil, errSyntax
		}
		return nil, nil, nil, nil
	}
	if s.peek() != '{' {
		return nil, nil, nil, errSyntax
	}
	err = s.object(func(key []byte) error {
		var err error
		switch {
		case keyIs(key, "choices"):
			err = s.choices()
		case keyIs(key, "usage"):
			usageRaw, err = s.nullable()
		case keyIs(key, "error"):
			errRaw, err = s.nullable()
		default:
			_, err = s.value(1)
		}
		return err
	})
	if err == nil && s.peek() != 0 {
		err = errSyntax // trailing data
	}
	if err != nil {
		return nil, nil, nil, err
	}
	return s.chs, usageRaw, errRaw, nil
}

// choices reads the choices array. A repeated "choices" key decodes into the
// elements already read, position by position, as encoding/json does.
func (s *chunkScanner) choices() error {
	if s.peek() == 'n' {
		_, err := s.literal("null")
		s.chs = s.chs[:0]
		return err
	}
	if err := s.expect('['); err != nil {
		return err
	}
	old := len(s.chs)
	s.chs = s.chs[:0]
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		if s.peek() != '{' {
			return errSyntax // encoding/json cannot decode a non-object into a choice
		}
		if n < old {
			s.chs = s.chs[:n+1]
		} else {
			s.chs = append(s.chs, fastChoice{})
		}
		ch := &s.chs[n]
		if err := s.object(func(key []byte) error {
			var err error
			switch {
			case keyIs(key, "index"):
				var v []byte
				if v, err = s.value(1); err == nil && string(v) != "null" {
					ch.index, err = strconv.ParseInt(string(v), 10, 0)
				}
			case keyIs(key, "delta"):
				err = s.message(&ch.delta)
			case keyIs(key, "message"):
				err = s.message(&ch.message)
			case keyIs(key, "finish_reason"):
				ch.finish, err = s.stringOrNull()
			default:
				_, err = s.value(1)
			}
			return err
		}); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errSyntax
		}
	}
}

// appendUnquoted appends the decoded value of a JSON string token (with quotes)
// to dst. Invalid UTF-8 and lone surrogates become U+FFFD, as encoding/json does.
func appendUnquoted(dst, tok []byte) []byte {
	b := tok[1 : len(tok)-1]
	for i := 0; i < len(b); {
		c := b[i]
		if c == '\\' {
			switch b[i+1] {
			case 'n':
				dst = append(dst, '\n')
			case 't':
				dst = append(dst, '\t')
			case 'r':
				dst = append(dst, '\r')
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'u':
				r := hex4(b[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' {
						if r2 := utf16.DecodeRune(r, hex4(b[i+2:i+6])); r2 != utf8.RuneError {
							dst = utf8.AppendRune(dst, r2)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, b[i+1])
			}
			i += 2
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, b[i:i+size]...)
		}
		i += size
	}
	return dst
}

func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// plainToken tells whether a string token needs no decoding.
func plainToken(tok []byte) bool {
	for _, c := range tok[1 : len(tok)-1] {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
