package curve

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/score/checker"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/official"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/rulesets"
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

// failIfAny is a check that fails when found lists anything: its reason is
// then prefix and found joined by sep, else ok.
func failIfAny(name, ok, prefix, sep string, found []string) []Check {
	if len(found) == 0 {
		return []Check{check(name, true, ok)}
	}
	return []Check{check(name, false, prefix+strings.Join(found, sep))}
}

// byReason collects what points have to say, each reason said once with the
// points that share it, in the order first seen: "c=1, 2, 4: reason".
type byReason struct {
	order []string
	cs    map[string][]string
}

func (b *byReason) add(concurrency int, reason string) {
	if b.cs == nil {
		b.cs = map[string][]string{}
	}
	if _, ok := b.cs[reason]; !ok {
		b.order = append(b.order, reason)
	}
	b.cs[reason] = append(b.cs[reason], strconv.Itoa(concurrency))
}

func (b *byReason) list() []string {
	out := make([]string, 0, len(b.order))
	for _, r := range b.order {
		out = append(out, "c="+strings.Join(b.cs[r], ", ")+": "+r)
	}
	return out
}

func check(name string, ok bool, reason string) Check {
	st := CheckPass
	if !ok {
		st = CheckFail
	}
	return Check{Name: name, Status: st, Reason: reason}
}

// notEvaluated is a region rule the curve cannot run without a C_max
// (System.NoCMax): not evaluated, the checker's region-basis warning.
func notEvaluated(name string, s *System) Check {
	return Check{Name: name, Status: CheckWarn, Reason: "not evaluated (warning): " + s.NoCMax}
}

// Coverage runs the curve checks on a system's points: the submission checker's
// checks of an agentic curve (each named with the checker's rule id; see
// CheckerRules for what is covered and what is not), then agentrace's own. Each
// check is one function of curveChecks, in the order they are shown.
func Coverage(s *System) []Check {
	var cs []Check
	for _, rule := range curveChecks {
		cs = append(cs, rule(s)...)
	}
	return cs
}

// curveChecks are the curve checks in the order Coverage shows them; each
// function is one rule (named by the checker's rule id where it has one) and
// returns its checks, none where the rule does not apply.
var curveChecks = []func(*System) []Check{
	pointCount, pointCap, regionBasis, concurrencyInRange, ultraLowCoverage,
	regionCoverage, regionExtraPoints, regionPlacement, pointFiles, pointFileRules,
	benchmarkTypeConsistency, configConsistencyModel, modelFolder,
	configConsistencyDataset, accuracyCoverage, agenticAccuracySWEBench,
	trajectoryBudget, officialDatasetSizeCheck, officialSettings, oneRuleset,
	metricConsistency, runsComplete, accuracyGates, pointDuration,
	officialTokenCounts, submissionCheckerRules,
}

// consistencyRules are the checker's rules on a point's result summary.
var consistencyRules = map[string]bool{"result-file-valid": true, "metric-consistency-duration": true, "metric-consistency-accounting": true,
	"metric-consistency-output-tokens": true, "metric-consistency-system-tps": true, "metric-consistency-tpot-p90": true,
	"metric-consistency-tps-per-user": true, "agentic-metric-consistency": true}

// checkerConsistency is the point's metric consistency as the submission checker
// judged its result_summary.json (score/checker, the one home of those rules):
// ok is false where the checker did not judge the point or read no summary there
// (a tree in the layout of mlperf_endpoints_log_summary.json, which agentrace
// then reads itself, PublishedConsistency).
func (p *Point) checkerConsistency() ([]string, bool) {
	if !p.checkerJudged {
		return nil, false
	}
	var out []string
	for _, f := range p.CheckerFindings {
		if f.Point == "" || f.Level == checker.LevelCurve {
			continue
		}
		if f.Rule == "result-summary-present" || f.Rule == "point-rules-skipped" {
			return nil, false
		}
		if consistencyRules[f.Rule] && f.Severity == checker.Error {
			out = append(out, fmt.Sprintf("c=%d: %s: %s", p.Concurrency, f.Rule, f.Reason))
		}
	}
	return out, true
}

