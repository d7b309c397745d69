package score

import (
	"math"
	"strings"
	"testing"
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
	// C_max 256, C_min 2: low 3-8, medium 9-42, high 43-256, margin 257-282.
	pts := []SWEBenchPoint{
		{Concurrency: 2, Score: 0.70}, {Concurrency: 4, Score: 0.72}, {Concurrency: 8, Score: 0.68},
		{Concurrency: 16, Score: 0.66}, {Concurrency: 128, Score: 0.64}, {Concurrency: 270, Score: 0.10},
	}
	m, err := SWEBenchMeanOfN(pts, 256)
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
	// A missing band: incomplete, warned, mean over the others.
	m, err = SWEBenchMeanOfN([]SWEBenchPoint{{Concurrency: 1, Score: 0.5}, {Concurrency: 3, Score: 0.7}, {Concurrency: 200, Score: 0.9}}, 256)
	if err != nil {
		t.Fatal(err)
	}
	if m.Complete || m.N != 3 || math.Abs(m.Mean-0.7) > 1e-12 || !strings.Contains(strings.Join(m.Warnings, " "), "med_concurrency has no") {
		t.Errorf("missing band: %+v", m)
	}
	if _, err := SWEBenchMeanOfN(pts, 32); err == nil {
		t.Error("C_max 32 accepted")
	}
}
