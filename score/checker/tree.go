package checker

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"

	"path"
	"reflect"
	"sort"
	"strings"
)

// The walk below follows checker.py's SubmissionChecker.run, _check_system and
// _check_model (the newest stored checker.py); each finding is made by the rule
// function of its id (rules.go).

const ultraLowMax = 32

type loadedPoint struct {
	dir, yaml string
	cfg       *pointConfig
}

type unparsedPoint struct {
	dir, yaml   string
	concurrency int64
	known       bool
}

type summaryAt struct {
	cfg *pointConfig
	sum *summary
}

func (c *run) tree() {
	if c.d.SeedSetsError != "" {
		c.seedSetRegistry()
	}
	if c.d.DraftersError != "" {
		c.drafterListRegistry()
	}
	if !c.pathExists() {
		return
	}
	c.requiredDir()
	c.srcDir()
	results := path.Join(c.root, "results")
	if !c.isDir(results) {
		return
	}
	var systems []string
	for _, e := range c.readDirSorted(results) {
		if e.dir {
			systems = append(systems, path.Join(results, e.name))
		}
	}
	if !c.systemResultsDir(results, systems) {
		return
	}
	for _, s := range systems {
		c.system(s)
	}
	c.tpsUtilization(results)
	c.accuracyPresent(results)
}

func (c *run) system(sys string) {
	facts := c.systemFacts(sys)
	power := c.powerDescriptor(sys, facts)
	var models []string
	for _, e := range c.readDirSorted(sys) {
		if e.dir {
			models = append(models, path.Join(sys, e.name))
		}
	}
	if !c.benchmarkModelDir(sys, models) {
		return
	}
	for _, m := range models {
		c.model(sys, m, power)
	}
}

func (c *run) model(sys, model string, power *powerComputation) {
	points := c.listPoints(model)
	if !c.pointDirs(sys, model, points) {
		return
	}
	loaded, unparsed := c.loadPointConfigs(points)
	if len(loaded) == 0 && len(points) == 0 {
		return
	}
	sd, sdPath := c.curveSystemDesc(points, model)
	var cMax *int64
	if sd != nil {
		v := sd.CMax
		cMax = &v
	} else if sdPath != "" {
		if doc, _, err := c.readJSON(sdPath); err == nil {
			if m, ok := doc.(map[string]any); ok {
				if v, ok := isInt(m["max_supported_concurrency"]); ok && v > 0 {
					cMax = &v
				}
			}
		}
	}
	c.modelNameValid(loaded)
	regions := c.regionBasis(cMax, loaded, unparsed, len(points), model, sdPath)

	var sums []summaryAt
	for _, p := range loaded {
		if s := c.point(p, regions, power); s != nil {
			sums = append(sums, summaryAt{p.cfg, s})
		}
	}
	for _, u := range unparsed {
		c.pointRulesSkipped(u)
	}
	c.sharedPathResolution(loaded)
	if c.d.SeedSetsError == "" {
		c.seedSetConsistency(model, loaded)
		c.seedSetMembership(loaded)
		c.seedRuntimeMatch(loaded)
		c.seedSetAdoption(model, loaded)
	}
	if c.d.DraftersError == "" {
		bench := path.Base(model)
		for _, p := range loaded {
			if p.cfg.ModelName != "" {
				bench = p.cfg.ModelName
				break
			}
		}
		c.approvedDrafter(loaded, bench)
		c.drafterApprovalLeadTime(loaded, bench)
	}
	type present struct {
		dir string
		c   int64
	}
	var ps []present
	for _, p := range loaded {
		ps = append(ps, present{p.dir, p.cfg.Concurrency})
	}
	for _, u := range unparsed {
		if u.known {
			ps = append(ps, present{u.dir, u.concurrency})
		}
	}
	acc := map[int64]*accuracy{}
	accDir := ""
	for _, p := range ps {
		if a := c.accuracyValid(p.dir); a != nil {
			acc[p.c] = a
			if accDir == "" {
				accDir = p.dir
			}
		}
	}
	ctx := &curve{run: c, model: model, regions: regions, cMax: cMax, loaded: loaded, sums: sums, pointCount: len(points), acc: acc, accDir: accDir}
	for _, u := range unparsed {
		if u.known {
			ctx.unparsed = append(ctx.unparsed, u.concurrency)
		}
	}
	ctx.rules()
}