// submissionCheckerRules is every rule of the submission checker's catalog on
// the curve's submission points, judged as the checker judges their tree
// (score/checker): a failure where it finds an error, a warning where it warns
// only, each finding once (rule (severity) where: reason).
func submissionCheckerRules(s *System) []Check {
	judged := false
	var errs, warns []string
	seen := map[string]bool{}
	var not []string
	for _, p := range s.Points {
		if !p.checkerJudged {
			continue
		}
		judged = true
		not = p.CheckerNotEvaluated
		for _, f := range p.CheckerFindings {
			key := f.Rule + "\x00" + f.Path + "\x00" + f.Reason
			if seen[key] {
				continue
			}
			seen[key] = true
			where := f.Scope
			if f.Point != "" {
				where = f.Point
			}
			line := fmt.Sprintf("%s (%s) %s: %s", f.Rule, f.Severity, where, f.Reason)
			if f.Severity == checker.Error {
				errs = append(errs, line)
			} else {
				warns = append(warns, line)
			}
		}
	}
	if !judged {
		return nil
	}
	name := fmt.Sprintf("the submission checker's %d rules", len(checker.Rules))
	note := ""
	if len(not) > 0 {
		note = "; not evaluated on a bare system folder: " + strings.Join(not, ", ")
	}
	switch {
	case len(errs) > 0:
		return []Check{{Name: name, Status: CheckFail, Reason: fmt.Sprintf("%d errors, %d warnings: %s%s", len(errs), len(warns), strings.Join(append(errs, warns...), "; "), note)}}
	case len(warns) > 0:
		return []Check{{Name: name, Status: CheckWarn, Reason: fmt.Sprintf("%d warnings: %s%s", len(warns), strings.Join(warns, "; "), note)}}
	}
	return []Check{{Name: name, Status: CheckPass, Reason: "no error or warning" + note}}
}

// tally is where a curve's points fall: the ultra-low ones, the margin ones, those
// outside every region, and the count per region.
type tally struct {
	margin, outside, ultra []string
	per                    map[string]int
}

func regionTally(pts []*Point) tally {
	t := tally{per: map[string]int{}}
	for _, p := range pts {
		if p.Concurrency >= 1 && p.Concurrency <= score.UltraLowMax {
			t.ultra = append(t.ultra, fmt.Sprintf("c=%d", p.Concurrency))
		}
		switch {
		case p.Region == score.RegionMargin:
			t.margin = append(t.margin, fmt.Sprintf("c=%d", p.Concurrency))
		case p.Region == "":
			t.outside = append(t.outside, fmt.Sprintf("c=%d", p.Concurrency))
		default:
			t.per[p.Region]++
		}
	}
	return t
}

// pointCount is point-count: at least the ruleset's minimum of points. Every
// point of the curve counts (the checker counts the point folders), margin points
// and points whose point.yaml does not validate included.
func pointCount(s *System) []Check {
	n, least := len(s.Points)+len(s.Unparsed), s.limits.MinPoints
	return []Check{check(fmt.Sprintf("at least %d points (point-count)", least), n >= least,
		fmt.Sprintf("%s; an agentic curve needs %d", english.Count(n, "point", "points"), least))}
}

// pointCap is point-cap: at most the ruleset's maximum of points, margin points
// included.
func pointCap(s *System) []Check {
	n, most := len(s.Points)+len(s.Unparsed), s.limits.MaxPoints
	return []Check{check(fmt.Sprintf("at most %d points (point-cap)", most), n <= most, fmt.Sprintf("%d points; the rules allow %d", n, most))}
}

// regionBasis is region-basis and region-computation: C_max and C_min within
// bounds.
func regionBasis(s *System) []Check {
	const name = "C_max and C_min within bounds (region-basis, region-computation)"
	if s.NoCMax != "" {
		return []Check{notEvaluated(name, s)}
	}
	if s.Regions == nil {
		return []Check{check(name, false, s.RegionsErr)}
	}
	form := s.RegionForm
	if form == "" {
		form = rulesets.DefaultRegionForm
	}
	clamped := ""
	if s.Regions.CMinClamped {
		clamped = fmt.Sprintf(" (clamped from the lowest point %d)", s.CMin)
	}
	return []Check{check(name, true,
		fmt.Sprintf("region form %s: C_max %d (%s) > 32, C_min %d%s", form, s.CMax, s.CMaxSource, s.Regions.CMin, clamped))}
}

