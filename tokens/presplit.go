package tokens

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// preTokenizer splits text into words; BPE never merges across words.
type preTokenizer interface {
	split(s string, emit func(word string))
}

// parsePreTokenizer builds the pre-tokenizer of tokenizer.json and reports
// whether it is byte-level (a ByteLevel step is present). Steps that do not
// split (ByteLevel without its regexp: the byte mapping is folded into the
// vocabulary) are dropped, so that the common Split+ByteLevel sequence reduces to
// one matcher.
func parsePreTokenizer(raw json.RawMessage) (preTokenizer, bool, error) {
	if isNull(raw) {
		return nil, false, nil
	}
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, false, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch t.Type {
	case "Sequence":
		var s struct {
			Steps []json.RawMessage `json:"pretokenizers"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Sequence: %w", err)
		}
		var seq sequence
		byteLevel := false
		for _, step := range s.Steps {
			p, bl, err := parsePreTokenizer(step)
			if err != nil {
				return nil, false, err
			}
			byteLevel = byteLevel || bl
			if p != nil {
				seq = append(seq, p)
			}
		}
		switch len(seq) {
		case 0:
			return nil, byteLevel, nil
		case 1:
			return seq[0], byteLevel, nil
		}
		return seq, byteLevel, nil
	case "ByteLevel":
		var b struct {
			AddPrefixSpace bool  `json:"add_prefix_space"`
			UseRegex       *bool `json:"use_regex"`
		}
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer ByteLevel: %w", err)
		}
		useRegex := b.UseRegex == nil || *b.UseRegex // default true
		switch {
		case !b.AddPrefixSpace && !useRegex:
			return nil, true, nil
		case !b.AddPrefixSpace:
			return &matchSplit{m: gpt2Matcher{}, behavior: "Isolated"}, true, nil
		}
		return byteLevelStep{addPrefixSpace: b.AddPrefixSpace, useRegex: useRegex}, true, nil
	case "Split":
		var sp struct {
			Pattern struct {
				Regex  *string `json:"Regex"`
				String *string `json:"String"`
			} `json:"pattern"`
			Behavior string `json:"behavior"`
			Invert   bool   `json:"invert"`
		}
		if err := json.Unmarshal(raw, &sp); err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		switch sp.Behavior {
		case "Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous":
		default:
			return nil, false, fmt.Errorf("pre_tokenizer Split: unknown behavior %q", sp.Behavior)
		}
		ms := &matchSplit{behavior: sp.Behavior, invert: sp.Invert}
		switch {
		case sp.Pattern.Regex != nil:
			if ms.m = handMatcher(*sp.Pattern.Regex); ms.m == nil {
				re, err := compileRegexp(*sp.Pattern.Regex)
				if err != nil {
					return nil, false, fmt.Errorf("pre_tokenizer Split: pattern %q: %w", *sp.Pattern.Regex, err)
				}
				ms.re = re
			}
		case sp.Pattern.String != nil:
			if *sp.Pattern.String == "" {
				return nil, false, fmt.Errorf("pre_tokenizer Split: empty string pattern")
			}
			ms.lit = *sp.Pattern.String
		default:
			return nil, false, fmt.Errorf("pre_tokenizer Split: no pattern")
		}
		return ms, false, nil
	case "Digits":
		var d struct {
			Individual bool `json:"individual_digits"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, false, fmt.Errorf("pre_tokenizer Digits: %w", err)
		}
		return digits{individual: d.Individual}, false, nil
	}
	return nil, false, fmt.Errorf("unsupported pre_tokenizer %q", t.Type)
}

// compileRegexp compiles a pattern this package has no hand-written matcher for,
// with a backtracking engine that has lookaround and Unicode classes, and a
// match timeout: a pattern that backtracks without end, such as (a+)+$, fails
// the encoding with a PatternError instead of running for ever.
func compileRegexp(pattern string) (*regexp2.Regexp, error) {
	re, err := regexp2.Compile(pattern, regexp2.Unicode)
	if err != nil {
		return nil, err
	}
	re.MatchTimeout = regexpMatchTimeout
	return re, nil
}

// regexpMatchTimeout bounds the search for one match of a pre-tokenizer
// pattern: real patterns take microseconds.
const regexpMatchTimeout = time.Second

// PatternError is the error of an encoding whose pre-tokenizer pattern found
// no match within its timeout.
type PatternError struct {
	Pattern string // the pattern, as tokenizer.json gives it
	Piece   int    // the length in bytes of the text it was searching
	Err     error  // regexp2's error
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("tokenizer's split pattern %s found no match within %v in a %d-byte piece of text (it backtracks without end on it): this tokenizer cannot count the text",
		excerpt(e.Pattern), regexpMatchTimeout, e.Piece)
}

func (e *PatternError) Unwrap() error { return e.Err }

// encodeAbort carries an encoding's error up the stack from where a pattern
// failed to the call that returns it (Tokenizer.encode, ISLCounter.Count).
type encodeAbort struct{ err error }

