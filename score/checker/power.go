package checker

import (
	"fmt"
	"io/fs"
	"math"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Power (§4.5, Appendix E): checker.py _system_facts and _load_system_power,
// models/file/system_power.py (SystemPower.compute), power_defaults.py (Appendix
// D) and models/aggregate/point_power.py (PointPower).

type systemFacts struct {
	overhead     *float64
	cores        map[int64]int64
	ensembles    map[int64]bool
	accelerators map[int64]int64
	division     string
	known        bool
}

func overheadFor(cooling string) *float64 {
	t := strings.ToLower(cooling)
	var v float64
	switch {
	case strings.Contains(t, "liquid") || strings.Contains(t, "water") || strings.Contains(t, "immersion"):
		v = 0.30
	case strings.Contains(t, "air"):
		v = 0.50
	default:
		return nil
	}
	return &v
}

// systemFacts reads the first readable */r*/system_desc.json of a system.
func (c *run) systemFacts(sys string) systemFacts {
	matches, _ := fs.Glob(c.fsys, path.Join(sys, "*", "r*", "system_desc.json"))
	sort.Strings(matches)
	for _, p := range matches {
		doc, _, err := c.readJSON(p)
		m, ok := doc.(map[string]any)
		if err != nil || !ok {
			continue
		}
		f := systemFacts{cores: map[int64]int64{}, ensembles: map[int64]bool{}, accelerators: map[int64]int64{}, known: true}
		var declared []string
		if s, ok := m["cooling"].(string); ok && strings.TrimSpace(s) != "" {
			declared = append(declared, s)
		}
		nodes, _ := m["node_types"].([]any)
		for _, n := range nodes {
			nm, ok := n.(map[string]any)
			if !ok {
				continue
			}
			if s, ok := nm["cooling"].(string); ok && strings.TrimSpace(s) != "" {
				declared = append(declared, s)
			}
			ens, isI := isInt(nm["system_node_ensemble_id"])
			if s, ok := nm["system_node_ensemble_id"].(string); ok {
				if v, ok := laxInt(strings.TrimSpace(s)); ok && isDigits(strings.TrimSpace(s)) {
					ens, isI = v, true
				}
			}
			if !isI {
				continue
			}
			f.ensembles[ens] = true
			if cc, ok := isInt(nm["host_processor_core_count"]); ok {
				f.cores[ens] = cc
			}
			if a, ok := acceleratorsPerNode(nm); ok {
				f.accelerators[ens] = a
			}
		}
		fr := map[float64]bool{}
		for _, d := range declared {
			if o := overheadFor(d); o != nil {
				fr[*o] = true
			}
		}
		if len(fr) > 1 {
			v := 0.50
			f.overhead = &v
		} else {
			for v := range fr {
				x := v
				f.overhead = &x
			}
		}
		if s, ok := m["division"].(string); ok {
			f.division = strings.ToLower(strings.TrimSpace(s))
		}
		return f
	}
	return systemFacts{}
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func acceleratorsPerNode(node map[string]any) (int64, bool) {
	entries := []any{node}
	if l, ok := node["accelerator_info"].([]any); ok && len(l) > 0 {
		entries = l
	}
	var sum int64
	n := 0
	for _, e := range entries {
		em, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if v, ok := isInt(em["accelerators_per_node"]); ok {
			sum += v
			n++
		}
	}
	return sum, n > 0
}

type setPower struct {
	id, ensemble, provisioned int64
	powerW                    float64
	accPerNode                *int64
}

type powerComputation struct {
	kw        float64
	sets      []setPower
	declared  bool
	switchW   float64
	estimated []string
}

// powerDescriptor: checker.py _load_system_power, "power-descriptor" (and
// powerEstimated): a system_power.json per system, required for Standardized.
func (c *run) powerDescriptor(sys string, facts systemFacts) *powerComputation {
	p := path.Join(sys, "system_power.json")
	optional := facts.division == "rdi" || facts.division == "serviced"
	if !c.isFile(p) {
		if !optional {
			c.emit("power-descriptor", Error, LevelSystem, p, "Missing system_power.json for "+c.named(sys)+"; §4.5.2 requires one per system")
		}
		return nil
	}
	doc, _, err := c.readJSON(p)
	if err != nil {
		c.emit("power-descriptor", Error, LevelFile, p, "JSON parse error in system_power.json: "+err.Error())
		return nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		c.emit("power-descriptor", Error, LevelFile, p, "system_power.json, field (top level): expected an object")
		return nil
	}
	sp, problems := parseSystemPower(m)
	for _, pr := range problems {
		c.emit("power-descriptor", Error, LevelFile, p, "system_power.json, field "+pr)
	}
	if sp == nil {
		return nil
	}
	if facts.overhead != nil && *facts.overhead != sp.overhead() {
		c.emit("power-descriptor", Error, LevelSystem, p, fmt.Sprintf("cooling is %q, but system_desc.json describes a system whose overhead fraction is %g; E.2 requires them to agree", sp.cooling, *facts.overhead))
	}
	var unknown []int64
	seen := map[int64]bool{}
	for _, s := range sp.sets {
		if !facts.ensembles[s.ensemble] && !seen[s.ensemble] {
			unknown = append(unknown, s.ensemble)
			seen[s.ensemble] = true
		}
	}
	if len(facts.ensembles) > 0 && len(unknown) > 0 {
		sort.Slice(unknown, func(i, j int) bool { return unknown[i] < unknown[j] })
		c.emit("power-descriptor", Warning, LevelSystem, p, fmt.Sprintf("node_sets name system_node_ensemble_id %v, which system_desc.json does not describe", unknown))
	}
	comp, problemsC, warnings := sp.compute(facts.cores)
	for _, pr := range problemsC {
		c.emit("power-descriptor", Error, LevelSystem, p, pr)
	}
	for _, w := range warnings {
		c.emit("power-descriptor", Warning, LevelSystem, p, w)
	}
	if comp == nil {
		return nil
	}
	for i := range comp.sets {
		if comp.sets[i].accPerNode == nil {
			if a, ok := facts.accelerators[comp.sets[i].ensemble]; ok {
				v := a
				comp.sets[i].accPerNode = &v
			}
		}
	}
	if len(comp.estimated) > 0 {
		c.powerEstimated(p, comp.estimated)
	}
	return comp
}

// pointPowerKW is PowerComputation.point_power_kw.
func (p *powerComputation) pointPowerKW(used map[int64]int64) float64 {
	fr := map[int64]float64{}
	all := true
	for _, s := range p.sets {
		y, ok := used[s.id]
		if !ok {
			y = s.provisioned
		}
		fr[s.id] = float64(y) / float64(s.provisioned)
		if fr[s.id] != 1 {
			all = false
		}
	}
	if len(fr) == 0 || all {
		return p.kw
	}
	if p.declared {
		mx := 0.0
		for _, f := range fr {
			mx = math.Max(mx, f)
		}
		return round2(p.kw * mx)
	}
	var engaged, prov, w float64
	for _, s := range p.sets {
		engaged += float64(s.provisioned) * fr[s.id]
		prov += float64(s.provisioned)
		w += s.powerW * fr[s.id]
	}
	w += p.switchW * engaged / prov
	return round2(w / 1000)
}

func round2(x float64) float64 { return math.RoundToEven(x*100) / 100 }

type parallelism struct {
	tp, pp, ep, dp int64
	disaggregated  bool
}

func (p parallelism) replica() int64 { return p.tp * p.pp * p.ep }

// pointParallelism is checker.py _point_parallelism: the point's own system_desc.json.
func (c *run) pointParallelism(file string) *parallelism {
	doc, _, err := c.readJSON(file)
	m, ok := doc.(map[string]any)
	if err != nil || !ok {
		return nil
	}
	sum, _ := m["config_summary"].(map[string]any)
	get := func(k string) (any, bool) {
		if v, ok := m[k]; ok {
			return v, true
		}
		v, ok := sum[k]
		return v, ok
	}
	p := parallelism{1, 1, 1, 1, false}
	any_ := false
	for _, f := range []struct {
		k string
		v *int64
	}{{"tensor_parallel", &p.tp}, {"pipeline_parallel", &p.pp}, {"expert_parallel", &p.ep}, {"data_parallel", &p.dp}} {
		if v, ok := get(f.k); ok {
			if i, ok := isInt(v); ok {
				*f.v = i
				any_ = true
			}
		}
	}
	if !any_ {
		return nil
	}
	if v, ok := get("disaggregated"); ok {
		switch x := v.(type) {
		case bool:
			p.disaggregated = x
		case int64:
			p.disaggregated = x > 1
		}
	}
	return &p
}

// nodesUsed: point_power.py _check_nodes_used; it returns the nodes by set and
// whether the declaration is usable for the denominator.
func (c *run) nodesUsed(p loadedPoint, pw *powerComputation, para *parallelism) (map[int64]int64, bool) {
	if !p.cfg.HasNodesUsed {
		return map[int64]int64{}, true
	}
	var problems []string
	by := map[int64]int64{}
	seen := map[int64]bool{}
	for _, e := range p.cfg.NodesUsed {
		if seen[e.Ensemble] {
			problems = append(problems, fmt.Sprintf("system_node_ensemble_id %d is declared twice", e.Ensemble))
			continue
		}
		seen[e.Ensemble] = true
		var match []setPower
		for _, s := range pw.sets {
			if s.ensemble == e.Ensemble {
				match = append(match, s)
			}
		}
		if len(match) != 1 {
			problems = append(problems, fmt.Sprintf("system_node_ensemble_id %d matches %d node sets in system_power.json; it must resolve to exactly one", e.Ensemble, len(match)))
			continue
		}
		if e.Nodes < 1 || e.Nodes > match[0].provisioned {
			problems = append(problems, fmt.Sprintf("system_node_ensemble_id %d: nodes %d must be a positive whole number no greater than N_s = %d", e.Ensemble, e.Nodes, match[0].provisioned))
			continue
		}
		by[match[0].id] = e.Nodes
	}
	if len(problems) == 0 && para != nil && !para.disaggregated && allAccKnown(pw) {
		var capacity int64
		for _, s := range pw.sets {
			y, ok := by[s.id]
			if !ok {
				y = s.provisioned
			}
			capacity += y * *s.accPerNode
		}
		used := para.dp * para.replica()
		if capacity < used {
			problems = append(problems, fmt.Sprintf("the declared nodes hold %d accelerators, but the point's parallelism (DP %d × TP×PP×EP %d) engages %d", capacity, para.dp, para.replica(), used))
		} else {
			spare := false
			for _, s := range pw.sets {
				y, ok := by[s.id]
				if !ok {
					y = s.provisioned
				}
				if y > 0 && capacity-*s.accPerNode >= used {
					spare = true
				}
			}
			if spare {
				c.emit("nodes-used", Warning, LevelPoint, p.yaml, "nodes_used declares more nodes than the point engages; §4.5.3 rounds up from the accelerators engaged, and the extra nodes only raise this point's denominator")
			}
		}
	}
	if len(problems) > 0 {
		c.emit("nodes-used", Error, LevelPoint, p.yaml, strings.Join(problems, "; "))
		return nil, false
	}
	return by, true
}

func allAccKnown(pw *powerComputation) bool {
	for _, s := range pw.sets {
		if s.accPerNode == nil {
			return false
		}
	}
	return true
}

// maximalEngagement: point_power.py _check_maximal_engagement: DP = floor(A_provisioned / A_replica).
func (c *run) maximalEngagement(p loadedPoint, pw *powerComputation, para *parallelism) {
	label := fmt.Sprintf("Point %d", p.cfg.Concurrency)
	if para == nil {
		c.emit("maximal-engagement", Warning, LevelPoint, p.yaml, label+": system_desc.json declares no tensor/pipeline/expert/data parallelism, so §4.5.3's engagement cannot be checked")
		return
	}
	if para.disaggregated {
		c.emit("maximal-engagement", Warning, LevelPoint, p.yaml, label+": disaggregated serving — engagement is left to peer review")
		return
	}
	if !allAccKnown(pw) {
		c.emit("maximal-engagement", Warning, LevelPoint, p.yaml, label+": accelerators per node are not known for every node set, so A_provisioned cannot be derived")
		return
	}
	var aProv int64
	for _, s := range pw.sets {
		aProv += s.provisioned * *s.accPerNode
	}
	rep, dp := para.replica(), para.dp
	if rep < 1 || dp < 1 {
		c.emit("maximal-engagement", Error, LevelPoint, p.yaml, label+": TP, PP, EP and DP must each be at least 1")
		return
	}
	dpMax := aProv / rep
	formula := fmt.Sprintf("floor(%d / %d) = %d", aProv, rep, dpMax)
	sf := p.cfg.DpShortfall
	switch {
	case dp > dpMax:
		c.emit("maximal-engagement", Error, LevelPoint, p.yaml, fmt.Sprintf("%s: DP %d × A_replica %d = %d accelerators, more than the %d provisioned (%s)", label, dp, rep, dp*rep, aProv, formula))
	case dp == dpMax:
		if sf != nil {
			c.emit("maximal-engagement", Warning, LevelPoint, p.yaml, fmt.Sprintf("%s: DP %d = %s; dp_shortfall is declared but there is no shortfall", label, dp, formula))
		}
	case sf == nil:
		c.emit("maximal-engagement", Error, LevelPoint, p.yaml, fmt.Sprintf("%s: DP %d is below %s, and the point declares no dp_shortfall (§8.3)", label, dp, formula))
	case sf.Actual != dp || sf.Formula != dpMax:
		c.emit("maximal-engagement", Error, LevelPoint, p.yaml, fmt.Sprintf("%s: dp_shortfall declares DP %d of %d, but the point runs DP %d of %s", label, sf.Actual, sf.Formula, dp, formula))
	default:
		c.emit("maximal-engagement", Warning, LevelPoint, p.yaml, fmt.Sprintf("%s: DP %d below %s, declared as a shortfall: %q — subject to Methodology objection at peer review", label, dp, formula, sf.Reason))
	}
}

// metricConsistencyTPSPerKW: point_power.py _check_tps_per_kw (1%).
func (c *run) metricConsistencyTPSPerKW(pw *powerComputation, used map[int64]int64, tps float64, stored *float64, sp string) {
	kw := pw.pointPowerKW(used)
	if kw <= 0 || stored == nil {
		return
	}
	d := tps / kw
	if relErr(*stored, d) > 0.01 {
		c.emit("metric-consistency-tps-per-kw", Error, LevelPoint, sp, fmt.Sprintf("stored system_tps_per_kw %.4f ≠ derived system_tps / point_power_kw %.2f = %.4f", *stored, kw, d))
	}
}

// ---- system_power.json ------------------------------------------------------

type sourced struct {
	w, kw, pj *float64
	typ, src  string
}

func (s *sourced) watts() *float64 {
	if s.w != nil {
		return s.w
	}
	if s.kw != nil {
		v := *s.kw * 1000
		return &v
	}
	return nil
}

type nodeSet struct {
	id, ensemble, provisioned int64
	method                    string
	published                 *sourced
	rack                      *int64
	comp                      map[string]any
	hasComp                   bool
	accCount                  *int64
}

type systemPower struct {
	cooling  string
	sets     []nodeSet
	scaleOut map[string]any
	declared *sourced
	computed map[string]any
	statedKW *float64
}

func (s *systemPower) overhead() float64 {
	if s.cooling == "liquid" {
		return 0.30
	}
	return 0.50
}

var appendixD = map[string]bool{"D.1": true, "D.2": true, "D.3": true, "D.4": true}

func parseSourced(f *fields, m map[string]any, key string) *sourced {
	v, ok := f.Map(m, key, opt)
	if !ok {
		return nil
	}
	sf := f.child(key)
	s := &sourced{}
	for k := range v {
		switch k {
		case "value_w", "value_kw", "value_pj", "source_type", "source":
		default:
			sf.add(k, "not a recognised field")
		}
	}
	s.w, s.kw, s.pj = sf.Float(v, "value_w", opt), sf.Float(v, "value_kw", opt), sf.Float(v, "value_pj", opt)
	for _, x := range []*float64{s.w, s.kw, s.pj} {
		if x != nil && *x < 0 {
			sf.add("value", "must be at least 0")
		}
	}
	if t := sf.Str(v, "source_type", req); t != nil {
		s.typ = *t
		if !contains([]string{"vendor_spec", "publication", "public_statement", "mlc_default"}, *t) {
			sf.add("source_type", "must be one of vendor_spec, publication, public_statement, mlc_default")
		}
	}
	if src := sf.Str(v, "source", req); src != nil {
		s.src = *src
		if *src == "" {
			sf.add("source", "needs at least 1 character(s)")
		}
	}
	if len(sf.problems) == 0 {
		n := 0
		for _, x := range []*float64{s.w, s.kw, s.pj} {
			if x != nil {
				n++
			}
		}
		switch {
		case n != 1:
			sf.add("", "give exactly one of value_w, value_kw or value_pj")
		case s.typ == "mlc_default" && !appendixD[s.src]:
			sf.add("", "an mlc_default source names its Appendix D subsection")
		case s.typ != "mlc_default" && !strings.HasPrefix(s.src, "https://") && !strings.HasPrefix(s.src, "http://"):
			sf.add("", "a "+s.typ+" source must be a resolvable URL")
		}
	}
	f.merge(sf)
	if len(sf.problems) > 0 {
		return nil
	}
	return s
}

func parseSystemPower(m map[string]any) (*systemPower, []string) {
	f := &fields{}
	sp := &systemPower{}
	if s := f.Str(m, "system_desc_id", req); s != nil && *s == "" {
		f.add("system_desc_id", "needs at least 1 character(s)")
	}
	if s := f.Str(m, "cooling", req); s != nil {
		if *s != "liquid" && *s != "air" {
			f.add("cooling", "must be 'liquid' or 'air'")
		}
		sp.cooling = *s
	}
	if l, ok := f.List(m, "node_sets", req); ok {
		if len(l) == 0 {
			f.add("node_sets", "needs at least 1 item(s)")
		}
		f.eachObject(l, "node_sets", func(nf *fields, em map[string]any) {
			ns := nodeSet{}
			id := nf.Int(em, "node_set_id", req)
			en := nf.Int(em, "system_node_ensemble_id", req)
			pr := nf.Int(em, "nodes_provisioned", req)
			if pr != nil && *pr <= 0 {
				nf.add("nodes_provisioned", "must be greater than 0")
			}
			if me := nf.Str(em, "power_method", req); me != nil {
				if !contains([]string{"component_sum", "published_system", "node_scaling"}, *me) {
					nf.add("power_method", "must be component_sum, published_system or node_scaling")
				}
				ns.method = *me
			}
			ns.published = parseSourced(nf, em, "published_power")
			ns.rack = nf.Int(em, "nodes_in_published_rack", opt)
			if cm, ok := nf.Map(em, "components", opt); ok {
				ns.comp, ns.hasComp = cm, true
				cf := nf.child("components")
				for _, part := range []string{"cpu", "accelerator"} {
					if pm, ok := cf.Map(cm, part, opt); ok {
						pf := cf.child(part)
						cnt := pf.Int(pm, "count_per_node", req)
						if cnt != nil && *cnt < 0 {
							pf.add("count_per_node", "must be at least 0")
						}
						pf.Str(pm, "model", opt)
						parseSourced(pf, pm, "tdp_per_unit")
						if part == "accelerator" && cnt != nil {
							v := *cnt
							ns.accCount = &v
						}
						cf.merge(pf)
					}
				}
				parseSourced(cf, cm, "combined_cpu_accelerator")
				if um, ok := cf.Map(cm, "scale_up_network", opt); ok {
					uf := cf.child("scale_up_network")
					if me := uf.Str(um, "method", req); me != nil && !contains([]string{"declared_tdp", "bandwidth_estimate", "none"}, *me) {
						uf.add("method", "must be declared_tdp, bandwidth_estimate or none")
					}
					uf.Int(um, "switch_count", opt)
					uf.Float(um, "aggregate_bandwidth_tbps", opt)
					parseSourced(uf, um, "tdp_per_switch")
					parseSourced(uf, um, "energy_per_bit_pj")
					cf.merge(uf)
				}
				nf.merge(cf)
			}
			if len(nf.problems) == 0 {
				ns.id, ns.ensemble, ns.provisioned = *id, *en, *pr
				sp.sets = append(sp.sets, ns)
			}
		})
	}
	if so, ok := f.Map(m, "scale_out", req); ok {
		sf := f.child("scale_out")
		sf.Bool(so, "present", req)
		if cb := sf.Str(so, "cabling", opt); cb != nil && *cb != "passive" && *cb != "active_optical" {
			sf.add("cabling", "must be passive or active_optical")
		}
		sf.Float(so, "required_bandwidth_tbps", opt)
		if nm, ok := sf.Map(so, "nics", opt); ok {
			nf := sf.child("nics")
			nf.Int(nm, "count_per_node", req)
			nf.Float(nm, "bandwidth_per_nic_gbps", req)
			nf.Bool(nm, "counted", req)
			parseSourced(nf, nm, "tdp_per_nic")
			sf.merge(nf)
		}
		if sl, ok := sf.List(so, "switches", opt); ok {
			sf.eachObject(sl, "switches", func(wf *fields, em map[string]any) {
				wf.Str(em, "model", req)
				if n := wf.Int(em, "count", req); n != nil && *n <= 0 {
					wf.add("count", "must be greater than 0")
				}
				wf.Float(em, "bandwidth_tbps", req)
				parseSourced(wf, em, "power_per_switch")
			})
		}
		sp.scaleOut = so
		f.merge(sf)
	}
	sp.declared = parseSourced(f, m, "declared_provisioned_power")
	sp.computed, _ = f.Map(m, "computed", opt)
	sp.statedKW = f.Float(m, "provisioned_power_kw", opt)
	f.Bool(m, "mlc_estimated_power", opt)
	f.Str(m, "notes", opt)
	if len(f.problems) > 0 {
		return nil, f.problems
	}
	return sp, nil
}

// compute is SystemPower.compute: the provisioned power, or the problems that
// stop it (each a power-descriptor error) and its warnings.
func (s *systemPower) compute(cores map[int64]int64) (*powerComputation, []string, []string) {
	var problems, warnings, gaps, estimated []string
	over := s.overhead()
	ids := map[int64]bool{}
	for _, n := range s.sets {
		if ids[n.id] {
			problems = append(problems, "node_set_id values must be unique within the file")
			break
		}
		ids[n.id] = true
	}
	watts := func(label string, v *sourced, fallback *float64, fbSrc string) *float64 {
		if v != nil {
			w := v.watts()
			if w == nil {
				problems = append(problems, label+" is an energy figure; give value_w or value_kw")
				return nil
			}
			if v.typ == "mlc_default" {
				estimated = append(estimated, label+" ("+v.src+" default)")
			}
			return w
		}
		if fallback != nil {
			estimated = append(estimated, label+" (absent; auto-populated from "+fbSrc+")")
			return fallback
		}
		gaps = append(gaps, label+" is absent and Appendix D has no default for it")
		return nil
	}
	major := map[int64]float64{}
	published := map[int64]float64{}
	for _, n := range s.sets {
		label := fmt.Sprintf("node_sets[%d]", n.id)
		y := float64(n.provisioned)
		switch n.method {
		case "component_sum":
			if !n.hasComp {
				problems = append(problems, label+": component_sum requires components")
				continue
			}
			if pn := perNodeW(n.comp, cores, n.ensemble, label+".components", watts, &problems, &gaps, &estimated); pn != nil {
				major[n.id] = y * *pn
			}
		default:
			if n.published == nil {
				problems = append(problems, label+": "+n.method+" requires published_power")
				continue
			}
			w := watts(label+".published_power", n.published, nil, "")
			if w == nil {
				continue
			}
			if n.method == "published_system" {
				published[n.id] = y * *w
				continue
			}
			if n.rack == nil || float64(*n.rack) <= y {
				problems = append(problems, fmt.Sprintf("%s: node_scaling requires nodes_in_published_rack greater than nodes_provisioned (%d)", label, n.provisioned))
				continue
			}
			published[n.id] = *w * (y / float64(*n.rack))
		}
	}
	switchW, nicPerNode := s.scaleOutPower(watts, &problems, &warnings)
	for _, n := range s.sets {
		major[n.id] += float64(n.provisioned) * nicPerNode
	}
	var majorW, pubW float64
	for _, v := range major {
		majorW += v
	}
	for _, v := range published {
		pubW += v
	}
	pc := &powerComputation{switchW: switchW}
	for _, n := range s.sets {
		pc.sets = append(pc.sets, setPower{id: n.id, ensemble: n.ensemble, provisioned: n.provisioned, powerW: (1+over)*major[n.id] + published[n.id], accPerNode: n.accCount})
	}
	total := majorW + over*majorW + pubW + switchW
	var kw *float64
	if s.declared != nil {
		pc.declared = true
		if w := s.declared.watts(); w == nil {
			problems = append(problems, "declared_provisioned_power must give value_kw or value_w")
		} else {
			v := round2(*w / 1000)
			kw = &v
			if s.declared.typ == "mlc_default" {
				pc.estimated = append(pc.estimated, "declared_provisioned_power (mlc_default)")
			}
		}
	} else {
		problems = append(problems, gaps...)
		pc.estimated = append(pc.estimated, estimated...)
		if len(problems) == 0 {
			v := round2(total / 1000)
			kw = &v
		}
	}
	if len(problems) == 0 && len(gaps) == 0 {
		if s.computed != nil {
			ours := map[string]float64{"major_components_w": majorW, "other_components_w": over * majorW, "published_node_power_w": pubW, "scale_out_switch_power_w": switchW, "total_system_power_w": total}
			keys := []string{"major_components_w", "other_components_w", "published_node_power_w", "scale_out_switch_power_w", "total_system_power_w"}
			for _, k := range keys {
				if t, ok := laxFloat(s.computed[k]); ok && s.computed[k] != nil && math.Abs(t-ours[k]) > 0.5 {
					problems = append(problems, fmt.Sprintf("computed.%s is %g, recomputed %g", k, t, ours[k]))
				}
			}
			if t, ok := laxFloat(s.computed["overhead_fraction"]); ok && s.computed["overhead_fraction"] != nil && math.Abs(t-over) > 1e-9 {
				problems = append(problems, fmt.Sprintf("computed.overhead_fraction is %g, but cooling %q fixes it at %g", t, s.cooling, over))
			}
		}
		if s.statedKW != nil && kw != nil && math.Abs(*s.statedKW-*kw) > 0.005 {
			problems = append(problems, fmt.Sprintf("provisioned_power_kw is %g, recomputed %.2f", *s.statedKW, *kw))
		}
	}
	if len(problems) > 0 || kw == nil {
		return nil, problems, warnings
	}
	pc.kw = *kw
	return pc, nil, warnings
}

type wattsFunc func(label string, v *sourced, fallback *float64, fbSrc string) *float64

func sourcedAt(m map[string]any, key string) *sourced {
	f := &fields{}
	return parseSourced(f, m, key)
}

func perNodeW(comp map[string]any, cores map[int64]int64, ensemble int64, label string, watts wattsFunc, problems, gaps, estimated *[]string) *float64 {
	cpu, _ := comp["cpu"].(map[string]any)
	acc, _ := comp["accelerator"].(map[string]any)
	var parts []*float64
	if comb := sourcedAt(comp, "combined_cpu_accelerator"); comb != nil {
		if (cpu != nil && cpu["tdp_per_unit"] != nil) || (acc != nil && acc["tdp_per_unit"] != nil) {
			*problems = append(*problems, label+": combined_cpu_accelerator is mutually exclusive with cpu.tdp_per_unit and accelerator.tdp_per_unit")
		}
		parts = append(parts, watts(label+".combined_cpu_accelerator", comb, nil, ""))
	} else {
		if cpu == nil || acc == nil {
			*problems = append(*problems, label+": needs cpu and accelerator, or combined_cpu_accelerator")
			return nil
		}
		var cc *int64
		if v, ok := cores[ensemble]; ok {
			cc = &v
		}
		model, _ := cpu["model"].(string)
		cpuW := watts(label+".cpu.tdp_per_unit", sourcedAt(cpu, "tdp_per_unit"), cpuDefault(model, cc), "D.2")
		amodel, _ := acc["model"].(string)
		accW := watts(label+".accelerator.tdp_per_unit", sourcedAt(acc, "tdp_per_unit"), acceleratorDefault(amodel), "D.3")
		cn, _ := laxInt(cpu["count_per_node"])
		an, _ := laxInt(acc["count_per_node"])
		if cpuW != nil {
			v := float64(cn) * *cpuW
			parts = append(parts, &v)
		} else {
			parts = append(parts, nil)
		}
		if accW != nil {
			v := float64(an) * *accW
			parts = append(parts, &v)
		} else {
			parts = append(parts, nil)
		}
	}
	up, ok := comp["scale_up_network"].(map[string]any)
	if !ok {
		*problems = append(*problems, label+": scale_up_network is required; use method none where there is no scale-up switch")
		return nil
	}
	ul := label + ".scale_up_network"
	var upW *float64
	switch up["method"] {
	case "none":
		z := 0.0
		upW = &z
	case "declared_tdp":
		n, ok := laxInt(up["switch_count"])
		if !ok || up["switch_count"] == nil {
			*problems = append(*problems, ul+": declared_tdp requires switch_count")
			return nil
		}
		if w := watts(ul+".tdp_per_switch", sourcedAt(up, "tdp_per_switch"), nil, ""); w != nil {
			v := float64(n) * *w
			upW = &v
		}
	default:
		bw, ok := laxFloat(up["aggregate_bandwidth_tbps"])
		if !ok || up["aggregate_bandwidth_tbps"] == nil {
			*problems = append(*problems, ul+": bandwidth_estimate requires aggregate_bandwidth_tbps")
			return nil
		}
		e := sourcedAt(up, "energy_per_bit_pj")
		if e == nil {
			*gaps = append(*gaps, ul+".energy_per_bit_pj is absent; there is no default to apply")
			return nil
		}
		if e.pj == nil {
			*problems = append(*problems, ul+".energy_per_bit_pj must give value_pj")
			return nil
		}
		if e.typ == "mlc_default" {
			*estimated = append(*estimated, ul+".energy_per_bit_pj ("+e.src+" default)")
		}
		v := bw * 8 * *e.pj
		upW = &v
	}
	parts = append(parts, upW)
	sum := 0.0
	for _, p := range parts {
		if p == nil {
			return nil
		}
		sum += *p
	}
	return &sum
}

func (s *systemPower) scaleOutPower(watts wattsFunc, problems, warnings *[]string) (float64, float64) {
	so := s.scaleOut
	present, _ := laxBool(so["present"])
	if !present {
		return 0, 0
	}
	var missing []string
	for _, k := range []string{"cabling", "required_bandwidth_tbps", "nics", "switches"} {
		if so[k] == nil {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		*problems = append(*problems, "scale_out.present is true but "+joinNames(missing)+" is missing")
		return 0, 0
	}
	var nodes int64
	byFormula := false
	for _, n := range s.sets {
		nodes += n.provisioned
		if n.method == "component_sum" {
			byFormula = true
		}
	}
	nics := so["nics"].(map[string]any)
	counted, _ := laxBool(nics["counted"])
	cnt, _ := laxInt(nics["count_per_node"])
	bw, _ := laxFloat(nics["bandwidth_per_nic_gbps"])
	nicPerNode := 0.0
	if counted {
		if ex, _ := nics["excluded_from_published_power"].(string); !byFormula && ex == "" {
			*problems = append(*problems, "scale_out.nics.counted is true, but node power comes from a published specification")
		}
		def := 75.0
		if w := watts("scale_out.nics.tdp_per_nic", sourcedAt(nics, "tdp_per_nic"), &def, "D.4"); w != nil {
			nicPerNode = float64(cnt) * *w
		}
	} else if byFormula {
		*problems = append(*problems, "scale_out.nics.counted is false, but node power is built with the MLC formula, which has no NIC term")
	}
	cabling, _ := so["cabling"].(string)
	var switchW, offered float64
	for i, e := range so["switches"].([]any) {
		em := e.(map[string]any)
		model, _ := em["model"].(string)
		n, _ := laxInt(em["count"])
		b, _ := laxFloat(em["bandwidth_tbps"])
		if w := watts(fmt.Sprintf("scale_out.switches[%d].power_per_switch", i), sourcedAt(em, "power_per_switch"), switchDefault(model, cabling), "D.4"); w != nil {
			switchW += float64(n) * *w
		}
		offered += float64(n) * b
	}
	req, _ := laxFloat(so["required_bandwidth_tbps"])
	if offered < req {
		*problems = append(*problems, fmt.Sprintf("scale-out switches offer %g Tb/s, below the required %g Tb/s", offered, req))
	}
	fromNICs := float64(nodes*cnt) * bw / 1000
	if math.Abs(fromNICs-req) > 1e-6 {
		*warnings = append(*warnings, fmt.Sprintf("scale_out.required_bandwidth_tbps is %g, but the NICs carry %g Tb/s", req, fromNICs))
	}
	return switchW, nicPerNode
}

// Appendix D defaults (power_defaults.py).
var (
	armWords    = regexp.MustCompile(`\b(grace|neoverse|arm|graviton|axion|ampere|altra|agi)\b`)
	x86Words    = regexp.MustCompile(`\b(xeon|epyc|intel|amd|x86|x86_64)\b`)
	coresInName = regexp.MustCompile(`(\d+)[\s-]*core`)
	squashRE    = regexp.MustCompile(`[^a-z0-9]`)
)

func cpuDefault(model string, cores *int64) *float64 {
	if model == "" {
		return nil
	}
	t := strings.ToLower(model)
	if cores == nil {
		if m := coresInName.FindStringSubmatch(t); m != nil {
			v, _ := laxInt(m[1])
			cores = &v
		}
	}
	if cores == nil {
		return nil
	}
	var w float64
	switch {
	case armWords.MatchString(t):
		if *cores > 128 {
			return nil
		}
		w = 300
	case x86Words.MatchString(t):
		w = 350
		if *cores > 64 {
			w = 500
		}
	default:
		return nil
	}
	return &w
}

func acceleratorDefault(model string) *float64 {
	s := squashRE.ReplaceAllString(strings.ToLower(model), "")
	if s == "" {
		return nil
	}
	for _, a := range []struct {
		k string
		w float64
	}{{"gb300", 1400}, {"gb200", 1200}, {"b300", 1100}, {"b200", 1000}, {"mi455x", 2500}, {"mi355x", 1400}, {"mi350x", 1000}, {"tpuv7", 1000}, {"tn3", 700}} {
		if strings.Contains(s, a.k) {
			w := a.w
			return &w
		}
	}
	return nil
}

func switchDefault(model, cabling string) *float64 {
	s := squashRE.ReplaceAllString(strings.ToLower(model), "")
	if s == "" || cabling == "" {
		return nil
	}
	for _, sw := range []struct {
		k string
		w map[string]float64
	}{{"sn6810ld", map[string]float64{"passive": 1960, "active_optical": 1960}}, {"sn5610", map[string]float64{"passive": 900, "active_optical": 2080}}, {"sn5400", map[string]float64{"passive": 670}}, {"sn4700", map[string]float64{"passive": 630}}} {
		if strings.Contains(s, sw.k) {
			if w, ok := sw.w[cabling]; ok {
				return &w
			}
			return nil
		}
	}
	return nil
}