// concurrencyInRange is concurrency-in-range: every point in a region or the
// margin.
func concurrencyInRange(s *System) []Check {
	const name = "point in a region (concurrency-in-range)"
	if s.NoCMax != "" {
		return []Check{notEvaluated(name, s)}
	}
	if s.Regions == nil {
		return []Check{check(name, false, "regions cannot be computed: "+s.RegionsErr)}
	}
	outside := regionTally(s.Points).outside
	return failIfAny(name, fmt.Sprintf("every point lies in a region or the margin (up to %d)", max(s.Regions.Margin.End, s.Regions.High.End)), "outside every region: ", ", ", outside)
}

// ultraLowCoverage is ultra-low-concurrency-coverage: a point at 1..32.
func ultraLowCoverage(s *System) []Check {
	ultra := regionTally(s.Counted()).ultra
	reason := "points at or below 32: " + strings.Join(ultra, ", ")
	if len(ultra) == 0 {
		reason = "no point at or below 32"
	}
	return []Check{check("an ultra-low point, 1..32 (ultra-low-concurrency-coverage)", len(ultra) > 0, reason)}
}

// regionCoverage is low-concurrency-coverage, med-concurrency-coverage and
// high-concurrency-coverage: a point in each region.
func regionCoverage(s *System) []Check {
	if s.NoCMax != "" {
		return []Check{notEvaluated("a point in each region (low-concurrency-coverage, med-concurrency-coverage, high-concurrency-coverage)", s)}
	}
	if s.Regions == nil {
		return nil
	}
	t := regionTally(s.Counted())
	var cs []Check
	for _, r := range []struct{ rule, name string }{
		{"low-concurrency-coverage", score.RegionLow},
		{"med-concurrency-coverage", score.RegionMedium},
		{"high-concurrency-coverage", score.RegionHigh},
	} {
		rng := map[string]score.Range{score.RegionLow: s.Regions.Low, score.RegionMedium: s.Regions.Medium, score.RegionHigh: s.Regions.High}[r.name]
		reason := fmt.Sprintf("%d points in %s", t.per[r.name], rng)
		if rng.Empty() {
			reason += " (empty by rounding: the rules do not resolve this)"
		}
		if len(t.margin) > 0 && r.name == score.RegionHigh {
			reason += "; margin points (legal, satisfy no region): " + strings.Join(t.margin, ", ")
		}
		cs = append(cs, check(fmt.Sprintf("a point in %s (%s)", r.name, r.rule), t.per[r.name] > 0, reason))
	}
	return cs
}

// regionExtraPoints is §5.3's 3 more points in low, medium or high (the checker
// counts points only): shown, never failing.
func regionExtraPoints(s *System) []Check {
	if s.Regions == nil {
		return nil
	}
	per := regionTally(s.Points).per
	extra := per[score.RegionLow] + per[score.RegionMedium] + per[score.RegionHigh]
	c := Check{Name: "3 more points in low, medium or high (rules §5.3; the checker counts points only)", Status: CheckInfo,
		Reason: fmt.Sprintf("low+medium+high hold %d points; §5.3 asks 1 each plus 3 more", extra)}
	if extra >= 6 {
		c.Status = CheckPass
	}
	return []Check{c}
}

// regionPlacement is region-placement: a point's declared region is the
// computed one (the checker warns).
func regionPlacement(s *System) []Check {
	if s.Regions == nil {
		return nil
	}
	var wrong []string
	for _, p := range s.Points {
		if p.DeclaredRegion != "" && p.DeclaredRegion != "submitters_choice" && p.DeclaredRegion != p.Region {
			wrong = append(wrong, fmt.Sprintf("c=%d declares %s, computed %s", p.Concurrency, p.DeclaredRegion, p.Region))
		}
	}
	if len(wrong) == 0 {
		return nil
	}
	return []Check{{Name: "declared region matches (region-placement)", Status: CheckWarn, Reason: strings.Join(wrong, "; ")}}
}

