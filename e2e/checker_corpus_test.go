package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/audit"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/report"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/curve"
)

// corpus is testdata/checker-corpus/cases.json: one-edit variants of the
// submission tree with the submission checker's outcome for each.
type corpus struct {
	Base  corpusCase   `json:"base"`
	Cases []corpusCase `json:"cases"`
}

type corpusCase struct {
	Name         string             `json:"name"`
	Ops          []testenv.CorpusOp `json:"ops"`
	Point        string             `json:"point"`
	Ruleset      string             `json:"ruleset"`
	ModelWarning bool               `json:"model_warning"`
	// Inline and OSL are "pass", "fail" or "not_evaluated:<severity>"; Verdict is
	// the point's verdict; SWEBenchN and SWEBenchCheck the curve's SWE-bench mean
	// (results counted) and its check (pass, fail, warning).
	Inline        string `json:"inline"`
	OSL           string `json:"osl"`
	Verdict       string `json:"verdict"`
	SWEBenchN     int    `json:"swebench_n"`
	SWEBenchCheck string `json:"swebench_check"`
	// CoverageCheck is the curve's accuracy-coverage check (base's when empty).
	CoverageCheck string `json:"coverage_check"`
	// Checks are further report checks (a part of the check's name) and their
	// status.
	Checks map[string]string `json:"checks"`
	// FileChecks are the checker's findings on the tree's point.yaml and
	// system_desc.json files, "<rule>:<severity>" (none when empty).
	FileChecks []string `json:"file_checks"`
	// CheckerFigures are the point's system_tps or e2e_avg_interactivity as the
	// checker derives them from its summary's totals, which report shows as
	// published (no tokenizer); null where the checker derives none, and report
	// shows the summary's own field as published.
	CheckerFigures map[string]*float64 `json:"checker_figures"`
	// AuditRows are the statuses of the point's audit rows, by field.
	AuditRows map[string]string `json:"audit_rows"`
	// CMax is the curve's C_max as the checker takes it (base's when absent); 0:
	// none, so no region rule runs.
	CMax *int `json:"cmax"`
	// UnparsedAt are the concurrencies the checker counts points whose point.yaml
	// does not validate at, by point folder.
	UnparsedAt map[string]int `json:"unparsed_at"`
}

const corpusModel = "h200-sim/qwen3_6-35b-a3b"

// copyDir copies a folder.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// gateText is a gate's outcome in the corpus's notation.
func gateText(g schemas.Gate) string {
	if g.Outcome == schemas.OutcomeNotEvaluated {
		return g.Outcome + ":" + g.Severity
	}
	return g.Outcome
}

func gateOf(gates []schemas.Gate, name string) schemas.Gate {
	for _, g := range gates {
		if g.Name == name {
			return g
		}
	}
	return schemas.Gate{Outcome: "absent"}
}

var meanOfN = regexp.MustCompile(`mean of (\d+) region results`)

// fileCheckWarning finds the checker's file findings in rescore's warnings.
var fileCheckWarning = regexp.MustCompile(regexp.QuoteMeta(score.FileCheckPrefix) + `([a-z-]+) \((error|warning)\): `)

