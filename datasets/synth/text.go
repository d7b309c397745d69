package synth

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// approxTokens estimates the Qwen3 token count of generated text: about four bytes
// per token for the English-and-identifiers mix the generator writes. The generator
// only uses it to stop appending sentences; the calibration test counts with the
// real tokenizer.
func approxTokens(s string) int { return (len(s) + 3) / 4 }

// project is a fictional Python code base a coding task is set in.
type project struct {
	owner, repo string
	pkg         string   // import name
	modules     []string // module paths under pkg, without .py
	nouns       []string // domain words for identifiers
}

var projects = []project{
	{"tidyframe", "tidyframe", "tidyframe", []string{"core/frame", "core/index", "io/csv_reader", "io/parquet", "ops/groupby", "ops/merge", "util/validation"}, []string{"frame", "column", "index", "group", "dtype", "chunk"}},
	{"webkit-py", "routekit", "routekit", []string{"routing", "request", "response", "middleware/cors", "middleware/auth", "templating", "testing/client"}, []string{"route", "request", "header", "cookie", "session", "template"}},
	{"orm-labs", "sqlweave", "sqlweave", []string{"query/builder", "query/compiler", "schema/fields", "schema/migrations", "backends/sqlite", "backends/postgres", "expressions"}, []string{"query", "field", "table", "alias", "join", "expression"}},
	{"astrokit", "skyunits", "skyunits", []string{"units/core", "units/quantity", "units/format", "coordinates/frames", "time/scales", "io/fits_header", "utils/decorators"}, []string{"unit", "quantity", "frame", "scale", "header", "epoch"}},
	{"plotlab", "plotlab", "plotlab", []string{"axes/base", "axes/ticker", "figure", "colors", "legend", "backends/svg", "text/layout"}, []string{"axis", "tick", "figure", "color", "legend", "label"}},
	{"symcalc", "symcalc", "symcalc", []string{"core/expr", "core/numbers", "simplify/trig", "solvers/linear", "printing/latex", "matrices/dense", "polys/factor"}, []string{"expr", "symbol", "matrix", "term", "printer", "factor"}},
	{"httpcore-dev", "fetchly", "fetchly", []string{"client", "adapters", "auth", "cookies", "models", "utils/urls", "exceptions"}, []string{"session", "adapter", "url", "cookie", "payload", "retry"}},
	{"docforge", "docforge", "docforge", []string{"builders/html", "directives/code", "domains/python", "ext/autodoc", "util/nodes", "writers/latex", "config"}, []string{"directive", "node", "builder", "domain", "role", "config"}},
	{"mlkit-org", "mlkit", "mlkit", []string{"linear_model/ridge", "preprocessing/scaler", "model_selection/split", "metrics/ranking", "tree/splitter", "utils/validation", "pipeline"}, []string{"estimator", "sample", "feature", "score", "split", "weight"}},
	{"lintwise", "lintwise", "lintwise", []string{"checkers/imports", "checkers/format", "config/loader", "reporters/text", "utils/ast_walk", "lint", "message"}, []string{"checker", "message", "node", "option", "report", "module"}},
}

var verbs = []string{"parse", "resolve", "validate", "normalize", "build", "render", "compute", "convert", "merge", "apply", "load", "format", "check", "collect", "prepare", "update", "get", "iter", "select", "coerce"}

var issueKinds = []string{
	"raises %s when %s is empty instead of returning an empty result",
	"silently drops the %s argument when %s is passed as a keyword",
	"produces the wrong %s after %s is copied",
	"ignores a custom %s when %s is configured globally",
	"loses the %s order when %s contains duplicates",
	"returns a stale %s after %s is modified in place",
	"formats the %s incorrectly when %s uses a non-default locale",
	"crashes with a recursion error when %s refers back to %s",
}

var exceptions = []string{"TypeError", "ValueError", "KeyError", "AttributeError", "IndexError", "RuntimeError", "AssertionError"}

// task is what one coding trajectory works on.
type task struct {
	id      string
	proj    project
	files   []string // relevant files, relative to the repository root
	funcs   []string // relevant function names
	noun    string
	exc     string
	summary string
}

