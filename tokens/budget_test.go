package tokens

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// templateTokenizer loads a tiny tokenizer with src as its chat template.
func templateTokenizer(t testing.TB, src string) (*Tokenizer, error) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{HFTokenizerFile: tinyTokenizer(`[]`), TemplateFile: src} {
		writeFileT(t, dir, name, data)
	}
	return Load(context.Background(), dir)
}

// TestRenderBudget: templates that would exhaust the stack or memory, or run
// for hours, fail their render with ErrRenderBudget, in bounded time; the same
// features within the budgets render as Jinja does.
func TestRenderBudget(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      string // the render, or "" for an ErrRenderBudget whose message holds err
		err       string
	}{
		{name: "recursive macro", src: `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, err: "nested more than 256 deep"},
		{name: "mutually recursive macros", src: `{% macro f(n) %}{{ g(n) }}{% endmacro %}{% macro g(n) %}{{ f(n) }}{% endmacro %}{{ f(0) }}`, err: "nested more than 256 deep"},
		{name: "recursive caller", src: `{% macro f() %}{{ caller() }}{% endmacro %}{% macro g() %}{% call f() %}{{ g() }}{% endcall %}{% endmacro %}{{ g() }}`, err: "nested more than 256 deep"},
		{name: "range of 10^9", src: `{% for i in range(1000000000) %}x{% endfor %}`, err: "range of 1000000000 items"},
		{name: "range of 10^9 by step", src: `{{ range(0, 2000000000, 2)|length }}`, err: "range of 1000000000 items"},
		{name: "repeat 10^9", src: `{{ "x" * 1000000000 }}`, err: "repeated 1000000000 times"},
		{name: "repeat in a repeat", src: `{{ "ab" * (3 * 1000000000) }}`, err: "repeated 3000000000 times"},
		{name: "doubling", src: `{% set ns = namespace(s="x") %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}`, err: "a string of"},
		{name: "doubling with +", src: `{% set ns = namespace(s="x") %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}`, err: "a string of"},
		{name: "output", src: `{% set s = "x" * 40000000 %}{{ s }}{{ s }}`, err: "bytes written"},
		{name: "made", src: `{% for i in range(100000) %}{% set x = "x" * 5000000 %}{% endfor %}`, err: "bytes made by *, ~ and + in all"},
		{name: "steps", src: `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, err: "loop iterations and macro calls"},
		{name: "macro", src: `{% macro f(a, b=2) %}[{{ a }}{{ b }}]{% endmacro %}{{ f(1) }}{{ f(3, b=4) }}`, want: "[12][34]"},
		{name: "recursion within the budget", src: `{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(100)|length }}`, want: "192"},
		{name: "range", src: `{% for i in range(3) %}{{ i }}{% endfor %}{{ range(5, 0, -2)|join(",") }}{{ range(100000)|length }}`, want: "0125,3,1100000"},
		{name: "repeat", src: `{{ "ab" * 3 }}|{{ "x" * -1 }}|{{ 3 * 4 }}|{{ "x" * 0 }}|{{ ("-" * 3) ~ ("=" * 2) }}`, want: "ababab||12||---=="},
		{name: "concat", src: `{{ "a" ~ 1 ~ "b" }}{{ "c" + "d" }}{{ ([1] + [2])|length }}{{ 1 + 2 }}`, want: "a1bcd23"},
		{name: "caller", src: `{% macro f() %}<{{ caller() }}>{% endmacro %}{% call f() %}in{% endcall %}`, want: "<in>"},
		{name: "loop else and filter", src: `{% for i in [] %}x{% else %}empty{% endfor %}{% for i in [1,2,3] if i > 1 %}{{ i }}{% endfor %}`, want: "empty23"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := templateTokenizer(t, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			got, err := tok.Render([]byte(`[]`), nil, false, nil)
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("render took %v", d)
			}
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Errorf("render = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrRenderBudget) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("render = %.40q, %v; want an ErrRenderBudget saying %q", got, err, tc.err)
			}
		})
	}
}

// TestTemplateRefused: a template nested deeper than the engine can parse
// safely, or using the names the budget's calls take, is refused at load.
func TestTemplateRefused(t *testing.T) {
	for name, src := range map[string]string{
		"brackets":      "{{ " + strings.Repeat("(", 600) + "1" + strings.Repeat(")", 600) + " }}",
		"blocks":        strings.Repeat("{% if 1 %}", 600) + "x" + strings.Repeat("{% endif %}", 600),
		"reserved name": `{% set __agentrace_enter = 1 %}`,
	} {
		if _, err := templateTokenizer(t, src); err == nil || !strings.Contains(err.Error(), "chat template") {
			t.Errorf("%s: Load = %v, want a refusal of the chat template", name, err)
		}
	}
}

func writeFileT(t testing.TB, dir, name, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
