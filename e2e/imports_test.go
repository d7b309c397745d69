package e2e

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
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
	// The metrics fold reads records, never runs: below score and report, which
	// feed it.
	"metrics": {"schemas", "internal", "datasets", "tokens", "runlog"},
	"score":   {"schemas", "internal", "datasets", "tokens", "runlog", "ingest", "score/archive", "score/runread", "score/rulesets"},
	// The run readers import no other package of score, so that score, report and
	// audit all read runs through them; the rulesets import nothing of score.
	"score/archive":  {"schemas", "internal", "datasets"},
	"score/runread":  {"schemas", "internal", "datasets", "tokens", "runlog", "score/archive"},
	"score/rulesets": {"schemas", "internal", "datasets", "tokens"},
	// The curve evaluates each run (the fold, its scores, its files, the
	// checker's findings) and judges the curve by agentrace's rules; score does
	// not import it.
	"score/curve": {"schemas", "internal", "datasets", "tokens", "runlog", "metrics", "score", "score/archive", "score/runread", "score/rulesets"},
	"audit":       {"schemas", "internal", "datasets", "tokens", "runlog", "metrics", "score", "score/archive", "score/runread", "score/rulesets", "score/curve"},
	// submission writes the reference's formats (result summaries, point.yaml,
	// accuracy results) and lays curves out as a submission tree.
	"submission": {"schemas", "internal", "datasets", "tokens", "runlog", "metrics", "score", "score/archive", "score/runread", "score/rulesets", "score/curve"},
	// report draws the curves: HTML, plots, tables; each point's draft point.yaml
	// is submission's.
	"report": {"schemas", "internal", "datasets", "tokens", "runlog", "metrics", "score", "score/archive", "score/runread", "score/rulesets", "score/curve", "submission"},
	// simulate predicts a sweep in virtual time: the simulated endpoint's model,
	// then the metrics of the points it predicts.
	"simulate": {"schemas", "internal", "datasets", "tokens", "runlog", "simserver", "metrics"},
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
// files and never import the client that wrote them, the simulated endpoint
// never imports the client that talks to it, and the metrics fold imports no
// package that scores or draws.
var neverImports = map[string][]string{
	"score":     {"replay"},
	"report":    {"replay"},
	"simserver": {"replay"},
	// The fold knows nothing of scoring or drawing, not even in its tests.
	"metrics": {"score", "report", "replay"},
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

// goImport is one import of a Go file of the module: the importing file (rel,
// relative to the module root), its package and whether it is a test file, and
// the imported package, relative to the module.
type goImport struct {
	file, pkg, imp string
	test           bool
	line           int
}

// moduleImports reads the imports of every Go file of the module (testdata,
// node_modules and hidden folders aside) and gives those of the module's own
// packages; files counts the Go files read.
func moduleImports(t *testing.T) (imports []goImport, files int) {
	t.Helper()
	root := testenv.RepoRoot(t)
	fset := token.NewFileSet()
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
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		pkg := filepath.ToSlash(rel)
		imports = append(imports, goImport{file: filepath.Join(rel, name), pkg: pkg, test: strings.HasSuffix(name, "_test.go")})
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil || !strings.HasPrefix(imp, module) {
				continue
			}
			imports = append(imports, goImport{file: filepath.Join(rel, name), pkg: pkg, test: strings.HasSuffix(name, "_test.go"),
				imp: strings.TrimPrefix(imp, module), line: fset.Position(spec.Pos()).Line})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read the imports of %d Go files under %s; want the whole module", files, root)
	}
	return imports, files
}

// TestStageImportOrder checks the imports of every Go file of the module against
// stageImports (non-test files) and neverImports (every file). A file with no
// import of the module's still needs its package placed (imp "").
func TestStageImportOrder(t *testing.T) {
	imports, _ := moduleImports(t)
	unplaced := map[string]bool{}
	for _, g := range imports {
		from, ok := part(stageImports, g.pkg)
		if !ok {
			if !unplaced[g.file] {
				t.Errorf("%s: package %s has no place in stageImports; give it one", g.file, g.pkg)
			}
			unplaced[g.file] = true
			continue
		}
		if g.imp == "" {
			continue
		}
		if never, ok := part(neverImports, g.pkg); ok {
			for _, n := range neverImports[never] {
				if to, _ := part(stageImports, g.imp); to != from && (g.imp == n || strings.HasPrefix(g.imp, n+"/")) {
					t.Errorf("%s line %d: %s imports %s; %s never imports %s, not even in its tests", g.file, g.line, g.pkg, g.imp, never, n)
				}
			}
		}
		if g.test {
			continue
		}
		to, ok := part(stageImports, g.imp)
		allowed := stageImports[from]
		if !ok || to == from || allowed == nil {
			continue
		}
		if !slices.Contains(allowed, to) {
			t.Errorf("%s line %d: %s imports %s, a later stage or a sibling: %s may import only %s", g.file, g.line, g.pkg, g.imp, from, strings.Join(allowed, ", "))
		}
	}
}

// reportImporters are the parts whose code may import report (the HTML, plots
// and tables of a curve): the command line and the demo; the cross-stage
// checks only in their tests. Every other stage reads the curve below it
// (metrics, score/curve) and writes the reference's formats through submission.
var reportImporters = map[string]bool{"cmd": true, "tour": true, "bench": true}

// reportTestImporters may import report in test files only.
var reportTestImporters = map[string]bool{"e2e": true, "interop": true, "chaos": true, "scripts": true}

// TestReportImporters checks that nothing but the command line and the demo
// imports report (the cross-stage checks in their tests). That the metrics fold
// imports no package that scores or draws is neverImports'.
func TestReportImporters(t *testing.T) {
	imports, _ := moduleImports(t)
	importers := 0
	for _, g := range imports {
		if g.imp == "" {
			continue
		}
		from, _ := part(stageImports, g.pkg)
		if (g.imp == "report" || strings.HasPrefix(g.imp, "report/")) && from != "report" {
			importers++
			if !reportImporters[from] && !(g.test && reportTestImporters[from]) {
				t.Errorf("%s line %d: %s imports %s; only %s import report (and %s in their tests)", g.file, g.line, g.pkg, g.imp,
					strings.Join(slices.Sorted(maps.Keys(reportImporters)), ", "), strings.Join(slices.Sorted(maps.Keys(reportTestImporters)), ", "))
			}
		}
	}
	if importers == 0 {
		t.Error("no file imports report; want the command line's at least")
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
