package tokens

import (
	"unicode"
	"unicode/utf8"
)

// Known split patterns. Each has a hand-written matcher below: Go's regexp lacks
// the lookahead (?!\S) they end with, and a matcher is much faster than a
// backtracking regexp.
const (
	// PatternGPT2 is GPT-2's pattern, ByteLevel's default when use_regex is true.
	PatternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// PatternCL100K is GPT-4's cl100k_base pattern (also Llama 3's and DeepSeek's).
	PatternCL100K = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternQwen is Qwen2's and Qwen3's pattern: cl100k with single digits.
	PatternQwen = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// PatternQwen35 is the pattern of the Qwen3.5 tokenizer.json that Qwen3.5
	// and Qwen3.6 models ship (sha256 5f9e4d49..., see score/rulesets): Qwen's
	// with combining marks (\p{M}) joined to letters.
	PatternQwen35 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// matcher finds the end of the regexp match that starts at i. The known patterns
// match at every position, so splitting with one is a loop over matchers.
type matcher interface {
	matchAt(s string, i int) int
}

// handMatcher returns the hand-written matcher for a known pattern, or nil.
func handMatcher(pattern string) matcher {
	switch pattern {
	case PatternGPT2:
		return gpt2Matcher{}
	case PatternCL100K:
		return gpt4Matcher{maxDigits: 3}
	case PatternQwen:
		return gpt4Matcher{maxDigits: 1}
	case PatternQwen35:
		return gpt4Matcher{maxDigits: 1, marks: true}
	case PatternKimi:
		return kimiMatcher{}
	}
	return nil
}

// Character classes of the patterns. \s is Unicode's White_Space property, as in
// Oniguruma, which Hugging Face tokenizers uses.
const (
	clsOther = iota // [^\s\p{L}\p{N}]
	clsLetter
	clsNumber
	clsSpace
)

var asciiClass = func() (t [128]uint8) {
	for c := 0; c < 128; c++ {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			t[c] = clsLetter
		case c >= '0' && c <= '9':
			t[c] = clsNumber
		case c == ' ', c >= '\t' && c <= '\r':
			t[c] = clsSpace
		default:
			t[c] = clsOther
		}
	}
	return t
}()

func isWhiteSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

// classAt returns the class of the rune at i and its width in bytes.
func classAt(s string, i int) (cls uint8, w int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return clsLetter, w
	case unicode.IsNumber(r):
		return clsNumber, w
	case isWhiteSpace(r):
		return clsSpace, w
	}
	return clsOther, w
}

// classAtM is classAt where, when marks is set, a combining mark (\p{M}) is a
// letter: PatternQwen35 treats [\p{L}\p{M}] alike everywhere but in the
// optional prefix of a letter run, where a mark standing first makes the same
// match either way (it starts the run).
func classAtM(s string, i int, marks bool) (cls uint8, w int) {
	cls, w = classAt(s, i)
	if marks && cls == clsOther && s[i] >= utf8.RuneSelf {
		if r, _ := utf8.DecodeRuneInString(s[i:]); unicode.IsMark(r) {
			return clsLetter, w
		}
	}
	return cls, w
}

// runOf returns the end of the run of class cls starting at i.
func runOf(s string, i int, cls uint8) int { return runOfM(s, i, cls, false) }

// runOfM is runOf with classAtM's classes.
func runOfM(s string, i int, cls uint8, marks bool) int {
	for i < len(s) {
		c, w := classAtM(s, i, marks)
		if c != cls {
			break
		}
		i += w
	}
	return i
}

func isCRLF(b byte) bool { return b == '\r' || b == '\n' }

