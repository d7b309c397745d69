package report

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/agentrace/agentrace/score"
)

// Check statuses.
const (
	CheckPass = "pass"
	CheckFail = "fail"
	// CheckInfo marks a check the rules leave open: shown, never failing.
	CheckInfo = "info"
)

// Check is one coverage or consistency check of a curve (§5.3, §9.1).
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// Pass tells whether the check did not fail.
func (c Check) Pass() bool { return c.Status != CheckFail }

// Official agentic values (rules: "Official agentic settings").
const (
	officialDatasetSize = 613
	minPoints           = 7
	maxPoints           = 32
	consistencyTol      = 0.01
)

func check(name string, ok bool, reason string) Check {
	st := CheckPass
	if !ok {
		st = CheckFail
	}
	return Check{Name: name, Status: st, Reason: reason}
}

// Coverage runs the curve checks on a system's points.
func Coverage(s *System) []Check {
	var cs []Check
	n := len(s.Points)
	inRegion, margin, outside := 0, []string{}, []string{}
	per := map[string]int{}
	for _, p := range s.Points {
		switch {
		case p.Region == score.RegionMargin:
			margin = append(margin, fmt.Sprintf("c=%d", p.Concurrency))
		case p.Region == "":
			outside = append(outside, fmt.Sprintf("c=%d", p.Concurrency))
		default:
			inRegion++
			per[p.Region]++
		}
	}

	cs = append(cs, check("at least 7 points", inRegion >= minPoints,
		fmt.Sprintf("%d points inside the four regions (margin points do not count); the rules need %d", inRegion, minPoints)))
	cs = append(cs, check("at most 32 points", n <= maxPoints, fmt.Sprintf("%d points; the rules allow %d", n, maxPoints)))

	if s.Regions == nil {
		cs = append(cs, check("C_max and C_min within bounds", false, s.RegionsErr))
		cs = append(cs, check("one point per region", false, "regions cannot be computed: "+s.RegionsErr))
	} else {
		src := "highest point"
		if s.CMaxFromFlag {
			src = "--cmax"
		}
		cs = append(cs, check("C_max and C_min within bounds", true,
			fmt.Sprintf("C_max %d (%s) > 32, C_min %d in 1..32", s.CMax, src, s.CMin)))
		var missing, empty []string
		for _, nr := range s.Regions.Named() {
			if nr.Name == score.RegionMargin {
				continue
			}
			if nr.Range.Empty() {
				empty = append(empty, nr.Name)
			}
			if per[nr.Name] == 0 {
				missing = append(missing, nr.Name)
			}
		}
		extra := per[score.RegionLow] + per[score.RegionMedium] + per[score.RegionHigh]
		ok := len(missing) == 0 && len(outside) == 0 && extra >= 6
		var why []string
		why = append(why, fmt.Sprintf("low_latency %d, low %d, medium %d, high %d",
			per[score.RegionLowLatency], per[score.RegionLow], per[score.RegionMedium], per[score.RegionHigh]))
		if len(missing) > 0 {
			why = append(why, "no point in "+strings.Join(missing, ", "))
		}
		if len(empty) > 0 {
			why = append(why, "empty by rounding (the rules do not resolve this): "+strings.Join(empty, ", "))
		}
		if extra < 6 {
			why = append(why, fmt.Sprintf("low+medium+high hold %d points; the rules need 1 each plus 3 more", extra))
		}
		if len(margin) > 0 {
			why = append(why, "margin points (legal, satisfy no region): "+strings.Join(margin, ", "))
		}
		if len(outside) > 0 {
			why = append(why, "outside every region: "+strings.Join(outside, ", "))
		}
		cs = append(cs, check("one point per region", ok, strings.Join(why, "; ")))
	}

	var bad, notOfficialDS []string
	for _, p := range s.Points {
		t, d := p.Manifest.Config.Trajectories, p.Manifest.DatasetSize
		if t <= 0 || d <= 0 || t%d != 0 {
			bad = append(bad, fmt.Sprintf("c=%d: %d trajectories, dataset %d", p.Concurrency, t, d))
		}
		if d != officialDatasetSize {
			notOfficialDS = append(notOfficialDS, fmt.Sprintf("c=%d: %d", p.Concurrency, d))
		}
	}
	reason := "every point issues a positive multiple of its dataset's size"
	if len(bad) > 0 {
		reason = strings.Join(bad, "; ")
	}
	cs = append(cs, check("trajectory budget a multiple of the dataset size", len(bad) == 0, reason))
	reason = "every point uses a 613-trajectory dataset"
	if len(notOfficialDS) > 0 {
		reason = "dataset size is not the official 613: " + strings.Join(notOfficialDS, "; ")
	}
	cs = append(cs, check("official dataset size (613)", len(notOfficialDS) == 0, reason))

	var unofficial []string
	for _, p := range s.Points {
		c := p.Manifest.Config
		var why []string
		if !c.Salt {
			why = append(why, "salt off")
		}
		if !c.Delays {
			why = append(why, "delays off")
		} else if c.DelayScale != 1 {
			why = append(why, fmt.Sprintf("delay scale %.4g", c.DelayScale))
		}
		if c.StopIssuingAtWindow {
			why = append(why, "stop-issuing on")
		}
		if len(why) > 0 {
			unofficial = append(unofficial, fmt.Sprintf("c=%d: %s", p.Concurrency, strings.Join(why, ", ")))
		}
	}
	reason = "salt on, delays on at scale 1, stop-issuing off at every point"
	if len(unofficial) > 0 {
		reason = strings.Join(unofficial, "; ")
	}
	cs = append(cs, check("official settings", len(unofficial) == 0, reason))

	var incons []string
	for _, p := range s.Points {
		incons = append(incons, Consistency(p)...)
	}
	reason = "completed + failed = issued; system_tps, tps_per_user and e2e_avg_interactivity re-derived from result_summary.json within 1%; counts and window end agree with the run manifest"
	if len(incons) > 0 {
		reason = strings.Join(incons, "; ")
	}
	cs = append(cs, check("metric consistency within 1%", len(incons) == 0, reason))

	var notDone []string
	for _, p := range s.Points {
		if p.Manifest.State != "complete" {
			notDone = append(notDone, fmt.Sprintf("c=%d: %q", p.Concurrency, p.Manifest.State))
		}
		if p.LogNote != "" {
			notDone = append(notDone, fmt.Sprintf("c=%d: %s", p.Concurrency, p.LogNote))
		}
	}
	reason = "every run completed"
	if len(notDone) > 0 {
		reason = "not complete: " + strings.Join(notDone, "; ")
	}
	cs = append(cs, check("runs complete", len(notDone) == 0, reason))

	var unscored, failing []string
	for _, p := range s.Points {
		switch {
		case p.GatesPass == nil:
			unscored = append(unscored, fmt.Sprintf("c=%d", p.Concurrency))
		case !*p.GatesPass:
			var g []string
			for _, gt := range p.Gates {
				if !gt.Pass {
					g = append(g, fmt.Sprintf("%s %.4g not %s", gt.Name, gt.Value, gt.Threshold))
				}
			}
			failing = append(failing, fmt.Sprintf("c=%d (%s)", p.Concurrency, strings.Join(g, ", ")))
		}
	}
	switch {
	case len(unscored) == len(s.Points):
		cs = append(cs, check("accuracy gates", false, "no scores.json found: run `agentrace score` on each run"))
	default:
		var why []string
		if len(failing) > 0 {
			why = append(why, "failing: "+strings.Join(failing, "; "))
		}
		if len(unscored) > 0 {
			why = append(why, "not scored: "+strings.Join(unscored, ", "))
		}
		reason = "every point passes its gates"
		if len(why) > 0 {
			reason = strings.Join(why, "; ")
		}
		cs = append(cs, check("accuracy gates", len(why) == 0, reason))
	}

	var short []string
	for _, p := range s.Points {
		need := 1200.0
		if p.Region == score.RegionLowLatency {
			need = 600
		}
		if d := float64(p.WindowDurationS); !(d >= need) {
			short = append(short, fmt.Sprintf("c=%d: %.0f s < %.0f s", p.Concurrency, d, need))
		}
	}
	reason = "every window lasts at least 600 s (ultra-low) or 1200 s"
	if len(short) > 0 {
		reason = strings.Join(short, "; ")
	}
	cs = append(cs, Check{Name: "minimum duration (§6; how it applies to agentic points is not stated)", Status: CheckInfo, Reason: reason})

	var unoff []string
	for _, p := range s.Points {
		if p.Unofficial {
			unoff = append(unoff, fmt.Sprintf("c=%d: OSL %s, ISL %s", p.Concurrency, p.TokenSource, p.ISLSource))
		}
	}
	reason = "every count is from the reference tokenizer"
	if len(unoff) > 0 {
		reason = "unofficial counts: " + strings.Join(unoff, "; ")
	}
	cs = append(cs, check("official token counts", len(unoff) == 0, reason))
	return cs
}

