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
	"github.com/agentrace/agentrace/score/checker"
)

// TestCheckerFindingsAgree: report (points.json), audit (checker.<rule> rows)
// and rescore (checker_findings) of one submission tree in the checker's layout
// carry the same findings, each the one score/checker makes on the tree.
func TestCheckerFindingsAgree(t *testing.T) {
	repo := testenv.RepoRoot(t)
	root := filepath.Join(t.TempDir(), "sub")
	if err := os.CopyFS(filepath.Join(root, "results"), os.DirFS(filepath.Join(repo, "testdata", "submission-tree"))); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "docs"), 0o755)
	os.MkdirAll(filepath.Join(root, "src", "sim"), 0o755)
	os.WriteFile(filepath.Join(root, "src", "sim", "README.md"), []byte("sim\n"), 0o644)
	points, _ := filepath.Glob(filepath.Join(root, "results", "*", "*", "r*"))
	for _, d := range points {
		os.Rename(filepath.Join(d, "mlperf_endpoints_log_summary.json"), filepath.Join(d, "result_summary.json"))
		os.Rename(filepath.Join(d, "accuracy", "accuracy_results.json"), filepath.Join(d, "accuracy_results.json"))
	}
	ds := filepath.Join(repo, "testdata", "reference-run", "dataset.jsonl")
	d, err := checker.LoadData(checker.DataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	whole := checker.Check(root, d)
	key := func(rule, sev, path, reason string) string {
		return strings.Join([]string{rule, sev, path, reason}, " | ")
	}
	want := map[string]bool{}
	for _, f := range whole.Findings {
		if strings.HasPrefix(f.Scope, "results/") {
			want[key(f.Rule, string(f.Severity), f.Path, f.Reason)] = true
		}
	}
	if len(want) == 0 {
		t.Fatal("the checker finds nothing on the tree")
	}
	curve := filepath.Join(root, "results", "h200-sim", "qwen3_6-35b-a3b")

	fromReport := map[string]bool{}
	out := filepath.Join(t.TempDir(), "rep")
	if _, err := report.Build(context.Background(), report.Options{Out: out, Runs: []string{curve}, Checker: checker.NewCache(d)}); err != nil {
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
			fromReport[key(f.Rule, string(f.Severity), f.Path, f.Reason)] = true
		}
	}

	fromAudit := map[string]bool{}
	res, err := audit.Run(context.Background(), audit.Options{Inputs: []string{curve}, Dataset: ds, Jobs: 2, Checker: checker.NewCache(d)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.Status == audit.Finding && r.Field == "checker."+r.Rule {
			fromAudit[key(r.Rule, r.Severity, r.File, r.Note)] = true
		}
	}

	fromRescore := map[string]bool{}
	rows, err := score.Rescore(context.Background(), score.RescoreOptions{Archives: []string{curve}, Dataset: ds, Jobs: 2, Checker: checker.NewCache(d)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		var fs []checker.Finding
		if err := json.Unmarshal([]byte(r.CheckerFindings), &fs); err != nil {
			t.Fatalf("%s: %v", r.Path, err)
		}
		for _, f := range fs {
			fromRescore[key(f.Rule, string(f.Severity), f.Path, f.Reason)] = true
		}
	}
	for name, got := range map[string]map[string]bool{"report": fromReport, "audit": fromAudit, "rescore": fromRescore} {
		if missing, extra := setDiff(want, got), setDiff(got, want); len(missing)+len(extra) > 0 {
			t.Errorf("%s: missing %v\nextra %v", name, missing, extra)
		}
	}
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
