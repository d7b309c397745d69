package tokens

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The vocabulary and merges of a tokenizer.json are most of its 10 MB; this
// small scanner reads them several times faster than encoding/json's reflection.
// encoding/json has already checked the whole document is valid JSON.

type scanner struct {
	data []byte
	pos  int
	buf  []byte
}

var errScan = errors.New("unexpected JSON")

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *scanner) expect(c byte) error {
	s.ws()
	if s.pos >= len(s.data) || s.data[s.pos] != c {
		return fmt.Errorf("%w at byte %d: want %q", errScan, s.pos, c)
	}
	s.pos++
	return nil
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

// str reads a JSON string; the result aliases s.buf until the next call.
func (s *scanner) str() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		if c == '"' {
			s.pos++
			return s.data[start : s.pos-1], nil
		}
		if c == '\\' {
			break
		}
		s.pos++
	}
	s.buf = append(s.buf[:0], s.data[start:s.pos]...)
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return s.buf, nil
		case c == '\\' && s.pos+1 < len(s.data):
			e := s.data[s.pos+1]
			s.pos += 2
			switch e {
			case '"', '\\', '/':
				s.buf = append(s.buf, e)
			case 'b':
				s.buf = append(s.buf, '\b')
			case 'f':
				s.buf = append(s.buf, '\f')
			case 'n':
				s.buf = append(s.buf, '\n')
			case 'r':
				s.buf = append(s.buf, '\r')
			case 't':
				s.buf = append(s.buf, '\t')
			case 'u':
				r, ok := s.hex4()
				if !ok {
					return nil, fmt.Errorf("%w at byte %d: bad \\u escape", errScan, s.pos)
				}
				if utf16.IsSurrogate(r) {
					if s.pos+1 < len(s.data) && s.data[s.pos] == '\\' && s.data[s.pos+1] == 'u' {
						s.pos += 2
						r2, ok := s.hex4()
						if !ok {
							return nil, fmt.Errorf("%w at byte %d: bad \\u escape", errScan, s.pos)
						}
						r = utf16.DecodeRune(r, r2)
					} else {
						r = utf8.RuneError
					}
				}
				s.buf = utf8.AppendRune(s.buf, r)
			default:
				return nil, fmt.Errorf("%w at byte %d: bad escape", errScan, s.pos)
			}
		default:
			s.buf = append(s.buf, c)
			s.pos++
		}
	}
	return nil, fmt.Errorf("%w: unterminated string", errScan)
}

func (s *scanner) hex4() (rune, bool) {
	if s.pos+4 > len(s.data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.data[s.pos:s.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	s.pos += 4
	return rune(v), true
}

func (s *scanner) integer() (int64, error) {
	s.ws()
	start := s.pos
	if s.pos < len(s.data) && s.data[s.pos] == '-' {
		s.pos++
	}
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	return strconv.ParseInt(string(s.data[start:s.pos]), 10, 64)
}

// scanVocab reads {"token": id, ...}, turning each token from byte-level form
// into raw bytes.
func scanVocab(data []byte) (map[string]int32, error) {
	s := &scanner{data: data}
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	vocab := make(map[string]int32, 1<<17)
	if s.peek() == '}' {
		return vocab, nil
	}
	var raw []byte
	for {
		k, err := s.str()
		if err != nil {
			return nil, err
		}
		var ok bool
		if raw, ok = appendByteLevel(raw[:0], k); !ok {
			return nil, fmt.Errorf("vocabulary entry %q is not in byte-level form", k)
		}
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		id, err := s.integer()
		if err != nil || id < 0 || id > 1<<30 {
			return nil, fmt.Errorf("vocabulary entry %q: bad id", k)
		}
		vocab[string(raw)] = int32(id)
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			return vocab, nil
		default:
			return nil, fmt.Errorf("%w in vocabulary at byte %d", errScan, s.pos)
		}
	}
}

// scanMerges reads merges as ["a b", ...] or [["a", "b"], ...] and returns the
// pairs in raw-byte form.
func scanMerges(data []byte) ([][2]string, error) {
	s := &scanner{data: data}
	if s.peek() == 'n' { // null
		return nil, nil
	}
	if err := s.expect('['); err != nil {
		return nil, err
	}
	var out [][2]string
	if s.peek() == ']' {
		return out, nil
	}
	for i := 0; ; i++ {
		var a, b string
		var ok bool
		switch s.peek() {
		case '"':
			m, err := s.str()
			if err != nil {
				return nil, err
			}
			sp := -1
			for j, c := range m {
				if c == ' ' {
					if sp >= 0 {
						sp = -2
						break
					}
					sp = j
				}
			}
			if sp < 0 {
				return nil, fmt.Errorf("merge %d %q is not two tokens separated by a space", i, m)
			}
			if a, b, ok = byteLevelPair(m[:sp], m[sp+1:]); !ok {
				return nil, fmt.Errorf("merge %d %q is not in byte-level form", i, m)
			}
		case '[':
			s.pos++
			x, err := s.str()
			if err != nil {
				return nil, err
			}
			xa, okA := appendByteLevel(nil, x)
			if err := s.expect(','); err != nil {
				return nil, err
			}
			y, err := s.str()
			if err != nil {
				return nil, err
			}
			yb, okB := appendByteLevel(nil, y)
			if err := s.expect(']'); err != nil {
				return nil, fmt.Errorf("merge %d is not a pair: %w", i, err)
			}
			if !okA || !okB {
				return nil, fmt.Errorf("merge %d is not in byte-level form", i)
			}
			a, b = string(xa), string(yb)
		default:
			return nil, fmt.Errorf("merges are neither \"a b\" strings nor [a, b] pairs (byte %d)", s.pos)
		}
		out = append(out, [2]string{a, b})
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			return out, nil
		default:
			return nil, fmt.Errorf("%w in merges at byte %d", errScan, s.pos)
		}
	}
}

func byteLevelPair(x, y []byte) (string, string, bool) {
	xa, okA := appendByteLevel(nil, x)
	yb, okB := appendByteLevel(nil, y)
	return string(xa), string(yb), okA && okB
}

// appendByteLevel appends the raw bytes of a token in byte-level form.
func appendByteLevel(dst, s []byte) ([]byte, bool) {
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRune(s[i:])
		i += w
		switch {
		case r < 0x100 && byteToRune[r] == r:
			dst = append(dst, byte(r))
		case r >= 0x100 && r < 0x100+0x44:
			dst = append(dst, unmapped[r-0x100])
		default:
			return dst, false
		}
	}
	return dst, true
}

// unmapped[i] is the byte that byte-level form writes as rune 0x100+i.
var unmapped = func() (t [0x44]byte) {
	for b := 0; b < 256; b++ {
		if r := byteToRune[b]; r >= 0x100 {
			t[r-0x100] = byte(b)
		}
	}
	return t
}()
