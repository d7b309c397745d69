package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/score/checker"
)

// TestAuditCheckerRows: with the submission checker, the committed submission
// tree's points get checker.<rule> rows (rule, severity, level, point) as the
// checker judges the bare system folder; they are findings, and the audit still
// fails on no row. The reference run folder is not a submission and gets none.
func TestAuditCheckerRows(t *testing.T) {
	repo := testenv.RepoRoot(t)
	d, err := checker.LoadData(checker.DataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ds := filepath.Join(repo, "testdata", "reference-run", "dataset.jsonl")
	res := runAudit(t, Options{Inputs: []string{filepath.Join(repo, "testdata", "submission-tree")}, Dataset: ds, Checker: checker.NewCache(d)})
	rules := map[string]string{}
	for _, r := range res.Rows {
		if r.Rule == "" || r.Field != "checker."+r.Rule {
			continue
		}
		if r.Status != Finding || r.Severity == "" || r.Level == "" {
			t.Errorf("%s: status %s severity %q level %q", r.Field, r.Status, r.Severity, r.Level)
		}
		rules[r.Rule] = r.Severity
		if r.Level == string(checker.LevelPoint) && (r.Point == "" || r.Concurrency == 0) {
			t.Errorf("%s: a point finding without its point (%q, c=%d)", r.Field, r.Point, r.Concurrency)
		}
	}
	for rule, sev := range map[string]string{"power-descriptor": "error", "point-disclosure-complete": "error", "seed-config-legacy": "warning",
		// the tree ships mlperf_endpoints_log_summary.json; the checker reads result_summary.json
		"result-summary-present": "error"} {
		if rules[rule] != sev {
			t.Errorf("checker.%s: severity %q, want %q (all: %v)", rule, rules[rule], sev, rules)
		}
	}
	if r := rowsOfField(res, "checker.not_evaluated"); len(r) != 1 || !strings.Contains(r[0].Note, "required-dir") {
		t.Errorf("checker.not_evaluated rows %+v, want one naming the structure rules", r)
	}
	if bad := res.Failed(); len(bad) > 0 {
		t.Errorf("%d rows fail the audit, first %s: %s", len(bad), bad[0].Field, bad[0].Note)
	}

	ref := runAudit(t, Options{Inputs: []string{filepath.Join(repo, "testdata", "reference-runfolder")}, Dataset: ds, Checker: checker.NewCache(d)})
	for _, r := range ref.Rows {
		if r.Rule != "" {
			t.Errorf("a reference run folder got a checker row: %s", r.Field)
		}
	}
}

func rowsOfField(res *Result, field string) []Row {
	var out []Row
	for _, r := range res.Rows {
		if r.Field == field {
			out = append(out, r)
		}
	}
	return out
}