// pointFiles is measurement-points-present and result-summary-present: a
// submission point's point.yaml and result summary.
func pointFiles(s *System) []Check {
	var missing []string
	subs := 0
	for _, p := range s.Points {
		if p.point {
			subs++
		}
		if len(p.MissingFiles) > 0 {
			missing = append(missing, fmt.Sprintf("c=%d lacks %s", p.Concurrency, strings.Join(p.MissingFiles, ", ")))
		}
	}
	if subs == 0 {
		return nil
	}
	return failIfAny("point files (measurement-points-present, result-summary-present)", "every point has point.yaml and a result summary", "", "; ", missing)
}

// pointFileRules is point-config-valid, system-description-present,
// system-description-valid and result-file-valid: point.yaml, system_desc.json
// and the result summary read as the submission checker types them
// (pointFileChecks).
func pointFileRules(s *System) []Check {
	if c, ok := pointFileChecks(s); ok {
		return []Check{c}
	}
	return nil
}

// benchmarkTypeConsistency is benchmark-type-consistency: every point an agentic
// load pattern.
func benchmarkTypeConsistency(s *System) []Check {
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
	return []Check{check("one agentic load pattern (benchmark-type-consistency)", len(patterns) == 1 && patterns[0] == "agentic_inference",
		"load patterns: "+strings.Join(patterns, ", "))}
}

// configConsistencyModel is config-consistency-model: one model.
func configConsistencyModel(s *System) []Check {
	models := map[string]bool{}
	for _, p := range s.Points {
		if m := p.Manifest.Config.Model; m != "" {
			models[m] = true
		}
	}
	return []Check{check("one model (config-consistency-model)", len(models) <= 1, "models: "+strings.Join(sortedKeys(models), ", "))}
}

// modelFolder is agentic-accuracy's choice of thresholds by the model folder's
// name: a warning where a point's config names another ruleset's model.
func modelFolder(s *System) []Check {
	w := modelFolderWarnings(s)
	if len(w) == 0 {
		return nil
	}
	return []Check{{Name: "the model folder names the ruleset's model (agentic-accuracy)", Status: CheckWarn,
		Reason: strings.Join(w, "; ")}}
}

// configConsistencyDataset is config-consistency-dataset: one dataset.
func configConsistencyDataset(s *System) []Check {
	dss := map[string]bool{}
	for _, p := range s.Points {
		switch {
		case p.Manifest.DatasetHash != "":
			dss[p.Manifest.DatasetHash] = true
		case p.DatasetName != "":
			dss[p.DatasetName] = true
		case p.Manifest.Config.Dataset != "":
			dss[filepath.Base(p.Manifest.Config.Dataset)] = true
		}
	}
	return []Check{check("one dataset (config-consistency-dataset)", len(dss) <= 1, "datasets: "+strings.Join(sortedKeys(dss), ", "))}
}

