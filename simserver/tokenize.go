package simserver

import (
	"unicode/utf8"
)

// Tokenizer turns text into token ids. *tokens.Tokenizer (package tokens)
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

// Longest pseudo-tokens of each kind, in bytes. With these the sim counts about
// 4 bytes per token on the shared SWE-bench sample, as Qwen3's tokenizer does.
const (
	maxWordPiece  = 8  // letters and digits (a leading space comes on top)
	maxPunctPiece = 3  // punctuation
	maxBlankPiece = 16 // blanks (BPE vocabularies hold long runs, for indentation)
	maxNLPiece    = 4  // newlines
)

// special returns the length of the special token at s[i:], 0 if none.
func special(s string, i int) int {
	if s[i] != '<' {
		return 0
	}
	for _, sp := range specialTokens {
		if len(s)-i >= len(sp) && s[i:i+len(sp)] == sp {
			return len(sp)
		}
	}
	return 0
}

// nextPiece returns the end of the pseudo-token that starts at s[i].
//
// Pseudo-tokens, a rough stand-in for a BPE tokenizer: the template's markers
// (<|im_start|>, <think>, ...) are one token each; runs of letters and digits
// (and multi-byte characters) are cut every 8 bytes, never inside a UTF-8
// sequence; runs of punctuation every 3 bytes, stopping before a marker; runs of
// newlines every 4; other blanks every 16. A single space before a word or
// punctuation belongs to it. A token never continues past a newline into
// anything else, nor into a marker, so tokenizing a+b gives tokenize(a) +
// tokenize(b) whenever a ends with a newline or b starts with a marker: the
// renderer relies on that to make a turn's prompt a prefix of the next turn's.
func nextPiece(s string, i int) int {
	if n := special(s, i); n > 0 {
		return i + n
	}
	switch byteClass[s[i]] {
	case clsNL:
		j := i + 1
		for j < len(s) && s[j] == '\n' && j-i < maxNLPiece {
			j++
		}
		return j
	case clsPunct:
		return punctPiece(s, i)
	case clsSpace:
		j := i
		for j < len(s) && byteClass[s[j]] == clsSpace && j-i < maxBlankPiece {
			j++
		}
		// A single space right before a word or punctuation belongs to it.
		if j < len(s) && s[j-1] == ' ' && special(s, j) == 0 {
			switch byteClass[s[j]] {
			case clsWord:
				if j-1 == i {
					return wordPiece(s, j)
				}
				return j - 1
			case clsPunct:
				if j-1 == i {
					return punctPiece(s, j)
				}
				return j - 1
			}
		}
		return j
	}
	return wordPiece(s, i)
}

// punctPiece returns the end of the punctuation piece starting at or after s[i]
// (after one leading space).
func punctPiece(s string, i int) int {
	j := i
	if s[j] == ' ' {
		j++
	}
	start := j
	for j < len(s) && byteClass[s[j]] == clsPunct && j-start < maxPunctPiece && (j == start || special(s, j) == 0) {
		j++
	}
	return j
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

// maxTokenBytes bounds the bytes of one token: a text longer than n times it has
// more than n tokens. The pseudo-tokenizer's longest piece is a special token (16
// bytes) or a blank run; a real vocabulary's is taken as 256 bytes.
func (t textTokens) maxTokenBytes() int {
	if t.tok != nil {
		return 256
	}
	n := max(maxWordPiece+1, maxPunctPiece, maxBlankPiece, maxNLPiece)
	for _, sp := range specialTokens {
		n = max(n, len(sp))
	}
	return n
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
