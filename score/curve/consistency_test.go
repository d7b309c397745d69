package curve

import (
	"strings"
	"testing"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/metrics/metricstest"
	"github.com/agentrace/agentrace/score/rulesets"
)

func TestConsistencyDetectsDrift(t *testing.T) {
	m, recs := metricstest.HandRun()
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
	m, recs := metricstest.HandRun()
	mp, err := metrics.FoldRun(m, recs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := Consistency(NewPoint(m, mp), defaultTolerance(t)); len(got) != 0 {
		t.Errorf("consistency of a fresh point: %v", got)
	}
}
