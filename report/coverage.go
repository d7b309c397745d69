package report

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentrace/agentrace/internal/official"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
)

// Check statuses.
const (
	CheckPass = "pass"
	CheckFail = "fail"
	// CheckInfo marks a check the rules leave open: shown, never failing.
	CheckInfo = "info"
	// CheckWarn marks a check the submission checker warns on (an input absent,
	// so not evaluated): shown, never failing.
	CheckWarn = "warning"
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

// Coverage runs the curve checks on a system's points: the submission checker's
// checks of an agentic curve (each named with the checker's rule id; see
// CheckerRules for what is covered and what is not), then agentrace's own.
func Coverage(s *System) []Check {
	var cs []Check
	n := len(s.Points)
	var margin, outside, ultra []string
	per := map[string]int{}
	for _, p := range s.Points {
		if p.Concurrency >= 1 && p.Concurrency <= score.UltraLowMax {
			ultra = append(ultra, fmt.Sprintf("c=%d", p.Concurrency))
		}
		switch {
		case p.Region == score.RegionMargin:
			margin = append(margin, fmt.Sprintf("c=%d", p.Concurrency))
		case p.Region == "":
			outside = append(outside, fmt.Sprintf("c=%d", p.Concurrency))
		default:
			per[p.Region]++
		}
	}

	// point-count, point-cap: every point of the curve counts (the checker counts
	// the point folders), margin points included.
	cs = append(cs, check("at least 7 points (point-count)", n >= minPoints,
		fmt.Sprintf("%d points; an agentic curve needs %d", n, minPoints)))
	cs = append(cs, check("at most 32 points (point-cap)", n <= maxPoints, fmt.Sprintf("%d points; the rules allow %d", n, maxPoints)))

	form := s.RegionForm
	if form == "" {
		form = score.DefaultRegionForm
	}
	if s.Regions == nil {
		cs = append(cs, check("C_max and C_min within bounds (region-basis, region-computation)", false, s.RegionsErr))
		cs = append(cs, check("point in a region (concurrency-in-range)", false, "regions cannot be computed: "+s.RegionsErr))
	} else {
		clamped := ""
		if s.Regions.CMinClamped {
			clamped = fmt.Sprintf(" (clamped from the lowest point %d)", s.CMin)
		}
		cs = append(cs, check("C_max and C_min within bounds (region-basis, region-computation)", true,
			fmt.Sprintf("region form %s: C_max %d (%s) > 32, C_min %d%s", form, s.CMax, s.CMaxSource, s.Regions.CMin, clamped)))
		reason := fmt.Sprintf("every point lies in a region or the margin (up to %d)", max(s.Regions.Margin.End, s.Regions.High.End))
		if len(outside) > 0 {
			reason = "outside every region: " + strings.Join(outside, ", ")
		}
		cs = append(cs, check("point in a region (concurrency-in-range)", len(outside) == 0, reason))
	}
	reason := "points at or below 32: " + strings.Join(ultra, ", ")
	if len(ultra) == 0 {
		reason = "no point at or below 32"
	}
	cs = append(cs, check("an ultra-low point, 1..32 (ultra-low-concurrency-coverage)", len(ultra) > 0, reason))
	if s.Regions != nil {
		for _, r := range []struct{ rule, name string }{
			{"low-concurrency-coverage", score.RegionLow},
			{"med-concurrency-coverage", score.RegionMedium},
			{"high-concurrency-coverage", score.RegionHigh},
		} {
			rng := map[string]score.Range{score.RegionLow: s.Regions.Low, score.RegionMedium: s.Regions.Medium, score.RegionHigh: s.Regions.High}[r.name]
			reason := fmt.Sprintf("%d points in %s", per[r.name], rng)
			if rng.Empty() {
				reason += " (empty by rounding: the rules do not resolve this)"
			}
			if len(margin) > 0 && r.name == score.RegionHigh {
				reason += "; margin points (legal, satisfy no region): " + strings.Join(margin, ", ")
			}
			cs = append(cs, check(fmt.Sprintf("a point in %s (%s)", r.name, r.rule), per[r.name] > 0, reason))
		}
		extra := per[score.RegionLow] + per[score.RegionMedium] + per[score.RegionHigh]
		c := Check{Name: "3 more points in low, medium or high (rules §5.3; the checker counts points only)", Status: CheckInfo,
			Reason: fmt.Sprintf("low+medium+high hold %d points; §5.3 asks 1 each plus 3 more", extra)}
		if extra >= 6 {
			c.Status = CheckPass
		}
		cs = append(cs, c)
		var wrong []string
		for _, p := range s.Points {
			if p.DeclaredRegion != "" && p.DeclaredRegion != "submitters_choice" && p.DeclaredRegion != p.Region {
				wrong = append(wrong, fmt.Sprintf("c=%d declares %s, computed %s", p.Concurrency, p.DeclaredRegion, p.Region))
			}
		}
		if len(wrong) > 0 {
			// The checker warns (region-placement).
			cs = append(cs, Check{Name: "declared region matches (region-placement)", Status: CheckWarn, Reason: strings.Join(wrong, "; ")})
		}
	}

	// run-point-config, result-summary-present, accuracy-file, result-detail-present:
	// the files of a submission point.
	var missing []string
	subs := 0
	for _, p := range s.Points {
		if p.Kind == "submission" {
			subs++
		}
		if len(p.MissingFiles) > 0 {
			missing = append(missing, fmt.Sprintf("c=%d lacks %s", p.Concurrency, strings.Join(p.MissingFiles, ", ")))
		}
	}
	if subs > 0 {
		reason := "every point has point.yaml, a result summary and accuracy results"
		if len(missing) > 0 {
			reason = strings.Join(missing, "; ")
		}
		cs = append(cs, check("point files (run-point-config, result-summary-present, accuracy-file, result-detail-present)", len(missing) == 0, reason))
	}
	if c, ok := pointFileChecks(s); ok {
		cs = append(cs, c)
	}

	// benchmark-type-consistency: every point an agentic load pattern.
	var patterns []string
	seen := map[string]bool{}
	for _, p := range s.Points {
		lp := p.LoadPattern
		if lp == "" {
			lp = "agentic_inference"
		}
		if !seen[lp] {
			seen[lp] = true
			patterns = append(patterns, lp)
		}
	}
	cs = append(cs, check("one agentic load pattern (benchmark-type-consistency)", len(patterns) == 1 && patterns[0] == "agentic_inference",
		"load patterns: "+strings.Join(patterns, ", ")))

	// config-consistency-model, config-consistency-dataset.
	models, dss := map[string]bool{}, map[string]bool{}
	for _, p := range s.Points {
		if m := p.Manifest.Config.Model; m != "" {
			models[m] = true
		}
		switch {
		case p.Manifest.DatasetHash != "":
			dss[p.Manifest.DatasetHash] = true
		case p.DatasetName != "":
			dss[p.DatasetName] = true
		case p.Manifest.Config.Dataset != "":
			dss[filepath.Base(p.Manifest.Config.Dataset)] = true
		}
	}
	cs = append(cs, check("one model (config-consistency-model)", len(models) <= 1, "models: "+strings.Join(sortedKeys(models), ", ")))
	if w := modelFolderWarnings(s); len(w) > 0 {
		cs = append(cs, Check{Name: "the model folder names the ruleset's model (agentic-accuracy)", Status: CheckWarn,
			Reason: strings.Join(w, "; ")})
	}
	cs = append(cs, check("one dataset (config-consistency-dataset)", len(dss) <= 1, "datasets: "+strings.Join(sortedKeys(dss), ", ")))

	// accuracy-coverage: an accuracy result at each of the 4 mandatory bands.
	if s.Regions != nil {
		covered := map[string]bool{}
		for _, p := range s.Points {
			if !carriesAccuracy(p) {
				continue
			}
			if p.Concurrency <= score.UltraLowMax {
				covered[score.RegionLowLatency] = true
			}
			if score.Mandatory(p.Region) && p.Region != score.RegionLowLatency {
				covered[p.Region] = true
			}
		}
		var missing []string
		for _, b := range score.MandatoryRegions() {
			if !covered[b] {
				missing = append(missing, b)
			}
		}
		reason := "every mandatory band has a point with accuracy results"
		if len(missing) > 0 {
			reason = "no accuracy results in: " + strings.Join(missing, ", ")
		}
		cs = append(cs, check("accuracy at the 4 mandatory bands (accuracy-coverage)", len(missing) == 0, reason))
	}

	// agentic-accuracy-swebench: the curve's mean of N.
	switch {
	case s.SWEBench == nil:
		cs = append(cs, Check{Name: "SWE-bench mean of the 4 regions (agentic-accuracy-swebench)", Status: CheckInfo,
			Reason: "no point carries a SWE-bench result (score --swebench, or a published swe_bench entry)"})
	case !s.SWEBench.Evaluated():
		c := Check{Name: "SWE-bench mean of the 4 regions (agentic-accuracy-swebench)", Status: CheckWarn, Reason: s.SWEBench.Note}
		if s.SWEBench.Severity == schemas.SeverityError {
			c.Status = CheckFail
		}
		cs = append(cs, c)
	default:
		reason := fmt.Sprintf("%.4f %s: %s", s.SWEBench.Value, s.SWEBench.Threshold, s.SWEBench.Note)
		if m := s.SWEBenchMean; m != nil {
			var bands []string
			for _, b := range m.Bands {
				bands = append(bands, fmt.Sprintf("%s %.4f (c=%v)", b.Region, b.Score, b.Points))
			}
			reason += "; " + strings.Join(bands, ", ")
			if len(m.Warnings) > 0 {
				reason += "; " + strings.Join(m.Warnings, "; ")
			}
		}
		c := check("SWE-bench mean of the 4 regions (agentic-accuracy-swebench)", s.SWEBench.Pass, reason)
		if m := s.SWEBenchMean; c.Status == CheckPass && m != nil && m.N != len(score.MandatoryRegions()) {
			c.Status = CheckWarn // the checker warns on a short set that clears the threshold
		}
		if bad := swebenchErrors(s); len(bad) > 0 {
			// The checker errors on a malformed result; the others still count.
			c.Status, c.Reason = CheckFail, c.Reason+"; malformed: "+strings.Join(bad, "; ")
		}
		cs = append(cs, c)
	}

	var bad, notOfficialDS, unknownDS []string
	for _, p := range s.Points {
		t, d := p.Manifest.Config.Trajectories, p.Manifest.DatasetSize
		size := d
		if d <= 0 {
			// A reference run or a submission point does not record its dataset's
			// size: the official one's stands in.
			unknownDS = append(unknownDS, fmt.Sprintf("c=%d (%d trajectories)", p.Concurrency, t))
			size = officialDatasetSize
		}
		if why := official.Budget(t, size); why != "" {
			bad = append(bad, fmt.Sprintf("c=%d: %s", p.Concurrency, why))
		}
		if d <= 0 {
			continue
		}
		if d != officialDatasetSize {
			notOfficialDS = append(notOfficialDS, fmt.Sprintf("c=%d: %d", p.Concurrency, d))
		}
	}
	reason = "every point issues a positive multiple of its dataset's size"
	if len(bad) > 0 {
		reason = strings.Join(bad, "; ")
	}
	if len(unknownDS) > 0 {
		reason += "; dataset size not recorded (checked against 613): " + strings.Join(unknownDS, ", ")
	}
	cs = append(cs, check("trajectory budget a multiple of the dataset size", len(bad) == 0, reason))
	reason = "every point uses a 613-trajectory dataset"
	if len(notOfficialDS) > 0 {
		reason = "dataset size is not the official 613: " + strings.Join(notOfficialDS, "; ")
	}
	c := check("official dataset size (613)", len(notOfficialDS) == 0, reason)
	if len(unknownDS) == len(s.Points) && len(s.Points) > 0 {
		c = Check{Name: c.Name, Status: CheckInfo, Reason: "no point records its dataset's size"}
	}
	cs = append(cs, c)

	// The settings of internal/official but the budget (the check above): an
	// agentrace run's sampling profile too (a reference run's config records none).
	var unofficial []string
	for _, p := range s.Points {
		c := p.Manifest.Config
		cond := official.Conditions{Salt: official.Bool(c.Salt), Delays: official.Bool(c.Delays), DelayScale: c.DelayScale,
			StopIssuing: official.Bool(c.StopIssuingAtWindow)}
		if p.Kind == archive.KindAgentrace {
			cond.Profile, cond.Model = official.String(c.Profile), c.Model
		}
		if why := official.Reasons(cond); len(why) > 0 {
			unofficial = append(unofficial, fmt.Sprintf("c=%d: %s", p.Concurrency, strings.Join(why, ", ")))
		}
	}
	reason = "salt on, delays on at scale 1, stop-issuing off, a sampling profile at every point"
	if len(unofficial) > 0 {
		reason = strings.Join(unofficial, "; ")
	}
	cs = append(cs, check("official settings", len(unofficial) == 0, reason))

	// A point whose scores.json judged it under another ruleset than the curve's:
	// its gates are not the curve's rules.
	curveRules, _, _ := strings.Cut(s.Ruleset, ", ")
	var other []string
	for _, p := range s.Points {
		if p.Ruleset != "" && curveRules != "" && p.Ruleset != curveRules {
			other = append(other, fmt.Sprintf("c=%d: its scores.json judged it under %s", p.Concurrency, p.Ruleset))
		}
	}
	reason = "every point's scores were judged under the curve's ruleset " + curveRules
	if len(other) > 0 {
		reason = strings.Join(other, "; ") + fmt.Sprintf(" (the curve's: %s; score --overwrite --ruleset %s re-judges them)", curveRules, curveRules)
	}
	cs = append(cs, check("one ruleset for every point", len(other) == 0, reason))

	var incons []string
	for _, p := range s.Points {
		if p.PublishedSummary != nil {
			incons = append(incons, PublishedConsistency(p.Concurrency, p.PublishedSummary)...)
			continue
		}
		incons = append(incons, Consistency(p)...)
	}
	reason = "completed <= issued and failed <= completed (the reference counts a failed turn as completed too); duration > 0; output tokens >= 0; TPOT P90 finite and > 0; system_tps, tps_per_user and e2e_avg_interactivity re-derived from result_summary.json within 1% (a published summary as published); counts and window end agree with the run manifest"
	if len(incons) > 0 {
		reason = strings.Join(incons, "; ")
	}
	cs = append(cs, check("metric consistency within 1% (metric-consistency-*)", len(incons) == 0, reason))

	var notDone []string
	for _, p := range s.Points {
		if p.Manifest.State != "complete" && !(p.Kind != "" && p.Kind != "agentrace" && p.Manifest.State == "") {
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

	var unscored, failing, open []string
	for _, p := range s.Points {
		var g, ne []string
		for _, gt := range p.Gates {
			switch {
			case gt.Informational:
			case gt.Outcome == schemas.OutcomeFail:
				g = append(g, fmt.Sprintf("%s %.4g not %s", gt.Name, gt.Value, gt.Threshold))
			case gt.Blocking():
				g = append(g, fmt.Sprintf("%s not evaluated (error): %s", gt.Name, gt.Reason))
			case !gt.Evaluated():
				ne = append(ne, fmt.Sprintf("%s (%s): %s", gt.Name, gt.Severity, gt.Reason))
			}
		}
		switch {
		case p.GatesOutcome == "":
			unscored = append(unscored, fmt.Sprintf("c=%d", p.Concurrency))
		case len(g) > 0:
			failing = append(failing, fmt.Sprintf("c=%d (%s)", p.Concurrency, strings.Join(g, ", ")))
		}
		if len(ne) > 0 {
			open = append(open, fmt.Sprintf("c=%d (%s)", p.Concurrency, strings.Join(ne, ", ")))
		}
	}
	switch {
	case len(unscored) == len(s.Points):
		cs = append(cs, check("accuracy gates per point (agentic-accuracy-inline, agentic-osl-range)", false, "no scores.json found: run `agentrace score` on each run"))
	default:
		var why []string
		if len(failing) > 0 {
			why = append(why, "failing: "+strings.Join(failing, "; "))
		}
		if len(unscored) > 0 {
			why = append(why, "not scored: "+strings.Join(unscored, ", "))
		}
		reason = "every point passes its gates"
		c := check("accuracy gates per point (agentic-accuracy-inline, agentic-osl-range)", len(why) == 0, reason)
		if len(open) > 0 {
			why = append(why, "not evaluated: "+strings.Join(open, "; "))
			if c.Status == CheckPass {
				c.Status = CheckWarn
			}
		}
		if len(why) > 0 {
			c.Reason = strings.Join(why, "; ")
		}
		cs = append(cs, c)
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
	c = Check{Name: "minimum duration (§6; how it applies to agentic points is not stated)", Status: CheckInfo, Reason: reason}
	if len(short) > 0 {
		c.Status = CheckWarn // the checker warns (point-duration)
	}
	cs = append(cs, c)

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
	// Counted as the reference counts (failed turns are completed too): completed
	// <= issued and failed <= completed; issued covers the point's issued turns.
	if rs.Completed > rs.Issued {
		bad("completed %d > issued %d", rs.Completed, rs.Issued)
	}
	if rs.Failed > rs.Completed {
		bad("failed %d > completed %d (a failed turn is completed too)", rs.Failed, rs.Completed)
	}
	if rs.Issued < p.Issued {
		bad("result_summary.json counts %d issued turns, fewer than the point's %d sent", rs.Issued, p.Issued)
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

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// PublishedConsistency runs the checker's metric-consistency rules on a published
// result summary (a reference run's or a submission point's), as published:
// duration_ns > 0, completed + failed = issued (when issued is recorded), output
// tokens >= 0, a TPOT P90 that is finite and > 0, and a stored system_tps or
// tps_per_user within 1% of what the summary's own figures give.
func PublishedConsistency(c int, data []byte) []string {
	var out []string
	bad := func(f string, a ...any) {
		out = append(out, fmt.Sprintf("c=%d: published summary: ", c)+fmt.Sprintf(f, a...))
	}
	var rs struct {
		Issued    *float64 `json:"n_samples_issued"`
		Completed *float64 `json:"n_samples_completed"`
		Failed    *float64 `json:"n_samples_failed"`
		DurNs     *float64 `json:"duration_ns"`
		OSL       struct {
			Total *float64 `json:"total"`
		} `json:"output_sequence_lengths"`
		TPOT struct {
			P map[string]*float64 `json:"percentiles"`
		} `json:"tpot"`
		SystemTPS  *float64 `json:"system_tps"`
		TPSPerUser *float64 `json:"tps_per_user"`
	}
	if err := json.Unmarshal(data, &rs); err != nil {
		bad("%v", err)
		return out
	}
	v := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	switch {
	case rs.Completed == nil:
		bad("no n_samples_completed")
	case rs.DurNs == nil:
		bad("no duration_ns")
	}
	if v(rs.DurNs) <= 0 {
		bad("duration_ns %v is not positive", v(rs.DurNs))
	}
	if v(rs.Issued) > 0 && v(rs.Completed)+v(rs.Failed) != v(rs.Issued) {
		bad("completed %v + failed %v != issued %v", v(rs.Completed), v(rs.Failed), v(rs.Issued))
	}
	if v(rs.OSL.Total) < 0 {
		bad("output_sequence_lengths.total %v is negative", v(rs.OSL.Total))
	}
	p90 := rs.TPOT.P["90.0"]
	if p90 == nil {
		p90 = rs.TPOT.P["90"]
	}
	switch {
	case p90 == nil:
		bad("no TPOT P90 (tpot.percentiles[\"90.0\"]): tps_per_user has no other source")
	case !(*p90 > 0) || math.IsInf(*p90, 0):
		bad("TPOT P90 %v is not finite and positive", *p90)
	default:
		if rs.TPSPerUser != nil {
			if d := relDiff(1000/(*p90/1e6), *rs.TPSPerUser); d > consistencyTol {
				bad("stored tps_per_user %.6g differs from 1000 / TPOT P90 by %.2f%%", *rs.TPSPerUser, 100*d)
			}
		}
	}
	if rs.SystemTPS != nil && v(rs.DurNs) > 0 {
		if d := relDiff(v(rs.OSL.Total)/(v(rs.DurNs)/1e9), *rs.SystemTPS); d > consistencyTol {
			bad("stored system_tps %.6g differs from output tokens / duration by %.2f%%", *rs.SystemTPS, 100*d)
		}
	}
	return out
}

// swebenchErrors lists the points whose published SWE-bench result is
// malformed (the checker's error), left out of the curve's mean.
func swebenchErrors(s *System) []string {
	var bad []string
	for _, p := range s.Points {
		if pr := p.SWEBenchProblem; pr != nil && pr.Severity == schemas.SeverityError {
			bad = append(bad, fmt.Sprintf("c=%d: %s", p.Concurrency, pr.Reason))
		}
	}
	return bad
}

// carriesAccuracy tells whether a point counts for accuracy-coverage: a
// submission point when its accuracy results file is present and validates (the
// checker's accuracy_by_point), another point when it was scored or has a
// SWE-bench result.
func carriesAccuracy(p *Point) bool {
	if p.scores != nil && p.scores.Published != nil {
		return p.scores.Published.AccuracyProblem == nil
	}
	return p.GatesOutcome != "" || p.SWEBench != nil
}

// modelFolderWarnings lists the submission points whose config names a model of
// another ruleset than their model folder's name: the checker chooses the
// thresholds by the folder's name, and so does agentrace (score.ScoreRun warns).
func modelFolderWarnings(s *System) []string {
	var out []string
	for _, p := range s.Points {
		if p.scores == nil {
			continue
		}
		for _, w := range p.scores.Warnings {
			if strings.HasPrefix(w, score.ModelFolderWarningPrefix) {
				out = append(out, fmt.Sprintf("c=%d: %s", p.Concurrency, w))
			}
		}
	}
	return out
}

// pointFileChecks judges the submission checker's findings on the points'
// point.yaml and system_desc.json (point-config-valid, load-pattern,
// region-declared, point-dirname-concurrency, system-description-present,
// system-description-valid): it fails on an error, warns on a warning, and is
// absent when the curve has no submission point.
func pointFileChecks(s *System) (Check, bool) {
	var errs, warns []string
	subs := 0
	for _, p := range append(append([]*Point(nil), s.Points...), s.Unparsed...) {
		if p.Kind == archive.KindSubmission {
			subs++
		}
		for _, fc := range p.FileChecks {
			line := fmt.Sprintf("c=%d %s", p.Concurrency, fc)
			if fc.Severity == schemas.SeverityError {
				errs = append(errs, line)
			} else {
				warns = append(warns, line)
			}
		}
	}
	if subs == 0 {
		return Check{}, false
	}
	c := Check{Name: "point.yaml and system_desc.json values (point-config-valid, load-pattern, region-declared, point-dirname-concurrency, system-description-present, system-description-valid)",
		Status: CheckPass, Reason: "every point's point.yaml and system description read as the checker reads them"}
	if len(s.Unparsed) > 0 {
		var off []string
		for _, p := range s.Unparsed {
			off = append(off, p.RunDir)
		}
		errs = append(errs, fmt.Sprintf("left off the curve (C_min from %d of %d points, region-basis): %s",
			len(s.Points), len(s.Points)+len(s.Unparsed), strings.Join(off, ", ")))
	}
	switch {
	case len(errs) > 0:
		c.Status, c.Reason = CheckFail, strings.Join(append(errs, warns...), "; ")
	case len(warns) > 0:
		c.Status, c.Reason = CheckWarn, strings.Join(warns, "; ")
	}
	return c, true
}

// ConfigInvalid tells whether the point's point.yaml does not validate (the
// checker's point-config-valid error): the checker leaves such a point off its
// curve.
func (p *Point) ConfigInvalid() bool {
	for _, fc := range p.FileChecks {
		if fc.Rule == "point-config-valid" && fc.Severity == schemas.SeverityError {
			return true
		}
	}
	return false
}
