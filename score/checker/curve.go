package checker

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

// curve is ModelContext (models/aggregate/context.py): the curve-wide rules, in
// the order of its validators.
type curve struct {
	*run
	model      string
	regions    *regions
	cMax       *int64
	loaded     []loadedPoint
	unparsed   []int64
	sums       []summaryAt
	pointCount int
	acc        map[int64]*accuracy
	accDir     string // the first point (in the checker's order) whose accuracy loaded
}

func (k *curve) rules() {
	k.benchmarkTypeConsistency()
	k.pointCountRule()
	k.pointCap()
	k.offlinePointPresent()
	k.offlineOrdering()
	k.ultraLowConcurrencyCoverage()
	k.lowConcurrencyCoverage()
	k.medConcurrencyCoverage()
	k.highConcurrencyCoverage()
	k.modelNameConsistency()
	k.configConsistencyModel()
	k.configConsistencyDataset()
	k.accuracyCoverage()
	k.agenticAccuracy()
	k.accuracyGate()
}

func (k *curve) present() []int64 {
	var out []int64
	for _, p := range k.loaded {
		out = append(out, p.cfg.Concurrency)
	}
	return append(out, k.unparsed...)
}

func isDedicated(c *pointConfig) bool { return c.Offline != nil && *c.Offline == "dedicated" }
func isOffline(c *pointConfig) bool {
	return c.Offline != nil && (*c.Offline == "dedicated" || *c.Offline == "elected")
}

func (k *curve) voting() []loadedPoint {
	var out []loadedPoint
	for _, p := range k.loaded {
		if !isDedicated(p.cfg) {
			out = append(out, p)
		}
	}
	return out
}

func (k *curve) agentic() bool {
	v := k.voting()
	if len(v) == 0 {
		return false
	}
	for _, p := range v {
		if p.cfg.LoadPattern != "agentic_inference" {
			return false
		}
	}
	return true
}

func (k *curve) offline() []loadedPoint {
	var out []loadedPoint
	for _, p := range k.loaded {
		if isOffline(p.cfg) {
			out = append(out, p)
		}
	}
	return out
}

// benchmarkTypeConsistency: context.py _check_benchmark_type_consistency.
func (k *curve) benchmarkTypeConsistency() {
	set := map[string]bool{}
	for _, p := range k.voting() {
		set[p.cfg.LoadPattern] = true
	}
	if len(set) > 1 {
		var ps []string
		for x := range set {
			ps = append(ps, fmt.Sprintf("%q", x))
		}
		sort.Strings(ps)
		k.emit("benchmark-type-consistency", Error, LevelCurve, k.model, "Points disagree on `runtime_settings.load_pattern` ("+joinNames(ps)+")")
	}
}

func (k *curve) minPoints() int {
	if k.agentic() {
		return 7
	}
	for _, p := range k.offline() {
		if isDedicated(p.cfg) {
			return 8
		}
	}
	return 7
}

// pointCountRule is "point-count": context.py _check_point_count (7, or 8 with a
// dedicated Offline run), every point folder counted.
func (k *curve) pointCountRule() {
	if min := k.minPoints(); k.pointCount < min {
		k.emit("point-count", Error, LevelCurve, k.model, fmt.Sprintf("Only %d measurement point(s) — minimum %d required", k.pointCount, min))
	}
}

// pointCap: context.py _check_point_count, at most 32.
func (k *curve) pointCap() {
	if k.pointCount > 32 {
		k.emit("point-cap", Error, LevelCurve, k.model, fmt.Sprintf("%d points exceed the 32-point cap", k.pointCount))
	}
}

func listed(ps []loadedPoint) string {
	var s []string
	for _, p := range ps {
		s = append(s, fmt.Sprintf("r%d", p.cfg.Concurrency))
	}
	return joinNames(s)
}