// contraction matches 's|'t|'re|'ve|'m|'ll|'d at i (s[i] == '\”), case-blind
// when fold is set, and returns its end or -1. Case-blind matching follows
// Unicode simple case folding, where U+017F (long s) matches s.
func contraction(s string, i int, fold bool) int {
	rest := s[i+1:]
	at := func(k int) (rune, int) {
		if k >= len(rest) {
			return -1, 0
		}
		r, w := utf8.DecodeRuneInString(rest[k:])
		if fold {
			if r >= 'A' && r <= 'Z' {
				r += 'a' - 'A'
			} else if r == 0x17F {
				r = 's'
			}
		}
		return r, w
	}
	r0, w0 := at(0)
	switch r0 {
	case 's', 't', 'm', 'd':
		return i + 1 + w0
	case 'r', 'v', 'l':
		want := 'e'
		if r0 == 'l' {
			want = 'l'
		}
		if r1, w1 := at(w0); r1 == want {
			return i + 1 + w0 + w1
		}
	}
	return -1
}

// spaceRun handles \s+(?!\S)|\s+ at i: the whitespace run, less its last
// character when a non-space follows and the run is longer than one character.
func spaceRun(s string, i int) int {
	j := runOf(s, i, clsSpace)
	if j == len(s) {
		return j
	}
	_, lastW := utf8.DecodeLastRuneInString(s[i:j])
	if j-lastW > i {
		return j - lastW
	}
	return j
}

// gpt4Matcher matches PatternCL100K (maxDigits 3), PatternQwen (maxDigits 1)
// and, with marks set, PatternQwen35 (\p{L} read as [\p{L}\p{M}]):
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
type gpt4Matcher struct {
	maxDigits int
	marks     bool
}

func (m gpt4Matcher) matchAt(s string, i int) int {
	if s[i] == '\'' {
		if e := contraction(s, i, true); e > 0 {
			return e
		}
	}
	cls, w := classAtM(s, i, m.marks)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if cls == clsLetter {
		return runOfM(s, i+w, clsLetter, m.marks)
	}
	if cls != clsNumber && !isCRLF(s[i]) && i+w < len(s) {
		if c2, w2 := classAtM(s, i+w, m.marks); c2 == clsLetter {
			return runOfM(s, i+w+w2, clsLetter, m.marks)
		}
	}
	// \p{N}{1,maxDigits}
	if cls == clsNumber {
		j := i + w
		for n := 1; n < m.maxDigits && j < len(s); n++ {
			c, w := classAt(s, j)
			if c != clsNumber {
				break
			}
			j += w
		}
		return j
	}
	return otherOrSpace(s, i, cls, m.marks)
}

// otherOrSpace matches the tail the GPT-4-style patterns share at i, where the
// rune has class cls (not a letter or number):
//
//	?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func otherOrSpace(s string, i int, cls uint8, marks bool) int {
	start := i
	if s[i] == ' ' && i+1 < len(s) {
		if c2, _ := classAtM(s, i+1, marks); c2 == clsOther {
			start = i + 1
			cls = clsOther
		}
	}
	if cls == clsOther {
		j := runOfM(s, start, clsOther, marks)
		for j < len(s) && isCRLF(s[j]) {
			j++
		}
		return j
	}
	// \s*[\r\n]+ : up to the last CR or LF of the whitespace run.
	j := runOf(s, i, clsSpace)
	for k := j - 1; k >= i; k-- {
		if isCRLF(s[k]) {
			return k + 1
		}
	}
	return spaceRun(s, i)
}

// gpt2Matcher matches PatternGPT2:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
type gpt2Matcher struct{}

func (gpt2Matcher) matchAt(s string, i int) int {
	if s[i] == '\'' {
		if e := contraction(s, i, false); e > 0 {
			return e
		}
	}
	cls, w := classAt(s, i)
	start := i
	if s[i] == ' ' && i+1 < len(s) {
		if c2, w2 := classAt(s, i+1); c2 != clsSpace {
			cls, w, start = c2, w2, i+1
		}
	}
	if cls != clsSpace {
		return runOf(s, start+w, cls)
	}
	return spaceRun(s, i)
}
