package curve

import (
	"strings"
	"testing"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/rulesets"
)

// handRun is metrics' hand-computed run (its TestFoldHandComputed).
func handRun() (schemas.RunManifest, []schemas.TurnRecord) {
	m := schemas.RunManifest{
		Config:      schemas.RunConfig{Concurrency: 2, Trajectories: 3, Stream: true, Salt: true, Delays: true, DelayScale: 1},
		DatasetSize: 3, State: schemas.RunComplete,
		Counts:            map[string]int{"ok": 3, "error": 1, "aborted": 1},
		LastTrackedDoneNs: 2652e6,
	}
	ms := int64(1e6)
	recs := []schemas.TurnRecord{
		{SessionID: "a", Trajectory: 0, ClientIndex: 0, Domain: "coding", Status: "ok", InWindow: true,
			ScheduledNs: 0, IssuedNs: 1 * ms, FirstTokenNs: 101 * ms, CompletedNs: 1101 * ms,
			ChunkTimesNs: []int64{0, 10 * ms, 30 * ms}, OutputContent: "x",
			UsagePromptTokens: 1000, UsageCompletionTokens: 101, UsageCachedTokens: 500},
		{SessionID: "a", Trajectory: 0, ClientIndex: 1, Domain: "coding", Status: "ok", InWindow: true,
			DelayNs: 500 * ms, ScheduledNs: 1601 * ms, IssuedNs: 1602 * ms, FirstTokenNs: 1652 * ms, CompletedNs: 2652 * ms,
			OutputContent: "y", UsagePromptTokens: 2000, UsageCompletionTokens: 51, UsageCachedTokens: 1500},
		{SessionID: "sim_1", Trajectory: 1, ClientIndex: 0, Domain: "workflow", Status: "error", InWindow: true,
			ScheduledNs: 2 * ms, IssuedNs: 3 * ms, CompletedNs: 203 * ms,
			UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1},
		{SessionID: "sim_1", Trajectory: 1, ClientIndex: 1, Domain: "workflow", Status: "aborted", InWindow: true,
			UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1},
		{SessionID: "b", Trajectory: 2, ClientIndex: 0, Domain: "coding", Status: "ok", InWindow: false,
			ScheduledNs: 2999 * ms, IssuedNs: 3000 * ms, FirstTokenNs: 3100 * ms, CompletedNs: 4000 * ms,
			OutputContent: "z", UsagePromptTokens: 900, UsageCompletionTokens: 77, UsageCachedTokens: -1},
	}
	return m, recs
}

func TestConsistencyDetectsDrift(t *testing.T) {
	m, recs := handRun()
	mp, err := metrics.FoldRun(m, recs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPoint(m, mp)
	p.SystemTPS *= 1.02
	p.TPSPerUser *= 0.98
	p.Summary.NSamplesCompleted = 2
	p.Summary.NSamplesFailed = 3
	p.Counts["ok"]++
	got := Consistency(p, defaultTolerance(t))
	want := []string{"system_tps", "tps_per_user", "failed 3 > completed 2", `manifest counts 3 "ok" turns, the log 4`}
	for _, w := range want {
		found := false
		for _, g := range got {
			if strings.Contains(g, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("consistency did not report %q: %v", w, got)
		}
	}
	// Within 1% passes.
	mp2, _ := metrics.FoldRun(m, recs, nil, nil)
	p2 := NewPoint(m, mp2)
	p2.SystemTPS *= 1.009
	if got := Consistency(p2, defaultTolerance(t)); len(got) != 0 {
		t.Errorf("0.9%% drift reported: %v", got)
	}
}

func defaultTolerance(t *testing.T) float64 {
	t.Helper()
	rs, err := rulesets.Load("")
	if err != nil {
		t.Fatal(err)
	}
	return rs.Curve.ConsistencyTolerance
}

func TestConsistencyOfAFreshPoint(t *testing.T) {
	m, recs := handRun()
	mp, err := metrics.FoldRun(m, recs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := Consistency(NewPoint(m, mp), defaultTolerance(t)); len(got) != 0 {
		t.Errorf("consistency of a fresh point: %v", got)
	}
}
