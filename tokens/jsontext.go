package tokens

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/agentrace/agentrace/internal/jsontext"
)

// The vocabulary and merges of a tokenizer.json are most of its 10 MB; they are
// read with jsontext, several times faster than encoding/json's reflection.

// scanVocab reads {"token": id, ...}, turning each token from byte-level form
// into raw bytes.
func scanVocab(data []byte) (map[string]int32, error) {
	vocab := make(map[string]int32, 1<<17)
	var buf, raw []byte
	s := jsontext.NewScanner(data, jsontext.JSON)
	err := s.Object(func(key []byte) error {
		text := unquote(&buf, key)
		var ok bool
		if raw, ok = appendByteLevel(raw[:0], text); !ok {
			return fmt.Errorf("vocabulary entry %q is not in byte-level form", text)
		}
		v, err := s.Value()
		if err != nil {
			return err
		}
		id, err := strconv.ParseInt(string(v), 10, 32)
		if err != nil || id < 0 || id > 1<<30 {
			return fmt.Errorf("vocabulary entry %q: bad id %s", text, v)
		}
		vocab[string(raw)] = int32(id)
		return nil
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return nil, fmt.Errorf("vocabulary: %w", err)
	}
	return vocab, nil
}

// unquote returns a string token's text: the bytes between its quotes when it
// has no escapes (the byte-level check refuses invalid UTF-8), else the token
// decoded into *buf.
func unquote(buf *[]byte, tok []byte) []byte {
	if body := tok[1 : len(tok)-1]; bytes.IndexByte(body, '\\') < 0 {
		return body
	}
	*buf = jsontext.AppendUnquote((*buf)[:0], tok)
	return *buf
}

// scanMerges reads merges as ["a b", ...] or [["a", "b"], ...] (or null) and
// returns the pairs in raw-byte form.
func scanMerges(data []byte) ([][2]string, error) {
	s := jsontext.NewScanner(data, jsontext.JSON)
	if s.Null() {
		return nil, s.End()
	}
	var out [][2]string
	var a, b []byte
	var bufs, pair [2][]byte
	err := s.Array(func(i int) error {
		switch s.Peek() {
		case '"':
			tok, err := s.String()
			if err != nil {
				return err
			}
			text := unquote(&bufs[0], tok)
			x, y, ok := bytes.Cut(text, []byte{' '})
			if !ok || bytes.IndexByte(y, ' ') >= 0 {
				return fmt.Errorf("merge %d %q is not two tokens separated by a space", i, text)
			}
			pair = [2][]byte{x, y}
		case '[':
			n := 0
			if err := s.Array(func(j int) error {
				tok, err := s.String()
				if err == nil && j < 2 {
					pair[j] = unquote(&bufs[j], tok)
				}
				n++
				return err
			}); err != nil {
				return fmt.Errorf("merge %d: %w", i, err)
			}
			if n != 2 {
				return fmt.Errorf("merge %d is not a pair", i)
			}
		default:
			return fmt.Errorf("merges are neither \"a b\" strings nor [a, b] pairs (merge %d)", i)
		}
		var okA, okB bool
		a, okA = appendByteLevel(a[:0], pair[0])
		b, okB = appendByteLevel(b[:0], pair[1])
		if !okA || !okB {
			return fmt.Errorf("merge %d (%q %q) is not in byte-level form", i, pair[0], pair[1])
		}
		out = append(out, [2]string{string(a), string(b)})
		return nil
	})
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return nil, fmt.Errorf("merges: %w", err)
	}
	return out, nil
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