// offlinePointPresent: context.py _check_offline_point_present: none on an
// agentic curve, exactly one otherwise (an elected one at C_max).
func (k *curve) offlinePointPresent() {
	d := k.offline()
	if k.agentic() {
		if len(d) > 0 {
			k.emit("offline-point-present", Error, LevelCurve, k.model, "Agentic benchmark declares an Offline point ("+listed(d)+"); §5.7 says an agentic submission neither requires nor may include one")
		}
		return
	}
	switch {
	case len(d) > 1:
		k.emit("offline-point-present", Error, LevelCurve, k.model, fmt.Sprintf("%d points declare `offline` (%s); §5.7 allows exactly one", len(d), listed(d)))
	case len(d) == 0:
		k.emit("offline-point-present", Error, LevelCurve, k.model, "No point declares `offline`; §5.3 requires one for every non-agentic submission")
	case *d[0].cfg.Offline == "elected" && k.cMax != nil && d[0].cfg.Concurrency != *k.cMax:
		k.emit("offline-point-present", Error, LevelCurve, k.model, fmt.Sprintf("`offline: elected` is declared at concurrency %d, but §5.7.2 elects the C_max point and C_max = %d", d[0].cfg.Concurrency, *k.cMax))
	}
}

// offlineOrdering: context.py _check_offline_ordering (a dedicated run against the C_max point).
func (k *curve) offlineOrdering() {
	var ded []loadedPoint
	for _, p := range k.offline() {
		if isDedicated(p.cfg) {
			ded = append(ded, p)
		}
	}
	if len(ded) == 0 || len(k.sums) == 0 || k.cMax == nil {
		return
	}
	tps := map[int64]float64{}
	for _, s := range k.sums {
		tps[s.cfg.Concurrency] = s.sum.systemTPS()
	}
	off := ded[0].cfg
	if off.Concurrency < *k.cMax {
		k.emit("offline-ordering", Warning, LevelCurve, k.model, fmt.Sprintf("Offline concurrency %d < C_max %d (§5.7.2)", off.Concurrency, *k.cMax))
	}
	ot, ok1 := tps[off.Concurrency]
	ct, ok2 := tps[*k.cMax]
	if ok1 && ok2 && ot < 0.98*ct {
		k.emit("offline-ordering", Warning, LevelCurve, k.model, fmt.Sprintf("Offline system_tps %.3f < 0.98 × C_max system_tps %.3f (§5.7.2)", ot, ct))
	}
}

// ultraLowConcurrencyCoverage: context.py _check_ultra_low_concurrency_coverage (1..32, fixed).
func (k *curve) ultraLowConcurrencyCoverage() {
	cs := k.present()
	for _, c := range cs {
		if c <= ultraLowMax {
			return
		}
	}
	detail := "no valid points"
	if len(cs) > 0 {
		lo := cs[0]
		for _, c := range cs {
			if c < lo {
				lo = c
			}
		}
		detail = fmt.Sprintf("lowest point is %d", lo)
	}
	k.emit("ultra-low-concurrency-coverage", Error, LevelCurve, k.model, fmt.Sprintf("No point at concurrency ≤ 32 (%s)", detail))
}

func (k *curve) coverage(rule, label, region string, b [2]int64) {
	if k.regions == nil {
		return
	}
	for _, c := range k.present() {
		if k.regions.covered(c) == region {
			return
		}
	}
	k.emit(rule, Error, LevelCurve, k.model, fmt.Sprintf("No point in the %s region (concurrency %d–%d)", label, b[0], b[1]))
}

// lowConcurrencyCoverage: context.py _check_regional_coverage.
func (k *curve) lowConcurrencyCoverage() {
	if k.regions != nil {
		k.coverage("low-concurrency-coverage", "Low Concurrency", "low_concurrency", k.regions.low)
	}
}

// medConcurrencyCoverage: context.py _check_regional_coverage.
func (k *curve) medConcurrencyCoverage() {
	if k.regions != nil {
		k.coverage("med-concurrency-coverage", "Medium Concurrency", "med_concurrency", k.regions.med)
	}
}

// highConcurrencyCoverage: context.py _check_regional_coverage (a margin point covers nothing).
func (k *curve) highConcurrencyCoverage() {
	if k.regions != nil {
		k.coverage("high-concurrency-coverage", "High Concurrency", "high_concurrency", k.regions.high)
	}
}

