package curve

import (
	"math"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/metrics"
)

// The minimum-duration check says a short window's length to the hundredth of a
// second (never "0 s"), and its modelled length against the simulated server.
func TestPointDurationReason(t *testing.T) {
	for _, tc := range []struct {
		window, speedup float64
		want            string
	}{
		{0.309, 60, "c=8: 0.31 s (19 s modelled) < 1200 s"},
		{5.016, 60, "c=8: 5.02 s (301 s modelled) < 1200 s"},
		{301, 0, "c=8: 301 s < 1200 s"},
		{math.NaN(), 0, "c=8: no performance window"},
		{1300, 0, "every window lasts at least 600 s (ultra-low) or 1200 s"},
	} {
		p := &Point{Concurrency: 8, Region: "med_concurrency", Point: metrics.Point{WindowDurationS: metrics.Num(tc.window)}}
		p.Manifest.SimSpeedup = tc.speedup
		if got := pointDuration(&System{Points: []*Point{p}})[0].Reason; got != tc.want {
			t.Errorf("window %v s at speed-up %v: %q, want %q", tc.window, tc.speedup, got, tc.want)
		}
	}
}

// A reason several points share is said once, with their concurrencies, in the
// order first seen.
func TestByReason(t *testing.T) {
	var b byReason
	for _, p := range []struct {
		c   int
		why string
	}{{1, "delays scaled"}, {2, "delays scaled"}, {4, "salt off"}, {8, "delays scaled"}} {
		b.add(p.c, p.why)
	}
	if got, want := strings.Join(b.list(), "; "), "c=1, 2, 8: delays scaled; c=4: salt off"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// A point whose scores.json judged it under another ruleset than the curve's is
// flagged, naming both.
func TestPointUnderAnotherRuleset(t *testing.T) {
	s := &System{Name: "sys", Ruleset: "checker-2026-10-qwen3.6, the default", Points: []*Point{
		{Concurrency: 1, Judgement: Judgement{Ruleset: "checker-2026-10-qwen3.6"}}, {Concurrency: 8, Judgement: Judgement{Ruleset: "readme-2026-08-qwen3.6"}}}}
	var got *Check
	for _, c := range Coverage(s) {
		if c.Name == "one ruleset for every point" {
			got = &c
		}
	}
	if got == nil || got.Status != CheckFail || !strings.Contains(got.Reason, "c=8: its scores.json judged it under readme-2026-08-qwen3.6") ||
		strings.Contains(got.Reason, "c=1") || !strings.Contains(got.Reason, "the curve's: checker-2026-10-qwen3.6") {
		t.Errorf("check %+v", got)
	}
	s.Points[1].Ruleset = "checker-2026-10-qwen3.6"
	for _, c := range Coverage(s) {
		if c.Name == "one ruleset for every point" && c.Status != CheckPass {
			t.Errorf("one ruleset: %+v", c)
		}
	}
}
