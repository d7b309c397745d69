package tokens

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentrace/agentrace/schemas"
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

// backtrackingTokenizer is a tokenizer folder whose split pattern backtracks
// without end on a run of a's that does not end the text.
func backtrackingTokenizer(t *testing.T) *Tokenizer {
	t.Helper()
	src := strings.Replace(tinyTokenizer(`[]`), mustJSON(PatternQwen), mustJSON(`(a+)+$|\s+|[^\sa]+`), 1)
	tok, err := Load(context.Background(), writeDir(t, map[string]string{HFTokenizerFile: src, TemplateFile: "{% for m in messages %}{{ m.content }}{% endfor %}"}))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestBacktrackingPattern: a split pattern that backtracks without end fails
// the count within its match timeout, with a PatternError naming the pattern,
// from every call that counts; a text it handles still encodes.
func TestBacktrackingPattern(t *testing.T) {
	tok := backtrackingTokenizer(t)
	if ids, err := tok.EncodeErr("aaa b", false); err != nil || len(ids) != 5 {
		t.Fatalf("EncodeErr of a short text: %v, %v", ids, err)
	}
	evil := strings.Repeat("a", 40) + "b"
	for name, count := range map[string]func() error{
		"EncodeErr": func() error { _, err := tok.EncodeErr(evil, false); return err },
		"CountISL": func() error {
			_, err := tok.CountISL([]byte(`[{"role":"user","content":"`+evil+`"}]`), nil, nil)
			return err
		},
		"CountOSL": func() error { _, err := tok.CountOSL(schemas.Response{Content: evil}); return err },
		"ISLCounter": func() error {
			_, err := tok.NewISLCounter(nil).Count([][]byte{[]byte(`{"role":"user","content":"` + evil + `"}`)}, nil)
			return err
		},
		"Encode": func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err, _ = r.(error)
				}
			}()
			tok.Encode(evil, false)
			return nil
		},
	} {
		start := time.Now()
		err := count()
		var pe *PatternError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "(a+)+$") || !strings.Contains(err.Error(), "found no match within") {
			t.Errorf("%s: %v, want a PatternError naming the pattern", name, err)
		}
		if d := time.Since(start); d > 3*regexpMatchTimeout {
			t.Errorf("%s took %v", name, d)
		}
	}
}

// TestBacktrackingInterrupted: Tokenize of a text its pattern backtracks on
// returns at once when its context is canceled (Ctrl-C).
func TestBacktrackingInterrupted(t *testing.T) {
	tok := backtrackingTokenizer(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := encodeContext(ctx, func() ([]int, error) { return tok.EncodeErr(strings.Repeat("a", 40)+"b", false) })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("encodeContext: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > regexpMatchTimeout/2 {
		t.Errorf("returned after %v", d)
	}
}
