package e2e

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// speakers are the parts of the tree that talk to a person: the command line and
// the drivers (the demo, bench, chaos, the cross-stage tests, the scripts and the
// interop checks). Every other package speaks in values.
var speakers = []string{"cmd", "tour", "bench", "chaos", "e2e", "scripts", "interop"}

// valueExceptions are string literals that look like command-line words but are
// data or documentation, not messages: in file (relative to the module), the
// literals containing lit, and why.
var valueExceptions = []struct{ file, lit, why string }{
	{"datasets/synth/coding.go", "git diff --cached", "the shell commands of synthetic coding trajectories"},
	{"datasets/synth/coding.go", "git log --oneline", "the shell commands of synthetic coding trajectories"},
	{"datasets/synth/coding.go", "--include=*.py", "the shell commands of synthetic coding trajectories"},
	{"datasets/synth/coding.go", "diff --git", "the patches of synthetic coding trajectories"},
	{"datasets/synth/coding.go", "python --version", "the shell commands of synthetic coding trajectories"},
	{"datasets/synth/text.go", "<instructions>", "the system prompt of synthetic coding trajectories"},
	{"simserver/answer.go", "--include=*.py", "a tool call the simulated model answers with"},
	{"schemas/replay.go", "--strict-stream", "the turn log's column documentation (docs/layouts.md), which names what sets a column"},
	{"schemas/replay.go", "--max-output-bytes", "the turn log's column documentation (docs/layouts.md), which names what sets a column"},
	{"submission/tree.go", "agentrace sweep --dataset", "the submission tree's README: the commands that measure a point again"},
	{"submission/tree.go", "agentrace score --tokenizer", "the submission tree's README: the commands that measure a point again"},
	{"tokens/hub.go", " --revision ", "the Hugging Face CLI's command that fetches a tokenizer (FetchCommand), not agentrace's"},
}

var (
	// flagWord is a command-line flag written into a message: "--tokenizer".
	flagWord = regexp.MustCompile(`(^|[^-\w])--[a-z]`)
	// commandLine is a ready-made line of a command: "agentrace report: ...".
	commandLine = regexp.MustCompile(`^agentrace( [a-z][a-z-]*)*:`)
	// commandPrint is the format of a line a command prints about itself, written
	// by fmt.Fprint*: "report: ...", "submit: ...".
	commandPrint = regexp.MustCompile(`^(ingest|synth|prompt|stats|diff|export|tokenize|sim|simulate|replay|sweep|swebench|log|score|rescore|report|publish|submit|audit|demo): `)
)

// TestLibrariesSpeakInValues reads every non-test Go file outside speakers and
// fails on what only the command line may do: write to standard error or output,
// name a command-line flag in a string, print or word a ready-made
// "agentrace CMD:" line (cmd/agentrace's problemLine is their one format), or
// start from context.Background or context.TODO instead of the caller's context.
func TestLibrariesSpeakInValues(t *testing.T) {
	root := testenv.RepoRoot(t)
	fset := token.NewFileSet()
	found := map[string][]finding{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			for _, s := range speakers {
				if rel == s {
					return filepath.SkipDir
				}
			}
			// Helpers of tests only (internal/testenv, score/scoretest) run under go test.
			if strings.HasSuffix(name, "test") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		lit := ""
		say := func(n ast.Node, format string, a ...any) {
			found[rel] = append(found[rel], finding{fmt.Sprintf("%s line %d: %s", rel, fset.Position(n.Pos()).Line, fmt.Sprintf(format, a...)), lit})
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				x, ok := n.X.(*ast.Ident)
				if !ok {
					return true
				}
				switch x.Name + "." + n.Sel.Name {
				case "os.Stderr", "os.Stdout":
					say(n, "%s.%s: a library returns or hands its caller what it has to say", x.Name, n.Sel.Name)
				case "context.Background", "context.TODO":
					say(n, "%s.%s: every context comes from the caller's", x.Name, n.Sel.Name)
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || len(n.Args) < 2 {
					return true
				}
				if x, _ := sel.X.(*ast.Ident); x == nil || x.Name != "fmt" || !strings.HasPrefix(sel.Sel.Name, "Fprint") {
					return true
				}
				if lit, ok := n.Args[1].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && commandPrint.MatchString(s) {
						say(n, "fmt.%s(..., %q) prints a command's line; hand the caller an event (notice.Sink)", sel.Sel.Name, short(s))
					}
				}
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					return true
				}
				lit = s
				defer func() { lit = "" }()
				if flagWord.MatchString(s) {
					say(n, "%q names a command-line flag; carry the option as a value (notice.OptionError, notice.Event) and let cmd name the flag", short(s))
				}
				if commandLine.MatchString(s) {
					say(n, "%q is a ready-made command line; only cmd words those", short(s))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range valueExceptions {
		kept, used := found[e.file][:0], false
		for _, f := range found[e.file] {
			if f.lit != "" && strings.Contains(f.lit, e.lit) {
				used = true
				continue
			}
			kept = append(kept, f)
		}
		found[e.file] = kept
		if !used {
			t.Errorf("%s: no string holds %q any more: remove its exception (%s)", e.file, e.lit, e.why)
		}
	}
	files := make([]string, 0, len(found))
	for file := range found {
		files = append(files, file)
	}
	sort.Strings(files)
	for _, file := range files {
		for _, f := range found[file] {
			t.Error(f.text)
		}
	}
}

// finding is what the test found at a place (text) and the string literal it
// is about ("" when none).
type finding struct{ text, lit string }

// texts joins the findings' texts, one a line.
func texts(fs []finding) string {
	t := make([]string, len(fs))
	for i, f := range fs {
		t[i] = f.text
	}
	return strings.Join(t, "\n\t")
}

// short cuts a string literal for a message.
func short(s string) string {
	if len(s) > 90 {
		return s[:90] + "..."
	}
	return s
}
