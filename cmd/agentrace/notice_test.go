package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/urfave/cli/v3"
)

// TestOptionFlags: every option key a stage gives an error or event (in
// notice.Errorf, notice.About, notice.OptionError, notice.Event and Sink.Say
// calls) has its
// flag in optionFlags, every flag there is a flag of some command, and every
// key there is one a stage names.
func TestOptionFlags(t *testing.T) {
	flags := map[string]bool{}
	var walk func([]*cli.Command)
	walk = func(cmds []*cli.Command) {
		for _, c := range cmds {
			for _, f := range c.Flags {
				for _, n := range f.Names() {
					flags["--"+n] = true
				}
			}
			walk(c.Commands)
		}
	}
	walk(app().Commands)
	for k, f := range optionFlags {
		if !flags[f] {
			t.Errorf("optionFlags[%q] = %q, a flag of no command", k, f)
		}
	}
	root := testenv.RepoRoot(t)
	fset := token.NewFileSet()
	keys := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		if rel, _ := filepath.Rel(root, path); strings.HasPrefix(rel, "cmd"+string(filepath.Separator)) || strings.HasPrefix(rel, ".") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		key := func(e ast.Expr) {
			if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if k, err := strconv.Unquote(lit.Value); err == nil && k != "" {
					keys[k] = fset.Position(lit.Pos()).String()
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) >= 2 {
					switch x, _ := sel.X.(*ast.Ident); {
					case x != nil && x.Name == "notice" && sel.Sel.Name == "Errorf":
						key(n.Args[0])
					case sel.Sel.Name == "Say":
						key(n.Args[1])
					case x != nil && x.Name == "notice" && sel.Sel.Name == "About":
						for _, a := range n.Args[1:] {
							key(a)
						}
					}
				}
			case *ast.KeyValueExpr:
				if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Option" {
					key(n.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 10 {
		t.Fatalf("found %d option keys in the stages; the search is broken", len(keys))
	}
	for k, at := range keys {
		if _, ok := optionFlags[k]; !ok {
			t.Errorf("%s: option %q has no flag in optionFlags", at, k)
		}
	}
	// The options of the sentinel errors (optionsOf) are named here only.
	for _, k := range []string{"overwrite", "max-expansion", "max-problems"} {
		keys[k] = "optionsOf"
	}
	for k := range optionFlags {
		if _, ok := keys[k]; !ok {
			t.Errorf("optionFlags[%q]: no stage names that option", k)
		}
	}
}

func TestOptionsOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("plain"), "replay: plain"},
		{notice.Errorf("out", "no run directory"), "replay: no run directory (--out)"},
		{fmt.Errorf("replay: %w", notice.About(errors.New("refused"), "api-key-env", "header")), "replay: refused (--api-key-env, --header)"},
		{fmt.Errorf("output %q already holds a run (%w)", "x", outguard.ErrExists), `replay: output "x" already holds a run (` + outguard.ErrExists.Error() + `) (--overwrite)`},
		{fmt.Errorf("%w: more than 10 bytes", infile.ErrExpansion), "replay: " + infile.ErrExpansion.Error() + ": more than 10 bytes (--max-expansion)"},
		{&ingest.ValidationError{Omitted: 3}, "replay: " + (&ingest.ValidationError{Omitted: 3}).Error() + " (--max-problems)"},
		{&ingest.ValidationError{}, "replay: " + (&ingest.ValidationError{}).Error()},
	} {
		if got := (commandError{"replay", tc.err}).Error(); got != tc.want {
			t.Errorf("commandError(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
