package score_test

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/checker"
)

// TestRescoreCheckerFindings: with the submission checker, each point of the
// tree fixture carries the findings that concern it, as JSON with the rule,
// severity, level and point; the same tree packed as a .tar.gz and as a .zip,
// read in place, carries the same findings on every point as the folder.
func TestRescoreCheckerFindings(t *testing.T) {
	tree, ds := fixtureTree(t)
	d, err := checker.LoadData(checker.DataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	tgz := filepath.Join(work, "sub.tgz")
	zp := filepath.Join(work, "sub.zip")
	packTree(t, tree, "acme", tgz, nil)
	packTree(t, tree, "acme", zp, nil)
	var folder map[string]string
	for _, src := range []string{tree, tgz, zp} {
		// The fixture's events repeat (an archive of it expands past 10x).
		rows, err := score.Rescore(context.Background(), score.RescoreOptions{Archives: []string{src}, Dataset: ds, Jobs: 2, Checker: checker.NewCache(d),
			MaxExpansion: -1})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 8 {
			t.Fatalf("%s: %d rows", src, len(rows))
		}
		byPoint := map[string]string{}
		for _, r := range rows {
			var fs []checker.Finding
			if err := json.Unmarshal([]byte(r.CheckerFindings), &fs); err != nil {
				t.Fatalf("%s: checker_findings %q: %v", r.Path, r.CheckerFindings, err)
			}
			own := false
			for _, f := range fs {
				if f.Rule == "point-disclosure-complete" && f.Severity == checker.Error && f.Level == checker.LevelPoint &&
					path.Base(r.Path) == f.Point {
					own = true
				}
				if f.Point != "" && f.Point != path.Base(r.Path) {
					t.Errorf("%s carries %s of %s", r.Path, f.Rule, f.Point)
				}
			}
			if !own {
				t.Errorf("%s: no point-disclosure-complete finding of its own in %s", r.Path, r.CheckerFindings)
			}
			byPoint[path.Base(r.Path)] = r.CheckerFindings
		}
		if folder == nil {
			folder = byPoint
			continue
		}
		for p, want := range folder {
			if byPoint[p] != want {
				t.Errorf("%s %s: checker_findings\n%s\nwant (the folder's)\n%s", filepath.Base(src), p, byPoint[p], want)
			}
		}
	}
}

// TestRescorePointRulesSkipped: a point whose point.yaml does not validate has no
// OSL gate (not evaluated, a warning: point-rules-skipped), as the checker runs
// none of the rules that read it for the point; the other points are judged.
func TestRescorePointRulesSkipped(t *testing.T) {
	tree, ds := fixtureTree(t)
	work := filepath.Join(t.TempDir(), "tree")
	if err := os.CopyFS(work, os.DirFS(tree)); err != nil {
		t.Fatal(err)
	}
	y := filepath.Join(work, "h200-sim", "qwen3_6-35b-a3b", "r64", "point.yaml")
	b, err := os.ReadFile(y)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(y, []byte(strings.Replace(string(b), "region: med_concurrency", "region: 3", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := score.Rescore(context.Background(), score.RescoreOptions{Archives: []string{work}, Dataset: ds, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		skipped := strings.Contains(r.NotEvaluated, "point-rules-skipped")
		if (filepath.Base(r.Path) == "r64") != skipped || (skipped && (r.OSLOutcome != "not_evaluated" || r.OSLMean != nil)) {
			t.Errorf("%s: osl %s (%v), not evaluated %q", r.Path, r.OSLOutcome, r.OSLMean, r.NotEvaluated)
		}
	}
}
