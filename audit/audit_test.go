package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
)

// refruns is testdata/refruns: eight run folders written by the reference client
// itself (see its README).
func refruns(t *testing.T) string {
	return filepath.Join(testenv.RepoRoot(t), "testdata", "refruns")
}

func runAudit(t *testing.T, o Options) *Result {
	t.Helper()
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func rowsOf(res *Result, run, field string) []Row {
	var out []Row
	for _, r := range res.Rows {
		if r.Field == field && (run == "" || strings.HasSuffix(r.Run, run)) {
			out = append(out, r)
		}
	}
	return out
}

// expectAgree checks that each field has a row for each of the points, and that
// every one of them agrees.
func expectAgree(t *testing.T, res *Result, points int, fields ...string) {
	t.Helper()
	for _, f := range fields {
		rows := rowsOf(res, "", f)
		if len(rows) != points {
			t.Errorf("%s: %d rows, want %d (one per point)", f, len(rows), points)
		}
		for _, r := range rows {
			if r.Status != Agree {
				t.Errorf("c=%d %s: %s (%s)", r.Concurrency, f, r.Status, r.Note)
			}
		}
	}
}

func failedFields(res *Result) []string {
	var out []string
	for _, r := range res.Failed() {
		out = append(out, r.Field)
	}
	sort.Strings(out)
	return out
}

// TestAuditReferenceRunsAgree audits the genuine reference run folders: every
// number the client published that agentrace can re-derive agrees, the counts
// of the faults point included (76 issued, 76 completed, 17 failed), and the ISL
// block, counted from the prompts the events carry as the reference counts it.
func TestAuditReferenceRunsAgree(t *testing.T) {
	// The runs' config.yaml names the dataset where they were recorded
	// (/tmp/refrun/runs/dataset.jsonl), absent on any other machine: the copy beside
	// them is the same file.
	res := runAudit(t, Options{Inputs: []string{refruns(t)}, Tokenizer: testenv.Tokenizer(t),
		Dataset: filepath.Join(refruns(t), "dataset.jsonl")})
	if bad := res.Failed(); len(bad) > 0 {
		var b bytes.Buffer
		PrintTable(&b, res, false)
		t.Fatalf("%d rows fail on the genuine reference runs:\n%s", len(bad), b.String())
	}
	if res.Points != 8 || res.Curves != 1 {
		t.Errorf("audited %d points in %d curves, want 8 in 1", res.Points, res.Curves)
	}
	for _, f := range []string{"n_samples_issued", "n_samples_completed", "n_samples_failed", "duration_ns", "qps", "tps",
		"ttft.percentiles.90.0", "tpot.percentiles.90.0", "latency.percentiles.99.0", "latency.early_stopping_percentiles.90.0",
		"output_sequence_lengths.avg", "output_sequence_lengths.histogram", "system_tps", "tps_per_user", "e2e_avg_interactivity",
		"finish_reason_counts.tool_calls", "accuracy.performance.score", "accuracy.performance.total_samples", "scores.score"} {
		rows := rowsOf(res, "", f)
		if len(rows) != 8 {
			t.Errorf("%s: %d rows, want one per point", f, len(rows))
		}
		for _, r := range rows {
			if f == "e2e_avg_interactivity" && r.Status == NotPublished {
				continue // not stored, and these summaries have no agentic totals: the checker derives none
			}
			if r.Status != Agree {
				t.Errorf("%s %s: %s (%s)", r.Run, f, r.Status, r.Note)
			}
		}
	}
	for _, f := range []struct {
		field string
		want  float64
	}{{"n_samples_issued", 76}, {"n_samples_completed", 76}, {"n_samples_failed", 17}} {
		r := rowsOf(res, "c004-faults", f.field)
		if len(r) != 1 || r[0].Published == nil || *r[0].Published != f.want || *r[0].Recomputed != f.want {
			t.Errorf("c004-faults %s = %+v, want %v both", f.field, r, f.want)
		}
	}
	// Nothing is left unchecked: ISL too is re-derived, from the prompts the events
	// carry, as the reference counts it. Only the tokenizer is: Qwen3's stands in
	// for Qwen3.6's, and every point says so.
	for _, r := range res.Rows {
		if r.Status == Unchecked && r.Field != "point.tokenizer" {
			t.Errorf("%s %s unchecked: %s", r.Run, r.Field, r.Note)
		}
	}
	for _, r := range rowsOf(res, "", "point.tokenizer") {
		if r.Status != Unchecked || !strings.Contains(r.Note, schemas.StandInLabel) || !strings.Contains(r.RecomputedText, "sha256") {
			t.Errorf("%s point.tokenizer: %s %q %q", r.Run, r.Status, r.RecomputedText, r.Note)
		}
	}
	if n := len(rowsOf(res, "", "point.tokenizer")); n != 8 {
		t.Errorf("%d point.tokenizer rows, want one per point", n)
	}
	if r := rowsOf(res, "c048", "input_sequence_lengths.avg"); len(r) != 1 || r[0].Status != Agree {
		t.Errorf("c048 ISL mean: %+v", r)
	}
	// The reference at ea332753 writes no full-run OSL block: re-derived, not published.
	if r := rowsOf(res, "c001", "output_sequence_lengths_full_run.output_sequence_lengths.avg"); len(r) != 1 || r[0].Status != NotPublished || r[0].Recomputed == nil {
		t.Errorf("full-run OSL row = %+v", r)
	}
	// docs/commands.md quotes this audit's counts: they are the command's.
	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "commands.md"))
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counts()
	for _, want := range []string{
		fmt.Sprintf("%s fields agree, %s disagree and %s unchecked", thousands(c[Agree]), thousands(c[Disagree]), thousands(c[Unchecked])),
		fmt.Sprintf("%s re-derived but not published", thousands(c[NotPublished])),
	} {
		if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), want) {
			t.Errorf("docs/commands.md does not say what this audit counts: %q", want)
		}
	}
}

