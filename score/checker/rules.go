package checker

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"sort"
	"strings"
)

// One function per rule id of the checker's catalog (data/messages.yaml). Each
// names the checker's code it follows (the newest stored checker.py and the
// models under src/submission_checker/; docs/checker-rules.md gives file and line).
// A rule whose every outcome is informational in the checker
// (max-concurrency-declared, streaming-config) has a function that makes no
// finding, so the catalog test sees it handled.

// ---- tree ----------------------------------------------------------------

// pathExists: checker.py run(), "path-exists".
func (c *run) pathExists() bool {
	if c.exists(c.root) {
		return true
	}
	c.emit("path-exists", Error, LevelTree, c.root, "Submission path does not exist: "+c.label)
	return false
}

// requiredDir: models/structure.py SubmissionDir, "required-dir".
func (c *run) requiredDir() {
	hint := ""
	var legacy []string
	for _, n := range []string{"pareto", "documentation"} {
		if c.isDir(path.Join(c.root, n)) {
			legacy = append(legacy, n+"/")
		}
	}
	if len(legacy) > 0 {
		hint = " (found " + joinNames(legacy) + ": this looks like the v0.7 layout)"
	}
	for _, n := range []string{"results", "docs"} {
		p := path.Join(c.root, n)
		if !c.isDir(p) {
			c.emit("required-dir", Error, LevelTree, p, "Missing required directory: "+n+"/"+hint)
		}
	}
}

// srcDir: models/structure.py SrcDir, "src-dir" and, per implementation, srcReadme.
func (c *run) srcDir() {
	src := path.Join(c.root, "src")
	if !c.isDir(src) {
		c.emit("src-dir", Error, LevelTree, src, "Missing src/ directory")
		return
	}
	var impls []string
	for _, e := range c.readDirSorted(src) {
		if e.dir {
			impls = append(impls, e.name)
		}
	}
	if len(impls) == 0 {
		c.emit("src-dir", Error, LevelTree, src, "src/ contains no implementation directory")
		return
	}
	for _, i := range impls {
		c.srcReadme(path.Join(src, i))
	}
}

// srcReadme: models/structure.py SrcDir, "src-readme" (README.md in any case).
func (c *run) srcReadme(impl string) {
	for _, e := range c.readDirSorted(impl) {
		if !e.dir && strings.EqualFold(e.name, "readme.md") {
			return
		}
	}
	c.emit("src-readme", Error, LevelTree, path.Join(impl, "README.md"), "Missing README.md in src/"+path.Base(impl)+"/")
}

// systemResultsDir: checker.py run(), "system-results-dir".
func (c *run) systemResultsDir(results string, systems []string) bool {
	if len(systems) > 0 {
		return true
	}
	c.emit("system-results-dir", Error, LevelTree, results, "No results/<system>/ directories found")
	return false
}

// accuracyPresent: checker.py run(), "accuracy-present".
func (c *run) accuracyPresent(results string) {
	if !c.resultsHaveAccuracy(results) {
		c.emit("accuracy-present", Error, LevelTree, results, "No model in this submission has accuracy results (accuracy_results.json or accuracy_scores in results.json)")
	}
}

// seedSetRegistry: checker.py run(), "seed-set-registry" (the seed rules are skipped).
func (c *run) seedSetRegistry() {
	c.emit("seed-set-registry", Warning, LevelTree, "", c.d.SeedSetsError)
}

// drafterListRegistry: checker.py run(), "drafter-list-registry" (the drafter rules are skipped).
func (c *run) drafterListRegistry() {
	c.emit("drafter-list-registry", Warning, LevelTree, "", c.d.DraftersError)
}

// tpsUtilization: checker.py _check_tps_utilization, "tps-utilization": a point's
// declared tps_utilization against system_tps / the curve's highest, abs tol 0.1.
func (c *run) tpsUtilization(results string) {
	for _, e := range c.readDirSorted(results) {
		if !e.dir {
			continue
		}
		sys := path.Join(results, e.name)
		for _, me := range c.readDirSorted(sys) {
			if !me.dir {
				continue
			}
			model := path.Join(sys, me.name)
			type entry struct {
				sd        string
				tps, util float64
			}
			var es []entry
			for _, p := range c.listPoints(model) {
				tps, ok1 := c.rawSystemTPS(path.Join(p, "result_summary.json"))
				sd := path.Join(p, "system_desc.json")
				util, ok2 := c.rawNumberField(sd, "tps_utilization")
				if ok1 && ok2 {
					es = append(es, entry{sd, tps, util})
				}
			}
			if len(es) == 0 {
				continue
			}
			maxTPS := es[0].tps
			for _, x := range es {
				maxTPS = math.Max(maxTPS, x.tps)
			}
			if maxTPS <= 0 {
				continue
			}
			for _, x := range es {
				exp := x.tps / maxTPS
				if math.Abs(x.util-exp) > 0.1 {
					c.emit("tps-utilization", Error, LevelPoint, x.sd, fmt.Sprintf("tps_utilization %g != expected %.4f (system_tps %.4f / curve max %.4f for %s/%s; abs tol 0.1)", x.util, exp, x.tps, maxTPS, e.name, me.name))
				}
			}
		}
	}
}

func (c *run) rawSystemTPS(file string) (float64, bool) {
	doc, _, err := c.readJSON(file)
	m, ok := doc.(map[string]any)
	if err != nil || !ok {
		return 0, false
	}
	d, ok1 := isNumber(m["duration_ns"])
	l, _ := m["output_sequence_lengths"].(map[string]any)
	t, ok2 := isNumber(l["total"])
	if !ok1 || !ok2 || d <= 0 {
		return 0, false
	}
	return t / (d / 1e9), true
}

