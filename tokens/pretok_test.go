package tokens

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// splitWith returns the pieces of s under ms.
func splitWith(ms *matchSplit, s string) []string {
	var out []string
	ms.split(s, func(w string) { out = append(out, w) })
	return out
}

// FuzzHandMatchers checks each hand-written matcher against the same pattern run
// by regexp2, the general backtracking engine.
func FuzzHandMatchers(f *testing.F) {
	for _, s := range append(edgeCases(), marksAndNFC()...) {
		if len(s) < 400 {
			f.Add(s)
		}
	}
	type pair struct {
		name       string
		hand, slow *matchSplit
	}
	var pairs []pair
	for name, p := range map[string]string{"gpt2": PatternGPT2, "cl100k": PatternCL100K, "qwen": PatternQwen, "qwen35": PatternQwen35} {
		re, err := compileRegexp(p)
		if err != nil {
			f.Fatal(err)
		}
		pairs = append(pairs, pair{name, &matchSplit{m: handMatcher(p), behavior: "Isolated"}, &matchSplit{re: re, behavior: "Isolated"}})
	}
	f.Fuzz(func(t *testing.T, s string) {
		// regexp2 backtracks; keep inputs short enough for it.
		if !utf8.ValidString(s) || len(s) > 2000 {
			return
		}
		for _, p := range pairs {
			a, b := splitWith(p.hand, s), splitWith(p.slow, s)
			if strings.Join(a, "\x00") != strings.Join(b, "\x00") {
				t.Errorf("%s %q:\n  hand    %q\n  regexp2 %q", p.name, s, a, b)
			}
		}
	})
}

func TestSplitBehaviors(t *testing.T) {
	for _, tc := range []struct {
		behavior string
		invert   bool
		want     []string
	}{
		{"Isolated", false, []string{"a", "-", "b", "-", "-", "c"}},
		{"Removed", false, []string{"a", "b", "c"}},
		{"MergedWithPrevious", false, []string{"a-", "b-", "-", "c"}},
		{"MergedWithNext", false, []string{"a", "-b", "-", "-c"}},
		{"Contiguous", false, []string{"a", "-", "b", "--", "c"}},
		{"Removed", true, []string{"-", "-", "-"}},
	} {
		ms := &matchSplit{lit: "-", behavior: tc.behavior, invert: tc.invert}
		if got := splitWith(ms, "a-b--c"); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s invert=%v: %q, want %q", tc.behavior, tc.invert, got, tc.want)
		}
	}
}
