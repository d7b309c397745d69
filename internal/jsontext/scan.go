// Package jsontext is where agentrace reads and writes JSON. One validating
// scanner finds the extent of values without building them, hands out the raw
// bytes of the values a caller asks for, and decodes strings; ingest (trace
// lines), the tokenizer loader (tokenizer.json), the scorer (tool calls, the
// reference's event logs) and the streaming client (chat.completion chunks) all
// read JSON through it.
//
// It reads three dialects:
//   - JSON: RFC 8259, exactly what encoding/json's Valid accepts. Nesting is limited
//     to MaxDepth, encoding/json's limit.
//   - Python: what Python's json.loads accepts: JSON plus the constants NaN,
//     Infinity and -Infinity. Nesting is limited to PythonMaxDepth, about where
//     Python's recursion limit stops json.loads. Duplicate keys: the last wins, as
//     in a Python dict (Fields).
//   - Pandas: what pandas' JSON reader (read_json, its ujson decoder) accepts in a
//     line: JSON plus NaN, Infinity and -Infinity, and raw control characters
//     (U+0000..U+001F) inside strings. Nesting is limited to MaxDepth. Lowercase
//     nan and inf are refused, as pandas refuses them.
//
// Anything after a value other than JSON whitespace is an error (End, Document).
// Strings decode as encoding/json decodes them (Unquote): escapes resolved,
// surrogate pairs combined, and a lone surrogate or a byte of invalid UTF-8
// replaced by U+FFFD. Python keeps a lone surrogate in its str; a Go string has no
// such code point, so the Python dialect decodes strings the same way.
//
// It writes one encoding (wire.go): byte for byte what the reference client's
// msgspec encoder writes for the same Python values (strings, compact values in
// their key order, Python's float repr), which request bodies, the reference's
// summaries and event logs are made of.
package jsontext

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// Dialect is the grammar a Scanner accepts.
type Dialect uint8

const (
	// JSON is RFC 8259 JSON.
	JSON Dialect = iota
	// Python is JSON as Python's json.loads reads it: also NaN, Infinity and
	// -Infinity.
	Python
	// Pandas is JSON as pandas' read_json reads a line: also NaN, Infinity and
	// -Infinity, and raw control characters inside strings.
	Pandas
)

const (
	// MaxDepth is the nesting limit of the JSON dialect (encoding/json's).
	MaxDepth = 10000
	// PythonMaxDepth is the nesting limit of the Python dialect: Python's default
	// recursion limit. json.loads gives up a few levels earlier, depending on how
	// deep in the stack it is called.
	PythonMaxDepth = 1000
	// PythonMaxIntDigits is the most digits json.loads reads as an integer (Python's
	// default sys.int_max_str_digits, since 3.11); a number with a fraction or an
	// exponent is a float and has no limit.
	PythonMaxIntDigits = 4300
)

// SyntaxError is a JSON syntax error at a byte offset of the scanned input.
type SyntaxError struct {
	Offset int // 0-based
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset+1, e.Msg)
}

// Scanner reads values from one input, validating everything it reads or skips.
// The zero value reads nothing; make one with NewScanner. Methods that read a
// value skip the whitespace before it.
type Scanner struct {
	data      []byte
	pos       int
	depth     int
	maxDepth  int
	python    bool // Python's integer digit limit
	nonFinite bool // NaN, Infinity and -Infinity
	rawCtl    bool // raw control characters inside strings
	numbers   int  // number tokens read (Numbers)
}

// NewScanner returns a scanner of data in dialect d.
func NewScanner(data []byte, d Dialect) Scanner {
	switch d {
	case Python:
		return Scanner{data: data, maxDepth: PythonMaxDepth, python: true, nonFinite: true}
	case Pandas:
		return Scanner{data: data, maxDepth: MaxDepth, nonFinite: true, rawCtl: true}
	}
	return Scanner{data: data, maxDepth: MaxDepth}
}

// Numbers is how many number tokens (NaN and Infinity included) the scanner has
// read or skipped so far: a value during which it did not change holds none, and
// a reader can leave that value's numbers unvisited.
func (s *Scanner) Numbers() int { return s.numbers }