// checkFileChecks compares the file findings one command reports (each
// "<rule>:<severity>", duplicates ignored) with the checker's.
func checkFileChecks(t *testing.T, cmd string, got, want []string) {
	t.Helper()
	g := map[string]bool{}
	for _, x := range got {
		g[x] = true
	}
	w := map[string]bool{}
	for _, x := range want {
		w[x] = true
	}
	if fmt.Sprint(g) != fmt.Sprint(w) {
		t.Errorf("%s: file findings %v, the checker's %v", cmd, sortedKeys(g), sortedKeys(w))
	}
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestCheckerCorpus builds each one-edit variant of the submission tree and
// asserts that report, rescore and audit all reach the submission checker's
// outcome (recorded in the corpus from the checker's code): the edited point's
// inline and OSL gates (pass, fail, or not evaluated with the checker's
// severity), its verdict and ruleset, and the curve's SWE-bench mean.
func TestCheckerCorpus(t *testing.T) {
	repo := testenv.RepoRoot(t)
	data, err := os.ReadFile(filepath.Join(repo, "testdata", "checker-corpus", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	cases := append([]corpusCase{{Name: "base"}}, c.Cases...)
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			want := tc
			if tc.Name == "base" {
				want = c.Base
			}
			if want.Point == "" {
				want.Point = c.Base.Point
			}
			if want.Ruleset == "" {
				want.Ruleset = c.Base.Ruleset
			}
			if want.CoverageCheck == "" {
				want.CoverageCheck = c.Base.CoverageCheck
			}
			if want.CMax == nil {
				want.CMax = c.Base.CMax
			}
			// The variant sits where the dataset its config names resolves, so
			// that all three re-derive beside the published figures.
			work := t.TempDir()
			tree := filepath.Join(work, "testdata", "variant")
			copyDir(t, filepath.Join(repo, "testdata", "submission-tree"), tree)
			copyDir(t, filepath.Join(repo, "testdata", "reference-run"), filepath.Join(work, "testdata", "reference-run"))
			for _, op := range tc.Ops {
				op.Apply(t, tree, corpusModel, nil)
			}
			ds := filepath.Join(work, "testdata", "reference-run", "dataset.jsonl")
			ctx := context.Background()
			suffix := "/" + want.Point

			// report
			rep, err := report.Build(ctx, report.Options{Out: filepath.Join(work, "report"), Runs: []string{tree}})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Systems) != 1 {
				t.Fatalf("report: %d systems", len(rep.Systems))
			}
			sys := rep.Systems[0]
			var pt *curve.Point
			for _, p := range sys.Points {
				if strings.HasSuffix(p.RunDir, suffix) {
					pt = p
				}
			}
			if pt == nil {
				t.Fatalf("report: no point %s", want.Point)
			}
			got := map[string]string{
				"ruleset": pt.Ruleset,
				"inline":  gateText(gateOf(pt.Gates, score.GateAccuracy)),
				"osl":     gateText(gateOf(pt.Gates, score.GateOSL)),
				"verdict": pt.GatesOutcome,
			}
			n := 0
			if sys.SWEBenchMean != nil {
				n = sys.SWEBenchMean.N
			}
			got["swebench_n"] = fmt.Sprint(n)
			for _, ch := range sys.Checks {
				if strings.Contains(ch.Name, "agentic-accuracy-swebench") {
					got["swebench_check"] = ch.Status
				}
				if strings.Contains(ch.Name, "(accuracy-coverage)") {
					got["coverage_check"] = ch.Status
				}
				if strings.Contains(ch.Name, "model folder") {
					got["model_warning"] = ch.Status
				}
			}
			for part, status := range want.Checks {
				found := false
				for _, ch := range sys.Checks {
					if strings.Contains(ch.Name, part) {
						found = true
						if ch.Status != status {
							t.Errorf("report: check %q is %s (%s), the checker's %s", ch.Name, ch.Status, ch.Reason, status)
						}
					}
				}
				if !found {
					t.Errorf("report: no check %q", part)
				}
			}
			var repFC []string
			for _, p := range append(append([]*curve.Point(nil), sys.Points...), sys.Unparsed...) {
				for _, fc := range p.FileChecks {
					repFC = append(repFC, fc.Rule+":"+fc.Severity)
				}
			}
			checkFileChecks(t, "report", repFC, want.FileChecks)
			if want.CMax != nil && (sys.CMax != *want.CMax || (*want.CMax == 0) != (sys.NoCMax != "")) {
				t.Errorf("report: C_max %d (%s; %s), the checker's %d", sys.CMax, sys.CMaxSource, sys.NoCMax, *want.CMax)
			}
			for dir, at := range want.UnparsedAt {
				found := false
				for _, p := range sys.Unparsed {
					if strings.HasSuffix(p.RunDir, "/"+dir) {
						found = true
						if p.Concurrency != at {
							t.Errorf("report: %s counted at %d, the checker's %d", dir, p.Concurrency, at)
						}
					}
				}
				if !found {
					t.Errorf("report: %s is not a point whose point.yaml does not validate", dir)
				}
			}
			if (got["model_warning"] == curve.CheckWarn) != want.ModelWarning {
				t.Errorf("report: model folder check %q, want a warning: %v", got["model_warning"], want.ModelWarning)
			}
			wantMap := map[string]string{"ruleset": want.Ruleset, "inline": want.Inline, "osl": want.OSL, "verdict": want.Verdict,
				"swebench_n": fmt.Sprint(want.SWEBenchN), "swebench_check": want.SWEBenchCheck,
				"coverage_check": want.CoverageCheck}
			for k, w := range wantMap {
				if got[k] != w {
					t.Errorf("report: %s = %q, the checker's %q", k, got[k], w)
				}
			}
			for field, fig := range want.CheckerFigures {
				v := map[string]metrics.Num{"system_tps": pt.SystemTPS, "e2e_avg_interactivity": pt.E2EAvgInteractivity}[field]
				published := strings.Contains(","+strings.Join(pt.AsPublished, ",")+",", ","+field+",")
				switch {
				case !published || !v.Valid():
					t.Errorf("report: %s %v not shown as published (%v)", field, v, pt.AsPublished)
				case fig != nil && math.Abs(float64(v)-*fig) > 1e-9*math.Abs(*fig):
					t.Errorf("report: %s as published %v, the checker's %v", field, v, *fig)
				}
			}
			if pts, err := os.ReadFile(filepath.Join(work, "report", report.PointsFile)); err != nil {
				t.Error(err)
			} else if strings.Contains(want.Inline+want.OSL, "not_evaluated") && !strings.Contains(string(pts), `"value": null`) {
				t.Errorf("report: points.json writes no null value for a gate not evaluated")
			}

			// rescore
			rows, err := score.Rescore(ctx, score.RescoreOptions{Archives: []string{tree}, Dataset: ds, Jobs: 2})
			if err != nil {
				t.Fatal(err)
			}
			var rsFC []string
			for _, r := range rows {
				for _, m := range fileCheckWarning.FindAllStringSubmatch(r.Warnings, -1) {
					rsFC = append(rsFC, m[1]+":"+m[2])
				}
			}
			checkFileChecks(t, "rescore", rsFC, want.FileChecks)
			var row *schemas.RescoreRow
			for i := range rows {
				if strings.HasSuffix(rows[i].Path, suffix) {
					row = &rows[i]
				}
			}
			if row == nil {
				t.Fatalf("rescore: no row for %s", want.Point)
			}
			if row.Error != "" {
				t.Fatalf("rescore: %s", row.Error)
			}
			if want.CMax != nil && *want.CMax == 0 {
				for _, r := range rows {
					if r.Region != "" {
						t.Errorf("rescore: %s placed in %s without a C_max", r.Path, r.Region)
					}
				}
			}
			for dir, at := range want.UnparsedAt {
				for _, r := range rows {
					if strings.HasSuffix(r.Path, "/"+dir) && int(r.Concurrency) != at {
						t.Errorf("rescore: %s at concurrency %d, the checker's %d", dir, r.Concurrency, at)
					}
				}
			}
			rsGate := func(outcome, name string) string {
				if outcome != schemas.OutcomeNotEvaluated {
					return outcome
				}
				m := regexp.MustCompile(regexp.QuoteMeta(name) + ` \((\w+)\)`).FindStringSubmatch(row.NotEvaluated)
				if m == nil {
					return outcome + ":?"
				}
				return outcome + ":" + m[1]
			}
			for k, pair := range map[string][2]string{
				"ruleset": {row.Ruleset, want.Ruleset},
				"inline":  {rsGate(row.AccuracyOutcome, score.GateAccuracy), want.Inline},
				"osl":     {rsGate(row.OSLOutcome, score.GateOSL), want.OSL},
				"verdict": {row.Outcome, want.Verdict},
			} {
				if pair[0] != pair[1] {
					t.Errorf("rescore: %s = %q, the checker's %q", k, pair[0], pair[1])
				}
			}
			if (row.AccuracyOutcome == schemas.OutcomeNotEvaluated) != (row.Score == nil) || (row.OSLOutcome == schemas.OutcomeNotEvaluated) != (row.OSLMean == nil) {
				t.Errorf("rescore: a gate not evaluated must have a null value: score %v osl %v", row.Score, row.OSLMean)
			}
			hasWarning := strings.Contains(row.Warnings, "the ruleset is chosen by the folder's name")
			if hasWarning != want.ModelWarning {
				t.Errorf("rescore: model folder warning %v, want %v (%s)", hasWarning, want.ModelWarning, row.Warnings)
			}

			// audit
			res, err := audit.Run(ctx, audit.Options{Inputs: []string{tree}, Dataset: ds, Jobs: 2})
			if err != nil {
				t.Fatal(err)
			}
			ag := map[string]string{}
			var auFC []string
			for _, r := range res.Rows {
				if rule, ok := strings.CutPrefix(r.Field, "point.check."); ok {
					auFC = append(auFC, rule+":"+r.RecomputedText)
					if r.Status != audit.Finding || r.Severity != r.RecomputedText {
						t.Errorf("audit: %s row of status %s", r.Field, r.Status)
					}
				}
				switch {
				case strings.HasSuffix(r.Run, suffix) && r.Field == "gate."+score.GateAccuracy:
					ag["inline"] = strings.NewReplacer(" (", ":", ")", "").Replace(r.RecomputedText)
				case strings.HasSuffix(r.Run, suffix) && r.Field == "gate."+score.GateOSL:
					ag["osl"] = strings.NewReplacer(" (", ":", ")", "").Replace(r.RecomputedText)
				case strings.HasSuffix(r.Run, suffix) && r.Field == "point.verdict":
					ag["verdict"] = r.RecomputedText
				case r.Field == "curve.swe_bench_mean":
					if m := meanOfN.FindStringSubmatch(r.Note); m != nil {
						ag["swebench_n"] = m[1]
					}
				case r.Field == "curve.verdict":
					if ag["coverage_check"] == "" {
						ag["coverage_check"] = "pass"
					}
					if strings.Contains(r.Note, "(accuracy-coverage)") {
						ag["coverage_check"] = "fail"
					}
				case r.Field == "curve.regions":
					// No C_max: the region rules, accuracy coverage among them,
					// are not evaluated (the checker's region-basis warning).
					if strings.HasPrefix(r.RecomputedText, "none: not evaluated (warning)") {
						ag["coverage_check"] = curve.CheckWarn
						if want.CMax == nil || *want.CMax != 0 {
							t.Errorf("audit: no C_max (%s), the checker's %v", r.RecomputedText, want.CMax)
						}
					} else if want.CMax != nil && !strings.Contains(r.Note, fmt.Sprintf("C_max %d (", *want.CMax)) {
						t.Errorf("audit: %s, the checker's C_max %d", r.Note, *want.CMax)
					}
				}
				for dir, at := range want.UnparsedAt {
					if strings.HasSuffix(r.Run, "/"+dir) && r.Concurrency != 0 && int(r.Concurrency) != at {
						t.Errorf("audit: %s row %s at concurrency %d, the checker's %d", dir, r.Field, r.Concurrency, at)
					}
				}
			}
			for field, status := range want.AuditRows {
				found := false
				for _, r := range res.Rows {
					if strings.HasSuffix(r.Run, suffix) && r.Field == field {
						found = true
						if r.Status != status {
							t.Errorf("audit: %s is %s (%s), want %s", field, r.Status, r.Note, status)
						}
					}
				}
				if !found {
					t.Errorf("audit: no %s row", field)
				}
			}
			if _, ok := ag["swebench_n"]; !ok {
				ag["swebench_n"] = "0" // no mean of N: not evaluated or no results
			}
			for _, k := range []string{"inline", "osl", "verdict", "swebench_n", "coverage_check"} {
				if ag[k] != wantMap[k] {
					t.Errorf("audit: %s = %q, the checker's %q", k, ag[k], wantMap[k])
				}
			}
		})
	}
}