func (c *run) rawNumberField(file, key string) (float64, bool) {
	doc, _, err := c.readJSON(file)
	m, ok := doc.(map[string]any)
	if err != nil || !ok {
		return 0, false
	}
	return isNumber(m[key])
}

// ---- system --------------------------------------------------------------

// benchmarkModelDir: checker.py _check_system, "benchmark-model-dir".
func (c *run) benchmarkModelDir(sys string, models []string) bool {
	if len(models) > 0 {
		return true
	}
	c.emit("benchmark-model-dir", Error, LevelSystem, sys, "No benchmark-model directories in results/"+path.Base(sys)+"/")
	return false
}

// powerEstimated: checker.py _load_system_power, "power-estimated": Appendix D
// values reach the provisioned power.
func (c *run) powerEstimated(path string, estimates []string) {
	c.emit("power-estimated", Warning, LevelSystem, path, "MLC Estimated Power: "+strings.Join(estimates, "; ")+" — Appendix D values reach provisioned_power_kw")
}

// ---- curve ---------------------------------------------------------------

// pointDirs: models/structure.py ModelDir, "point-dirs".
func (c *run) pointDirs(sys, model string, points []string) bool {
	rel := "results/" + path.Base(sys) + "/" + path.Base(model)
	if !c.isDir(model) {
		c.emit("point-dirs", Error, LevelCurve, model, "Missing benchmark-model directory: "+rel+"/")
		return false
	}
	if len(points) == 0 {
		c.emit("point-dirs", Error, LevelCurve, model, "No r<N>/ Pareto point directories in "+rel+"/")
		return false
	}
	return true
}

// measurementPointsPresentPoint: checker.py _load_point_configs, a point folder
// without point.yaml ("measurement-points-present", fail-2).
func (c *run) measurementPointsPresentPoint(yaml string) {
	c.emit("measurement-points-present", Error, LevelPoint, yaml, "Missing point.yaml in "+path.Base(path.Dir(yaml))+"/")
}

// measurementPointsPresentCurve: no point.yaml of the curve validates.
func (c *run) measurementPointsPresentCurve(model string) {
	c.emit("measurement-points-present", Error, LevelCurve, model, "No usable r<N>/point.yaml files in "+path.Base(model))
}

// pointConfigValid: models/loader.py load_point_config, "point-config-valid".
func (c *run) pointConfigValid(y string) *pointConfig {
	doc, _, err := c.readYAML(y)
	if err != nil {
		c.emit("point-config-valid", Error, LevelFile, y, "YAML parse error in point.yaml: "+err.Error())
		return nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		c.emit("point-config-valid", Error, LevelFile, y, "Expected a YAML mapping in point.yaml")
		return nil
	}
	cfg, problems := parsePointConfig(m)
	for _, p := range problems {
		c.emit("point-config-valid", Error, LevelFile, y, "point.yaml, field "+p)
	}
	return cfg
}

// pointConfigRules runs PointConfig's after-validators in their order.
func (c *run) pointConfigRules(y string, cfg *pointConfig) {
	c.offlineDeclared(y, cfg)
	c.steadyStateValid(y, cfg)
	c.steadyStateConsistency(y, cfg)
	c.pointDisclosureComplete(y, cfg)
	c.targetCohort(y, cfg)
	c.seedConfigLegacy(y, cfg)
	c.warmupPresent(y, cfg)
	c.warmupLogsRetained(y, cfg)
	c.warmupSalt(y, cfg)
	c.loadPattern(y, cfg)
	c.streamingConfig(y, cfg)
	c.regionDeclared(y, cfg)
}

// pointDirnameConcurrency: checker.py _load_point_configs, "point-dirname-concurrency".
func (c *run) pointDirnameConcurrency(dir, y string, cfg *pointConfig) {
	if dc, ok := parsePointDir(path.Base(dir)); ok && dc != cfg.Concurrency {
		c.emit("point-dirname-concurrency", Warning, LevelPoint, y, fmt.Sprintf("%s/: directory concurrency %d ≠ declared %d", path.Base(dir), dc, cfg.Concurrency))
	}
}

// systemDescriptionPresentPoint: a point without its system_desc.json.
func (c *run) systemDescriptionPresentPoint(p, model string) {
	c.emit("system-description-present", Error, LevelPoint, p, "Missing system_desc.json in "+path.Base(model)+"/"+path.Base(path.Dir(p))+"/")
}

// systemDescriptionPresentCurve: no point of the curve has a readable one.
func (c *run) systemDescriptionPresentCurve(model string) {
	c.emit("system-description-present", Error, LevelCurve, model, "No readable system_desc.json under "+path.Base(model)+"/")
}

// systemDescriptionValidUnreadable: a copy that is not a JSON object.
func (c *run) systemDescriptionValidUnreadable(p string) {
	c.emit("system-description-valid", Error, LevelFile, p, "system_desc.json is not readable as a JSON object")
}

// systemDescriptionValid: models/loader.py load_system_description on the first
// readable copy, "system-description-valid".
func (c *run) systemDescriptionValid(p string, m map[string]any) *systemDesc {
	sd, problems := validateSystemDesc(m)
	for _, pr := range problems {
		c.emit("system-description-valid", Error, LevelFile, p, "system_desc.json, field "+pr)
	}
	return sd
}

