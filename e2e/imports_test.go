package e2e

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

const module = "github.com/agentrace/agentrace/"

// stageImports is the house's import order: for each part of the tree (a folder
// and everything under it, the longest matching folder deciding), the parts its
// non-test code may import besides itself. Data flows ingest -> datasets -> replay
// -> score -> report (audit after score); the formats between the stages (datasets,
// the turn log in runlog) and the tokenizer library (tokens) sit below every stage
// that reads or writes them, schemas below everything. A part not listed here fails
// the test: a new package takes its place in the order deliberately.
var stageImports = map[string][]string{
	"schemas":  {},
	"internal": {"schemas"},
	"datasets": {"schemas", "internal"},
	"tokens":   {"schemas", "internal", "datasets"},
	"runlog":   {"schemas", "internal"},
	"ingest":   {"schemas", "internal", "datasets", "tokens"},
	// The simulated endpoint is a server: it never imports the client.
	"simserver": {"schemas", "internal", "datasets", "tokens"},
	"replay":    {"schemas", "internal", "datasets", "runlog"},
	"score":     {"schemas", "internal", "datasets", "tokens", "runlog", "ingest", "score/archive", "score/runread", "score/rulesets"},
	// The run readers import no other package of score, so that score, report and
	// audit all read runs through them; the rulesets import nothing of score.
	"score/archive":  {"schemas", "internal", "datasets"},
	"score/runread":  {"schemas", "internal", "datasets", "tokens", "runlog", "score/archive"},
	"score/rulesets": {"schemas", "internal", "datasets", "tokens"},
	"report":         {"schemas", "internal", "datasets", "tokens", "runlog", "score", "score/archive", "score/runread", "score/rulesets"},
	"audit":          {"schemas", "internal", "datasets", "tokens", "runlog", "score", "score/archive", "score/runread", "score/rulesets", "report"},
	// submission lays report's files out as a submission tree.
	"submission": {"schemas", "internal", "datasets", "tokens", "runlog", "score", "score/archive", "score/runread", "score/rulesets", "report"},
	// simulate predicts a sweep in virtual time: the simulated endpoint's model,
	// then the report's metrics of the points it predicts.
	"simulate": {"schemas", "internal", "datasets", "tokens", "runlog", "simserver", "report"},
	// The command line, the demo and the cross-stage checks drive every stage.
	"cmd":     nil,
	"tour":    nil,
	"bench":   nil,
	"chaos":   nil,
	"e2e":     nil,
	"interop": nil,
	"scripts": nil,
}

// neverImports holds in test code too: score and report judge runs from their
// files and never import the client that wrote them, and the simulated endpoint
// never imports the client that talks to it.
var neverImports = map[string][]string{
	"score":     {"replay"},
	"report":    {"replay"},
	"simserver": {"replay"},
}

// part returns the key of parts (a folder of the tree) that holds pkg, a path
// relative to the module: the longest one that is pkg or a folder above it.
func part[V any](parts map[string]V, pkg string) (string, bool) {
	best := ""
	for p := range parts {
		if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > len(best) {
			best = p
		}
	}
	return best, best != ""
}

// TestStageImportOrder reads the imports of every Go file of the module and checks
// them against stageImports (non-test files) and neverImports (every file).
func TestStageImportOrder(t *testing.T) {
	root := testenv.RepoRoot(t)
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		test := strings.HasSuffix(name, "_test.go")
		from, ok := part(stageImports, pkg)
		if !ok {
			t.Errorf("%s: package %s has no place in stageImports; give it one", filepath.Join(rel, name), pkg)
			return nil
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil || !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			line := fset.Position(spec.Pos()).Line
			if never, ok := part(neverImports, pkg); ok {
				for _, n := range neverImports[never] {
					if to, _ := part(stageImports, imp); to != from && (imp == n || strings.HasPrefix(imp, n+"/")) {
						t.Errorf("%s line %d: %s imports %s; %s never imports %s, not even in its tests", filepath.Join(rel, name), line, pkg, imp, never, n)
					}
				}
			}
			if test {
				continue
			}
			to, ok := part(stageImports, imp)
			allowed := stageImports[from]
			if !ok || to == from || allowed == nil {
				continue
			}
			if !slices.Contains(allowed, to) {
				t.Errorf("%s line %d: %s imports %s, a later stage or a sibling: %s may import only %s", filepath.Join(rel, name), line, pkg, imp, from, strings.Join(allowed, ", "))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read the imports of %d Go files under %s; want the whole module", files, root)
	}
}

// TestStageImportOrderParts checks that every part stageImports names as
// importable is itself a part, so a renamed folder cannot leave a stale entry.
func TestStageImportOrderParts(t *testing.T) {
	var names []string
	for p, allowed := range stageImports {
		for _, a := range allowed {
			if _, ok := stageImports[a]; !ok {
				names = append(names, p+" -> "+a)
			}
		}
	}
	for p, never := range neverImports {
		for _, n := range append([]string{p}, never...) {
			if _, ok := stageImports[n]; !ok {
				names = append(names, p+" -> "+n)
			}
		}
	}
	sort.Strings(names)
	if len(names) > 0 {
		t.Errorf("stageImports or neverImports name parts that are not in stageImports: %s", strings.Join(names, "; "))
	}
}

// TestReadmeMapNamesPackages checks the README's "Where the code is" table: every
// package its right-hand column names is a folder of Go code, so that a moved
// package cannot leave the map pointing at its old home, and every folder of Go
// code is named, so that a new package cannot be left off it.
func TestReadmeMapNamesPackages(t *testing.T) {
	root := testenv.RepoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Where the code is\n")
	if !ok {
		t.Fatal(`README.md has no "Where the code is" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	named := 0
	listed := map[string]bool{}
	for _, row := range strings.Split(section, "\n") {
		cells := strings.Split(row, "|")
		if len(cells) < 4 || strings.Trim(cells[2], " -") == "" || strings.TrimSpace(cells[2]) == "package" {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			pkg := m[1]
			if strings.ContainsAny(pkg, ". ") {
				continue // a file name, not a package
			}
			named++
			listed[pkg] = true
			if gos, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(pkg), "*.go")); len(gos) == 0 {
				t.Errorf("README.md's map names %s, which is not a folder of Go code", pkg)
			}
		}
	}
	if named < 20 {
		t.Errorf("README.md's map names %d packages; want its whole table read", named)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if !d.IsDir() || path == root {
			return nil
		}
		if name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if gos, _ := filepath.Glob(filepath.Join(path, "*.go")); len(gos) > 0 && !listed[filepath.ToSlash(rel)] {
			t.Errorf("README.md's map does not name the package %s", filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")