func newTask(r *rand.Rand, n int) task {
	p := projects[r.IntN(len(projects))]
	t := task{proj: p, noun: pick(r, p.nouns), exc: pick(r, exceptions)}
	// The number part is unique per conversation index, so ids never collide.
	t.id = fmt.Sprintf("%s__%s-%d", p.owner, p.repo, 1000+n*41+r.IntN(41))
	for range 3 {
		t.files = append(t.files, p.pkg+"/"+pick(r, p.modules)+".py")
	}
	for range 4 {
		t.funcs = append(t.funcs, identifier(r, p))
	}
	other := pick(r, p.nouns)
	t.summary = fmt.Sprintf("`%s()` "+pick(r, issueKinds), t.funcs[0], t.noun, other)
	return t
}

func identifier(r *rand.Rand, p project) string {
	return pick(r, verbs) + "_" + pick(r, p.nouns)
}

func (t task) file(r *rand.Rand) string { return pick(r, t.files) }
func (t task) fn(r *rand.Rand) string   { return pick(r, t.funcs) }

// prDescription writes the user message of a coding trajectory: the task in a
// <pr_description> block, followed by the standing instructions of the harness.
func prDescription(r *rand.Rand, t task) string {
	var b strings.Builder
	b.WriteString("<pr_description>\nConsider the following PR description:\n")
	fmt.Fprintf(&b, "%s\n\nDescription\n\n", capitalize(t.summary))
	fmt.Fprintf(&b, "When calling %s.%s on a %s that was built from user input, the call fails:\n\n", t.proj.pkg, t.funcs[0], t.noun)
	fmt.Fprintf(&b, ">>> from %s import %s\n>>> %s(%s)\nTraceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\n  File \"%s\", line %d, in %s\n    return %s(%s, strict=True)\n%s: unexpected %s\n\n",
		t.proj.pkg, t.funcs[0], t.funcs[0], t.noun, t.files[0], 40+r.IntN(800), t.funcs[0], t.funcs[1], t.noun, t.exc, t.noun)
	for range 2 + r.IntN(4) {
		b.WriteString(prose(r, t, 40+r.IntN(60)))
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "Expected behaviour: %s() should handle this case the same way %s() does.\n</pr_description>\n\n", t.funcs[0], t.funcs[2])
	b.WriteString(instructions)
	return b.String()
}

// instructions are the harness's standing rules, appended to every coding task.
const instructions = `<instructions>
# How to work

You are working in a checkout of the repository at /testbed. Change non-test source
files so that the behaviour described in the PR description is fixed, in a way that
fits the rest of the code base.

Work in small steps. In every response:
1. Explain briefly what you know so far and what you will check or change next.
2. Call the bash tool with one or more commands.

Each command runs in a fresh subshell: directory changes and exported variables do not
persist, so prefix commands with "cd /testbed &&" where needed. Commands that wait for
input or open an editor will hang; use sed, cat with a heredoc, or a short Python
script to edit files. Avoid printing very large files: view line ranges with sed -n or
search with grep -n.

Suggested plan:
- find the code involved (find, grep -rn, sed -n);
- write a small script that reproduces the problem and run it;
- edit the source;
- run the script again, then the relevant tests (python -m pytest);
- check edge cases and review the change with git diff.

Do not modify tests or configuration files (setup.cfg, pyproject.toml, tox.ini).
When the change is complete and verified, run:
    echo TASK_COMPLETE && git add -A && git diff --cached
as your only command, and do not run anything after it.
</instructions>`

// prose writes about n approximate tokens of reasoning about the task.
func prose(r *rand.Rand, t task, n int) string {
	var b strings.Builder
	for approxTokens(b.String()) < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sentence(r, t))
	}
	return b.String()
}