// thousands writes n as the docs do: 1,160.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// copyTree copies a folder.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// editJSON rewrites a JSON file through f (numbers kept as written).
func editJSON(t *testing.T, path string, f func(m map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	f(d)
	out, err := json.MarshalIndent(map[string]any(d), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// setNumber replaces the number at a path of keys with f of it.
func setNumber(m map[string]any, f func(float64) float64, keys ...string) {
	obj := m
	for _, key := range keys[:len(keys)-1] {
		obj = obj[key].(map[string]any)
	}
	last := keys[len(keys)-1]
	v, _ := score.PyFloat(obj[last])
	obj[last] = json.Number(fmt.Sprint(f(v)))
}

// scale multiplies the number at a path.
func scale(m map[string]any, k float64, keys ...string) {
	setNumber(m, func(v float64) float64 { return v * k }, keys...)
}

// add adds d to the number at a path.
func add(m map[string]any, d float64, keys ...string) {
	setNumber(m, func(v float64) float64 { return v + d }, keys...)
}

// TestAuditCatchesTamperedFigure tampers one published figure at a time in a copy
// of a genuine reference run (the faults point) and checks that the audit fails on
// exactly that field: a figure derived from it (system_tps from duration_ns,
// tps_per_user from the TPOT P90) is reported as following it, not as a second
// disagreement. A change within the rules' 1% passes.
func TestAuditCatchesTamperedFigure(t *testing.T) {
	tok := testenv.Tokenizer(t)
	src := filepath.Join(refruns(t), "c004-faults")
	summary := filepath.Join("performance", "result_summary.json")
	acc := filepath.Join("accuracy", "accuracy_results.json")
	cases := []struct {
		name    string
		file    string
		edit    func(m map[string]any)
		want    []string // the failing fields
		follows []string // rows that must follow
	}{
		{"ttft p90 +5%", summary, func(m map[string]any) { scale(m, 1.05, "ttft", "percentiles", "90.0") }, []string{"ttft.percentiles.90.0"}, nil},
		{"one more completed", summary, func(m map[string]any) { add(m, 1, "n_samples_completed") }, []string{"n_samples_completed"}, nil},
		{"one failure hidden", summary, func(m map[string]any) { add(m, -1, "n_samples_failed") }, []string{"n_samples_failed"}, nil},
		{"duration -3%", summary, func(m map[string]any) { scale(m, 0.97, "duration_ns") }, []string{"duration_ns"}, []string{"system_tps"}},
		{"qps +2%", summary, func(m map[string]any) { scale(m, 1.02, "qps") }, []string{"qps"}, nil},
		{"tpot p90 -10%", summary, func(m map[string]any) { scale(m, 0.9, "tpot", "percentiles", "90.0") }, []string{"tpot.percentiles.90.0"}, []string{"tps_per_user"}},
		{"latency p99 x2", summary, func(m map[string]any) { scale(m, 2, "latency", "percentiles", "99.0") }, []string{"latency.percentiles.99.0"}, nil},
		{"output tokens total +4%", summary, func(m map[string]any) { scale(m, 1.04, "output_sequence_lengths", "total") },
			[]string{"output_sequence_lengths.total"}, []string{"system_tps"}},
		{"OSL mean +2%", summary, func(m map[string]any) { scale(m, 1.02, "output_sequence_lengths", "avg") }, []string{"output_sequence_lengths.avg"}, nil},
		{"a finish reason", summary, func(m map[string]any) { add(m, 1, "finish_reason_counts", "stop") }, []string{"finish_reason_counts.stop"}, nil},
		{"stored system_tps", summary, func(m map[string]any) { m["system_tps"] = json.Number("123456.7") }, []string{"system_tps"}, nil},
		{"inline accuracy", acc, func(m map[string]any) {
			m["accuracy_scores"].([]any)[0].(map[string]any)["score"] = json.Number("0.75")
		}, []string{"accuracy.performance.score"}, nil},
		{"latency p50 +0.5% (within 1%)", summary, func(m map[string]any) { scale(m, 1.005, "latency", "percentiles", "50.0") }, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "c004-faults")
			copyTree(t, src, dir)
			editJSON(t, filepath.Join(dir, c.file), c.edit)
			res := runAudit(t, Options{Inputs: []string{dir}, Tokenizer: tok, Dataset: filepath.Join(refruns(t), "dataset.jsonl")})
			if got := failedFields(res); strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("failing fields %v, want %v", got, c.want)
			}
			for _, f := range c.follows {
				r := rowsOf(res, "", f)
				if len(r) != 1 || r[0].Status != Follows {
					t.Errorf("%s: %+v, want it to follow the tampered input", f, r)
				}
			}
		})
	}
}

