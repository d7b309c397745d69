package score

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/rulesets"
)

func TestParseSWEBenchReport(t *testing.T) {
	tests := []struct {
		name, report string
		evaluated    int
		score        float64
		incomplete   bool
		err          string
		warn         int
	}{
		{"complete", `{"submitted_instances":200,"resolved_instances":150,"resolved_ids":[]}`, 0, 0.75, false, "", 1},
		{"incomplete", `{"submitted_instances":180,"resolved_instances":150}`, 0, 0.75, true, "", 1},
		{"decimal strings", `{"submitted_instances":"200","resolved_instances":"139"}`, 0, 0.695, false, "", 0},
		{"evaluated 500", `{"submitted_instances":500,"resolved_instances":250}`, 500, 0.5, false, "", 0},
		{"float refused", `{"submitted_instances":200.0,"resolved_instances":150}`, 0, 0, false, "non-negative integer", 0},
		{"exponent refused", `{"submitted_instances":2e2,"resolved_instances":150}`, 0, 0, false, "non-negative integer", 0},
		{"bool refused", `{"submitted_instances":true,"resolved_instances":1}`, 0, 0, false, "non-negative integer", 0},
		{"negative refused", `{"submitted_instances":200,"resolved_instances":-1}`, 0, 0, false, "non-negative integer", 0},
		{"signed string refused", `{"submitted_instances":"+200","resolved_instances":1}`, 0, 0, false, "non-negative integer", 0},
		{"non-ASCII digits refused", `{"submitted_instances":"٢٠٠","resolved_instances":1}`, 0, 0, false, "non-negative integer", 0},
		{"missing", `{"resolved_instances":1}`, 0, 0, false, "missing", 0},
		{"resolved above submitted", `{"submitted_instances":10,"resolved_instances":11}`, 0, 0, false, "inconsistent", 0},
		{"submitted above evaluated", `{"submitted_instances":201,"resolved_instances":11}`, 0, 0, false, "inconsistent", 0},
		{"nothing submitted", `{"submitted_instances":0,"resolved_instances":0}`, 0, 0, false, "is 0", 0},
		{"not an object", `[1]`, 0, 0, false, "not a JSON object", 0},
		{"resolved_ids disagree", `{"submitted_instances":200,"resolved_instances":2,"resolved_ids":["a"]}`, 0, 0.01, false, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, warn, err := ParseSWEBenchReport([]byte(tt.report), tt.evaluated)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Score != tt.score || res.Incomplete != tt.incomplete || len(warn) != tt.warn {
				t.Errorf("got %+v warnings %q", res, warn)
			}
		})
	}
}

func TestSWEBenchMeanOfN(t *testing.T) {
	// C_max 1024, lowest 32 (checker form): low 33-42, medium 43-131, high
	// 132-1024, margin 1025-1127.
	pts := []SWEBenchPoint{
		{Concurrency: 32, Score: 0.70}, {Concurrency: 36, Score: 0.72}, {Concurrency: 40, Score: 0.68},
		{Concurrency: 100, Score: 0.66}, {Concurrency: 512, Score: 0.64}, {Concurrency: 1100, Score: 0.10},
	}
	m, err := SWEBenchMeanOfN(pts, 1024, rulesets.RegionsCMin)
	if err != nil {
		t.Fatal(err)
	}
	want := (0.70 + (0.72+0.68)/2 + 0.66 + 0.64) / 4
	if math.Abs(m.Mean-want) > 1e-12 || m.N != 4 || !m.Complete {
		t.Errorf("mean %+v, want %v", m, want)
	}
	joined := strings.Join(m.Warnings, "\n")
	if !strings.Contains(joined, "margin") || !strings.Contains(joined, "2 SWE-bench results") {
		t.Errorf("warnings %q", m.Warnings)
	}
	// As the checker assigns bands, every point at or below 32 is the ultra-low
	// band, even inside the low region of a curve starting lower (C_min 2: low
	// 3-8): one result per point, so 4 and 8 average into the ultra-low band and
	// the low and medium bands are missing (64 and 200 are both high: 43-256).
	m, err = SWEBenchMeanOfN([]SWEBenchPoint{{Concurrency: 2, Score: 0.5}, {Concurrency: 4, Score: 0.7}, {Concurrency: 8, Score: 0.9},
		{Concurrency: 64, Score: 0.6}, {Concurrency: 200, Score: 0.8}}, 256, rulesets.RegionsCMin)
	if err != nil {
		t.Fatal(err)
	}
	if m.Complete || m.N != 2 || math.Abs(m.Mean-0.7) > 1e-12 ||
		!strings.Contains(strings.Join(m.Warnings, " "), "low_concurrency has no") || m.Bands[0].Region != RegionLowLatency || len(m.Bands[0].Points) != 3 {
		t.Errorf("checker bands: %+v", m)
	}
	// The v0.7 form folds the margin into the high region.
	m, err = SWEBenchMeanOfN(pts, 1024, rulesets.RegionsFixed32)
	if err != nil || m.N != 4 || len(m.Bands[3].Points) != 2 {
		t.Errorf("v0.7 form: %+v %v", m, err)
	}
	if _, err := SWEBenchMeanOfN(pts, 32, rulesets.RegionsCMin); err == nil {
		t.Error("C_max 32 accepted")
	}
}

