package tokens

import (
	"unicode"
	"unicode/utf8"
)

// PatternKimi is the split pattern of Kimi's tokenization_kimi.py (o200k-style
// letter classes with Han split out into its own runs). Its class intersections
// (&&) are beyond both Go's regexp and regexp2, so it has a hand-written matcher.
const PatternKimi = `[\p{Han}]+|` +
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|` +
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|` +
	`\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// Rune properties of the Kimi pattern.
const (
	kHan    = 1 << iota // \p{Han}
	kUpper              // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] minus Han
	kLower              // [\p{Ll}\p{Lm}\p{Lo}\p{M}] minus Han
	kLetter             // \p{L}
	kNumber             // \p{N}
	kSpace              // \s
)

func kimiProps(r rune) uint8 {
	if r < utf8.RuneSelf {
		switch {
		case r >= 'a' && r <= 'z':
			return kLower | kLetter
		case r >= 'A' && r <= 'Z':
			return kUpper | kLetter
		case r >= '0' && r <= '9':
			return kNumber
		case r == ' ' || r >= '\t' && r <= '\r':
			return kSpace
		}
		return 0
	}
	var p uint8
	if unicode.Is(unicode.Han, r) {
		p |= kHan
	}
	isL := unicode.IsLetter(r)
	if isL {
		p |= kLetter
	}
	if p&kHan == 0 {
		lm, lo, m := unicode.Is(unicode.Lm, r), unicode.Is(unicode.Lo, r), unicode.IsMark(r)
		if lm || lo || m || unicode.Is(unicode.Lu, r) || unicode.Is(unicode.Lt, r) {
			p |= kUpper
		}
		if lm || lo || m || unicode.Is(unicode.Ll, r) {
			p |= kLower
		}
	}
	if !isL && unicode.IsNumber(r) {
		p |= kNumber
	}
	if isWhiteSpace(r) {
		p |= kSpace
	}
	return p
}

func kimiAt(s string, i int) (uint8, int) {
	r, w := utf8.DecodeRuneInString(s[i:])
	return kimiProps(r), w
}

// kimiRun returns the end of the run of runes having any bit of mask from i.
func kimiRun(s string, i int, mask uint8) int {
	for i < len(s) {
		p, w := kimiAt(s, i)
		if p&mask == 0 {
			break
		}
		i += w
	}
	return i
}

// kimiMatcher matches PatternKimi.
type kimiMatcher struct{}

func (kimiMatcher) matchAt(s string, i int) int {
	p, w := kimiAt(s, i)
	// [\p{Han}]+
	if p&kHan != 0 {
		return kimiRun(s, i+w, kHan)
	}
	canPrefix := p&(kLetter|kNumber) == 0 && s[i] != '\r' && s[i] != '\n'
	// Branch 2: prefix? upper* lower+ contraction?, with the prefix tried first.
	if canPrefix && i+w < len(s) {
		if e := kimiUpperLower(s, i+w); e > 0 {
			return kimiContraction(s, e)
		}
	}
	if e := kimiUpperLower(s, i); e > 0 {
		return kimiContraction(s, e)
	}
	// Branch 3: prefix? upper+ lower* contraction?.
	if canPrefix && i+w < len(s) {
		if q, _ := kimiAt(s, i+w); q&kUpper != 0 {
			e := kimiRun(s, kimiRun(s, i+w, kUpper), kLower)
			return kimiContraction(s, e)
		}
	}
	if p&kUpper != 0 {
		e := kimiRun(s, kimiRun(s, i, kUpper), kLower)
		return kimiContraction(s, e)
	}
	// \p{N}{1,3}
	if p&kNumber != 0 {
		j := i + w
		for n := 1; n < 3 && j < len(s); n++ {
			q, w := kimiAt(s, j)
			if q&kNumber == 0 {
				break
			}
			j += w
		}
		return j
	}
	// The rest is the GPT-4 patterns' tail; the rune is not a letter or number.
	cls, _ := classAt(s, i)
	return otherOrSpace(s, i, cls, false)
}

// kimiUpperLower matches upper* lower+ at i with backtracking and returns its
// end, or -1: the upper run is taken whole when a lower rune follows it, else it
// gives back runes until it ends just before a rune that is also lower.
func kimiUpperLower(s string, i int) int {
	j := kimiRun(s, i, kUpper)
	if j < len(s) {
		if q, _ := kimiAt(s, j); q&kLower != 0 {
			return kimiRun(s, j, kLower)
		}
	}
	// Runes in [i, j) that are lower as well: the last one ends the match.
	for k := j; k > i; {
		r, w := utf8.DecodeLastRuneInString(s[i:k])
		k -= w
		if kimiProps(r)&kLower != 0 {
			return k + w
		}
	}
	return -1
}

func kimiContraction(s string, e int) int {
	if e < len(s) && s[e] == '\'' {
		if c := contraction(s, e, true); c > 0 {
			return c
		}
	}
	return e
}