func (c *run) loadPointConfigs(points []string) ([]loadedPoint, []unparsedPoint) {
	var loaded []loadedPoint
	var unparsed []unparsedPoint
	for _, dir := range points {
		y := path.Join(dir, "point.yaml")
		if !c.exists(y) {
			c.measurementPointsPresentPoint(y)
			cc, ok := parsePointDir(path.Base(dir))
			unparsed = append(unparsed, unparsedPoint{dir, y, cc, ok})
			continue
		}
		cfg := c.pointConfigValid(y)
		if cfg == nil {
			cc, ok := c.fallbackConcurrency(y, dir)
			unparsed = append(unparsed, unparsedPoint{dir, y, cc, ok})
			continue
		}
		c.pointConfigRules(y, cfg)
		c.pointDirnameConcurrency(dir, y, cfg)
		loaded = append(loaded, loadedPoint{dir, y, cfg})
	}
	if len(loaded) == 0 && len(points) > 0 {
		c.measurementPointsPresentCurve(path.Dir(points[0]))
	}
	return loaded, unparsed
}

func (c *run) fallbackConcurrency(y, dir string) (int64, bool) {
	if doc, _, err := c.readYAML(y); err == nil {
		if m, ok := doc.(map[string]any); ok {
			if v, ok := isInt(m["concurrency"]); ok && v > 0 {
				return v, true
			}
		}
	}
	return parsePointDir(path.Base(dir))
}

// curveSystemDesc is _load_curve_system_desc: every point's copy, the first
// validated.
func (c *run) curveSystemDesc(points []string, model string) (*systemDesc, string) {
	type copyAt struct {
		path string
		data map[string]any
	}
	var present []copyAt
	for _, dir := range points {
		p := path.Join(dir, "system_desc.json")
		if !c.exists(p) {
			c.systemDescriptionPresentPoint(p, model)
			continue
		}
		doc, _, err := c.readJSON(p)
		m, ok := doc.(map[string]any)
		if err != nil || !ok {
			c.systemDescriptionValidUnreadable(p)
			continue
		}
		present = append(present, copyAt{p, m})
	}
	if len(present) == 0 {
		c.systemDescriptionPresentCurve(model)
		return nil, ""
	}
	ref := present[0]
	refID := systemIdentity(ref.data)
	consistent := true
	for _, o := range present[1:] {
		id := systemIdentity(o.data)
		if reflect.DeepEqual(id, refID) {
			continue
		}
		var diff []string
		keys := map[string]bool{}
		for k := range id {
			keys[k] = true
		}
		for k := range refID {
			keys[k] = true
		}
		for k := range keys {
			if !reflect.DeepEqual(id[k], refID[k]) {
				diff = append(diff, k)
			}
		}
		sort.Strings(diff)
		c.systemDescriptionConsistency(o.path, path.Base(path.Dir(ref.path)), diff)
		consistent = false
		break
	}
	_ = consistent
	sd := c.systemDescriptionValid(ref.path, ref.data)
	return sd, ref.path
}

var perPointSystemFields = map[string]bool{"tps_utilization": true, "tensor_parallel": true, "pipeline_parallel": true, "expert_parallel": true, "data_parallel": true, "disaggregated": true, "batch": true, "config_summary": true, "config_summary_notes": true}

// pipelineAssignedFields are never compared between points (checker.py
// _IGNORED_SYSTEM_DESC_FIELDS: the submission ID and dates the pipeline assigns).
var pipelineAssignedFields = map[string]bool{"submission_id": true, "submission_date": true, "publish_date": true}

func systemIdentity(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if !perPointSystemFields[k] && !pipelineAssignedFields[k] {
			out[k] = v
		}
	}
	return out
}

// regions are a curve's region bounds (compute_regions).
type regions struct {
	lowLatency, low, med, high, margin [2]int64
}

