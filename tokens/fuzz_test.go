package tokens

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// FuzzRenderBudget renders fuzzed template sources within the budgets. The
// oracle: every render ends within its time bound, writes at most
// renderMaxOutput bytes, and fails only as the engine or the budget says (no
// panic); and where it succeeds, the engine without the budget's calls renders
// the same text (the calls change nothing but the limits).
func FuzzRenderBudget(f *testing.F) {
	for _, s := range []string{
		`{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}`,
		`{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}`,
		`{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`,
		`{% for i in range(1000000000) %}x{% endfor %}`,
		`{{ "x" * 1000000000 }}{{ "ab" * 3 }}{{ "x" * -1 }}`,
		`{% set ns = namespace(s="x") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}`,
		`{% macro f() %}<{{ caller() }}>{% endmacro %}{% call f() %}in{% endcall %}{{ [1, 2] + [3] }}{{ {"a": 1 * 2}|tojson }}`,
		`{%- for m in messages | reverse %}{{ loop.index }}{{ m.content[1:] ~ (m.role * 2) }}{% endfor -%}`,
	} {
		f.Add(s)
	}
	messages := jinja.NewList([]jinja.Value{
		jinja.FromGoValue(map[string]any{"role": "user", "content": "hello"}),
		jinja.FromGoValue(map[string]any{"role": "assistant", "content": "hi there"}),
	})
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 || strings.Contains(src, "__agentrace") {
			return
		}
		norm := jinjaSource(src)
		if checkNesting(norm) != nil {
			return
		}
		compiled := make(chan *jinja.Template, 1)
		go func() {
			tmpl, _ := jinja.Compile(norm)
			compiled <- tmpl
		}()
		var tmpl *jinja.Template
		select {
		case tmpl = <-compiled:
		case <-time.After(30 * time.Second):
			t.Fatalf("compile of %q ran past 30 s", src)
		}
		if tmpl == nil {
			return
		}
		if err := instrumentTemplate(tmpl); err != nil {
			t.Fatalf("instrument %q: %v", src, err)
		}
		data := func() map[string]jinja.Value {
			return map[string]jinja.Value{"messages": messages, "add_generation_prompt": jinja.NewBool(true)}
		}
		type result struct {
			out string
			err error
		}
		done := make(chan result, 1)
		go func() {
			d := data()
			var b renderBudget
			b.set(d)
			out, err := tmpl.RenderValues(d)
			done <- result{out, err}
		}()
		var r result
		select {
		case r = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("render of %q ran past 30 s", src)
		}
		if len(r.out) > renderMaxOutput {
			t.Fatalf("render of %q wrote %d bytes", src, len(r.out))
		}
		if r.err != nil {
			return
		}
		plain, err := jinja.Compile(norm)
		if err != nil {
			t.Fatal(err)
		}
		d := data()
		d["range"] = jinja.NewCallable("range", boundedRange)
		plainDone := make(chan result, 1)
		go func() {
			out, err := renderRecovered(plain, d)
			plainDone <- result{out, err}
		}()
		var p result
		select {
		case p = <-plainDone:
		case <-time.After(30 * time.Second):
			t.Fatalf("render of %q without the budget ran past 30 s", src)
		}
		want, err := p.out, p.err
		if err != nil {
			return // the engine alone fails or panics where the budget's calls do not
		}
		if r.out != want {
			t.Errorf("%q: with the budget %q, without %q", src, r.out, want)
		}
	})
}

func renderRecovered(tmpl *jinja.Template, data map[string]jinja.Value) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("panic")
		}
	}()
	return tmpl.RenderValues(data)
}

// FuzzSplitPattern splits fuzzed text with fuzzed split patterns run by
// regexp2. The oracle: the pieces are non-empty and make up the text exactly,
// or the split fails with a PatternError within its match timeouts.
func FuzzSplitPattern(f *testing.F) {
	for _, s := range [][2]string{
		{PatternQwen35, "Hello, world! 123 don't\n\n  x"},
		{`(a+)+$`, strings.Repeat("a", 30) + "b"},
		{`\s+|\w+|[^\s\w]+`, "a  b\tc,d"},
		{`(?=a)|b*`, "abba"},
		{`\p{L}+|\p{N}{1,3}`, "Ünïcödé 12345"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		if len(pattern) > 200 || len(text) > 200 || !utf8.ValidString(text) {
			return
		}
		re, err := compileRegexp(pattern)
		if err != nil {
			return
		}
		ms := &matchSplit{re: re, behavior: "Isolated"}
		start := time.Now()
		var pieces []string
		err = func() (err error) {
			defer recoverEncode(&err)
			ms.split(text, func(w string) { pieces = append(pieces, w) })
			return nil
		}()
		if d := time.Since(start); d > time.Duration(len(text)+2)*regexpMatchTimeout {
			t.Fatalf("%q on %q took %v", pattern, text, d)
		}
		var pe *PatternError
		if err != nil {
			if !errors.As(err, &pe) {
				t.Fatalf("%q on %q: %v, want a PatternError", pattern, text, err)
			}
			return
		}
		for _, p := range pieces {
			if p == "" {
				t.Fatalf("%q on %q: an empty piece in %q", pattern, text, pieces)
			}
		}
		if strings.Join(pieces, "") != text {
			t.Fatalf("%q on %q: pieces %q do not make up the text", pattern, text, pieces)
		}
	})
}
