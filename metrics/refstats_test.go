package metrics

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/metrics/metricstest"
	"github.com/agentrace/agentrace/schemas"
)

// TestStatBlocksMatchReference rebuilds the TTFT, TPOT, latency and OSL blocks of
// a genuine reference run's result_summary.json from the per-sample values and
// compares every figure: counts, totals, extremes, median, mean, standard
// deviation, the 12 percentiles, the early-stopping estimates and the histogram
// counts exactly; the histogram edges to within one unit in the last place (Go's
// math.Log and math.Exp against C's libm).
func TestStatBlocksMatchReference(t *testing.T) {
	b, err := os.ReadFile("testdata/refsummary-c001.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Series struct {
			TTFT    []int64   `json:"ttft_ns"`
			Latency []int64   `json:"latency_ns"`
			OSL     []int64   `json:"osl"`
			TPOT    []float64 `json:"tpot_ns"`
		} `json:"series"`
		Published map[string]json.RawMessage `json:"published"`
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	ints := func(v []int64) *refSeries {
		s := &refSeries{}
		for _, x := range v {
			s.addInt(x)
		}
		return s
	}
	tpot := &refSeries{float: true}
	for _, x := range fx.Series.TPOT {
		tpot.addFloat(x)
	}
	for _, c := range []struct {
		name string
		s    *refSeries
		es   bool
	}{
		{"ttft", ints(fx.Series.TTFT), true},
		{"tpot", tpot, true},
		{"latency", ints(fx.Series.Latency), true},
		{"output_sequence_lengths", ints(fx.Series.OSL), false},
	} {
		got, err := json.Marshal(c.s.block(c.es))
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v: %s", c.name, err, got)
		}
		if err := json.Unmarshal(fx.Published[c.name], &w); err != nil {
			t.Fatal(err)
		}
		testenv.CompareJSON(t, c.name, g, w)
	}
}

// TestEarlyStoppingFloor checks the early-stopping kernel where it has a closed
// form: with no over-latency query the odds are p^h, so the least passing h is
// the least h with p^h < 0.01 (44 for P90, 459 for P99, 4603 for P99.9).
func TestEarlyStoppingFloor(t *testing.T) {
	// With t = 0 over-latency queries, h must satisfy p^h < 1 - 0.99.
	for _, c := range []struct {
		p    float64
		want int
	}{{0.90, 44}, {0.99, 459}, {0.999, 4603}} {
		got := findMinPassing(0, c.p)
		if got != c.want {
			t.Errorf("findMinPassing(0, %v) = %d, want %d", c.p, got, c.want)
		}
	}
	// Below the floor there is no estimate; at n = 1000 the P90 estimate discards
	// the top values but never past the empirical P90.
	v := make([]float64, 1000)
	for i := range v {
		v[i] = float64(i + 1)
	}
	if e := esEstimate(v[:10], 90); e != nil {
		t.Errorf("P90 estimate of 10 samples = %v, want none", *e)
	}
	e := esEstimate(v, 90)
	if e == nil || *e < Percentile(v, 90) || *e > v[len(v)-1] {
		t.Errorf("P90 estimate of 1..1000 = %v", e)
	}
}