// accuracyCoverage is accuracy-coverage: an accuracy result at each of the 4
// mandatory bands.
func accuracyCoverage(s *System) []Check {
	if s.NoCMax != "" {
		return []Check{notEvaluated("accuracy at the 4 mandatory bands (accuracy-coverage)", s)}
	}
	if s.Regions == nil {
		return nil
	}
	covered := map[string]bool{}
	for _, p := range s.Counted() {
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
	return failIfAny("accuracy at the 4 mandatory bands (accuracy-coverage)", "every mandatory band has a point with accuracy results", "no accuracy results in: ", ", ", missing)
}

// agenticAccuracySWEBench is agentic-accuracy-swebench: the curve's mean of N.
func agenticAccuracySWEBench(s *System) []Check {
	const name = "SWE-bench mean of the 4 regions (agentic-accuracy-swebench)"
	switch {
	case s.SWEBench == nil:
		return []Check{{Name: name, Status: CheckInfo,
			Reason: "no point carries a SWE-bench result (a SWE-bench harness report scored with the point, or a published swe_bench entry)"}}
	case !s.SWEBench.Evaluated():
		c := Check{Name: name, Status: CheckWarn, Reason: s.SWEBench.Note}
		if s.SWEBench.Severity == schemas.SeverityError {
			c.Status = CheckFail
		}
		return []Check{c}
	}
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
	c := check(name, s.SWEBench.Pass, reason)
	if m := s.SWEBenchMean; c.Status == CheckPass && m != nil && m.N != len(score.MandatoryRegions()) {
		c.Status = CheckWarn // the checker warns on a short set that clears the threshold
	}
	if bad := swebenchErrors(s); len(bad) > 0 {
		// The checker errors on a malformed result; the others still count.
		c.Status, c.Reason = CheckFail, c.Reason+"; malformed: "+strings.Join(bad, "; ")
	}
	return []Check{c}
}

// trajectoryBudget: every point issues a positive multiple of its dataset's size
// (internal/official's budget); a point that does not record its dataset's size
// (a reference run, a submission point) is checked against the official one's.
func trajectoryBudget(s *System) []Check {
	var bad, unknownDS []string
	for _, p := range s.Points {
		t, size := p.Manifest.Config.Trajectories, p.Manifest.DatasetSize
		if size <= 0 {
			unknownDS = append(unknownDS, fmt.Sprintf("c=%d (%d trajectories)", p.Concurrency, t))
			size = s.limits.DatasetSize
		}
		if why := official.Budget(t, size); why != "" {
			bad = append(bad, fmt.Sprintf("c=%d: %s", p.Concurrency, why))
		}
	}
	reason := "every point issues a positive multiple of its dataset's size"
	if len(bad) > 0 {
		reason = strings.Join(bad, "; ")
	}
	if len(unknownDS) > 0 {
		reason += fmt.Sprintf("; dataset size not recorded (checked against %d): ", s.limits.DatasetSize) + strings.Join(unknownDS, ", ")
	}
	return []Check{check("trajectory budget a multiple of the dataset size", len(bad) == 0, reason)}
}

// officialDatasetSizeCheck: every point that records its dataset's size uses the
// official dataset's trajectories (the ruleset's curve limits; info when none
// records it).
func officialDatasetSizeCheck(s *System) []Check {
	var sizes byReason
	unknown := 0
	for _, p := range s.Points {
		switch d := p.Manifest.DatasetSize; {
		case d <= 0:
			unknown++
		case d != s.limits.DatasetSize:
			sizes.add(p.Concurrency, strconv.Itoa(d))
		}
	}
	notOfficialDS := sizes.list()
	size := s.limits.DatasetSize
	reason := fmt.Sprintf("every point uses a %d-trajectory dataset", size)
	if len(notOfficialDS) > 0 {
		reason = fmt.Sprintf("dataset size is not the official %d: ", size) + strings.Join(notOfficialDS, "; ")
	}
	c := check(fmt.Sprintf("official dataset size (%d)", size), len(notOfficialDS) == 0, reason)
	if unknown == len(s.Points) && len(s.Points) > 0 {
		c = Check{Name: c.Name, Status: CheckInfo, Reason: "no point records its dataset's size"}
	}
	return []Check{c}
}

// officialSettings: the settings of internal/official as the point's files
// record them (runread.Conditions), but the budget (trajectoryBudget).
func officialSettings(s *System) []Check {
	var unofficial byReason
	for _, p := range s.Points {
		cond := p.conditions
		cond.Trajectories, cond.DatasetSize = 0, 0
		if why := official.Reasons(cond); len(why) > 0 {
			unofficial.add(p.Concurrency, strings.Join(why, ", "))
		}
	}
	return failIfAny("official settings", "salt on, delays on at scale 1, stop-issuing off, streaming on, a sampling profile at every agentrace point", "", "; ", unofficial.list())
}

// oneRuleset: a point whose scores.json judged it under another ruleset than the
// curve's fails, its gates not being the curve's rules.
func oneRuleset(s *System) []Check {
	curveRules, _, _ := strings.Cut(s.Ruleset, ", ")
	var other []string
	for _, p := range s.Points {
		if p.Ruleset != "" && curveRules != "" && p.Ruleset != curveRules {
			other = append(other, fmt.Sprintf("c=%d: its scores.json judged it under %s", p.Concurrency, p.Ruleset))
		}
	}
	reason := "every point's scores were judged under the curve's ruleset " + curveRules
	if len(other) > 0 {
		reason = strings.Join(other, "; ") + fmt.Sprintf(" (the curve's: %s; scoring them again under ruleset %s re-judges them)", curveRules, curveRules)
	}
	return []Check{check("one ruleset for every point", len(other) == 0, reason)}
}

// metricConsistency is metric-consistency-*: each point's headline metrics
// re-derived (Consistency; a published summary as published,
// PublishedConsistency).
func metricConsistency(s *System) []Check {
	var incons []string
	for _, p := range s.Points {
		if found, ok := p.checkerConsistency(); ok {
			incons = append(incons, found...)
			continue
		}
		if p.PublishedSummary != nil {
			incons = append(incons, PublishedConsistency(p.Concurrency, p.PublishedSummary, s.limits.ConsistencyTolerance)...)
			continue
		}
		incons = append(incons, Consistency(p, s.limits.ConsistencyTolerance)...)
	}
	pct := fmt.Sprintf("%.4g%%", 100*s.limits.ConsistencyTolerance)
	return failIfAny("metric consistency within "+pct+" (metric-consistency-*)", "completed <= issued and failed <= completed (the reference counts a failed turn as completed too); duration > 0; output tokens >= 0; TPOT P90 finite and > 0; system_tps, tps_per_user and e2e_avg_interactivity re-derived from result_summary.json within "+pct+" (a published summary as published); counts and window end agree with the run manifest", "", "; ", incons)
}

// runsComplete: every agentrace run complete, its log read whole.
func runsComplete(s *System) []Check {
	var notDone []string
	for _, p := range s.Points {
		if p.Manifest.State != schemas.RunComplete && !(p.eventLog && p.Manifest.State == "") {
			notDone = append(notDone, fmt.Sprintf("c=%d: %q", p.Concurrency, p.Manifest.State))
		}
		if p.LogNote != "" {
			notDone = append(notDone, fmt.Sprintf("c=%d: %s", p.Concurrency, p.LogNote))
		}
	}
	return failIfAny("runs complete", "every run completed", "not complete: ", "; ", notDone)
}

// accuracyGates is agentic-accuracy-inline and agentic-osl-range: every point
// scored and passing its gates (a warning where a gate was not evaluated).
func accuracyGates(s *System) []Check {
	const name = "accuracy gates per point (agentic-accuracy-inline, agentic-osl-range)"
	var unscored, failing, open []string
	pts := s.Counted()
	for _, p := range pts {
		var g, ne []string
		for _, gt := range p.Gates {
			switch {
			case gt.Informational:
			case p.ConfigInvalid() && gt.Name == score.GateOSL:
				// The checker gates the OSL of loaded points only: a point whose
				// point.yaml does not validate has its accuracy gated, not its OSL.
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
	if len(unscored) == len(pts) {
		return []Check{check(name, false, "no scores.json found: run `agentrace score` on each run")}
	}
	var why []string
	if len(failing) > 0 {
		why = append(why, "failing: "+strings.Join(failing, "; "))
	}
	if len(unscored) > 0 {
		why = append(why, "not scored: "+strings.Join(unscored, ", "))
	}
	c := check(name, len(why) == 0, "every point passes its gates")
	if len(open) > 0 {
		why = append(why, "not evaluated: "+strings.Join(open, "; "))
		if c.Status == CheckPass {
			c.Status = CheckWarn
		}
	}
	if len(why) > 0 {
		c.Reason = strings.Join(why, "; ")
	}
	return []Check{c}
}

// pointDuration is point-duration (§6; how it applies to agentic points is not
// stated): a window of at least 600 s (ultra-low) or 1200 s; the checker warns.
func pointDuration(s *System) []Check {
	var short []string
	for _, p := range s.Points {
		need := 1200.0
		if p.Region == score.RegionLowLatency {
			need = 600
		}
		d := float64(p.WindowDurationS)
		if math.IsNaN(d) {
			short = append(short, fmt.Sprintf("c=%d: no performance window", p.Concurrency))
		} else if d < need {
			got := seconds(d)
			if p.Speedup() > 0 {
				got += " (" + seconds(float64(p.ModelledTime(p.WindowDurationS))) + " modelled)"
			}
			short = append(short, fmt.Sprintf("c=%d: %s < %.0f s", p.Concurrency, got, need))
		}
	}
	reason := "every window lasts at least 600 s (ultra-low) or 1200 s"
	if len(short) > 0 {
		reason = strings.Join(short, "; ")
	}
	c := Check{Name: "minimum duration (§6; how it applies to agentic points is not stated)", Status: CheckInfo, Reason: reason}
	if len(short) > 0 {
		c.Status = CheckWarn // the checker warns (point-duration)
	}
	return []Check{c}
}

// seconds says a window's length: whole seconds from 10 s, else to the
// hundredth, so that a short window does not read as 0 s.
func seconds(d float64) string {
	if d >= 10 {
		return fmt.Sprintf("%.0f s", d)
	}
	return fmt.Sprintf("%.2f s", d)
}

// officialTokenCounts: every count from the reference tokenizer.
func officialTokenCounts(s *System) []Check {
	var unoff byReason
	for _, p := range s.Points {
		if p.Unofficial {
			unoff.add(p.Concurrency, fmt.Sprintf("OSL %s, ISL %s", p.TokenSource, p.ISLSource))
		}
	}
	return failIfAny("official token counts", "every count is from the reference tokenizer", "unofficial counts: ", "; ", unoff.list())
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
func Consistency(p *Point, tol float64) []string {
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
		if d := relDiff(*rs.OSL.Total/(rs.DurNs/1e9), float64(p.SystemTPS)); d > tol {
			bad("system_tps %.6g differs from OSL total / duration by %.2f%%", float64(p.SystemTPS), 100*d)
		}
	}
	if v, ok := rs.TPOT.P["90.0"]; ok && p.TPSPerUser.Valid() {
		if d := relDiff(1000/(v/1e6), float64(p.TPSPerUser)); d > tol {
			bad("tps_per_user %.6g differs from 1000 / TPOT P90 by %.2f%%", float64(p.TPSPerUser), 100*d)
		}
	}
	if rs.TurnS != nil && *rs.TurnS > 0 && p.E2EAvgInteractivity.Valid() {
		if d := relDiff(rs.Out / *rs.TurnS, float64(p.E2EAvgInteractivity)); d > tol {
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
		if d := relDiff(float64(m.LastTrackedDoneNs), float64(p.WindowEndNs)); d > tol {
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
// tokens >= 0, a TPOT P90 that is finite and > 0, a stored system_tps or
// tps_per_user within 1% of the checker's derivation of it
// (score.ReadSummaryFigures, score.CheckerRelErr), and a stored
// e2e_avg_interactivity within 1% of output_tokens_per_turn_total over
// e2e_turn_time_seconds_total, which must then be derivable
// (agentic-metric-consistency).
func PublishedConsistency(c int, data []byte, tol float64) []string {
	var out []string
	bad := func(f string, a ...any) {
		out = append(out, fmt.Sprintf("c=%d: published summary: ", c)+fmt.Sprintf(f, a...))
	}
	doc, err := score.DecodeSummary(data)
	if err != nil {
		bad("result-file-valid: %v", err)
		return out
	}
	// Read as the checker's schema reads it (pydantic's lax mode: "11" is 11); a
	// summary that does not validate is result-file-valid's error alone, and the
	// checker then runs no metric rule on it.
	num := func(keys ...string) (float64, bool) { return score.SummaryNumber(doc, keys...) }
	var invalid []string
	issued, okI := num("n_samples_issued")
	completed, okC := num("n_samples_completed")
	failed, okF := num("n_samples_failed")
	dur, okD := num("duration_ns")
	switch {
	case !okC:
		invalid = append(invalid, "no n_samples_completed")
	case completed != math.Trunc(completed):
		invalid = append(invalid, "n_samples_completed is not a whole number")
	}
	if !okD {
		invalid = append(invalid, "no duration_ns")
	}
	for k, ok := range map[string]bool{"n_samples_issued": okI, "n_samples_failed": okF} {
		if _, present := doc[k]; present && doc[k] != nil && !ok {
			invalid = append(invalid, k+" is not a number")
		}
	}
	for _, block := range []string{"ttft", "tpot", "output_sequence_lengths", "latency"} {
		b, _ := doc[block].(map[string]any)
		pm, _ := b["percentiles"].(map[string]any)
		for k := range pm {
			if _, ok := num(block, "percentiles", k); !ok {
				invalid = append(invalid, fmt.Sprintf("%s.percentiles[%q] is not a number", block, k))
			}
		}
	}
	if len(invalid) > 0 {
		sort.Strings(invalid)
		bad("result-file-valid: %s", strings.Join(invalid, "; "))
		return out
	}
	if dur <= 0 {
		bad("duration_ns %v is not positive", dur)
	}
	if issued > 0 && completed+failed != issued {
		bad("completed %v + failed %v != issued %v", completed, failed, issued)
	}
	if total, _ := num("output_sequence_lengths", "total"); total < 0 {
		bad("output_sequence_lengths.total %v is negative", total)
	}
	p90, okP := num("tpot", "percentiles", "90.0")
	if !okP {
		p90, okP = num("tpot", "percentiles", "90")
	}
	switch {
	case !okP:
		bad("no TPOT P90 (tpot.percentiles[\"90.0\"]): tps_per_user has no other source")
	case !(p90 > 0):
		bad("TPOT P90 %v is not finite and positive", p90)
	}
	f := score.ReadSummaryFigures(doc)
	if f.HasTPSPerUser && f.StoredTPSPerUser != nil {
		if d := score.CheckerRelErr(*f.StoredTPSPerUser, f.TPSPerUser); d > tol {
			bad("stored tps_per_user %.6g differs from 1000 / TPOT P90 (%.6g) by %.2f%% (metric-consistency-tps-per-user)", *f.StoredTPSPerUser, f.TPSPerUser, 100*d)
		}
	}
	if f.HasSystemTPS && f.StoredSystemTPS != nil && dur > 0 {
		if d := score.CheckerRelErr(*f.StoredSystemTPS, f.SystemTPS); d > tol {
			bad("stored system_tps %.6g differs from output_sequence_lengths.total / duration_ns (%.6g) by %.2f%% (metric-consistency-system-tps)", *f.StoredSystemTPS, f.SystemTPS, 100*d)
		}
	}
	switch {
	case f.StoredInteractivity == nil:
	case !f.HasInteractivity:
		bad("stored e2e_avg_interactivity %.6g, but output_tokens_per_turn_total / e2e_turn_time_seconds_total is not derivable (agentic-metric-consistency)", *f.StoredInteractivity)
	default:
		if d := score.CheckerRelErr(*f.StoredInteractivity, f.Interactivity); d > tol {
			bad("stored e2e_avg_interactivity %.6g differs from output_tokens_per_turn_total / e2e_turn_time_seconds_total (%.6g) by %.2f%% (agentic-metric-consistency)", *f.StoredInteractivity, f.Interactivity, 100*d)
		}
	}
	return out
}

// swebenchErrors lists the points whose published SWE-bench result is
// malformed (the checker's error), left out of the curve's mean.
func swebenchErrors(s *System) []string {
	var bad []string
	for _, p := range s.Points {
		if p.scores != nil && p.scores.Published != nil && p.scores.Published.AccuracyProblem != nil {
			// An accuracy file that does not validate is accuracy-valid's error: the
			// checker drops the point's results, and the SWE-bench mean is of the rest.
			continue
		}
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
		if p.point {
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
	for _, p := range s.Unparsed {
		if p.Concurrency > 0 {
			warns = append(warns, fmt.Sprintf("%s: counted at concurrency %d for C_min, the coverage and the accuracy rules; the rules that need its point.yaml skipped (point-rules-skipped)", p.RunDir, p.Concurrency))
		} else {
			warns = append(warns, fmt.Sprintf("%s: no concurrency, left off the curve (region-basis)", p.RunDir))
		}
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
// checker's point-config-valid error): the checker counts such a point for C_min,
// the coverage and the accuracy rules only (System.Counted).
func (p *Point) ConfigInvalid() bool {
	for _, fc := range p.FileChecks {
		if fc.Rule == "point-config-valid" && fc.Severity == schemas.SeverityError {
			return true
		}
	}
	return false
}