// modelNameConsistency: context.py _check_model_name_consistency: the first
// declared model_name against the model folder's name.
func (k *curve) modelNameConsistency() {
	declared := ""
	for _, p := range k.loaded {
		if p.cfg.ModelName != "" {
			declared = p.cfg.ModelName
			break
		}
	}
	dir := path.Base(k.model)
	switch {
	case declared == "":
		k.emit("model-name-consistency", Warning, LevelCurve, k.model, "No point declares model_name, so the model directory '"+dir+"' cannot be checked against §8.1")
	case declared != dir:
		k.emit("model-name-consistency", Error, LevelCurve, k.model, "Declared model '"+declared+"' does not match model directory '"+dir+"'")
	}
}

// configConsistencyModel: context.py _check_config_consistency, over every point whose point.yaml validates.
func (k *curve) configConsistencyModel() {
	set := map[string]bool{}
	for _, p := range k.loaded {
		if p.cfg.ModelName != "" {
			set[p.cfg.ModelName] = true
		}
	}
	if len(set) > 1 {
		var ns []string
		for n := range set {
			ns = append(ns, fmt.Sprintf("%q", n))
		}
		sort.Strings(ns)
		k.emit("config-consistency-model", Error, LevelCurve, k.model, "Points disagree on model_name ("+joinNames(ns)+"); one result is a single benchmark model")
	}
}

// configConsistencyDataset: context.py _check_config_consistency, over the points whose summary loaded.
func (k *curve) configConsistencyDataset() {
	set := map[string]bool{}
	for _, s := range k.sums {
		set[s.cfg.Dataset] = true
	}
	if len(set) > 1 {
		var ns []string
		for n := range set {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		k.emit("config-consistency-dataset", Error, LevelCurve, k.model, "Inconsistent datasets across points: "+joinNames(ns))
	}
}

var mandatoryBands = []string{"ultra_low_concurrency", "low_concurrency", "med_concurrency", "high_concurrency"}
var bandLabels = map[string]string{"ultra_low_concurrency": "Ultra Low Concurrency", "low_concurrency": "Low Concurrency", "med_concurrency": "Medium Concurrency", "high_concurrency": "High Concurrency"}

// accuracyCoverage: context.py _check_accuracy_coverage: accuracy results in the
// four mandatory bands (a point at or below 32 counts for the ultra-low band and
// its region), and at the Offline point.
func (k *curve) accuracyCoverage() {
	cs := k.present()
	if k.regions == nil || len(cs) == 0 {
		return
	}
	covered := map[string]bool{}
	for _, c := range cs {
		if k.acc[c] == nil {
			continue
		}
		if c <= ultraLowMax {
			covered["ultra_low_concurrency"] = true
		}
		if b := k.regions.covered(c); b != "" && b != "low_latency" {
			covered[b] = true
		}
	}
	var missing []string
	for _, b := range mandatoryBands {
		if !covered[b] {
			missing = append(missing, bandLabels[b])
		}
	}
	if len(missing) > 0 {
		k.emit("accuracy-coverage", Error, LevelCurve, k.model, "No accuracy results at a point in: "+joinNames(missing))
	}
	for _, p := range k.offline() {
		if k.acc[p.cfg.Concurrency] == nil {
			k.emit("accuracy-coverage", Error, LevelCurve, k.model, fmt.Sprintf("Offline point r%d has no accuracy results", p.cfg.Concurrency))
		}
	}
}

// datasetScore is context.py _dataset_score: a fraction in [0, 1] as a
// percentage; outside [0, 1] the rule's error.
func (k *curve) datasetScore(c int64, ds, rule string) (float64, bool) {
	v, ok := k.acc[c].datasetScore(ds)
	if !ok {
		return 0, false
	}
	if v < 0 || v > 1 {
		k.emit(rule, Error, LevelCurve, k.model, fmt.Sprintf("r%d: `%s` score %g is not a fraction in [0, 1], which is what the reference scorer reports", c, ds, v))
		return 0, false
	}
	return v * 100, true
}

func (k *curve) accKeys() []int64 {
	var cs []int64
	for c := range k.acc {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i] < cs[j] })
	return cs
}

