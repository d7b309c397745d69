package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/report"
)

// TestAnalysisQueries builds a report over a fresh sweep and runs every query of
// docs/analysis.md with DuckDB, after the report's agentrace.sql: each column named
// like a points.json field (per point, and per point and domain) must equal it
// exactly, and the rules' lower percentile must differ from quantile_disc where
// the doc says it can.
func TestAnalysisQueries(t *testing.T) {
	queries := docQueries(t, "analysis.md")
	want := []string{"window-counts", "throughput", "latency", "domains", "client-and-cache", "token-means", "errors", "points", "accuracy-join"}
	for _, name := range want {
		if queries[name] == "" {
			t.Fatalf("docs/analysis.md has no ```sql block named %q", name)
		}
	}
	w := build(t)
	repDir := filepath.Join(w.dir, "report")
	if _, err := report.Build(context.Background(), report.Options{Out: repDir, Runs: []string{filepath.Join(w.dir, "runs")}}); err != nil {
		t.Fatal(err)
	}
	macros, err := os.ReadFile(filepath.Join(repDir, report.MacrosFile))
	if err != nil {
		t.Fatal(err)
	}
	// the queries run in name order after the macros (DuckDB keeps them per connection)
	all := map[string]string{"00-macros": string(macros)}
	for _, name := range want {
		all[name] = queries[name]
	}
	res := testenv.DuckDB(t, repDir, all)

	var points []map[string]any
	data, err := os.ReadFile(filepath.Join(repDir, report.PointsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &points); err != nil {
		t.Fatal(err)
	}
	byC := map[int]map[string]any{}
	for _, p := range points {
		byC[int(p["concurrency"].(float64))] = p
	}
	checked := 0
	compare := func(query string, row map[string]any, field string, want any) {
		t.Helper()
		got, ok := row[field]
		if !ok {
			return
		}
		wf, wok := want.(float64)
		gf, gok := got.(float64)
		if !wok || !gok {
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %s = %v, points.json %v", query, field, got, want)
			}
			checked++
			return
		}
		if gf != wf && !(math.IsNaN(gf) && math.IsNaN(wf)) {
			t.Errorf("%s: %s = %v, points.json %v (differ by %g)", query, field, gf, wf, gf-wf)
		}
		checked++
	}
	for _, q := range []string{"window-counts", "throughput", "latency", "client-and-cache", "points"} {
		if len(res[q]) != len(points) {
			t.Fatalf("%s: %d rows for %d points", q, len(res[q]), len(points))
		}
		for _, row := range res[q] {
			p := byC[int(num(t, row, "concurrency"))]
			for field := range row {
				if want, ok := p[field]; ok && field != "concurrency" {
					compare(q, row, field, want)
				}
			}
		}
	}
	for _, row := range res["token-means"] {
		p := byC[int(num(t, row, "concurrency"))]
		for field, stat := range map[string]string{"isl_mean": "isl", "osl_mean": "osl", "osl_full_run_mean": "osl_full_run"} {
			st, _ := p[stat].(map[string]any)
			if st == nil {
				t.Fatalf("points.json has no %s: %v", stat, p)
			}
			compare("token-means", row, field, st["avg"])
		}
	}
	for _, row := range res["domains"] {
		p := byC[int(num(t, row, "concurrency"))]
		d := p["domains"].(map[string]any)[row["domain"].(string)].(map[string]any)
		for field := range row {
			if want, ok := d[field]; ok {
				compare("domains", row, field, want)
			}
		}
	}
	for _, row := range res["errors"] {
		p := byC[int(num(t, row, "concurrency"))]
		kinds, _ := p["error_kinds"].(map[string]any)
		compare("errors", row, "turns", kinds[row["error_kind"].(string)])
	}
	if checked < 60 {
		t.Errorf("only %d numbers checked", checked)
	}
	t.Logf("%d numbers of points.json reproduced exactly by docs/analysis.md's queries", checked)
	// every run folder's own turns.parquet: the turn log's rows, joined to its scores
	runs := testenv.DuckDB(t, w.dir, map[string]string{"c8": `SELECT count(*) AS rows, count(DISTINCT session_id) AS sessions,
		count(s.score) AS scored FROM 'runs/c8/turns.parquet' t
		LEFT JOIN 'runs/c8/scores.parquet' s USING (session_id, expected_turn)`})
	if r := runs["c8"][0]; int(num(t, r, "rows")) != len(w.recs) || int(num(t, r, "scored")) != len(w.scores[8].PerTurn) {
		t.Errorf("runs/c8/turns.parquet: %v; the log has %d rows, scores %d", r, len(w.recs), len(w.scores[8].PerTurn))
	}
	if len(res["accuracy-join"]) != len(points) {
		t.Errorf("accuracy-join: %v", res["accuracy-join"])
	}
	for _, row := range res["accuracy-join"] {
		c := int(num(t, row, "concurrency"))
		if s := w.scores[c]; s == nil || int(num(t, row, "scored_turns")) != len(s.PerTurn) || num(t, row, "accuracy") != s.Score {
			t.Errorf("accuracy-join c=%d: %v, scores %v", c, row, s)
		}
	}
}

// TestAnalysisWithoutDuckDBShell runs docs/analysis.md's way to run its queries on
// a machine without the DuckDB shell, as written (the node line, from the report
// folder of a demo's layout), with one of its queries.
func TestAnalysisWithoutDuckDBShell(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "analysis.md"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^    (node \.\./\.\./testdata/js/duckdb-sql\.mjs agentrace\.sql query\.sql)$`).FindStringSubmatch(string(data))
	if line == nil {
		t.Fatal("docs/analysis.md names no node line to run its queries")
	}
	js, node := testenv.JS(t)
	w := build(t)
	// the demo's layout: REPO/demo-out/report, testdata/js two folders up
	root := t.TempDir()
	repDir := filepath.Join(root, "demo-out", "report")
	if _, err := report.Build(context.Background(), report.Options{Out: repDir, Runs: []string{filepath.Join(w.dir, "runs")}}); err != nil {
		t.Fatal(err)
	}
	// this checkout's script, with the npm packages make testdeps installed
	jsDir := filepath.Join(root, "testdata", "js")
	if err := os.MkdirAll(jsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", "js", "duckdb-sql.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jsDir, "duckdb-sql.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(js, "node_modules"), filepath.Join(jsDir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repDir, "query.sql"), []byte(docQueries(t, "analysis.md")["window-counts"]), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", strings.Replace(line[1], "node", node, 1))
	cmd.Dir = repDir
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "n_samples_issued") {
		t.Fatalf("%s: %v\n%s", line[1], err, out)
	}
	t.Logf("%s:\n%s", line[1], out)
}
