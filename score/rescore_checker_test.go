package score_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/checker"
)

// TestRescoreCheckerFindings: with the submission checker, each point of the
// tree fixture (a folder) carries the findings that concern it, as JSON with
// the rule, severity, level and point; an archive's rows carry none.
func TestRescoreCheckerFindings(t *testing.T) {
	tree, ds := fixtureTree(t)
	d, err := checker.LoadData(checker.DataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := score.Rescore(context.Background(), score.RescoreOptions{Archives: []string{tree}, Dataset: ds, Jobs: 2, Checker: checker.NewCache(d)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		var fs []checker.Finding
		if err := json.Unmarshal([]byte(r.CheckerFindings), &fs); err != nil {
			t.Fatalf("%s: checker_findings %q: %v", r.Path, r.CheckerFindings, err)
		}
		own := false
		for _, f := range fs {
			if f.Rule == "point-disclosure-complete" && f.Severity == checker.Error && f.Level == checker.LevelPoint &&
				filepath.Base(r.Path) == f.Point {
				own = true
			}
			if f.Point != "" && f.Point != filepath.Base(r.Path) {
				t.Errorf("%s carries %s of %s", r.Path, f.Rule, f.Point)
			}
		}
		if !own {
			t.Errorf("%s: no point-disclosure-complete finding of its own in %s", r.Path, r.CheckerFindings)
		}
	}
}