// Every value the audit prints says its unit: the reference's times are
// nanoseconds.
func TestUnitOf(t *testing.T) {
	for _, tc := range []struct{ field, want string }{
		{"duration_ns", "ns"}, {"sweep_summary.ttft_p90_ns", "ns"}, {"ttft.percentiles.50.0", "ns"},
		{"tpot.early_stopping_percentiles.90.0", "ns"}, {"latency.std_dev", "ns"}, {"latency.histogram", ""},
		{"system_tps", "tok/s"}, {"sweep_summary.system_tps", "tok/s"}, {"tps", "tok/s"}, {"tps_per_user", "tok/s"},
		{"e2e_avg_interactivity", "tok/s"}, {"qps", "1/s"}, {"output_sequence_lengths.avg", "tokens"},
		{"output_sequence_lengths_full_run.output_sequence_lengths.percentiles.50.0", "tokens"},
		{"sweep_summary.osl_full_run_avg", "tokens"}, {"e2e_turn_time_seconds_total", "s"},
		{"n_samples_issued", ""}, {"accuracy.performance.score", ""}, {"point.region", ""}, {"finish_reason_counts.stop", ""},
	} {
		if got := unitOf(tc.field); got != tc.want {
			t.Errorf("unitOf(%q) = %q, want %q", tc.field, got, tc.want)
		}
	}
	if got := withUnit("114000000", "ttft.percentiles.50.0"); got != "114000000 ns" {
		t.Errorf("withUnit: %q", got)
	}
}