// TestResultSummaryCountsAsReference folds the hand-computed run plus a turn never
// sent (not_issued) and one cut in flight (cancelled), and checks that
// result_summary.json counts them as the reference client's aggregator counts the
// events it would have published.
func TestResultSummaryCountsAsReference(t *testing.T) {
	m, recs := metricstest.HandRun()
	ms := int64(1e6)
	recs[0].FinishReason, recs[1].FinishReason = "stop", "tool_calls"
	recs = append(recs,
		schemas.TurnRecord{SessionID: "c", Trajectory: 3, Domain: "coding", Status: "not_issued", InWindow: true,
			UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1},
		schemas.TurnRecord{SessionID: "d", Trajectory: 4, Domain: "coding", Status: "cancelled", InWindow: true,
			IssuedNs: 2000 * ms, FirstTokenNs: 2010 * ms, CompletedNs: 2900 * ms,
			UsagePromptTokens: 700, UsageCompletionTokens: -1, UsageCachedTokens: -1})
	m.Counts["not_issued"], m.Counts["cancelled"] = 1, 1
	p, err := FoldRun(m, recs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p.Summary)
	if err != nil {
		t.Fatal(err)
	}
	var rs struct {
		Issued    int      `json:"n_samples_issued"`
		Completed int      `json:"n_samples_completed"`
		Failed    int      `json:"n_samples_failed"`
		Duration  int64    `json:"duration_ns"`
		QPS       float64  `json:"qps"`
		TPS       float64  `json:"tps"`
		SystemTPS float64  `json:"system_tps"`
		TPSUser   *float64 `json:"tps_per_user"`
		Latency   struct {
			Total       int64              `json:"total"`
			Min         int64              `json:"min"`
			Percentiles map[string]float64 `json:"percentiles"`
		} `json:"latency"`
		TTFT struct {
			Total int64 `json:"total"`
		} `json:"ttft"`
		ISL struct {
			Total int64 `json:"total"`
		} `json:"input_sequence_lengths"`
		OSL struct {
			Total int64 `json:"total"`
		} `json:"output_sequence_lengths"`
		Full struct {
			OSL struct {
				Avg float64 `json:"avg"`
			} `json:"output_sequence_lengths"`
		} `json:"output_sequence_lengths_full_run"`
		Finish    map[string]int `json:"finish_reason_counts"`
		Agentrace struct {
			Counting string `json:"counting"`
		} `json:"agentrace"`
	}
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	// Issued: 2 ok + error + aborted + cancelled (not_issued publishes nothing);
	// completed: all but the cancelled one; failed: error + aborted.
	if rs.Issued != 5 || rs.Completed != 4 || rs.Failed != 2 {
		t.Errorf("issued/completed/failed = %d/%d/%d, want 5/4/2", rs.Issued, rs.Completed, rs.Failed)
	}
	// The window ends at the last COMPLETE (2652 ms): the cancelled turn has none.
	if rs.Duration != 2652e6 {
		t.Errorf("duration_ns = %d, want 2652e6", rs.Duration)
	}
	// Latency of every COMPLETE: 1100, 1050, 200 and 0 ms (aborted).
	if rs.Latency.Total != 2350e6 || rs.Latency.Min != 0 || rs.Latency.Percentiles["50.0"] != 200e6 {
		t.Errorf("latency total %d min %d p50 %v", rs.Latency.Total, rs.Latency.Min, rs.Latency.Percentiles["50.0"])
	}
	// TTFT of every first chunk: 100, 50 and the cancelled turn's 10 ms.
	if rs.TTFT.Total != 160e6 {
		t.Errorf("ttft total = %d, want 160e6", rs.TTFT.Total)
	}
	// ISL of every turn sent: 1000, 2000, and the cancelled turn's 700 (the error
	// turn has no usage count here).
	if rs.ISL.Total != 3700 {
		t.Errorf("isl total = %d, want 3700", rs.ISL.Total)
	}
	if rs.OSL.Total != 152 || !near(rs.TPS, 152/2.652) || !near(rs.SystemTPS, 152/2.652) || !near(rs.QPS, 4/2.652) {
		t.Errorf("osl total %d, tps %v, system_tps %v, qps %v", rs.OSL.Total, rs.TPS, rs.SystemTPS, rs.QPS)
	}
	if !near(rs.Full.OSL.Avg, (101+51+77)/3.0) {
		t.Errorf("full-run OSL mean = %v", rs.Full.OSL.Avg)
	}
	if rs.Finish["stop"] != 1 || rs.Finish["tool_calls"] != 1 || len(rs.Finish) != 6 {
		t.Errorf("finish_reason_counts = %v", rs.Finish)
	}
	if rs.TPSUser == nil || !near(*rs.TPSUser, 100) {
		t.Errorf("tps_per_user = %v, want 100", rs.TPSUser)
	}
	if !strings.Contains(rs.Agentrace.Counting, "aborted") {
		t.Errorf("the summary does not say how it counts: %q", rs.Agentrace.Counting)
	}
	// Keys in the reference's order, percentile keys as decimal strings.
	s := string(b)
	last := -1
	for _, k := range []string{`"version"`, `"git_sha"`, `"test_started_at"`, `"n_samples_issued"`, `"n_samples_completed"`,
		`"n_samples_failed"`, `"duration_ns"`, `"state"`, `"complete"`, `"ttft"`, `"tpot"`, `"latency"`,
		`"output_sequence_lengths"`, `"input_sequence_lengths"`, `"legacy_loadgen_window_duration_ns"`, `"qps"`, `"tps"`,
		`"finish_reason_counts"`, `"run_config"`} {
		i := strings.Index(s, k)
		if i < 0 || i < last {
			t.Errorf("key %s missing or out of the reference's order", k)
		}
		last = i
	}
	if !strings.Contains(s, `"percentiles":{"99.9":`) || !strings.Contains(s, `"1.0":`) {
		t.Errorf("percentile keys are not the reference's: %s", s)
	}
}