var sentenceForms = []func(r *rand.Rand, t task) string{
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("The failure starts in `%s` in %s, which passes the %s straight to `%s` without checking it first.", t.fn(r), t.file(r), t.noun, t.fn(r))
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("Let me look at lines %d to %d of %s to see how `%s` is normalized before it is used.", 20+r.IntN(400), 440+r.IntN(200), t.file(r), identifier(r, t.proj))
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("So the %s is converted twice: once in `%s` and again when `%s` builds the result, which explains the %s.", t.noun, t.fn(r), t.fn(r), t.exc)
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("I should check whether any caller relies on the current behaviour; grep for `%s(` across the package should tell.", t.fn(r))
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("The test suite for this lives in tests/test_%s.py, so I can run just that file instead of the whole suite.", pick(r, t.proj.nouns))
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("Hmm, the output shows the %s is still %s after the call, so my edit did not reach the code path that matters.", t.noun, pick(r, []string{"None", "empty", "unchanged", "duplicated", "in the wrong order"}))
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("A minimal fix is to return early from `%s` when the %s has no entries, and keep the existing path for everything else.", t.fn(r), t.noun)
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("Wait, `%s` is also called from %s with keyword arguments, so the signature has to stay compatible.", t.fn(r), t.file(r))
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("The reproduction script now prints the expected %s, and the %s is gone.", t.noun, t.exc)
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("%d tests passed and %d were skipped; none of the failures are related to the %s handling.", 10+r.IntN(300), r.IntN(12), t.noun)
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("I need to understand what `%s` returns when the %s is a subclass rather than the base type.", identifier(r, t.proj), pick(r, t.proj.nouns))
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("Edge cases worth trying: an empty %s, a %s with a single element, and one that contains unicode names.", t.noun, pick(r, t.proj.nouns))
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("The import of %s happens lazily inside the function, probably to avoid a circular import with %s.", pick(r, t.proj.modules), t.file(r))
	},
	func(r *rand.Rand, t task) string {
		return "Let me first confirm the current behaviour before changing anything."
	},
	func(r *rand.Rand, t task) string {
		return fmt.Sprintf("Actually, the cleaner place for this check is `%s`, because every public entry point goes through it.", t.fn(r))
	},
}

func sentence(r *rand.Rand, t task) string { return pick(r, sentenceForms)(r, t) }

func capitalize(s string) string {
	if s == "" {
		return s
	}
	if s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}

// codeLine writes one plausible line of Python from the task's code base.
func codeLine(r *rand.Rand, t task) string {
	indent := strings.Repeat("    ", r.IntN(4))
	switch r.IntN(12) {
	case 0:
		return fmt.Sprintf("def %s(self, %s, *, strict=False):", identifier(r, t.proj), pick(r, t.proj.nouns))
	case 1:
		return fmt.Sprintf("%sreturn self._%s(%s)", indent, identifier(r, t.proj), pick(r, t.proj.nouns))
	case 2:
		return fmt.Sprintf("%sif %s is None:", indent, pick(r, t.proj.nouns))
	case 3:
		return fmt.Sprintf("%sraise %s(\"invalid %s: %%r\" %% (%s,))", indent, pick(r, exceptions), pick(r, t.proj.nouns), pick(r, t.proj.nouns))
	case 4:
		return fmt.Sprintf("%sfor %s in self.%ss:", indent, pick(r, t.proj.nouns), pick(r, t.proj.nouns))
	case 5:
		return fmt.Sprintf("%s%s = %s(%s, %s=%s)", indent, pick(r, t.proj.nouns), identifier(r, t.proj), pick(r, t.proj.nouns), pick(r, t.proj.nouns), pick(r, []string{"None", "True", "False", "0", "()"}))
	case 6:
		return ""
	case 7:
		return fmt.Sprintf("%s# %s", indent, capitalize(strings.TrimSuffix(sentence(r, t), ".")))
	case 8:
		return fmt.Sprintf("from .%s import %s", strings.ReplaceAll(pick(r, t.proj.modules), "/", "."), identifier(r, t.proj))
	case 9:
		return fmt.Sprintf("%sself._%s_cache[%s] = %s", indent, pick(r, t.proj.nouns), pick(r, t.proj.nouns), pick(r, t.proj.nouns))
	case 10:
		return fmt.Sprintf("class %s%s(%sBase):", capitalize(pick(r, t.proj.nouns)), capitalize(pick(r, verbs)), capitalize(pick(r, t.proj.nouns)))
	default:
		return fmt.Sprintf("%selse:", indent)
	}
}
