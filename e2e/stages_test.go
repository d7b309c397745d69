package e2e

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

const module = "github.com/agentrace/agentrace/"

// stageRank orders the stages by what may import what: a package imports only
// packages of its own stage or an earlier one. Data flows ingest -> datasets ->
// replay -> score -> report; datasets is the dataset I/O every stage after it
// shares (ingest writes datasets through it), audit comes after score and reads
// report's metrics, simulate predicts report's curves. Folders not named here
// (schemas, internal, cmd, the test and benchmark folders) are ranked by the
// rules of TestStagesImportNoLaterOne alone.
var stageRank = map[string]int{
	"datasets": 0, "ingest": 1, "replay": 2, "score": 3, "report": 4, "audit": 5, "simulate": 5,
}

// imports lists, for each package folder of the module (relative to its root),
// the module packages its non-test files import.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	root := testenv.RepoRoot(t)
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		pkg := filepath.ToSlash(rel)
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if dep, ok := strings.CutPrefix(path, module); ok {
				out[pkg] = append(out[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found %d packages under %s: not the module's tree", len(out), root)
	}
	return out
}

func stage(pkg string) string { s, _, _ := strings.Cut(pkg, "/"); return s }

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// TestStagesImportNoLaterOne checks the house's import rules on every non-test
// file: no stage imports a later one (stageRank); score and report never import
// replay, nor the simulated endpoint the client; schemas imports nothing of
// ours; the run readers (score/archive, score/runread) import no other
// package of score, so that score, report and audit all read runs through them;
// and the rulesets (score/rulesets) import nothing of score.
func TestStagesImportNoLaterOne(t *testing.T) {
	var bad []string
	for pkg, deps := range imports(t) {
		for _, dep := range deps {
			var why string
			from, okFrom := stageRank[stage(pkg)]
			to, okTo := stageRank[stage(dep)]
			switch {
			case okFrom && okTo && to > from:
				why = "a later stage"
			case (under(pkg, "score") || under(pkg, "report")) && under(dep, "replay"):
				why = "score and report never import replay"
			case under(pkg, "replay/sim") && under(dep, "replay") && !under(dep, "replay/sim"):
				why = "the simulated endpoint never imports the client"
			case pkg == "schemas":
				why = "schemas imports nothing of ours"
			case (under(pkg, "score/archive") || under(pkg, "score/runread")) && under(dep, "score") && !under(dep, "score/archive"):
				why = "the run readers come before the rules"
			case under(pkg, "score/rulesets") && under(dep, "score"):
				why = "the rulesets are data the rules read, and read nothing of score"
			}
			if why != "" {
				bad = append(bad, pkg+" imports "+dep+": "+why)
			}
		}
	}
	slices.Sort(bad)
	for _, b := range slices.Compact(bad) {
		t.Error(b)
	}
}