// TestSWEBenchCurveGate: one point below the threshold with the mean of the 4
// regions above passes the curve; the mean below fails it. A run's own verdict
// never fails on its SWE-bench result.
func TestSWEBenchCurveGate(t *testing.T) {
	rs, err := rulesets.Load("checker-2026-10-qwen3.6") // SWE-bench >= 0.69
	if err != nil {
		t.Fatal(err)
	}
	curve := func(ultra float64) []SWEBenchPoint {
		// C_max 1024, lowest 32: low 33-42, medium 43-131, high 132-1024.
		return []SWEBenchPoint{{Concurrency: 32, Score: ultra}, {Concurrency: 40, Score: 0.72},
			{Concurrency: 100, Score: 0.70}, {Concurrency: 600, Score: 0.71}}
	}
	g, m := JudgeSWEBenchCurve(rs, curve(0.66), 1024)
	if !g.Pass || m == nil || m.N != 4 || math.Abs(g.Value-0.6975) > 1e-12 {
		t.Errorf("one point at 0.66, mean 0.6975: %+v %+v", g, m)
	}
	g, _ = JudgeSWEBenchCurve(rs, curve(0.60), 1024)
	if g.Pass || math.Abs(g.Value-0.6825) > 1e-12 {
		t.Errorf("mean 0.6825: %+v", g)
	}
	if g, m := JudgeSWEBenchCurve(rs, nil, 1024); g.Pass || m != nil || !strings.HasPrefix(g.Note, "not evaluated") {
		t.Errorf("no results: %+v", g)
	}
	// A single run below the threshold: the gate is shown, informational, and the
	// run's verdict passes on its other gates.
	s := &schemas.Scores{Score: 0.6, Turns: schemas.TurnCounts{Scored: 10},
		OSL: &schemas.OSLResult{Mean: 380, Turns: 10}, SWEBench: &schemas.SWEBenchResult{Score: 0.5, Submitted: 200, Evaluated: 200}}
	v := Judge(rs, s)
	if !v.Pass || len(v.Gates) != 3 || !v.Gates[2].Informational || v.Gates[2].Pass {
		t.Errorf("run verdict %+v", v)
	}
}

// A folder `agentrace swebench` wrote is scored over the instances its
// swebench.json says were submitted, with the scorer's counter checks.
func TestReadSWEBenchRunFolder(t *testing.T) {
	for _, tc := range []struct {
		name, state, result string
		evaluated           int
		want                string // "resolved/evaluated incomplete" or an error substring
	}{
		{"complete", "succeeded", `{"submitted_instances":3,"resolved_instances":2}`, 3, "2/3 false"},
		{"fewer submitted", "succeeded", `{"submitted_instances":"2","resolved_instances":1}`, 3, "1/3 true"},
		{"resolved above submitted", "succeeded", `{"submitted_instances":3,"resolved_instances":4}`, 3, "inconsistent counts"},
		{"submitted above evaluated", "succeeded", `{"submitted_instances":4,"resolved_instances":1}`, 3, "inconsistent counts"},
		{"a boolean counter", "succeeded", `{"submitted_instances":true,"resolved_instances":1}`, 3, "non-negative integer"},
		{"none submitted", "succeeded", `{"submitted_instances":0,"resolved_instances":0}`, 3, "submitted_instances is 0"},
		{"failed run", "failed", ``, 3, `ended "failed"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ids := make([]string, tc.evaluated)
			for i := range ids {
				ids[i] = fmt.Sprintf("i%d", i)
			}
			rec, _ := json.Marshal(schemas.SWEBenchRun{RunID: "r1", State: tc.state, Evaluated: tc.evaluated, EvaluatedIDs: ids})
			os.WriteFile(filepath.Join(dir, schemas.SWEBenchRunFile), rec, 0o644)
			if tc.result != "" {
				os.WriteFile(filepath.Join(dir, "swe_bench_results.json"), []byte(tc.result), 0o644)
			}
			res, _, err := ReadSWEBenchReport(t.Context(), dir, 0)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				got = fmt.Sprintf("%d/%d %v", res.Resolved, res.Evaluated, res.Incomplete)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