// systemDescriptionConsistency: checker.py _check_system_desc_consistency.
func (c *run) systemDescriptionConsistency(p, refPoint string, differing []string) {
	c.emit("system-description-consistency", Error, LevelPoint, p, "system_desc.json differs from "+refPoint+"/ in: "+joinNames(differing)+" — every point of a curve must describe the same system")
}

var nonWordRE = regexp.MustCompile(`[^\w\-]`)
var underscoresRE = regexp.MustCompile(`_+`)

// CanonicalModelName is a model name in the form the checker suggests for
// model_name: its last path component, every run of characters other than word
// characters and '-' one '_', trimmed of '_', at most 64 bytes.
func CanonicalModelName(name string) string {
	parts := strings.Split(name, "/")
	part := strings.TrimSpace(parts[len(parts)-1])
	s := nonWordRE.ReplaceAllString(part, "_")
	s = strings.Trim(underscoresRE.ReplaceAllString(s, "_"), "_")
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// modelNameValid: checker.py _check_model_name, "model-name-valid": per distinct
// declared name, exactly one of the accepted names.
func (c *run) modelNameValid(loaded []loadedPoint) {
	seen := map[string]bool{}
	for _, p := range loaded {
		name := p.cfg.ModelName
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		if contains(c.d.AllowedModels, name) {
			continue
		}
		allowed := joinNames(c.d.AllowedModels)
		if can := CanonicalModelName(name); contains(c.d.AllowedModels, can) {
			c.emit("model-name-valid", Error, LevelCurve, p.yaml, fmt.Sprintf("model_name %q is not an allowed model; write %q (allowed: %s)", name, can, allowed))
		} else {
			c.emit("model-name-valid", Error, LevelCurve, p.yaml, fmt.Sprintf("model_name %q is not an allowed model; must be exactly one of: %s", name, allowed))
		}
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// maxConcurrencyDeclared: checker.py _derive_regions; the checker only ever
// reports it as information (the C_max it took), so it makes no finding.
func (c *run) maxConcurrencyDeclared(int64) {}

// regionBasis: checker.py _derive_regions, "region-basis" and, through
// compute_regions, regionComputation.
func (c *run) regionBasis(cMax *int64, loaded []loadedPoint, unparsed []unparsedPoint, pointCount int, model, sdPath string) *regions {
	at := sdPath
	if at == "" {
		at = model
	}
	if cMax == nil {
		c.emit("region-basis", Warning, LevelCurve, at, "max_supported_concurrency could not be read from system_desc.json, so C_max is unknown and the region-dependent checks were not run for this curve")
		return nil
	}
	c.maxConcurrencyDeclared(*cMax)
	var cs []int64
	for _, p := range loaded {
		cs = append(cs, p.cfg.Concurrency)
	}
	for _, u := range unparsed {
		if u.known {
			cs = append(cs, u.concurrency)
		}
	}
	if len(cs) == 0 {
		c.emit("region-basis", Error, LevelCurve, model, "No point's concurrency could be read — C_min cannot be derived")
		return nil
	}
	lowest := cs[0]
	for _, x := range cs {
		if x < lowest {
			lowest = x
		}
	}
	cMin := lowest
	if cMin > ultraLowMax {
		cMin = ultraLowMax
	}
	if len(cs) < pointCount {
		c.emit("region-basis", Warning, LevelCurve, model, fmt.Sprintf("C_min = %d derived from %d of %d points — the rest have no readable concurrency", cMin, len(cs), pointCount))
	}
	return c.regionComputation(*cMax, cMin, at)
}

// regionComputation: models/regions.py compute_regions, "region-computation".
func (c *run) regionComputation(cMax, cMin int64, at string) *regions {
	r, problem := computeRegions(cMax, cMin)
	if r == nil {
		c.emit("region-computation", Error, LevelCurve, at, problem)
	}
	return r
}

// ---- point.yaml (PointConfig's validators) --------------------------------

// offlineDeclared: point_config.py _check_offline_declared.
func (c *run) offlineDeclared(y string, cfg *pointConfig) {
	if cfg.Offline == nil {
		return
	}
	switch *cfg.Offline {
	case "dedicated", "elected", "none":
	default:
		c.emit("offline-declared", Error, LevelPoint, y, fmt.Sprintf("Invalid offline %q: must be one of dedicated, elected, none", *cfg.Offline))
	}
}

var steadyStatuses = []string{"windowable", "insufficient_duration", "insufficient_passes", "partial_dataset"}
var steadyVerdicts = []string{"STEADY STATE", "drifting_up", "drifting_down", "anomaly", "not found"}
var gatingStates = []string{"Plateau", "Drifting Up", "Drifting Down"}

// steadyStateValid: point_config.py _check_steady_state_vocabulary.
func (c *run) steadyStateValid(y string, cfg *pointConfig) {
	b := cfg.Steady
	if b == nil {
		return
	}
	var bad []string
	if b.Status != nil && !contains(steadyStatuses, *b.Status) {
		bad = append(bad, fmt.Sprintf("status %q (expected one of %s)", *b.Status, joinNames(steadyStatuses)))
	}
	if b.Verdict != nil && !contains(steadyVerdicts, *b.Verdict) {
		bad = append(bad, fmt.Sprintf("verdict %q (expected one of %s)", *b.Verdict, joinNames(steadyVerdicts)))
	}
	keys := make([]string, 0, len(b.State))
	for k := range b.State {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !contains(gatingStates, b.State[k]) {
			bad = append(bad, fmt.Sprintf("state[%s] %q (expected one of %s)", k, b.State[k], joinNames(gatingStates)))
		}
	}
	if len(bad) > 0 {
		c.emit("steady-state-valid", Error, LevelPoint, y, strings.Join(bad, "; "))
	}
}

// steadyStateConsistency: point_config.py _check_steady_state_consistency (MIN_TREND_N 4).
func (c *run) steadyStateConsistency(y string, cfg *pointConfig) {
	b := cfg.Steady
	if b == nil || b.Status == nil {
		return
	}
	var problems []string
	spans := b.superPasses()
	switch {
	case *b.Status == "windowable":
		if spans != nil && *spans < 4 {
			problems = append(problems, fmt.Sprintf("status 'windowable' over %d super-pass(es); §4.4 needs ≥ 4", *spans))
		}
		if d := b.drifting(); len(d) > 0 {
			problems = append(problems, "status 'windowable' with drifting gating metric(s): "+joinNames(d))
		}
	case *b.Status == "insufficient_passes" && spans != nil && *spans >= 4:
		problems = append(problems, fmt.Sprintf("status 'insufficient_passes' over %d super-pass(es), which meets the ≥ 4 floor", *spans))
	}
	if len(problems) > 0 {
		c.emit("steady-state-consistency", Error, LevelPoint, y, strings.Join(problems, "; "))
	}
}

// pointDisclosureComplete: point_config.py _check_disclosure_complete.
func (c *run) pointDisclosureComplete(y string, cfg *pointConfig) {
	var missing []string
	for _, k := range disclosureFields {
		if !cfg.Present[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		c.emit("point-disclosure-complete", Error, LevelPoint, y, "point.yaml is missing required §8.3 field(s): "+joinNames(missing))
	}
}

var cohortRE = regexp.MustCompile(`^\d{4}-\d{2}-C[01]$`)

// targetCohort: point_config.py _check_target_cohort.
func (c *run) targetCohort(y string, cfg *pointConfig) {
	if cfg.TargetCohort != nil && !cohortRE.MatchString(*cfg.TargetCohort) {
		c.emit("target-cohort", Error, LevelPoint, y, fmt.Sprintf("target_cohort '%s' is not of the form YYYY-MM-C0/C1", *cfg.TargetCohort))
	}
}

// seedConfigLegacy: point_config.py _check_seeds_legacy: with no seed_set, each
// of the two seeds is 42 (a warning) or not (an error).
func (c *run) seedConfigLegacy(y string, cfg *pointConfig) {
	if cfg.SeedSet != nil {
		return
	}
	for _, k := range []string{"scheduler_rng_seed", "sample_index_rng_seed"} {
		v, ok := cfg.Seeds[k]
		field := "runtime_settings.runtime." + k
		if ok && v == "42" {
			c.emit("seed-config-legacy", Warning, LevelPoint, y, fmt.Sprintf("Point %d: %s = 42 with no seed_set declared; v1.0 binds seeds to a published set (§4.6)", cfg.Concurrency, field))
			continue
		}
		val := "None"
		if ok {
			val = v
		}
		c.emit("seed-config-legacy", Error, LevelPoint, y, fmt.Sprintf("Point %d: %s = %s; v0.7 required 42 and v1.0 requires a declared seed_set (§4.6) — neither is satisfied", cfg.Concurrency, field, val))
	}
}

// warmupPresent: point_config.py _check_warmup.
func (c *run) warmupPresent(y string, cfg *pointConfig) {
	if cfg.Warmup == nil {
		c.emit("warmup-present", Error, LevelPoint, y, fmt.Sprintf("Point %d: missing warmup declaration (§6.3.3)", cfg.Concurrency))
	}
}

// warmupLogsRetained: point_config.py _check_warmup_logs_retained: no warmup
// requests need no logs; else logs_retained false or absent is a warning.
func (c *run) warmupLogsRetained(y string, cfg *pointConfig) {
	w := cfg.Warmup
	if w == nil || w.Issued == 0 {
		return
	}
	switch {
	case w.LogsRetained == nil:
		c.emit("warmup-logs-retained", Warning, LevelPoint, y, fmt.Sprintf("Point %d: warmup block does not declare logs_retained, so §6.3.2 log retention cannot be confirmed", cfg.Concurrency))
	case !*w.LogsRetained:
		c.emit("warmup-logs-retained", Warning, LevelPoint, y, fmt.Sprintf("Point %d: warmup logs declared NOT retained; §6.3.2 requires them to remain available for reviewer inspection", cfg.Concurrency))
	}
}

// warmupSalt: point_config.py _check_warmup_salt.
func (c *run) warmupSalt(y string, cfg *pointConfig) {
	if cfg.WarmupSalt != nil && *cfg.WarmupSalt {
		c.emit("warmup-salt", Warning, LevelPoint, y, fmt.Sprintf("Point %d: warmup salt is enabled", cfg.Concurrency))
	}
}

// loadPattern: point_config.py _check_load_pattern (a dedicated Offline point is exempt).
func (c *run) loadPattern(y string, cfg *pointConfig) {
	if cfg.Offline != nil && *cfg.Offline == "dedicated" {
		return
	}
	switch {
	case cfg.LoadPattern != "concurrency" && cfg.LoadPattern != "agentic_inference":
		c.emit("load-pattern", Error, LevelPoint, y, fmt.Sprintf("Point %d: load_pattern %q is not one of §6.1's fixed-concurrency patterns (agentic_inference, concurrency)", cfg.Concurrency, cfg.LoadPattern))
	case cfg.Concurrency <= 0:
		c.emit("load-pattern", Error, LevelPoint, y, fmt.Sprintf("concurrency must be positive, got %d", cfg.Concurrency))
	}
}

// streamingConfig: the catalog's only streaming-config message is informational
// (the flag controls client IPC forwarding; server streaming cannot be verified),
// so it makes no finding.
func (c *run) streamingConfig(string, *pointConfig) {}

var validRegions = []string{"high_concurrency", "low_concurrency", "low_latency", "margin", "med_concurrency", "submitters_choice"}

// regionDeclared: point_config.py _check_region_declared.
func (c *run) regionDeclared(y string, cfg *pointConfig) {
	if cfg.Region != nil && !contains(validRegions, *cfg.Region) {
		c.emit("region-declared", Error, LevelPoint, y, fmt.Sprintf("Invalid region '%s': must be one of %v", *cfg.Region, validRegions))
	}
}

// ---- point: placement and summary ----------------------------------------

// concurrencyInRange: point_placement.py _check_concurrency_range.
func (c *run) concurrencyInRange(p loadedPoint, r *regions) {
	if p.cfg.Offline != nil && *p.cfg.Offline == "dedicated" {
		return
	}
	if r.classify(p.cfg.Concurrency) == "" {
		c.emit("concurrency-in-range", Error, LevelPoint, p.yaml, fmt.Sprintf("Concurrency %d exceeds the maximum valid range (including the 10%% margin: %d)", p.cfg.Concurrency, r.margin[1]))
	}
}

// regionPlacement: point_placement.py _check_region_placement.
func (c *run) regionPlacement(p loadedPoint, r *regions) {
	d := p.cfg.Region
	if d == nil || *d == "submitters_choice" {
		return
	}
	comp := r.classify(p.cfg.Concurrency)
	if comp != "" && comp != *d {
		c.emit("region-placement", Warning, LevelPoint, p.yaml, fmt.Sprintf("Declared region '%s' ≠ computed region '%s' for concurrency %d", *d, comp, p.cfg.Concurrency))
	}
}

// resultSummaryPresent: checker.py _check_point / _check_unparsed_point.
func (c *run) resultSummaryPresent(sp, name string) {
	c.emit("result-summary-present", Error, LevelPoint, sp, "Missing result_summary.json for "+name)
}

// resultFileValid: models/loader.py load_result_summary, "result-file-valid".
func (c *run) resultFileValid(sp string) *summary {
	doc, found, err := c.readJSON(sp)
	if !found {
		c.emit("result-file-valid", Error, LevelFile, sp, "IO error reading result_summary.json")
		return nil
	}
	if err != nil {
		c.emit("result-file-valid", Error, LevelFile, sp, "JSON parse error in result_summary.json: "+err.Error())
		return nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		c.emit("result-file-valid", Error, LevelFile, sp, "result_summary.json, field (top level): expected an object")
		return nil
	}
	s, problems := parseSummary(m)
	for _, p := range problems {
		c.emit("result-file-valid", Error, LevelFile, sp, "result_summary.json, field "+p)
	}
	return s
}

// pointRulesSkipped: checker.py _check_unparsed_point: the summary is still
// loaded and validated; the rules that need point.yaml are not run.
func (c *run) pointRulesSkipped(u unparsedPoint) {
	sp := path.Join(u.dir, "result_summary.json")
	if !c.exists(sp) {
		c.resultSummaryPresent(sp, path.Base(u.dir))
	} else {
		c.resultFileValid(sp)
	}
	c.emit("point-rules-skipped", Warning, LevelPoint, u.yaml, path.Base(u.dir)+"/: point.yaml is missing or invalid, so the rules that read it (region placement, metric consistency, power) were not run for this point; fixing it may report more")
}

// pointDuration: point_result.py _check_point_duration (the steady-state
// window's duration_s when given, else the whole run).
func (c *run) pointDuration(p loadedPoint, s *summary, r *regions, sp string) {
	region := r.classify(p.cfg.Concurrency)
	if region == "" {
		return
	}
	dur, basis := s.DurationNS/1e6, "whole-run"
	if b := p.cfg.Steady; b != nil && b.DurationS != nil {
		dur, basis = *b.DurationS*1000, "steady-state window"
	}
	if min := minDurationMS[region]; dur < min {
		c.emit("point-duration", Warning, LevelPoint, sp, fmt.Sprintf("Point %d (%s): %s duration %.0f ms < minimum %.0f ms", p.cfg.Concurrency, region, basis, dur, min))
	}
}

// steadyStateBasis: point_result.py _check_steady_state_basis.
func (c *run) steadyStateBasis(p loadedPoint, sp string) {
	b, n := p.cfg.Steady, p.cfg.Concurrency
	if b == nil {
		c.emit("steady-state-basis", Warning, LevelPoint, sp, fmt.Sprintf("Point %d: no steady_state block; metrics are whole-run, which §4.4 makes the fallback rather than the official basis", n))
		return
	}
	if b.Status == nil || *b.Status != "windowable" {
		st := "None"
		if b.Status != nil {
			st = *b.Status
		}
		c.emit("steady-state-basis", Warning, LevelPoint, sp, fmt.Sprintf("Point %d: status %q — official result falls back to whole-run `total`", n, st))
	}
	if b.Verdict != nil && (*b.Verdict == "drifting_up" || *b.Verdict == "drifting_down") {
		c.emit("steady-state-basis", Warning, LevelPoint, sp, fmt.Sprintf("Point %d: verdict %q — a drifting gating metric is reported as a range or slope, never as a point estimate", n, *b.Verdict))
	}
}

// minQueryCount: point_result.py _check_min_query_count (datasets of MIN_QUERY_COUNT).
func (c *run) minQueryCount(p loadedPoint, s *summary, sp string) {
	min, ok := minQueryCounts[p.cfg.Dataset]
	if ok && s.Completed < min {
		c.emit("min-query-count", Error, LevelPoint, sp, fmt.Sprintf("Dataset '%s': completed %d < minimum %d (§6.4)", p.cfg.Dataset, s.Completed, min))
	}
}

// minQueryCounts is point_result.py MIN_QUERY_COUNT.
var minQueryCounts = map[string]int64{
	"open_orca": 24576, "cnn_dailymail": 13368, "aime25": 30, "gpqa": 198, "livecodebench": 880,
	"shopify_product_catalogue": 48289, "shopify_product_catalogue_8k": 8000,
	"mlperf_gpt_oss_performance": 6396, "mlperf_gpt_oss_accuracy": 4395, "math500": 500,
}

// metricConsistencyDuration: point_result.py _check_duration_positive.
func (c *run) metricConsistencyDuration(s *summary, sp string) {
	if s.DurationNS <= 0 {
		c.emit("metric-consistency-duration", Error, LevelPoint, sp, fmt.Sprintf("duration_ns is not positive: %g", s.DurationNS))
	}
}

// metricConsistencyAccounting: point_result.py _check_sample_accounting (skipped when issued is 0).
func (c *run) metricConsistencyAccounting(s *summary, sp string) {
	if s.Issued > 0 && s.Completed+s.Failed != s.Issued {
		c.emit("metric-consistency-accounting", Error, LevelPoint, sp, fmt.Sprintf("completed (%d) + failed (%d) = %d ≠ issued (%d)", s.Completed, s.Failed, s.Completed+s.Failed, s.Issued))
	}
}

// metricConsistencyOutputTokens: point_result.py _check_output_tokens_nonnegative.
func (c *run) metricConsistencyOutputTokens(s *summary, sp string) {
	if int64(s.OSLTotal) < 0 {
		c.emit("metric-consistency-output-tokens", Error, LevelPoint, sp, fmt.Sprintf("total_output_tokens is negative: %d", int64(s.OSLTotal)))
	}
}

func relErr(stored, derived float64) float64 {
	return math.Abs(stored-derived) / math.Max(math.Abs(derived), 1e-9)
}

// metricConsistencySystemTPS: point_result.py _check_system_tps_derivable (1%).
func (c *run) metricConsistencySystemTPS(s *summary, sp string) {
	d := s.systemTPS()
	if v, ok := laxFloat(s.Extra["system_tps"]); ok && s.Extra["system_tps"] != nil && relErr(v, d) > 0.01 {
		c.emit("metric-consistency-system-tps", Error, LevelPoint, sp, fmt.Sprintf("stored system_tps %.3f ≠ derived %.3f (rel err %.1f%%)", v, d, 100*relErr(v, d)))
	}
}

// metricConsistencyTPOTP90: point_result.py _check_tpot_p90.
func (c *run) metricConsistencyTPOTP90(s *summary, sp string) {
	switch {
	case s.TPOTP90 == nil:
		c.emit("metric-consistency-tpot-p90", Error, LevelPoint, sp, "No TPOT P90 reported (result_summary.json has no tpot.percentiles['90'])")
	case math.IsInf(*s.TPOTP90, 0) || math.IsNaN(*s.TPOTP90) || *s.TPOTP90 <= 0:
		c.emit("metric-consistency-tpot-p90", Error, LevelPoint, sp, fmt.Sprintf("Reported TPOT P90 is %g, which is not finite and strictly positive", *s.TPOTP90))
	}
}

// metricConsistencyTPSPerUser: point_result.py _check_tps_per_user (1000 / tpot_p90_ms, 1%).
func (c *run) metricConsistencyTPSPerUser(s *summary, sp string) {
	p := s.TPOTP90
	if p == nil || math.IsInf(*p, 0) || math.IsNaN(*p) || *p <= 0 {
		return
	}
	d := 1000 / *p
	if v, ok := laxFloat(s.Extra["tps_per_user"]); ok && s.Extra["tps_per_user"] != nil && relErr(v, d) > 0.01 {
		c.emit("metric-consistency-tps-per-user", Error, LevelPoint, sp, fmt.Sprintf("stored tps_per_user %.4f ≠ derived 1000 / tpot_p90_ms %.4f", v, d))
	}
}

// agenticMetricConsistency: point_result.py _check_agentic_metrics.
func (c *run) agenticMetricConsistency(s *summary, sp string) {
	d := s.interactivity()
	stored, has := s.Extra["e2e_avg_interactivity"]
	has = has && stored != nil
	if d == nil {
		if has {
			c.emit("agentic-metric-consistency", Error, LevelPoint, sp, fmt.Sprintf("e2e_avg_interactivity %v is reported, but the summary states neither output_tokens_per_turn_total / e2e_turn_time_seconds_total nor a failure-free output_sequence_lengths.total / latency.total to derive it from", stored))
		}
		return
	}
	if has {
		v, _ := laxFloat(stored)
		if relErr(v, *d) > 0.01 {
			c.emit("agentic-metric-consistency", Error, LevelPoint, sp, fmt.Sprintf("stored e2e_avg_interactivity %.4f ≠ derived %.4f", v, *d))
		}
	}
}

// ---- curve: shared paths, seeds, drafters --------------------------------

// sharedPathResolution: checker.py _check_shared_paths: per distinct
// (field, value), the value resolves to a directory under the root.
func (c *run) sharedPathResolution(loaded []loadedPoint) {
	type key struct{ field, value string }
	var order []key
	first := map[key]string{}
	names := map[key][]string{}
	for _, p := range loaded {
		for _, f := range []struct {
			n string
			v *string
		}{{"shared_src", p.cfg.SharedSrc}, {"shared_docs", p.cfg.SharedDocs}} {
			if f.v == nil {
				continue
			}
			k := key{f.n, *f.v}
			if _, ok := first[k]; !ok {
				order = append(order, k)
				first[k] = p.yaml
			}
			names[k] = append(names[k], path.Base(p.dir))
		}
	}
	for _, k := range order {
		if c.resolveShared(k.value) == "" {
			c.emit("shared-path-resolution", Error, LevelCurve, first[k], fmt.Sprintf("%s %q does not resolve to a directory under the submission root; named by %d point(s): %s", k.field, k.value, len(names[k]), joinNames(names[k])))
		}
	}
}

func (c *run) resolveShared(value string) string {
	raw := strings.TrimSpace(value)
	if raw == "" || strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "~") {
		return ""
	}
	var parts []string
	for _, p := range strings.Split(strings.ReplaceAll(raw, "\\", "/"), "/") {
		if p != "" && p != "." {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 || contains(parts, "..") {
		return ""
	}
	cand := path.Join(append([]string{c.root}, parts...)...)
	if c.isDir(cand) {
		return cand
	}
	return ""
}

// seedSetConsistency: seed_binding.py _check_seed_set_consistency.
func (c *run) seedSetConsistency(model string, loaded []loadedPoint) {
	set := map[string]bool{}
	for _, p := range loaded {
		if p.cfg.SeedSet != nil {
			set[*p.cfg.SeedSet] = true
		}
	}
	if len(set) > 1 {
		var ids []string
		for k := range set {
			ids = append(ids, k)
		}
		sort.Strings(ids)
		c.emit("seed-set-consistency", Error, LevelCurve, model, fmt.Sprintf("Points declare %d different seed sets: %s — a submission binds exactly one", len(ids), joinNames(ids)))
	}
}

// seedSetMembership: seed_binding.py _check_seed_set_membership.
func (c *run) seedSetMembership(loaded []loadedPoint) {
	for _, p := range loaded {
		if p.cfg.SeedSet == nil {
			continue
		}
		if _, ok := c.d.SeedSets[*p.cfg.SeedSet]; !ok {
			var known []string
			for k := range c.d.SeedSets {
				known = append(known, k)
			}
			sort.Strings(known)
			c.emit("seed-set-membership", Error, LevelPoint, p.yaml, fmt.Sprintf("seed_set %q is not a published set (known: %s)", *p.cfg.SeedSet, joinNames(known)))
		}
	}
}

// seedRuntimeMatch: seed_binding.py _check_seed_runtime_match (and the v0.7 names' warning).
func (c *run) seedRuntimeMatch(loaded []loadedPoint) {
	for _, p := range loaded {
		if p.cfg.SeedSet == nil {
			continue
		}
		set, ok := c.d.SeedSets[*p.cfg.SeedSet]
		if !ok {
			continue
		}
		var bad []string
		for _, k := range seedFields {
			got, has := p.cfg.Seeds[k]
			if !has || got != set.Seeds[k] {
				if !has {
					got = "None"
				}
				bad = append(bad, fmt.Sprintf("%s=%s (expected %s)", k, got, set.Seeds[k]))
			}
		}
		if len(bad) > 0 {
			c.emit("seed-runtime-match", Error, LevelPoint, p.yaml, fmt.Sprintf("runtime_settings.runtime does not match seed set %q: %s", set.ID, strings.Join(bad, "; ")))
		}
		if p.cfg.LegacyNames {
			c.emit("seed-runtime-match", Warning, LevelPoint, p.yaml, "runtime_settings.runtime uses the v0.7 seed names (scheduler_random_seed / dataloader_random_seed)")
		}
	}
}

// seedSetAdoption: seed_binding.py _check_seed_set_adoption: skipped (information)
// while no published set names its cohorts.
func (c *run) seedSetAdoption(model string, loaded []loadedPoint) {
	checkable := false
	for _, s := range c.d.SeedSets {
		if len(s.Cohorts) > 0 {
			checkable = true
		}
	}
	if !checkable {
		return
	}
	for _, p := range loaded {
		if p.cfg.SeedSet == nil || p.cfg.TargetCohort == nil {
			continue
		}
		set, ok := c.d.SeedSets[*p.cfg.SeedSet]
		if !ok {
			continue
		}
		if !contains(set.Cohorts, *p.cfg.TargetCohort) {
			pub := "no cohort"
			if len(set.Cohorts) > 0 {
				pub = joinNames(set.Cohorts)
			}
			c.emit("seed-set-adoption", Error, LevelPoint, p.yaml, fmt.Sprintf("Seed set %q was not published for cohort %s (published for: %s)", set.ID, *p.cfg.TargetCohort, pub))
		}
	}
}

func (d Drafter) matches(declared map[string]any) bool {
	if d.WeightChecksum != "" {
		v, ok := declared["weight_checksum"]
		return ok && fmt.Sprint(v) == d.WeightChecksum
	}
	if d.TargetChecksum != "" {
		if v, ok := declared["target_checksum"]; !ok || fmt.Sprint(v) != d.TargetChecksum {
			return false
		}
		stated, _ := declared["configuration"].(map[string]any)
		return len(d.Configuration) > 0 && fmt.Sprint(normalize(d.Configuration)) == fmt.Sprint(stated)
	}
	return false
}

// approvedDrafter: drafter_binding.py _check_approved_drafter.
func (c *run) approvedDrafter(loaded []loadedPoint, bench string) {
	approved := c.d.Drafters[bench]
	for _, p := range loaded {
		if p.cfg.Speculative == nil {
			continue
		}
		if len(approved) == 0 {
			c.emit("approved-drafter", Error, LevelPoint, p.yaml, fmt.Sprintf("Point %d uses speculative decoding, but no drafter is approved for %q", p.cfg.Concurrency, bench))
			continue
		}
		ok := false
		for _, a := range approved {
			if a.matches(p.cfg.Speculative) {
				ok = true
			}
		}
		if !ok {
			c.emit("approved-drafter", Error, LevelPoint, p.yaml, fmt.Sprintf("Point %d: declared drafter matches no approved entry for %q", p.cfg.Concurrency, bench))
		}
	}
}

// drafterApprovalLeadTime: drafter_binding.py _check_approval_lead_time (two cohorts).
func (c *run) drafterApprovalLeadTime(loaded []loadedPoint, bench string) {
	for _, p := range loaded {
		if p.cfg.Speculative == nil {
			continue
		}
		var m *Drafter
		for i, a := range c.d.Drafters[bench] {
			if a.matches(p.cfg.Speculative) {
				m = &c.d.Drafters[bench][i]
				break
			}
		}
		if m == nil {
			continue
		}
		target := ""
		if p.cfg.TargetCohort != nil {
			target = *p.cfg.TargetCohort
		}
		t, ok1 := parseCohort(target)
		a, ok2 := parseCohort(m.ApprovedCohort)
		if !ok1 || !ok2 {
			c.emit("drafter-approval-lead-time", Warning, LevelPoint, p.yaml, fmt.Sprintf("Point %d: lead time unevaluable — target_cohort=%q, approved_cohort=%q", p.cfg.Concurrency, target, m.ApprovedCohort))
			continue
		}
		earliest := a.next().next()
		if t.less(earliest) {
			c.emit("drafter-approval-lead-time", Error, LevelPoint, p.yaml, fmt.Sprintf("Point %d: drafter approved in %s, so the earliest usable target_cohort is %s; this submission targets %s", p.cfg.Concurrency, m.ApprovedCohort, earliest, t))
		}
	}
}

type cohort struct{ year, month, index int }

func parseCohort(s string) (cohort, bool) {
	var c cohort
	s = strings.TrimSpace(s)
	if !cohortRE.MatchString(s) {
		return c, false
	}
	if _, err := fmt.Sscanf(s, "%4d-%2d-C%1d", &c.year, &c.month, &c.index); err != nil || c.month < 1 || c.month > 12 {
		return c, false
	}
	return c, true
}

func (c cohort) next() cohort {
	if c.index == 0 {
		return cohort{c.year, c.month, 1}
	}
	if c.month == 12 {
		return cohort{c.year + 1, 1, 0}
	}
	return cohort{c.year, c.month + 1, 0}
}

func (c cohort) less(o cohort) bool {
	if c.year != o.year {
		return c.year < o.year
	}
	if c.month != o.month {
		return c.month < o.month
	}
	return c.index < o.index
}

func (c cohort) String() string { return fmt.Sprintf("%04d-%02d-C%d", c.year, c.month, c.index) }

// accuracyValid: checker.py _load_curve_accuracy for one point:
// accuracy_results.json, else accuracy_scores in results.json; an error drops it.
func (c *run) accuracyValid(dir string) *accuracy {
	p := path.Join(dir, "accuracy_results.json")
	if c.exists(p) {
		doc, _, err := c.readJSON(p)
		if err != nil {
			c.emit("accuracy-valid", Error, LevelFile, p, "JSON parse error in accuracy_results.json: "+err.Error())
			return nil
		}
		a, problems := parseAccuracy(doc)
		for _, pr := range problems {
			c.emit("accuracy-valid", Error, LevelFile, p, "accuracy_results.json: "+pr)
		}
		if a != nil && len(a.Root) == 0 {
			c.emit("accuracy-valid", Error, LevelTree, "", "accuracy_result.json is empty")
			return nil
		}
		return a
	}
	p = path.Join(dir, "results.json")
	if !c.exists(p) {
		return nil
	}
	doc, _, err := c.readJSON(p)
	m, ok := doc.(map[string]any)
	if err != nil || !ok {
		return nil
	}
	sc, ok := m["accuracy_scores"]
	if !ok || sc == nil {
		return nil
	}
	switch x := sc.(type) {
	case map[string]any:
		if len(x) == 0 {
			return nil
		}
	case []any:
		if len(x) == 0 {
			return nil
		}
	}
	a, problems := parseAccuracy(map[string]any{"accuracy_scores": sc})
	for _, pr := range problems {
		c.emit("accuracy-valid", Error, LevelFile, p, "results.json: "+pr)
	}
	return a
}
