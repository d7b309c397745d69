package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/parquet-go/parquet-go"
)

// submissionFromRefruns lays the seven clean genuine reference runs out as a
// submission tree, the way the submission tools convert a run folder into an
// r<N>/ point (mlcommons/endpoints-submission-cli models/structure.py RunDir):
// point.yaml (the region the ruleset's form places the point in, C_max 48, the
// runtime block the checker's schema requires), system_desc.json (C_max 48),
// mlperf_endpoints_log_summary.json (the run's result_summary.json as written),
// mlperf_endpoints_log_detail.json (its events as one JSON array, indented by 2),
// accuracy/, run_metadata.json, report.txt, config.yaml, src/; and the curve's
// sweep_summary.csv with the headline figures a submitter derives from the
// summaries. It returns the tree and the curve folder.
func submissionFromRefruns(t *testing.T) (string, string) {
	t.Helper()
	src := refruns(t)
	root := filepath.Join(t.TempDir(), "acme")
	curve := filepath.Join(root, "h200-sim", "qwen3.6-35b-a3b")
	rs, _ := rulesets.ForModel("Qwen/Qwen3.6-35B-A3B")
	regions, err := score.RegionsFor(rs.RegionForm(), 48, 1)
	if err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("concurrency,region,n_samples_issued,n_samples_completed,n_samples_failed,duration_ns,system_tps,tps_per_user,ttft_p90_ms,tpot_p90_ms,osl_mean,inline_accuracy\n")
	seen := map[string]bool{}
	for _, c := range []int{1, 2, 4, 8, 16, 33, 48} {
		run := filepath.Join(src, fmt.Sprintf("c%03d", c))
		pd := filepath.Join(curve, fmt.Sprintf("r%d", c))
		for _, d := range []string{"accuracy", "src/agentrace-sim"} {
			if err := os.MkdirAll(filepath.Join(pd, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cp := func(from, to string) []byte {
			b, err := os.ReadFile(filepath.Join(run, from))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pd, to), b, 0o644); err != nil {
				t.Fatal(err)
			}
			return b
		}
		sum := cp("performance/result_summary.json", "mlperf_endpoints_log_summary.json")
		acc := cp("accuracy/accuracy_results.json", "accuracy/accuracy_results.json")
		cp("config.yaml", "config.yaml")
		cp("report.txt", "report.txt")
		ev, err := os.ReadFile(filepath.Join(run, "events.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		var arr []json.RawMessage
		for _, l := range bytes.Split(bytes.TrimSpace(ev), []byte("\n")) {
			arr = append(arr, json.RawMessage(l))
		}
		detail, _ := json.MarshalIndent(arr, "", "  ")
		os.WriteFile(filepath.Join(pd, "mlperf_endpoints_log_detail.json"), detail, 0o644)
		os.WriteFile(filepath.Join(pd, "run_metadata.json"), []byte(`{"run_date": "2026-11-30"}`+"\n"), 0o644)
		os.WriteFile(filepath.Join(pd, "src/agentrace-sim/README.md"), []byte("the server: agentrace sim\n"), 0o644)
		region := regions.Classify(c)
		declared := region
		if seen[region] || !score.Mandatory(region) {
			declared = "submitters_choice"
		}
		seen[region] = true
		py := fmt.Sprintf("concurrency: %d\nregion: %s\ndataset: agentic_combined\nmodel_name: qwen3.6-35b-a3b\nmax_supported_concurrency: 48\n"+
			"division: Standardized\nruntime_settings:\n  load_pattern: agentic_inference\n  min_duration_ms: 0\n  runtime:\n    scheduler_rng_seed: 42\n", c, declared)
		os.WriteFile(filepath.Join(pd, "point.yaml"), []byte(py), 0o644)
		os.WriteFile(filepath.Join(pd, "system_desc.json"), []byte(`{"system_name": "H200 (agentrace sim)", "max_supported_concurrency": 48}`+"\n"), 0o644)

		s, _ := parseJSON(sum)
		a, _ := parseJSON(acc)
		n := func(keys ...string) float64 { v := numAt(s, keys...); return *v }
		dur := n("duration_ns")
		inline := *entryScore(accuracyEntries(a)[0].m)
		fmt.Fprintf(&csv, "%d,%s,%.0f,%.0f,%.0f,%.0f,%.4f,%.4f,%.4f,%.6f,%.4f,%.4f\n", c, declared,
			n("n_samples_issued"), n("n_samples_completed"), n("n_samples_failed"), dur,
			n("output_sequence_lengths", "total")/(dur/1e9), 1000/(n("tpot", "percentiles", "90.0")/1e6),
			n("ttft", "percentiles", "90.0")/1e6, n("tpot", "percentiles", "90.0")/1e6, n("output_sequence_lengths", "avg"), inline)
	}
	if err := os.WriteFile(filepath.Join(curve, "sweep_summary.csv"), []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, curve
}

// tarGz archives a folder as a .tar.gz beside it, its files under the folder's name.
func tarGz(t *testing.T, dir string) string {
	t.Helper()
	out := dir + ".tar.gz"
	testenv.TarDir(t, dir, filepath.Base(dir), out, nil)
	return out
}

// TestAuditSubmissionTree audits a submission tree of seven genuine reference
// points (both domains), as a folder and as a .tar.gz read in place: every
// re-derivable number agrees, sweep_summary.csv and point.yaml included; then a
// tampered sweep_summary.csv cell and a wrong declared region are each caught and
// named.
func TestAuditSubmissionTree(t *testing.T) {
	tok := testenv.Tokenizer(t)
	ds := filepath.Join(refruns(t), "dataset.jsonl")
	root, curve := submissionFromRefruns(t)
	dirRes := runAudit(t, Options{Inputs: []string{root}, Tokenizer: tok, Dataset: ds})
	if bad := failedFields(dirRes); len(bad) > 0 {
		var b bytes.Buffer
		PrintTable(&b, dirRes, false)
		t.Fatalf("a faithful submission tree fails on %v:\n%s", bad, b.String())
	}
	if dirRes.Points != 7 || dirRes.Curves != 1 {
		t.Errorf("%d points in %d curves, want 7 in 1", dirRes.Points, dirRes.Curves)
	}
	expectAgree(t, dirRes, 7, "sweep_summary.system_tps", "sweep_summary.tps_per_user", "sweep_summary.ttft_p90_ms",
		"sweep_summary.inline_accuracy", "sweep_summary.region", "point.region", "point.concurrency", "n_samples_completed")
	// The same tree as an archive, read in place: the same rows.
	arch := tarGz(t, root)
	// Pretty-printed event arrays compress about 16x: past the default expansion
	// limit (10x), which refuses the archive whole.
	if res := runAudit(t, Options{Inputs: []string{arch}, Dataset: ds}); len(res.Rows) != 1 || res.Rows[0].Status != Error ||
		!strings.Contains(res.Rows[0].Note, "expands past its limit") {
		t.Errorf("an archive past the expansion limit: %+v", res.Rows)
	}
	archRes := runAudit(t, Options{Inputs: []string{arch}, Tokenizer: tok, Dataset: ds, Limits: archive.Limits{MaxExpansion: 40}})
	if len(archRes.Rows) != len(dirRes.Rows) || len(archRes.Failed()) != 0 {
		t.Errorf("archive: %d rows, %d failing; folder: %d rows", len(archRes.Rows), len(archRes.Failed()), len(dirRes.Rows))
	}
	for i := range archRes.Rows {
		if i < len(dirRes.Rows) && (archRes.Rows[i].Field != dirRes.Rows[i].Field || archRes.Rows[i].Status != dirRes.Rows[i].Status) {
			t.Errorf("row %d: archive %s %s, folder %s %s", i, archRes.Rows[i].Field, archRes.Rows[i].Status, dirRes.Rows[i].Field, dirRes.Rows[i].Status)
			break
		}
	}

	// A sweep_summary.csv cell inflated by 5%.
	b, _ := os.ReadFile(filepath.Join(curve, "sweep_summary.csv"))
	lines := strings.Split(string(b), "\n")
	cells := strings.Split(lines[5], ",") // r16
	var v float64
	fmt.Sscan(cells[6], &v)
	cells[6] = fmt.Sprintf("%.4f", v*1.05)
	lines[5] = strings.Join(cells, ",")
	os.WriteFile(filepath.Join(curve, "sweep_summary.csv"), []byte(strings.Join(lines, "\n")), 0o644)
	res := runAudit(t, Options{Inputs: []string{root}, Tokenizer: tok, Dataset: ds})
	if got := failedFields(res); strings.Join(got, ",") != "sweep_summary.system_tps" || res.Failed()[0].Concurrency != 16 {
		t.Errorf("tampered sweep_summary.csv: failing %v, want sweep_summary.system_tps at c=16", got)
	}
	os.WriteFile(filepath.Join(curve, "sweep_summary.csv"), b, 0o644)

	// r48 declares the region of the point below it.
	py := filepath.Join(curve, "r48", "point.yaml")
	pb, _ := os.ReadFile(py)
	var from string
	for _, l := range strings.Split(string(pb), "\n") {
		if strings.HasPrefix(l, "region: ") {
			from = l
		}
	}
	os.WriteFile(py, []byte(strings.Replace(string(pb), from, "region: low_latency", 1)), 0o644)
	res = runAudit(t, Options{Inputs: []string{root}, Tokenizer: tok, Dataset: ds})
	if got := failedFields(res); strings.Join(got, ",") != "point.region" {
		t.Errorf("wrong declared region: failing %v, want point.region", got)
	}
}

// TestAuditWrite writes audit.json and audit.parquet: every row in both, the
// disagreements named in audit.json; the output may not sit inside an input, and
// an earlier audit is replaced only with overwrite.
func TestAuditWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c004")
	copyTree(t, filepath.Join(refruns(t), "c004"), dir)
	editJSON(t, filepath.Join(dir, "performance", "result_summary.json"), func(m map[string]any) { add(m, 3, "n_samples_issued") })
	res := runAudit(t, Options{Inputs: []string{dir}, Dataset: filepath.Join(refruns(t), "dataset.jsonl")})
	out := filepath.Join(t.TempDir(), "audit")
	if err := Write(out, false, []string{dir}, res); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Passed        bool `json:"passed"`
		Disagreements []Row
		Rows          []Row
		Counts        map[string]int
	}
	b, err := os.ReadFile(filepath.Join(out, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Passed || len(doc.Disagreements) != 1 || doc.Disagreements[0].Field != "n_samples_issued" || len(doc.Rows) != len(res.Rows) {
		t.Errorf("audit.json: passed %v, disagreements %+v, %d rows of %d", doc.Passed, doc.Disagreements, len(doc.Rows), len(res.Rows))
	}
	// Every row has every key; what it does not have is null, never "" or 0.
	var raw struct{ Rows []map[string]any }
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for i, r := range raw.Rows {
		for _, k := range []string{"run", "kind", "concurrency", "file", "published_text", "recomputed_text", "note", "rule", "severity", "level", "point", "derived_from"} {
			if v, ok := r[k]; !ok || v == "" || v == 0.0 {
				t.Errorf("audit.json row %d: %s = %#v (present %v), want a value or null", i, k, v, ok)
			}
		}
	}
	rows, err := parquet.ReadFile[Row](filepath.Join(out, ParquetFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(res.Rows) {
		t.Errorf("audit.parquet holds %d rows, want %d", len(rows), len(res.Rows))
	}
	found := false
	for _, r := range rows {
		if r.Field == "n_samples_issued" && r.Status == Disagree && r.Published != nil && r.Recomputed != nil && *r.Published == *r.Recomputed+3 {
			found = true
		}
	}
	if !found {
		t.Error("audit.parquet lacks the disagreeing n_samples_issued row with both values")
	}
	// No overwrite without --overwrite; never inside an input.
	if err := Write(out, false, []string{dir}, res); !errors.Is(err, outguard.ErrExists) {
		t.Errorf("second write without overwrite: %v", err)
	}
	if err := Write(out, true, []string{dir}, res); err != nil {
		t.Errorf("overwrite: %v", err)
	}
	if err := Write(filepath.Join(dir, "audit"), false, []string{dir}, res); !errors.Is(err, outguard.ErrOverlap) {
		t.Errorf("an audit inside its input: %v", err)
	}
	_ = context.Background
}

// TestAuditBadInput: a summary that is not JSON is an error row naming the file
// (the rest of the tree is still audited and the audit fails); a garbage line in
// an event log is skipped as the reference's decoder skips it; a path that holds
// no run is an error row.
func TestAuditBadInput(t *testing.T) {
	root := t.TempDir()
	for _, c := range []string{"c001", "c002"} {
		copyTree(t, filepath.Join(refruns(t), c), filepath.Join(root, c))
	}
	os.WriteFile(filepath.Join(root, "c001", "performance", "result_summary.json"), []byte("{not json"), 0o644)
	ev := filepath.Join(root, "c002", "events.jsonl")
	b, _ := os.ReadFile(ev)
	os.WriteFile(ev, append([]byte("garbage line\n"), b...), 0o644)
	empty := t.TempDir()
	res := runAudit(t, Options{Inputs: []string{root, empty}, Dataset: filepath.Join(refruns(t), "dataset.jsonl")})
	var errs []Row
	for _, r := range res.Failed() {
		errs = append(errs, r)
	}
	if len(errs) != 2 {
		t.Fatalf("failing rows %+v, want the bad summary and the empty input", errs)
	}
	if errs[0].Field != "input" || !strings.Contains(errs[0].Note, "holds no run") {
		t.Errorf("empty input row: %+v", errs[0])
	}
	if errs[1].Field != "result_summary" || errs[1].Status != Error || !strings.Contains(errs[1].Note, "c001") {
		t.Errorf("bad summary row: %+v", errs[1])
	}
	if r := rowsOf(res, "c002", "n_samples_issued"); len(r) != 1 || r[0].Status != Agree {
		t.Errorf("c002 after a garbage line: %+v", r)
	}
}
