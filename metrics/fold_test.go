package metrics

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/agentrace/agentrace/metrics/metricstest"
	"github.com/agentrace/agentrace/schemas"
)

func TestPercentileLower(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	tests := []struct{ p, want float64 }{{90, 9}, {50, 5}, {99, 9}, {100, 10}, {0, 1}, {10, 1}, {11.2, 2}}
	for _, tt := range tests {
		if got := Percentile(v, tt.p); got != tt.want {
			t.Errorf("P%v of 1..10 = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := Percentile(nil, 90); !math.IsNaN(got) {
		t.Errorf("P90 of nothing = %v, want NaN", got)
	}
	if got := Percentile([]float64{7}, 99); got != 7 {
		t.Errorf("P99 of one value = %v", got)
	}
}

func TestStats(t *testing.T) {
	var s Series
	for _, x := range []float64{4, 1, 3, 2} {
		s.Add(x)
	}
	st := s.Stats(2)
	if st.Count != 4 || st.Total != 10 || st.Min != 1 || st.Max != 4 || st.Avg != 2.5 || st.Median != 2 {
		t.Errorf("stats = %+v", st)
	}
	if want := math.Sqrt(5.0 / 3); math.Abs(st.StdDev-want) > 1e-12 {
		t.Errorf("std_dev = %v, want sample std dev %v", st.StdDev, want)
	}
	if st.Percentiles["90.0"] != 3 || st.Percentiles["99.9"] != 3 || st.Percentiles["50.0"] != 2 {
		t.Errorf("percentiles = %v", st.Percentiles)
	}
	if len(st.Histogram.Counts) != 2 || st.Histogram.Counts[0] != 2 || st.Histogram.Counts[1] != 2 {
		t.Errorf("histogram = %+v", st.Histogram)
	}
	var empty Series
	if empty.Stats(10) != nil {
		t.Error("stats of no samples should be nil")
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestFoldHandComputed(t *testing.T) {
	m, recs := metricstest.HandRun()
	a := NewAccumulator(m, nil, nil)
	for i := range recs {
		a.Add(&recs[i])
	}
	rows := a.Rows()
	p, err := a.Close()
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"window_end_ns", float64(p.WindowEndNs), 2652e6},
		{"window_duration_s", float64(p.WindowDurationS), 2.652},
		{"output_tokens_per_turn_total", float64(p.OutputTokensPerTurnTotal), 152},
		{"e2e_turn_time_seconds_total", float64(p.E2ETurnTimeSecondsTotal), 2.15},
		{"system_tps", float64(p.SystemTPS), 152 / 2.652},
		{"e2e_avg_interactivity", float64(p.E2EAvgInteractivity), 152 / 2.15},
		{"tpot_p90_ms", float64(p.TPOTP90Ms), 10}, // samples 10 and 20 ms; lower P90 of 2 = first
		{"tpot_p99_ms", float64(p.TPOTP99Ms), 10},
		{"tps_per_user", float64(p.TPSPerUser), 100},
		{"ttft_p90_ms", float64(p.TTFTP90Ms), 50}, // samples 100 and 50 ms
		{"itl_p50_ms", float64(p.ITLP50Ms), 10},   // gaps 10 and 20 ms
		{"latency_p90_ms", float64(p.LatencyP90Ms), 1050},
		{"prefix_cache_hit_ratio", float64(p.PrefixCacheHitRatio), 2000.0 / 3000},
		{"client_lag_p99_ms", float64(p.ClientLagP99Ms), 1},
		{"n_samples_issued", float64(p.Issued), 3},
		{"n_samples_completed", float64(p.Completed), 2},
		{"n_samples_failed", float64(p.Failed), 1},
		{"turns_excluded_by_window", float64(p.TurnsExcludedByWindow), 1},
		{"turns_not_issued", float64(p.TurnsNotIssued), 1},
		{"osl_full_run mean", p.OSLFullRun.Avg, (101 + 51 + 77) / 3.0},
		{"osl window mean", p.OSL.Avg, 76},
		{"isl window mean", p.ISL.Avg, 1500},
		// Trajectory 0 only: 152 tokens over 2.652 s - 0.5 s of delay.
		{"progress rate count", float64(p.ProgressRate.Count), 1},
		{"progress rate", p.ProgressRate.Avg, 152 / 2.152},
		// result_summary.json counts as the reference: 4 completed (2 ok, the error,
		// the aborted turn) over the window.
		{"qps", float64(p.Summary.QPS), 4 / 2.652},
		{"tps", float64(p.Summary.TPS), 152 / 2.652},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if p.Counts["ok"] != 3 || p.Counts["error"] != 1 || p.Counts["aborted"] != 1 {
		t.Errorf("counts = %v", p.Counts)
	}
	// turns.parquet's isl and osl: there for every turn that has them, in the
	// window or not (the turn outside it included); in_window tells them apart.
	for i, want := range [][2]float64{{1000, 101}, {2000, 51}, {math.NaN(), math.NaN()}, {math.NaN(), math.NaN()}, {900, 77}} {
		if got := [2]float64{rows.ISL[i], rows.OSL[i]}; !(got[0] == want[0] || math.IsNaN(got[0]) && math.IsNaN(want[0])) ||
			!(got[1] == want[1] || math.IsNaN(got[1]) && math.IsNaN(want[1])) {
			t.Errorf("row %d (in window %v): isl, osl = %v, want %v", i, recs[i].InWindow, got, want)
		}
	}
	if p.WindowCounts["ok"] != 2 || p.WindowCounts["error"] != 1 || len(p.WindowCounts) != 2 {
		t.Errorf("window counts = %v", p.WindowCounts)
	}
	if !p.Unofficial || p.TokenSource != "server_usage" || p.ISLSource != "server_usage" {
		t.Errorf("token source %q / %q unofficial %v, want server usage, unofficial", p.TokenSource, p.ISLSource, p.Unofficial)
	}
	// The result summary carries times in ns under the reference's names.
	b, err := json.Marshal(p.Summary)
	if err != nil {
		t.Fatal(err)
	}
	var rs map[string]any
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"version", "n_samples_issued", "n_samples_completed", "n_samples_failed", "duration_ns",
		"state", "complete", "ttft", "tpot", "latency", "output_sequence_lengths", "input_sequence_lengths", "qps", "tps",
		"e2e_avg_interactivity", "output_tokens_per_turn_total", "e2e_turn_time_seconds_total", "output_sequence_lengths_full_run"} {
		if _, ok := rs[k]; !ok {
			t.Errorf("result_summary.json lacks %q", k)
		}
	}
	ttft := rs["ttft"].(map[string]any)
	if got := ttft["percentiles"].(map[string]any)["90.0"].(float64); got != 50e6 {
		t.Errorf("ttft percentiles[90.0] = %v ns, want 5e7", got)
	}
	for _, k := range []string{"total", "min", "max", "median", "avg", "std_dev", "percentiles", "histogram"} {
		if _, ok := ttft[k]; !ok {
			t.Errorf("ttft lacks %q", k)
		}
	}
	if rs["duration_ns"].(float64) != 2652e6 {
		t.Errorf("duration_ns = %v", rs["duration_ns"])
	}
}

// fakeCounter counts one token per byte of content plus reasoning.
type fakeCounter struct{}

func (fakeCounter) Name() string { return "bytes" }
func (fakeCounter) CountOSL(r schemas.Response) (int, error) {
	return len(r.Content) + len(r.Reasoning), nil
}
func (fakeCounter) CountTPOTSuffix(r schemas.Response, _ bool) (int, error) {
	return len(r.Content) + len(r.Reasoning), nil
}

func TestFoldWithTokenizer(t *testing.T) {
	m, recs := metricstest.HandRun()
	recs[0].OutputContent = "0123456789" // 10 tokens, first chunk 2 bytes
	recs[0].FirstContentBytes = 2
	recs[1].OutputContent = "abcde"
	recs[1].OutputReasoning = "fgh"
	recs[1].FirstReasoningBytes = 3
	islOf := func(rec *schemas.TurnRecord) (int, bool, error) { return 10 * int(rec.ClientIndex+1), true, nil }
	p, err := FoldRun(m, recs, fakeCounter{}, islOf)
	if err != nil {
		t.Fatal(err)
	}
	if p.OutputTokensPerTurnTotal != 18 {
		t.Errorf("output tokens = %d, want 10 + 8", p.OutputTokensPerTurnTotal)
	}
	// TPOT: A 1000 ms / 8 tokens = 125; B 1000 ms / 5 tokens = 200.
	if float64(p.TPOTP90Ms) != 125 || float64(p.TPOTP99Ms) != 125 {
		t.Errorf("tpot p90 = %v, want 125", p.TPOTP90Ms)
	}
	if p.Unofficial || p.TokenSource != "tokenizer:bytes" || p.ISLSource != "tokenizer" {
		t.Errorf("source %q/%q unofficial %v", p.TokenSource, p.ISLSource, p.Unofficial)
	}
	if p.ISL.Avg != 15 {
		t.Errorf("ISL mean = %v, want 15", p.ISL.Avg)
	}
}

func TestNumJSON(t *testing.T) {
	b, err := json.Marshal(struct {
		A, B Num
	}{Num(math.NaN()), 1.5})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"A":null,"B":1.5}` {
		t.Errorf("got %s", b)
	}
	var back struct{ A, B Num }
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.A.Valid() || back.B != 1.5 {
		t.Errorf("round trip = %+v", back)
	}
}

func TestITLAndNonStreamedTurns(t *testing.T) {
	ms := int64(1e6)
	m := schemas.RunManifest{Config: schemas.RunConfig{Concurrency: 1, Trajectories: 2, Stream: true}, DatasetSize: 2, State: schemas.RunComplete}
	recs := []schemas.TurnRecord{
		{SessionID: "a", Trajectory: 0, Domain: "coding", Status: "ok", InWindow: true, Streamed: true,
			IssuedNs: 1 * ms, FirstTokenNs: 41 * ms, CompletedNs: 141 * ms, OutputContent: "x",
			ChunkTimesNs: []int64{0, 10 * ms, 30 * ms, 60 * ms}, ToolCallChunkTimesNs: []int64{5 * ms, 15 * ms, 40 * ms},
			UsagePromptTokens: 10, UsageCompletionTokens: 7, UsageCachedTokens: -1},
		{SessionID: "b", Trajectory: 1, Domain: "coding", Status: "ok", InWindow: true, Streamed: false,
			IssuedNs: 2 * ms, CompletedNs: 502 * ms, OutputContent: "y", Chunks: 1,
			UsagePromptTokens: 10, UsageCompletionTokens: 9, UsageCachedTokens: -1},
	}
	p, err := FoldRun(m, recs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Gaps 10, 20, 30 ms: the lower P50 is 20 (with the tool-call chunks merged in
	// it would be 5).
	if !near(float64(p.ITLP50Ms), 20) || !near(float64(p.ITLP99Ms), 20) {
		t.Errorf("ITL P50 %v, P99 %v ms; want 20, 20 (gaps 10, 20, 30 ms)", p.ITLP50Ms, p.ITLP99Ms)
	}
	if !near(float64(p.TTFTP50Ms), 40) || !near(float64(p.TTFTP99Ms), 40) {
		t.Errorf("TTFT P50 %v, P99 %v ms; want 40 (the streamed turn's only)", p.TTFTP50Ms, p.TTFTP99Ms)
	}
	if s := p.Summary; s.TTFT == nil || s.TTFT.Count != 1 || s.Latency == nil || s.Latency.Count != 2 {
		t.Errorf("result_summary TTFT %+v, latency %+v: want 1 TTFT sample and 2 latencies", s.TTFT, s.Latency)
	}
}

// defaultTolerance is the default ruleset's metric-consistency tolerance.