// recoverEncode sets *err to the error of an encodeAbort panic, and lets any
// other panic go on.
func recoverEncode(err *error) {
	if r := recover(); r != nil {
		a, ok := r.(encodeAbort)
		if !ok {
			panic(r)
		}
		*err = a.err
	}
}

type sequence []preTokenizer

func (q sequence) split(s string, emit func(string)) {
	if len(q) == 0 {
		emit(s)
		return
	}
	q[0].split(s, func(w string) { q[1:].split(w, emit) })
}

// byteLevelStep is a ByteLevel pre-tokenizer that adds a prefix space.
type byteLevelStep struct{ addPrefixSpace, useRegex bool }

func (b byteLevelStep) split(s string, emit func(string)) {
	if b.addPrefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	if !b.useRegex {
		emit(s)
		return
	}
	for i := 0; i < len(s); {
		j := gpt2Matcher{}.matchAt(s, i)
		emit(s[i:j])
		i = j
	}
}

// digits is the Digits pre-tokenizer: numbers isolated, one by one or in runs.
type digits struct{ individual bool }

func (d digits) split(s string, emit func(string)) {
	start := 0
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsNumber(r) {
			i += w
			continue
		}
		j := i + w
		if !d.individual {
			for j < len(s) {
				r2, w2 := utf8.DecodeRuneInString(s[j:])
				if !unicode.IsNumber(r2) {
					break
				}
				j += w2
			}
		}
		if start < i {
			emit(s[start:i])
		}
		emit(s[i:j])
		start, i = j, j
	}
	if start < len(s) {
		emit(s[start:])
	}
}

// matchSplit is the Split pre-tokenizer: a pattern (hand-written matcher,
// regexp or literal string) and what to do with its matches.
type matchSplit struct {
	m        matcher
	re       *regexp2.Regexp
	lit      string
	behavior string
	invert   bool
}

// simple reports whether the split is a total matcher whose every match is a word.
func (m *matchSplit) simple() bool { return m.m != nil && m.behavior == "Isolated" && !m.invert }

type span struct {
	start, end int
	match      bool
}

func (m *matchSplit) spans(s string) []span {
	var out []span
	last := 0
	add := func(a, b int) {
		if last < a {
			out = append(out, span{last, a, false})
		}
		out = append(out, span{a, b, true})
		last = b
	}
	switch {
	case m.m != nil:
		for i := 0; i < len(s); {
			j := m.m.matchAt(s, i)
			add(i, j)
			i = j
		}
	case m.lit != "":
		for i := 0; ; {
			k := strings.Index(s[i:], m.lit)
			if k < 0 {
				break
			}
			add(i+k, i+k+len(m.lit))
			i += k + len(m.lit)
		}
	default:
		runes := []rune(s)
		offs := make([]int, len(runes)+1)
		o := 0
		for i, r := range runes {
			offs[i] = o
			o += utf8.RuneLen(r)
		}
		offs[len(runes)] = len(s)
		mt, err := m.re.FindRunesMatch(runes)
		for err == nil && mt != nil {
			if mt.Length > 0 {
				add(offs[mt.Index], offs[mt.Index+mt.Length])
			}
			mt, err = m.re.FindNextMatch(mt)
		}
		if err != nil {
			panic(encodeAbort{&PatternError{Pattern: m.re.String(), Piece: len(s), Err: err}})
		}
	}
	if last < len(s) {
		out = append(out, span{last, len(s), false})
	}
	if m.invert {
		for i := range out {
			out[i].match = !out[i].match
		}
	}
	return out
}

func (m *matchSplit) split(s string, emit func(string)) {
	if s == "" {
		return
	}
	if m.simple() {
		for i := 0; i < len(s); {
			j := m.m.matchAt(s, i)
			emit(s[i:j])
			i = j
		}
		return
	}
	sp := m.spans(s)
	var out []span
	switch m.behavior {
	case "Removed":
		for _, x := range sp {
			if !x.match {
				out = append(out, x)
			}
		}
	case "Isolated":
		out = sp
	case "MergedWithPrevious":
		prevMatch := false
		for _, x := range sp {
			if x.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].end = x.end
			} else {
				out = append(out, x)
			}
			prevMatch = x.match
		}
	case "MergedWithNext":
		// Built right to left, as in Hugging Face.
		prevMatch := false
		var rev []span
		for i := len(sp) - 1; i >= 0; i-- {
			x := sp[i]
			if x.match && !prevMatch && len(rev) > 0 {
				rev[len(rev)-1].start = x.start
			} else {
				rev = append(rev, x)
			}
			prevMatch = x.match
		}
		for i := len(rev) - 1; i >= 0; i-- {
			out = append(out, rev[i])
		}
	case "Contiguous":
		prevMatch := false
		for _, x := range sp {
			if x.match && prevMatch && len(out) > 0 {
				out[len(out)-1].end = x.end
			} else {
				out = append(out, x)
			}
			prevMatch = x.match
		}
	}
	for _, x := range out {
		if x.start < x.end {
			emit(s[x.start:x.end])
		}
	}
}
