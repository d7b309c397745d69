package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/audit"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/report"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/checker"
)

// TestCheckerFindingsAgree: report (points.json), audit (checker.<rule> rows)
// and rescore (checker_findings) of one submission tree in the checker's layout
// carry the same findings, each the one score/checker makes on the tree; and the
// same tree packed as a .tar.gz and as a .zip, read in place, gets the same
// findings from each of them as the folder (rule, severity, level, point, path
// and reason).
func TestCheckerFindingsAgree(t *testing.T) {
	repo := testenv.RepoRoot(t)
	tree, root := filepath.Join(t.TempDir(), "tree"), filepath.Join(t.TempDir(), "sub")
	if err := os.CopyFS(tree, os.DirFS(filepath.Join(repo, "testdata", "submission-tree"))); err != nil {
		t.Fatal(err)
	}
	testenv.CheckerLayout(t, tree, root)
	ds := filepath.Join(repo, "testdata", "reference-run", "dataset.jsonl")
	d, err := checker.LoadData(checker.DataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	whole := checker.Check(root, d)
	want := map[string]bool{}
	for _, f := range whole.Findings {
		if strings.HasPrefix(f.Scope, "results/") {
			want[findingKey(f.Rule, string(f.Severity), string(f.Level), f.Point, f.Path, f.Reason)] = true
		}
	}
	if len(want) == 0 {
		t.Fatal("the checker finds nothing on the tree")
	}
	curve := filepath.Join("results", "h200-sim", "qwen3_6-35b-a3b")
	tgz := filepath.Join(t.TempDir(), "sub.tar.gz")
	zp := filepath.Join(t.TempDir(), "sub.zip")
	// The tree's events repeat (it expands past 10x): the limit is lifted.
	testenv.TarDir(t, root, "sub", tgz, nil)
	testenv.ZipDir(t, root, "sub", zp)
	for _, form := range []struct{ name, curve string }{
		{"folder", filepath.Join(root, curve)},
		{"tar.gz", filepath.Join(tgz, "sub", curve)},
		{"zip", filepath.Join(zp, "sub", curve)},
	} {
		t.Run(form.name, func(t *testing.T) {
			for name, got := range checkerFindingsOf(t, form.curve, ds, d) {
				if missing, extra := setDiff(want, got), setDiff(got, want); len(missing)+len(extra) > 0 {
					t.Errorf("%s: missing %v\nextra %v", name, missing, extra)
				}
			}
		})
	}
}

func findingKey(rule, sev, level, point, path, reason string) string {
	return strings.Join([]string{rule, sev, level, point, path, reason}, " | ")
}

// checkerFindingsOf runs report, audit and rescore on the curve folder (on disk
// or inside an archive) and returns the checker findings each carries.
func checkerFindingsOf(t *testing.T, curve, ds string, d *checker.Data) map[string]map[string]bool {
	t.Helper()
	fromReport := map[string]bool{}
	out := filepath.Join(t.TempDir(), "rep")
	if _, err := report.Build(context.Background(), report.Options{Out: out, Runs: []string{curve}, Checker: checker.NewCache(d), MaxExpansion: -1}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, report.PointsFile))
	if err != nil {
		t.Fatal(err)
	}
	var pts []struct {
		Findings []checker.Finding `json:"checker_findings"`
	}
	if err := json.Unmarshal(b, &pts); err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		for _, f := range p.Findings {
			fromReport[findingKey(f.Rule, string(f.Severity), string(f.Level), f.Point, f.Path, f.Reason)] = true
		}
	}

	fromAudit := map[string]bool{}
	res, err := audit.Run(context.Background(), audit.Options{Inputs: []string{curve}, Dataset: ds, Jobs: 2, Checker: checker.NewCache(d),
		Limits: archive.Limits{MaxExpansion: -1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.Status == audit.Finding && r.Field == "checker."+r.Rule {
			fromAudit[findingKey(r.Rule, r.Severity, r.Level, r.Point, r.File, r.Note)] = true
		}
	}

	fromRescore := map[string]bool{}
	rows, err := score.Rescore(context.Background(), score.RescoreOptions{Archives: []string{curve}, Dataset: ds, Jobs: 2, Checker: checker.NewCache(d),
		MaxExpansion: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		var fs []checker.Finding
		if err := json.Unmarshal([]byte(r.CheckerFindings), &fs); err != nil {
			t.Fatalf("%s: %v", r.Path, err)
		}
		for _, f := range fs {
			fromRescore[findingKey(f.Rule, string(f.Severity), string(f.Level), f.Point, f.Path, f.Reason)] = true
		}
	}
	return map[string]map[string]bool{"report": fromReport, "audit": fromAudit, "rescore": fromRescore}
}

func setDiff(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