// LimitDepth sets the nesting limit to n arrays and objects.
func (s *Scanner) LimitDepth(n int) { s.maxDepth = n }

// Pos is the offset of the next byte to read.
func (s *Scanner) Pos() int { return s.pos }

// Peek skips whitespace and returns the next byte, 0 at the end of the input. A
// NUL byte also reads as 0; it is never valid outside a string, so Peek suits
// choosing how to read the next value, and End tells whether the input ended.
func (s *Scanner) Peek() byte {
	s.pos = SkipSpace(s.data, s.pos)
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// End skips whitespace and reports an error unless the input ends there.
func (s *Scanner) End() error {
	if s.pos = SkipSpace(s.data, s.pos); s.pos < len(s.data) {
		return s.errAt(s.pos, "trailing data after the value")
	}
	return nil
}

// Value reads one value and returns its bytes.
func (s *Scanner) Value() ([]byte, error) {
	i := SkipSpace(s.data, s.pos)
	end, err := s.skip(i)
	if err != nil {
		return nil, err
	}
	s.pos = end
	return s.data[i:end], nil
}

// Document reads the whole input as one value, with nothing after it but
// whitespace.
func (s *Scanner) Document() ([]byte, error) {
	v, err := s.Value()
	if err != nil {
		return nil, err
	}
	return v, s.End()
}

// String reads a value that must be a string and returns its token, quotes
// included (Unquote decodes it).
func (s *Scanner) String() ([]byte, error) {
	i := SkipSpace(s.data, s.pos)
	if i >= len(s.data) || s.data[i] != '"' {
		return nil, s.errFound(i, "a string")
	}
	end, err := s.scanString(s.data, i)
	if err != nil {
		return nil, err
	}
	s.pos = end
	return s.data[i:end], nil
}

// Null reads a null if one comes next and reports whether it did.
func (s *Scanner) Null() bool {
	i := SkipSpace(s.data, s.pos)
	if len(s.data)-i >= 4 && string(s.data[i:i+4]) == "null" {
		s.pos = i + 4
		return true
	}
	return false
}

// Object reads an object, calling member with each key's token (quotes included)
// after its ':'; member must read the value (with Value or any other method that
// reads one). An error from member stops the scan and is returned.
func (s *Scanner) Object(member func(key []byte) error) error {
	b := s.data
	i := SkipSpace(b, s.pos)
	if i >= len(b) || b[i] != '{' {
		return s.errFound(i, "an object")
	}
	if err := s.enter(i); err != nil {
		return err
	}
	if i = SkipSpace(b, i+1); i < len(b) && b[i] == '}' {
		s.pos, s.depth = i+1, s.depth-1
		return nil
	}
	for {
		if i >= len(b) {
			return s.errAt(i, "unterminated object")
		}
		if b[i] != '"' {
			return s.errFound(i, "a key")
		}
		end, err := s.scanString(b, i)
		if err != nil {
			return err
		}
		key := b[i:end]
		if i = SkipSpace(b, end); i >= len(b) || b[i] != ':' {
			return s.errAt(i, "expected ':' after key")
		}
		s.pos = i + 1
		if err := member(key); err != nil {
			return err
		}
		if i = SkipSpace(b, s.pos); i >= len(b) {
			return s.errAt(i, "unterminated object")
		}
		switch b[i] {
		case '}':
			s.pos, s.depth = i+1, s.depth-1
			return nil
		case ',':
			i = SkipSpace(b, i+1)
		default:
			return s.errAt(i, fmt.Sprintf("expected ',' or '}', found %s", quoteByte(b, i)))
		}
	}
}

// Array reads an array, calling elem for each element with its index; elem must
// read the element. An error from elem stops the scan and is returned.
func (s *Scanner) Array(elem func(i int) error) error {
	b := s.data
	i := SkipSpace(b, s.pos)
	if i >= len(b) || b[i] != '[' {
		return s.errFound(i, "an array")
	}
	if err := s.enter(i); err != nil {
		return err
	}
	if i = SkipSpace(b, i+1); i < len(b) && b[i] == ']' {
		s.pos, s.depth = i+1, s.depth-1
		return nil
	}
	s.pos = i
	for n := 0; ; n++ {
		if err := elem(n); err != nil {
			return err
		}
		if i = SkipSpace(b, s.pos); i >= len(b) {
			return s.errAt(i, "unterminated array")
		}
		switch b[i] {
		case ']':
			s.pos, s.depth = i+1, s.depth-1
			return nil
		case ',':
			s.pos = i + 1
		default:
			return s.errAt(i, fmt.Sprintf("expected ',' or ']', found %s", quoteByte(b, i)))
		}
	}
}

// Members reads an object, calling fn with each member's key token and raw value.
func (s *Scanner) Members(fn func(key, val []byte)) error {
	b := s.data
	i := SkipSpace(b, s.pos)
	if i >= len(b) || b[i] != '{' {
		return s.errFound(i, "an object")
	}
	end, err := s.skipObject(i, fn)
	if err == nil {
		s.pos = end
	}
	return err
}

// Fields reads an object and sets vals[k] to the raw value of the member whose key
// decodes to keys[k] (left as is when there is none). Of duplicate keys the last
// wins, as in a Python dict. len(vals) must be at least len(keys).
func (s *Scanner) Fields(keys []string, vals [][]byte) error {
	return s.Members(func(key, val []byte) {
		if k := keyIndex(key, keys); k >= 0 {
			vals[k] = val
		}
	})
}

// keyIndex returns the index of the name in keys that the key token decodes to,
// -1 if none.
func keyIndex(tok []byte, keys []string) int {
	text, ok := Verbatim(tok)
	if !ok {
		text = AppendUnquote(nil, tok)
	}
	for k, name := range keys {
		if string(text) == name {
			return k
		}
	}
	return -1
}

func (s *Scanner) enter(i int) error {
	if s.depth >= s.maxDepth {
		return s.errAt(i, "nested too deeply")
	}
	s.depth++
	return nil
}

func (s *Scanner) errAt(i int, msg string) error {
	s.pos = i
	return &SyntaxError{Offset: i, Msg: msg}
}

// errFound reports that what starts at b[i] is not what was expected.
func (s *Scanner) errFound(i int, want string) error {
	if i >= len(s.data) {
		return s.errAt(i, "unexpected end of input, expected "+want)
	}
	return s.errAt(i, fmt.Sprintf("expected %s, found %s", want, quoteByte(s.data, i)))
}

func quoteByte(b []byte, i int) string {
	r, _ := utf8.DecodeRune(b[i:])
	return fmt.Sprintf("%q", r)
}

// SkipSpace returns the offset of the first byte of b at or after i that is not
// JSON white space (len(b) when there is none).
func SkipSpace(b []byte, i int) int {
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

// skip validates the value starting at b[i] (no whitespace before it) and returns
// the offset just past it.
func (s *Scanner) skip(i int) (int, error) {
	b := s.data
	if i >= len(b) {
		return i, s.errAt(i, "unexpected end of input")
	}
	switch c := b[i]; c {
	case '"':
		return s.scanString(b, i)
	case '{':
		return s.skipObject(i, nil)
	case '[':
		return s.skipArray(i)
	case 't':
		return s.literal(i, "true")
	case 'f':
		return s.literal(i, "false")
	case 'n':
		return s.literal(i, "null")
	case 'N':
		if s.nonFinite {
			s.numbers++
			return s.literal(i, "NaN")
		}
	case 'I':
		if s.nonFinite {
			s.numbers++
			return s.literal(i, "Infinity")
		}
	case '-':
		if s.nonFinite && i+1 < len(b) && b[i+1] == 'I' {
			s.numbers++
			return s.literal(i, "-Infinity")
		}
		return s.number(i)
	default:
		if c >= '0' && c <= '9' {
			return s.number(i)
		}
	}
	return i, s.errAt(i, "unexpected "+quoteByte(b, i))
}

// skipObject validates the object starting at b[i] == '{' and returns the offset
// just past it, calling member (when not nil) with each key token and raw value.
func (s *Scanner) skipObject(i int, member func(key, val []byte)) (int, error) {
	b := s.data
	if err := s.enter(i); err != nil {
		return i, err
	}
	if i = SkipSpace(b, i+1); i < len(b) && b[i] == '}' {
		s.depth--
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return i, s.errAt(i, "unterminated object")
		}
		if b[i] != '"' {
			return i, s.errFound(i, "a key")
		}
		ks := i
		var err error
		if i, err = s.scanString(b, i); err != nil {
			return i, err
		}
		ke := i
		if i = SkipSpace(b, i); i >= len(b) || b[i] != ':' {
			return i, s.errAt(i, "expected ':' after key")
		}
		vs := SkipSpace(b, i+1)
		if i, err = s.skip(vs); err != nil {
			return i, err
		}
		if member != nil {
			member(b[ks:ke], b[vs:i])
		}
		if i = SkipSpace(b, i); i >= len(b) {
			return i, s.errAt(i, "unterminated object")
		}
		switch b[i] {
		case '}':
			s.depth--
			return i + 1, nil
		case ',':
			i = SkipSpace(b, i+1)
		default:
			return i, s.errAt(i, fmt.Sprintf("expected ',' or '}', found %s", quoteByte(b, i)))
		}
	}
}

// skipArray validates the array starting at b[i] == '[' and returns the offset
// just past it.
func (s *Scanner) skipArray(i int) (int, error) {
	b := s.data
	if err := s.enter(i); err != nil {
		return i, err
	}
	if i = SkipSpace(b, i+1); i < len(b) && b[i] == ']' {
		s.depth--
		return i + 1, nil
	}
	for {
		var err error
		if i, err = s.skip(i); err != nil {
			return i, err
		}
		if i = SkipSpace(b, i); i >= len(b) {
			return i, s.errAt(i, "unterminated array")
		}
		switch b[i] {
		case ']':
			s.depth--
			return i + 1, nil
		case ',':
			i = SkipSpace(b, i+1)
		default:
			return i, s.errAt(i, fmt.Sprintf("expected ',' or ']', found %s", quoteByte(b, i)))
		}
	}
}

// skipTrusted returns the offset just past the value at b[i], which is known to
// be valid JSON (in either dialect): strings end at the first quote not escaped,
// arrays and objects at their closing bracket; nothing is checked. On anything
// else it returns some offset in (i, len(b)].
func skipTrusted(b []byte, i int) int {
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = StringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i + 1
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j
}

// StringEnd returns the offset just past the string starting at b[i] == '"': its
// first quote that an even number of backslashes precede (len(b) when none does).
// It checks nothing else of the string.
func StringEnd(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		j += k
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		if j++; n%2 == 0 {
			return j
		}
	}
}

func (s *Scanner) literal(i int, lit string) (int, error) {
	if len(s.data)-i < len(lit) || string(s.data[i:i+len(lit)]) != lit {
		return i, s.errAt(i, "bad literal")
	}
	return i + len(lit), nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number validates -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? at b[i].
func (s *Scanner) number(i int) (int, error) {
	b, start := s.data, i
	s.numbers++
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
	default:
		return i, s.errAt(start, "bad number")
	}
	digits := i - start
	if b[start] == '-' {
		digits--
	}
	integer := true
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || !isDigit(b[i]) {
			return i, s.errAt(start, "bad number")
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
		integer = false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, s.errAt(start, "bad number")
		}
		for i++; i < len(b) && isDigit(b[i]); i++ {
		}
		integer = false
	}
	if s.python && integer && digits > PythonMaxIntDigits {
		return i, s.errAt(start, "integer of more than 4300 digits (Python's int_max_str_digits)")
	}
	return i, nil
}

// Valid reports whether data is one value of dialect d, with nothing after it but
// whitespace.
func Valid(data []byte, d Dialect) bool {
	s := NewScanner(data, d)
	_, err := s.Document()
	return err == nil
}
