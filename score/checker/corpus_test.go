package checker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/score/archive"
)

// The corpus: testdata/checker-corpus/cases.json (edits of the agentrace tree)
// and rules.json (edits of the tree in the checker's layout), with the real
// checker's findings on each in findings.json.

const corpusDir = "../../testdata/checker-corpus"
const treeDir = "../../testdata/submission-tree"
const corpusModel = "h200-sim/qwen3_6-35b-a3b"

// corpusOp is one edit of a case (testenv.CorpusOp), numbers read as the
// checker reads them.
type corpusOp struct{ testenv.CorpusOp }

func (op corpusOp) apply(t *testing.T, root, model string) {
	t.Helper()
	op.Apply(t, root, model, func(n json.Number) any { return normalize(n) })
}

type treeCase struct {
	Name string     `json:"name"`
	Ops  []corpusOp `json:"ops"`
}

type ruleCase struct {
	Name             string     `json:"name"`
	Clean            bool       `json:"clean"`
	Ops              []corpusOp `json:"ops"`
	SeedSets         *string    `json:"seed_sets"`
	ApprovedDrafters *string    `json:"approved_drafters"`
	OrgRoot          bool       `json:"org_root"`
}

// builtCase is a case's tree builder and the data options it is checked with.
type builtCase struct {
	build   func(dir string) string
	options func(dir string) DataOptions
}

type recorded struct {
	Passed   bool `json:"passed"`
	Findings []struct {
		Rule     string `json:"rule"`
		Severity string `json:"severity"`
		Scope    string `json:"scope"`
	} `json:"findings"`
}

func decodeFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// corpusCases returns every case by its findings.json key, as a function that
// builds its submission root under dir.
func corpusCases(t *testing.T) map[string]builtCase {
	var tc struct {
		Base  treeCase   `json:"base"`
		Cases []treeCase `json:"cases"`
	}
	decodeFile(t, filepath.Join(corpusDir, "cases.json"), &tc)
	var rc struct {
		Clean []corpusOp `json:"clean"`
		Cases []ruleCase `json:"cases"`
	}
	decodeFile(t, filepath.Join(corpusDir, "rules.json"), &rc)
	out := map[string]builtCase{}
	noOptions := func(string) DataOptions { return DataOptions{} }
	build := func(treeOps, subOps []corpusOp) func(string) string {
		return func(dir string) string {
			tree := filepath.Join(dir, "tree")
			copyTree(t, treeDir, tree)
			for _, op := range treeOps {
				op.apply(t, tree, corpusModel)
			}
			sub := filepath.Join(dir, "sub")
			testenv.CheckerLayout(t, tree, sub)
			for _, op := range subOps {
				op.apply(t, sub, "results/"+corpusModel)
			}
			return sub
		}
	}
	out["tree:base"] = builtCase{build(nil, nil), noOptions}
	for _, c := range tc.Cases {
		out["tree:"+c.Name] = builtCase{build(c.Ops, nil), noOptions}
	}
	for _, c := range rc.Cases {
		var ops []corpusOp
		if c.Clean {
			ops = append(ops, rc.Clean...)
		}
		b := build(nil, append(ops, c.Ops...))
		if c.OrgRoot {
			inner := b
			b = func(dir string) string { inner(dir); return dir }
		}
		c := c
		out["rules:"+c.Name] = builtCase{b, func(dir string) DataOptions {
			var o DataOptions
			for _, f := range []struct {
				text *string
				name string
				to   *string
			}{{c.SeedSets, "seed_sets.yaml", &o.SeedSets}, {c.ApprovedDrafters, "approved_drafters.yaml", &o.ApprovedDrafters}} {
				if f.text == nil {
					continue
				}
				p := filepath.Join(dir, f.name)
				if err := os.WriteFile(p, []byte(*f.text), 0o644); err != nil {
					t.Fatal(err)
				}
				*f.to = p
			}
			return o
		}}
	}
	return out
}

// copyTree copies the corpus tree, less the detail logs the checker never reads
// (the recorder copied them; the checker's findings do not depend on them).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if e.Name() == "mlperf_endpoints_log_detail.json" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func findingKeys(r Report) []string {
	set := map[string]bool{}
	for _, f := range r.Findings {
		set[fmt.Sprintf("%s %s %s", f.Rule, f.Severity, f.Scope)] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestCorpusAgreesWithChecker: on every case, the same findings (rule,
// severity, scope) and the same verdict as the real checker recorded; and the
// case packed as a .tar.gz and as a .zip, read in place, gets the very findings
// of the folder (sameWhenArchived).
func TestCorpusAgreesWithChecker(t *testing.T) {
	var rec struct {
		Cases map[string]recorded `json:"cases"`
	}
	decodeFile(t, filepath.Join(corpusDir, "findings.json"), &rec)
	cases := corpusCases(t)
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	agree, total := 0, 0
	for _, name := range names {
		want, ok := rec.Cases[name]
		if !ok {
			t.Errorf("%s: no recorded findings (rerun the recorder)", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			root := cases[name].build(filepath.Join(dir, "case"))
			d, err := LoadData(cases[name].options(dir))
			if err != nil {
				t.Fatal(err)
			}
			got := Check(root, d)
			var wantKeys []string
			for _, f := range want.Findings {
				wantKeys = append(wantKeys, fmt.Sprintf("%s %s %s", f.Rule, f.Severity, f.Scope))
			}
			gotKeys := findingKeys(got)
			missing, extra := diff(wantKeys, gotKeys), diff(gotKeys, wantKeys)
			total += len(wantKeys) + len(extra)
			agree += len(wantKeys) - len(missing)
			if len(missing) > 0 || len(extra) > 0 {
				t.Errorf("findings differ from the checker's\nmissing: %s\nextra: %s", strings.Join(missing, "\n  "), strings.Join(extra, "\n  "))
			}
			if got.Passed != want.Passed {
				t.Errorf("verdict passed=%v, the checker's %v", got.Passed, want.Passed)
			}
			if fileExists(root) {
				// (A tree that does not exist has no archive.)
				sameWhenArchived(t, root, d, got)
			}
		})
	}
	t.Logf("%d cases; findings agreeing %d of %d", len(names), agree, total)
}

// sameWhenArchived packs the tree at root as a .tar.gz and a .zip and judges
// each through score/archive's Source.FS: every finding (rule, severity, level,
// scope, point, path, reason), in order, is the folder's.
func sameWhenArchived(t *testing.T, root string, d *Data, folder Report) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"tree.tar.gz", "tree.zip"} {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, ".zip") {
			testenv.ZipDir(t, root, "tree", p)
		} else {
			testenv.TarDir(t, root, "tree", p, nil)
		}
		src, err := archive.Open(p, archive.Limits{MaxExpansion: -1})
		if err != nil {
			t.Fatal(err)
		}
		sub, err := fs.Sub(src.FS(), "tree")
		if err != nil {
			t.Fatal(err)
		}
		got := CheckFS(sub, p+"/tree", d)
		src.Close()
		if !reflect.DeepEqual(got.Findings, folder.Findings) || got.Passed != folder.Passed {
			t.Errorf("%s: findings differ from the folder's\ngot:  %+v\nwant: %+v", name, got.Findings, folder.Findings)
		}
	}
}

func diff(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
