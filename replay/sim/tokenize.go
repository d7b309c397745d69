package sim

import (
	"unicode/utf8"
)

// Tokenizer turns text into token ids. *tokens.Tokenizer (datasets/tokens)
// satisfies it; without one the sim uses its own pseudo-tokenizer (see the package
// documentation).
type Tokenizer interface {
	Encode(text string, addSpecial bool) []int
}

// byte classes of the pseudo-tokenizer.
const (
	clsWord  = iota // ASCII letters, digits, '_' and every byte of a multi-byte rune
	clsNL           // '\n'
	clsSpace        // ' ', '\t', '\r'
	clsPunct        // every other byte
)

var byteClass = func() (t [256]uint8) {
	for i := range t {
		b := byte(i)
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '_', b >= 0x80:
			t[i] = clsWord
		case b == '\n':
			t[i] = clsNL
		case b == ' ', b == '\t', b == '\r':
			t[i] = clsSpace
		default:
			t[i] = clsPunct
		}
	}
	return t
}()

// specialTokens are the chat template's markers, one token each as in Qwen3's
// vocabulary.
var specialTokens = []string{"<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"}

// maxWordPiece is the longest run of word bytes in one pseudo-token (a leading
// space comes on top).
const maxWordPiece = 4

// nextPiece returns the end of the pseudo-token that starts at s[i].
//
// Pseudo-tokens: a newline is one token; each punctuation byte is one token; a run
// of word bytes is cut into pieces of at most maxWordPiece bytes (never inside a
// UTF-8 sequence), the first piece taking one preceding space; other runs of blanks
// are cut into pieces of at most 4 bytes; the template's markers (<|im_start|>,
// <think>, ...) are one token each. Every token boundary next to a newline or
// a punctuation byte is a cut, so tokenizing a+b gives tokenize(a)+tokenize(b)
// whenever a ends, or b starts, with one of them. The renderer relies on that.
func nextPiece(s string, i int) int {
	c := byteClass[s[i]]
	switch c {
	case clsPunct:
		if s[i] == '<' {
			for _, sp := range specialTokens {
				if len(s)-i >= len(sp) && s[i:i+len(sp)] == sp {
					return i + len(sp)
				}
			}
		}
		return i + 1
	case clsNL:
		return i + 1
	case clsSpace:
		j := i
		for j < len(s) && byteClass[s[j]] == clsSpace && j-i < 4 {
			j++
		}
		// A single space right before a word belongs to the word.
		if j < len(s) && byteClass[s[j]] == clsWord && s[j-1] == ' ' {
			if j-1 == i {
				return wordPiece(s, j)
			}
			return j - 1
		}
		return j
	}
	return wordPiece(s, i)
}

// wordPiece returns the end of the word piece starting at s[i].
func wordPiece(s string, i int) int {
	j := i
	for j < len(s) && j-i < maxWordPiece && byteClass[s[j]] == clsWord {
		if s[j] < utf8.RuneSelf {
			j++
			continue
		}
		_, n := utf8.DecodeRuneInString(s[j:])
		if j-i+n > maxWordPiece && j > i {
			break
		}
		j += n
	}
	return j
}

// FNV-1a, 64 bit.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func mix(h, v uint64) uint64 {
	// splitmix64 finaliser over h^v: cheap and well spread.
	x := h ^ (v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2))
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// countPieces returns the number of pseudo-tokens of s.
func countPieces(s string) int {
	n := 0
	for i := 0; i < len(s); {
		i = nextPiece(s, i)
		n++
	}
	return n
}

// appendPieces appends the pseudo-tokens of s.
func appendPieces(dst []string, s string) []string {
	for i := 0; i < len(s); {
		j := nextPiece(s, i)
		dst = append(dst, s[i:j])
		i = j
	}
	return dst
}

// textTokens turns text into the token identities the KV cache hashes: ids of the
// real tokenizer when one is set, else hashes of the pseudo-tokens.
type textTokens struct {
	tok Tokenizer
}

// append appends the token identities of s.
func (t textTokens) append(dst []uint64, s string) []uint64 {
	if t.tok != nil {
		for _, id := range t.tok.Encode(s, false) {
			dst = append(dst, uint64(id)+1)
		}
		return dst
	}
	for i := 0; i < len(s); {
		j := nextPiece(s, i)
		dst = append(dst, hashString(fnvOffset, s[i:j]))
		i = j
	}
	return dst
}

// count returns the number of tokens of s.
func (t textTokens) count(s string) int {
	if t.tok != nil {
		return len(t.tok.Encode(s, false))
	}
	return countPieces(s)
}

// blockHashes appends the chained hashes of the full blocks of toks: block i's
// hash covers its parent's hash and its own tokens, so equal hashes mean equal
// prefixes. seed starts the chain (0, or a hash of the request's cache_salt).
func blockHashes(dst []uint64, seed uint64, toks []uint64, blockSize int) []uint64 {
	h := seed
	for i := 0; i+blockSize <= len(toks); i += blockSize {
		for _, t := range toks[i : i+blockSize] {
			h = mix(h, t)
		}
		dst = append(dst, h)
	}
	return dst
}