// agenticAccuracy: context.py _check_agentic_accuracy: an agentic curve of a
// model the targets name is gated (inline, SWE-bench, OSL); another is warned.
func (k *curve) agenticAccuracy() {
	if !k.agentic() {
		return
	}
	t := k.d.agenticTarget(path.Base(k.model))
	if t == nil {
		k.emit("agentic-accuracy", Warning, LevelCurve, k.model, "Agentic curve for model '"+path.Base(k.model)+"', which is not one of the agentic benchmarks the reference implementation publishes thresholds for — no agentic accuracy gate applied")
		return
	}
	if t.InlineMin == nil && t.SWEBenchMin == nil {
		k.emit("agentic-accuracy", Warning, LevelCurve, k.model, t.Name+": the reference implementation records its accuracy thresholds as TBD, so no agentic accuracy gate can be applied")
		return
	}
	k.agenticAccuracyInline(t)
	k.agenticAccuracySWEBench(t)
	k.agenticOSLRange(t)
}

// agenticAccuracyInline: context.py _gate_agentic_inline.
func (k *curve) agenticAccuracyInline(t *AgenticTarget) {
	seen := false
	for _, c := range k.accKeys() {
		ds := k.acc[c].performanceDataset()
		if ds == "" {
			continue
		}
		s, ok := k.datasetScore(c, ds, "agentic-accuracy-inline")
		if !ok {
			continue
		}
		seen = true
		if t.InlineMin != nil && s < *t.InlineMin {
			k.emit("agentic-accuracy-inline", Error, LevelCurve, k.model, fmt.Sprintf("r%d: inline accuracy %.2f < %g required for %s", c, s, *t.InlineMin, t.Name))
		}
	}
	if !seen {
		k.emit("agentic-accuracy-inline", Warning, LevelCurve, k.model, "No point reports an inline accuracy score (an accuracy entry with `dataset_type: performance`)")
	}
}

func (k *curve) mandatoryBand(c int64) string {
	if c <= ultraLowMax {
		return "ultra_low_concurrency"
	}
	b := k.regions.covered(c)
	if contains(mandatoryBands, b) {
		return b
	}
	return ""
}

// agenticAccuracySWEBench: context.py _gate_agentic_swebench: the mean over the
// mandatory bands of each band's mean.
func (k *curve) agenticAccuracySWEBench(t *AgenticTarget) {
	if k.regions == nil {
		return
	}
	type res struct {
		c int64
		s float64
	}
	var order []string
	by := map[string][]res{}
	for _, c := range k.accKeys() {
		s, ok := k.datasetScore(c, "swe_bench", "agentic-accuracy-swebench")
		b := k.mandatoryBand(c)
		if ok && b != "" {
			if _, seen := by[b]; !seen {
				order = append(order, b)
			}
			by[b] = append(by[b], res{c, s})
		}
	}
	if len(order) == 0 {
		k.emit("agentic-accuracy-swebench", Warning, LevelCurve, k.model, "No mandatory-band point reports a `swe_bench` accuracy score")
		return
	}
	sum := 0.0
	for _, b := range order {
		rs := by[b]
		if len(rs) > 1 {
			var l []string
			bs := 0.0
			for _, r := range rs {
				l = append(l, fmt.Sprintf("r%d", r.c))
				bs += r.s
			}
			k.emit("agentic-accuracy-swebench", Warning, LevelCurve, k.model, fmt.Sprintf("%s has %d SWE-bench results (%s); averaged into one value for the band", strings.ReplaceAll(b, "_", " "), len(rs), joinNames(l)))
		}
		bs := 0.0
		for _, r := range rs {
			bs += r.s
		}
		sum += bs / float64(len(rs))
	}
	mean := sum / float64(len(order))
	if t.SWEBenchMin == nil {
		return
	}
	switch {
	case mean < *t.SWEBenchMin:
		k.emit("agentic-accuracy-swebench", Error, LevelCurve, k.model, fmt.Sprintf("SWE-bench mean of %d band(s) = %.2f < %g required for %s", len(order), mean, *t.SWEBenchMin, t.Name))
	case len(order) != 4:
		k.emit("agentic-accuracy-swebench", Warning, LevelCurve, k.model, fmt.Sprintf("SWE-bench mean of %d band(s) = %.2f ≥ %g, but §4.3 averages one result from each of the 4 mandatory regions", len(order), mean, *t.SWEBenchMin))
	}
}