func computeRegions(cMax, cMin int64) (*regions, string) {
	if cMin < 1 || cMin > ultraLowMax {
		return nil, fmt.Sprintf("Minimum concurrency must be between 1 and %d (inclusive), got %d", ultraLowMax, cMin)
	}
	if cMax <= ultraLowMax {
		return nil, fmt.Sprintf("Maximum Supported Concurrency must be greater than %d, got %d", ultraLowMax, cMax)
	}
	interval := math.Log2(float64(cMax-cMin)) / 3
	lowEnd := int64(math.RoundToEven(float64(cMin) + math.Pow(2, interval)))
	medEnd := int64(math.RoundToEven(float64(cMin) + math.Pow(2, 2*interval)))
	marginEnd := int64(math.Ceil(1.10 * float64(cMax)))
	return &regions{
		lowLatency: [2]int64{1, cMin},
		low:        [2]int64{cMin + 1, lowEnd},
		med:        [2]int64{lowEnd + 1, medEnd},
		high:       [2]int64{medEnd + 1, cMax},
		margin:     [2]int64{cMax + 1, marginEnd},
	}, ""
}

func in(b [2]int64, c int64) bool { return b[0] <= c && c <= b[1] }

func (r *regions) classify(c int64) string {
	switch {
	case in(r.lowLatency, c):
		return "low_latency"
	case in(r.low, c):
		return "low_concurrency"
	case in(r.med, c):
		return "med_concurrency"
	case in(r.high, c):
		return "high_concurrency"
	case in(r.margin, c):
		return "margin"
	}
	return ""
}

// covered is covered_region: a margin point covers nothing.
func (r *regions) covered(c int64) string {
	if x := r.classify(c); x != "margin" {
		return x
	}
	return ""
}

var minDurationMS = map[string]float64{"low_latency": 600000, "low_concurrency": 1200000, "med_concurrency": 1200000, "high_concurrency": 1200000, "margin": 1200000}

// point runs _check_point; it returns the summary when it loaded.
func (c *run) point(p loadedPoint, r *regions, power *powerComputation) *summary {
	if r != nil {
		c.concurrencyInRange(p, r)
		c.regionPlacement(p, r)
	}
	sp := path.Join(p.dir, "result_summary.json")
	if !c.exists(sp) {
		c.resultSummaryPresent(sp, fmt.Sprintf("r%d", p.cfg.Concurrency))
		return nil
	}
	s := c.resultFileValid(sp)
	if s == nil {
		return nil
	}
	if r != nil {
		c.pointDuration(p, s, r, sp)
	}
	c.steadyStateBasis(p, sp)
	c.minQueryCount(p, s, sp)
	c.metricConsistencyDuration(s, sp)
	c.metricConsistencyAccounting(s, sp)
	c.metricConsistencyOutputTokens(s, sp)
	c.metricConsistencySystemTPS(s, sp)
	c.metricConsistencyTPOTP90(s, sp)
	c.metricConsistencyTPSPerUser(s, sp)
	c.agenticMetricConsistency(s, sp)
	if power != nil {
		para := c.pointParallelism(path.Join(p.dir, "system_desc.json"))
		var stored *float64
		if v, ok := isNumber(s.Extra["system_tps_per_kw"]); ok {
			stored = &v
		}
		nodes, ok := c.nodesUsed(p, power, para)
		c.maximalEngagement(p, power, para)
		if ok {
			c.metricConsistencyTPSPerKW(power, nodes, s.systemTPS(), stored, sp)
		}
	}
	return s
}

func (c *run) resultsHaveAccuracy(results string) bool {
	found := false
	_ = fs.WalkDir(c.fsys, results, func(p string, e fs.DirEntry, err error) error {
		if err != nil || found {
			return nil
		}
		switch e.Name() {
		case "accuracy_results.json":
			found = true
		case "results.json":
			if b, err := c.readFile(p); err == nil {
				var m map[string]any
				if json.Unmarshal(b, &m) == nil {
					switch s := m["accuracy_scores"].(type) {
					case map[string]any:
						found = len(s) > 0
					case []any:
						found = len(s) > 0
					}
				}
			}
		}
		return nil
	})
	return found
}

func joinNames(xs []string) string { return strings.Join(xs, ", ") }