func relDiff(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

// Consistency re-derives a point's headline metrics the way an offline checker does:
// from its result_summary.json as written (a JSON round trip), against points.json
// and the run manifest. It returns the disagreements.
func Consistency(p *Point) []string {
	var out []string
	bad := func(f string, a ...any) { out = append(out, fmt.Sprintf("c=%d: ", p.Concurrency)+fmt.Sprintf(f, a...)) }
	if p.Summary == nil {
		bad("no result summary")
		return out
	}
	b, err := json.Marshal(p.Summary)
	if err != nil {
		bad("result summary: %v", err)
		return out
	}
	var rs struct {
		Issued    int     `json:"n_samples_issued"`
		Completed int     `json:"n_samples_completed"`
		Failed    int     `json:"n_samples_failed"`
		DurNs     float64 `json:"duration_ns"`
		OSL       struct {
			Total *float64 `json:"total"`
		} `json:"output_sequence_lengths"`
		TPOT struct {
			P map[string]float64 `json:"percentiles"`
		} `json:"tpot"`
		E2E   *float64 `json:"e2e_avg_interactivity"`
		Out   float64  `json:"output_tokens_per_turn_total"`
		TurnS *float64 `json:"e2e_turn_time_seconds_total"`
	}
	if err := json.Unmarshal(b, &rs); err != nil {
		bad("result summary: %v", err)
		return out
	}
	if rs.Completed+rs.Failed != rs.Issued {
		bad("completed %d + failed %d != issued %d", rs.Completed, rs.Failed, rs.Issued)
	}
	if rs.OSL.Total != nil && rs.DurNs > 0 && p.SystemTPS.Valid() {
		if d := relDiff(*rs.OSL.Total/(rs.DurNs/1e9), float64(p.SystemTPS)); d > consistencyTol {
			bad("system_tps %.6g differs from OSL total / duration by %.2f%%", float64(p.SystemTPS), 100*d)
		}
	}
	if v, ok := rs.TPOT.P["90.0"]; ok && p.TPSPerUser.Valid() {
		if d := relDiff(1000/(v/1e6), float64(p.TPSPerUser)); d > consistencyTol {
			bad("tps_per_user %.6g differs from 1000 / TPOT P90 by %.2f%%", float64(p.TPSPerUser), 100*d)
		}
	}
	if rs.TurnS != nil && *rs.TurnS > 0 && p.E2EAvgInteractivity.Valid() {
		if d := relDiff(rs.Out / *rs.TurnS, float64(p.E2EAvgInteractivity)); d > consistencyTol {
			bad("e2e_avg_interactivity %.6g differs from tokens / turn time by %.2f%%", float64(p.E2EAvgInteractivity), 100*d)
		}
	}
	// Against the replay's own accounting in the manifest.
	m := p.Manifest
	if len(m.Counts) > 0 {
		for st, n := range m.Counts {
			if p.Counts[st] != n {
				bad("manifest counts %d %q turns, the log %d", n, st, p.Counts[st])
			}
		}
		for st, n := range p.Counts {
			if _, ok := m.Counts[st]; !ok && n > 0 {
				bad("the log has %d %q turns the manifest does not count", n, st)
			}
		}
	}
	if m.LastTrackedDoneNs > 0 && p.WindowEndNs > 0 {
		if d := relDiff(float64(m.LastTrackedDoneNs), float64(p.WindowEndNs)); d > consistencyTol {
			bad("window end %d ns differs from the manifest's last tracked completion %d ns by %.2f%%", p.WindowEndNs, m.LastTrackedDoneNs, 100*d)
		}
	}
	return out
}