// agenticOSLRange: context.py _gate_agentic_osl: the full-run OSL per-turn mean
// of each point whose summary loaded, in the inclusive range.
func (k *curve) agenticOSLRange(t *AgenticTarget) {
	if t.OSLRange == nil {
		return
	}
	lo, hi := t.OSLRange[0], t.OSLRange[1]
	var missing []int64
	for _, s := range k.sums {
		avg, ok := oslAvg(s.sum.FullRunOSLAvg)
		if !ok {
			missing = append(missing, s.cfg.Concurrency)
			continue
		}
		if avg < lo || avg > hi {
			k.emit("agentic-osl-range", Error, LevelCurve, k.model, fmt.Sprintf("r%d: full-run OSL per-turn mean %.1f outside %g–%g tokens required for %s", s.cfg.Concurrency, avg, lo, hi, t.Name))
		}
	}
	if len(missing) > 0 {
		sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
		var l []string
		for _, c := range missing {
			l = append(l, fmt.Sprintf("r%d", c))
		}
		k.emit("agentic-osl-range", Warning, LevelCurve, k.model, "No `output_sequence_lengths_full_run.output_sequence_lengths.avg` in result_summary.json for "+joinNames(l))
	}
}

// oslAvg is isinstance(avg, (int, float)): a boolean counts (Python's bool is an int).
func oslAvg(v any) (float64, bool) {
	if b, ok := v.(bool); ok {
		if b {
			return 1, true
		}
		return 0, true
	}
	return isNumber(v)
}

// accuracyGate: context.py _check_accuracy: a curve not gated as agentic that
// carries accuracy is gated against accuracy_targets.py's single-turn thresholds;
// a model with none is a warning.
func (k *curve) accuracyGate() {
	if len(k.acc) == 0 {
		return
	}
	if k.agentic() && k.d.agenticTarget(path.Base(k.model)) != nil {
		return
	}
	th := singleTurnThresholds(path.Base(k.model))
	if th == nil {
		k.emit("accuracy-gate", Warning, LevelCurve, k.model, fmt.Sprintf("No accuracy thresholds are defined for %q, so its accuracy was not gated", path.Base(k.model)))
		return
	}
	file := path.Join(k.model, "results.json")
	if k.accDir != "" {
		file = path.Join(k.accDir, "results.json")
	}
	for _, c := range k.accKeys() {
		a := k.acc[c]
		k.accuracySampleCount(a, th, file)
		agg := map[string]float64{}
		type pair struct {
			v, w float64
			hasW bool
		}
		weighted := map[string][]pair{}
		var metrics []string
		for _, ds := range a.Order {
			e := a.Root[ds]
			w, hasW := laxFloat(e["num_samples"])
			hasW = hasW && e["num_samples"] != nil
			for _, m := range a.metricNames(ds) {
				v, _ := a.metric(ds, m)
				if _, seen := weighted[m]; !seen {
					metrics = append(metrics, m)
				}
				weighted[m] = append(weighted[m], pair{v, w, hasW})
			}
		}
		for _, m := range metrics {
			ps := weighted[m]
			all, tot := true, 0.0
			for _, p := range ps {
				if !p.hasW {
					all = false
				}
				tot += p.w
			}
			if all && tot > 0 {
				s := 0.0
				for _, p := range ps {
					s += p.v * p.w
				}
				agg[m] = s / tot
			} else {
				s := 0.0
				for _, p := range ps {
					s += p.v
				}
				agg[m] = s / float64(len(ps))
			}
		}
		if len(metrics) == 1 && metrics[0] == "score" && len(th.metrics) == 1 {
			k.emit("accuracy-gate", Warning, LevelCurve, file, "results.json exposes only an unnamed scalar accuracy score; gating it as '"+th.metrics[0].name+"'")
			agg = map[string]float64{th.metrics[0].name: agg["score"]}
			metrics = []string{th.metrics[0].name}
		}
		for _, t := range th.metrics {
			var score float64
			found := false
			for _, m := range metrics {
				if strings.ToLower(m) == t.name {
					score, found = agg[m], true
					break
				}
			}
			if !found {
				continue
			}
			if score >= 0 && score <= 1 && t.lower > 1 {
				score *= 100
			}
			switch {
			case score < t.lower:
				k.emit("accuracy-gate", Error, LevelCurve, file, fmt.Sprintf("%s = %.4f < min %.4f", t.name, score, t.lower))
			case t.upper != nil && score > *t.upper:
				k.emit("accuracy-gate", Error, LevelCurve, file, fmt.Sprintf("%s = %.4f > max %.4f", t.name, score, *t.upper))
			}
		}
	}
}

// accuracySampleCount: context.py _gate_accuracy: the issued accuracy samples
// (num_samples × n_repeats over the entries) against the model's minimum.
func (k *curve) accuracySampleCount(a *accuracy, th *thresholds, file string) {
	var total int64
	n := 0
	for _, ds := range a.Order {
		e := a.Root[ds]
		raw, ok := e["num_samples"]
		if !ok || raw == nil {
			continue
		}
		v, ok := pyInt(raw)
		if !ok {
			continue
		}
		rep := int64(1)
		if r, ok := pyInt(e["n_repeats"]); ok && r != 0 {
			rep = r
		}
		if rep < 1 {
			rep = 1
		}
		total += v * rep
		n++
	}
	if n > 0 && total < th.minQueries {
		k.emit("accuracy-sample-count", Error, LevelCurve, file, fmt.Sprintf("%d samples (issued) < required %d", total, th.minQueries))
	}
}

// pyInt is Python's int(): integers, whole-number floats truncated, integer strings.
func pyInt(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		return int64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		return i, err == nil
	}
	return isInt(v)
}

type threshold struct {
	name  string
	lower float64
	upper *float64
}

type thresholds struct {
	metrics    []threshold
	minQueries int64
}

func up(x float64) *float64 { return &x }

// singleTurnThresholds is accuracy_targets.py get_thresholds (llama3 405b,
// llama2 70b, mixtral 8x7b, llama3 8b), in its order.
func singleTurnThresholds(model string) *thresholds {
	hay := normRE.ReplaceAllString(strings.ToLower(model), "")
	table := []struct {
		fr []string
		t  thresholds
	}{
		{[]string{"llama3", "405b"}, thresholds{[]threshold{{"rougel", 21.6666 * 0.99, nil}, {"exact_match", 90.1335 * 0.99, nil}, {"tokens_per_sample", 684.68 * 0.9, up(684.68 * 1.1)}}, 8313}},
		{[]string{"llama2", "70b"}, thresholds{[]threshold{{"rouge1", 44.4312 * 0.99, nil}, {"rouge2", 22.0352 * 0.99, nil}, {"rougel", 28.6162 * 0.99, nil}, {"tokens_per_sample", 294.45 * 0.9, up(294.45 * 1.1)}}, 24576}},
		{[]string{"mixtral", "8x7b"}, thresholds{[]threshold{{"rouge1", 45.5989 * 0.99, nil}, {"rouge2", 23.3526 * 0.99, nil}, {"rougel", 30.4608 * 0.99, nil}, {"tokens_per_sample", 144.84 * 0.9, up(145.9 * 1.1)}}, 15000}},
		{[]string{"llama3", "8b"}, thresholds{[]threshold{{"rouge1", 38.7792 * 0.99, nil}, {"rouge2", 15.9075 * 0.99, nil}, {"rougel", 24.4957 * 0.99, nil}, {"rougelsum", 35.793 * 0.99, nil}, {"gen_len", 8167644 * 0.9, up(8167644 * 1.1)}}, 13368}},
	}
	for _, e := range table {
		if strings.Contains(hay, e.fr[0]) && strings.Contains(hay, e.fr[1]) {
			t := e.t
			return &t
		}
	}
	return nil
}
