package checker

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// pointConfig is a point.yaml that validates under the checker's PointConfig.
type pointConfig struct {
	Concurrency     int64
	Region          *string
	Dataset         string
	LoadPattern     string
	StreamAllChunks bool
	Seeds           map[string]string // scheduler_rng_seed, sample_index_rng_seed, model_seed after the v0.7 names are lifted
	LegacyNames     bool
	WarmupSalt      *bool
	Warmup          *warmupSpec
	Present         map[string]bool // disclosure fields present and not ""
	ModelName       string
	Offline         *string
	Steady          *steadyState
	Speculative     map[string]any
	NodesUsed       []nodesUsed
	HasNodesUsed    bool
	DpShortfall     *dpShortfall
	SharedSrc       *string
	SharedDocs      *string
	SeedSet         *string
	TargetCohort    *string
}

type warmupSpec struct {
	DurationS    float64
	Issued       int64
	Completed    int64
	Concurrency  int64
	LogsRetained *bool
	LinkLogs     *string
}

type steadyState struct {
	Status, Verdict      *string
	SuperStart, SuperEnd *int64
	DurationS            *float64
	State                map[string]string
}

func (s *steadyState) superPasses() *int64 {
	if s.SuperStart == nil || s.SuperEnd == nil {
		return nil
	}
	n := *s.SuperEnd - *s.SuperStart + 1
	return &n
}

func (s *steadyState) drifting() []string {
	var out []string
	for k, v := range s.State {
		if strings.HasPrefix(v, "Drifting") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

type nodesUsed struct{ Ensemble, Nodes int64 }

type dpShortfall struct {
	Actual, Formula int64
	Reason          string
}

var disclosureFields = []string{
	"division", "max_supported_concurrency", "model_name", "model_precision", "link_to_model",
	"dataset_name", "dataset_type", "dataset_link",
	"shared_src", "shared_docs", "seed_set", "target_cohort",
}

// parsePointConfig validates a point.yaml mapping as PointConfig does; problems
// are its field errors (point-config-valid), and the config is nil when any.
func parsePointConfig(m map[string]any) (*pointConfig, []string) {
	f := &fields{}
	c := &pointConfig{Present: map[string]bool{}, LoadPattern: "concurrency", StreamAllChunks: true, Seeds: map[string]string{}}
	if v := f.Int(m, "concurrency", req); v != nil {
		c.Concurrency = *v
	}
	c.Region = f.Str(m, "region", opt)
	if v := f.Str(m, "dataset", def); v != nil {
		c.Dataset = *v
	}
	if rs, ok := f.Map(m, "runtime_settings", req); ok {
		rf := f.child("runtime_settings")
		if v := rf.Str(rs, "load_pattern", def); v != nil {
			c.LoadPattern = *v
		}
		rf.Int(rs, "min_duration_ms", def)
		rf.Int(rs, "min_sample_count", opt)
		if v := rf.Bool(rs, "stream_all_chunks", def); v != nil {
			c.StreamAllChunks = *v
		}
		if rt, ok := rf.Map(rs, "runtime", req); ok {
			tf := rf.child("runtime")
			names := map[string]string{}
			for _, k := range []string{"scheduler_rng_seed", "sample_index_rng_seed", "model_seed", "scheduler_random_seed", "dataloader_random_seed"} {
				v, ok := rt[k]
				if !ok || v == nil {
					continue
				}
				t, good := seedText(v)
				if !good {
					tf.add(k, fmt.Sprintf("expected a whole number, got %v", v))
					continue
				}
				names[k] = t
			}
			if _, ok := names["scheduler_rng_seed"]; !ok {
				if v, ok := names["scheduler_random_seed"]; ok {
					names["scheduler_rng_seed"] = v
				}
			}
			if _, ok := names["sample_index_rng_seed"]; !ok {
				if v, ok := names["dataloader_random_seed"]; ok {
					names["sample_index_rng_seed"] = v
				}
			}
			_, s1 := names["scheduler_random_seed"]
			_, s2 := names["dataloader_random_seed"]
			_, ms := names["model_seed"]
			c.LegacyNames = (s1 || s2) && !ms
			for _, k := range seedFields {
				if v, ok := names[k]; ok {
					c.Seeds[k] = v
				}
			}
			rf.merge(tf)
		}
		if wl, ok := rf.Map(rs, "warmup", opt); ok {
			wf := rf.child("warmup")
			c.WarmupSalt = wf.Bool(wl, "salt", opt)
			rf.merge(wf)
		}
		f.merge(rf)
	}
	if w, ok := f.Map(m, "warmup", opt); ok {
		wf := f.child("warmup")
		spec := &warmupSpec{}
		d := wf.Float(w, "duration_s", req)
		if d != nil && (*d < 0 || *d > 86400) {
			wf.add("duration_s", "must be between 0 and 86400")
		}
		is := wf.Int(w, "requests_issued", req)
		co := wf.Int(w, "requests_completed", req)
		for _, p := range []struct {
			k string
			v *int64
		}{{"requests_issued", is}, {"requests_completed", co}} {
			if p.v != nil && *p.v < 0 {
				wf.add(p.k, "must be at least 0")
			}
		}
		if ds := wf.Str(w, "data_source", req); ds != nil && *ds == "" {
			wf.add("data_source", "needs at least 1 character(s)")
		}
		cc := wf.Int(w, "concurrency", req)
		if cc != nil && *cc < 0 {
			wf.add("concurrency", "must be at least 0")
		}
		if l, ok := wf.List(w, "initialization_steps", def); ok {
			for i, e := range l {
				if _, s := e.(string); !s {
					wf.add(fmt.Sprintf("initialization_steps.%d", i), "expected a string")
				}
			}
		}
		spec.LogsRetained = wf.Bool(w, "logs_retained", opt)
		spec.LinkLogs = wf.Str(w, "link_logs", opt)
		if len(wf.problems) == 0 {
			spec.DurationS, spec.Issued, spec.Completed, spec.Concurrency = *d, *is, *co, *cc
			if spec.Completed > spec.Issued {
				wf.add("", fmt.Sprintf("warmup requests_completed (%d) exceeds requests_issued (%d)", spec.Completed, spec.Issued))
			} else if spec.Concurrency == 0 && (spec.DurationS != 0 || spec.Issued != 0 || spec.Completed != 0) {
				wf.add("", "warmup concurrency must be positive when duration or requests are nonzero")
			}
		}
		if len(wf.problems) == 0 {
			c.Warmup = spec
		}
		f.merge(wf)
	}
	for _, k := range []string{"division", "model_name", "model_precision", "link_to_model", "link_to_model_transformation", "model_notes", "dataset_name", "dataset_type", "dataset_link", "offline", "shared_src", "shared_docs", "seed_set", "target_cohort"} {
		v := f.Str(m, k, opt)
		if v != nil && *v != "" {
			c.Present[k] = true
		}
		switch k {
		case "model_name":
			if v != nil {
				c.ModelName = *v
			}
		case "offline":
			c.Offline = v
		case "shared_src":
			c.SharedSrc = v
		case "shared_docs":
			c.SharedDocs = v
		case "seed_set":
			c.SeedSet = v
		case "target_cohort":
			c.TargetCohort = v
		}
	}
	if v := f.Int(m, "max_supported_concurrency", opt); v != nil {
		c.Present["max_supported_concurrency"] = true
	}
	if ss, ok := f.Map(m, "steady_state", opt); ok {
		sf := f.child("steady_state")
		st := &steadyState{State: map[string]string{}}
		st.Status = sf.Str(ss, "status", opt)
		st.Verdict = sf.Str(ss, "verdict", opt)
		if w, ok := sf.Map(ss, "window", def); ok {
			wf := sf.child("window")
			st.SuperStart = wf.Int(w, "super_pass_start", opt)
			st.SuperEnd = wf.Int(w, "super_pass_end", opt)
			wf.Int(w, "super_pass_size", opt)
			wf.Int(w, "n_samples", opt)
			st.DurationS = wf.Float(w, "duration_s", opt)
			sf.merge(wf)
		}
		if sm, ok := sf.Map(ss, "state", def); ok {
			for k, v := range sm {
				s, good := v.(string)
				if !good {
					sf.add("state."+k, "expected a string")
					continue
				}
				st.State[k] = s
			}
		}
		f.merge(sf)
		c.Steady = st
	}
	if sd, ok := f.Map(m, "speculative_decoding", opt); ok && len(sd) > 0 {
		c.Speculative = sd
	}
	if l, ok := f.List(m, "nodes_used", opt); ok {
		c.HasNodesUsed = true
		f.eachObject(l, "nodes_used", func(nf *fields, em map[string]any) {
			en := nf.Int(em, "system_node_ensemble_id", req)
			no := nf.Int(em, "nodes", req)
			if en != nil && no != nil {
				c.NodesUsed = append(c.NodesUsed, nodesUsed{*en, *no})
			}
		})
	}
	if ds, ok := f.Map(m, "dp_shortfall", opt); ok {
		df := f.child("dp_shortfall")
		a := df.Int(ds, "dp_actual", req)
		b := df.Int(ds, "dp_formula", req)
		r := df.Str(ds, "reason", req)
		if r != nil && *r == "" {
			df.add("reason", "needs at least 1 character(s)")
		}
		if len(df.problems) == 0 {
			c.DpShortfall = &dpShortfall{*a, *b, *r}
		}
		f.merge(df)
	}
	if len(f.problems) > 0 {
		return nil, f.problems
	}
	return c, nil
}

// seedText reads a seed as pydantic's lax int does, keeping integers past int64.
func seedText(v any) (string, bool) {
	if t, ok := intText(v); ok {
		return t, true
	}
	if i, ok := laxInt(v); ok {
		return strconv.FormatInt(i, 10), true
	}
	return "", false
}

// summary is a result_summary.json that validates under PointSummary.
type summary struct {
	Issued, Completed, Failed int64
	DurationNS                float64
	OSLTotal                  float64
	LatencyTotal              float64
	TPOTP90                   *float64
	TokensTotal, SecondsTotal *float64
	Extra                     map[string]any
	FullRunOSLAvg             any // output_sequence_lengths_full_run.output_sequence_lengths.avg, raw
}

func (s *summary) systemTPS() float64 {
	el := s.DurationNS / 1e9
	if el > 0 {
		return float64(int64(s.OSLTotal)) / el
	}
	return 0
}

func (s *summary) interactivity() *float64 {
	tok, sec := s.TokensTotal, s.SecondsTotal
	if tok == nil && sec == nil && s.Failed == 0 {
		t, x := s.OSLTotal, s.LatencyTotal/1e9
		tok, sec = &t, &x
	}
	if tok == nil || sec == nil || *sec <= 0 {
		return nil
	}
	v := *tok / *sec
	return &v
}

func parseSummary(m map[string]any) (*summary, []string) {
	f := &fields{}
	s := &summary{Extra: m}
	if v := f.Int(m, "n_samples_issued", def); v != nil {
		s.Issued = *v
	}
	if v := f.Int(m, "n_samples_completed", req); v != nil {
		s.Completed = *v
	}
	if v := f.Int(m, "n_samples_failed", def); v != nil {
		s.Failed = *v
	}
	if v := f.Float(m, "duration_ns", req); v != nil {
		s.DurationNS = *v
	}
	stats := func(key string) (float64, map[string]float64) {
		mm, ok := f.Map(m, key, def)
		if !ok {
			return 0, nil
		}
		sf := f.child(key)
		var total float64
		if v := sf.Float(mm, "total", def); v != nil {
			total = *v
		}
		pct := map[string]float64{}
		if pm, ok := sf.Map(mm, "percentiles", def); ok {
			raw := map[string]float64{}
			bad := false
			for k, v := range pm {
				x, good := laxFloat(v)
				if !good || v == nil {
					sf.add("percentiles."+k, fmt.Sprintf("expected a number, got %v", v))
					bad = true
					continue
				}
				raw[k] = x
			}
			if !bad {
				keys := make([]string, 0, len(raw))
				for k := range raw {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					p, err := strconv.ParseFloat(strings.TrimSpace(k), 64)
					if err != nil || math.IsInf(p, 0) || math.IsNaN(p) || p < 0 || p > 100 {
						sf.add("percentiles", fmt.Sprintf("%q is not a percentile between 0 and 100", k))
						break
					}
					canon := strconv.FormatFloat(p, 'f', -1, 64)
					if old, ok := pct[canon]; ok && old != raw[k] {
						sf.add("percentiles", "two keys for percentile "+canon+" give different values")
						break
					}
					pct[canon] = raw[k]
				}
			}
		}
		f.merge(sf)
		return total, pct
	}
	stats("ttft")
	_, tpot := stats("tpot")
	s.OSLTotal, _ = stats("output_sequence_lengths")
	s.LatencyTotal, _ = stats("latency")
	if v, ok := tpot["90"]; ok {
		x := v / 1e6
		s.TPOTP90 = &x
	}
	s.TokensTotal = f.Float(m, "output_tokens_per_turn_total", opt)
	s.SecondsTotal = f.Float(m, "e2e_turn_time_seconds_total", opt)
	if fr, ok := m["output_sequence_lengths_full_run"].(map[string]any); ok {
		if in, ok := fr["output_sequence_lengths"].(map[string]any); ok {
			s.FullRunOSLAvg = in["avg"]
		}
	}
	if len(f.problems) > 0 {
		return nil, f.problems
	}
	return s, nil
}

// systemDesc is the part of a validated system_desc.json the rules read.
type systemDesc struct {
	CMax int64
}

// validateSystemDesc validates a system_desc.json object as SystemDescription does.
func validateSystemDesc(m map[string]any) (*systemDesc, []string) {
	f := &fields{}
	spell := []string{"publication_status", "system_availability_status", "availability_status"}
	var present []string
	distinct := map[string]bool{}
	for _, k := range spell {
		if v, ok := m[k]; ok && v != nil && v != "" {
			present = append(present, k)
			distinct[strings.ToLower(strings.TrimSpace(fmt.Sprint(v)))] = true
		}
	}
	if len(distinct) > 1 {
		f.add("(top level)", "the availability fields disagree")
		return nil, f.problems
	}
	pub, hasPub := m["publication_status"]
	if (!hasPub || pub == nil || pub == "") && len(present) > 0 {
		pub, hasPub = m[present[0]], true
	}
	switch {
	case !hasPub || pub == nil:
		f.add("publication_status", missingOrNull(hasPub))
	default:
		s, ok := pub.(string)
		if !ok {
			f.add("publication_status", "must be one of Available, Preview, RDI")
		} else if l := strings.ToLower(strings.TrimSpace(s)); l != "available" && l != "preview" && l != "rdi" {
			f.add("publication_status", fmt.Sprintf("unknown availability %q", s))
		}
	}
	sd := &systemDesc{}
	f.Str(m, "system_name", req)
	if v := f.Int(m, "max_supported_concurrency", req); v != nil {
		sd.CMax = *v
	}
	f.Str(m, "system_size", req)
	f.Int(m, "system_node_ensemble_count", req)
	f.Int(m, "system_node_ensemble_total", req)
	if l, ok := f.List(m, "node_types", req); ok {
		f.eachObject(l, "node_types", func(nf *fields, nm map[string]any) {
			for _, k := range []string{"host_memory_configuration", "host_network_card_count", "driver", "filesystem"} {
				nf.Str(nm, k, req)
			}
			for _, k := range []string{"system_node_ensemble_id", "number_of_nodes", "host_processors_per_node", "host_processor_core_count", "host_processor_vcpu_count"} {
				if k == "system_node_ensemble_id" {
					if s, ok := nm[k].(string); ok {
						if _, err := strconv.Atoi(s); err == nil {
							continue
						}
					}
				}
				nf.Int(nm, k, opt)
			}
			for _, k := range []string{"host_processor_model_name", "host_memory_capacity", "host_networking", "host_storage_capacity", "host_storage_type", "other_hardware", "hw_notes", "cooling", "inference_backend", "operating_system", "container_link", "other_software_stack", "sw_notes"} {
				nf.Str(nm, k, opt)
			}
			if len(nf.problems) == 0 {
				_, c1 := laxInt(nm["host_processor_core_count"])
				_, c2 := laxInt(nm["host_processor_vcpu_count"])
				if !c1 && !c2 {
					nf.add("", "a node type must give host_processor_core_count or host_processor_vcpu_count")
				}
			}
		})
	}
	switch dv, ok := m["division"]; {
	case !ok || dv == nil:
		f.add("division", missingOrNull(ok))
	default:
		s, good := dv.(string)
		l := strings.ToLower(strings.TrimSpace(s))
		if !good || (l != "standardized" && l != "serviced" && l != "rdi") {
			f.add("division", fmt.Sprintf("unknown division %v", dv))
		}
	}
	for _, k := range []string{"submitter_org_names", "submitter_contact", "submission_id", "submission_date", "publish_date", "system_category", "serving_framework", "shortened_system_name", "endpoint_url", "node_config", "config_summary_notes", "link_config", "model_precision", "link_to_model", "link_to_model_transformation", "model_notes", "dataset_id", "dataset_name", "dataset_type", "dataset_link"} {
		f.Str(m, k, opt)
	}
	for _, k := range []string{"expert_parallel", "tensor_parallel", "pipeline_parallel", "data_parallel", "batch"} {
		f.Int(m, k, opt)
	}
	f.Bool(m, "disaggregated", opt)
	f.Float(m, "tps_utilization", opt)
	for _, k := range []string{"input_token_average", "output_token_average"} {
		f.Float(m, k, opt)
	}
	if v, ok := m["config_summary"]; ok && v != nil {
		switch x := v.(type) {
		case map[string]any:
			cf := f.child("config_summary")
			cf.Bool(x, "disaggregated", opt)
			for _, k := range []string{"expert_parallel", "tensor_parallel", "pipeline_parallel", "data_parallel", "batch"} {
				cf.Int(x, k, opt)
			}
			f.merge(cf)
		case string:
			if len([]rune(x)) < 4 {
				f.add("config_summary", "needs at least 4 character(s)")
			}
		default:
			f.add("config_summary", "expected an object or a string")
		}
	}
	if v, ok := m["measured_accuracy_score"]; ok && v != nil && v != "" {
		switch x := v.(type) {
		case string, float64, int64, uint64:
		case map[string]any:
			for ds, e := range x {
				em, good := e.(map[string]any)
				sc, good2 := em["scores"].(map[string]any)
				if !good || !good2 {
					f.add("measured_accuracy_score."+ds, "expected an object with scores")
					continue
				}
				for k, s := range sc {
					if _, n := isNumber(s); !n {
						f.add("measured_accuracy_score."+ds+".scores."+k, "expected a number")
					}
				}
			}
		default:
			f.add("measured_accuracy_score", "expected a string, a number or an object")
		}
	}
	if len(f.problems) > 0 {
		return nil, f.problems
	}
	return sd, nil
}

// accuracy is an accuracy result that validates under AccuracyResult: entries by
// dataset name.
type accuracy struct {
	Root  map[string]map[string]any
	Order []string
}

func parseAccuracy(doc any) (*accuracy, []string) {
	data := doc
	if m, ok := doc.(map[string]any); ok {
		if sc, ok := m["accuracy_scores"]; ok {
			switch sc.(type) {
			case map[string]any, []any:
				data = sc
			default:
				return nil, []string{"accuracy_scores must be a mapping of datasets or a list of entries"}
			}
		}
	}
	a := &accuracy{Root: map[string]map[string]any{}}
	switch x := data.(type) {
	case []any:
		for _, e := range x {
			em, ok := e.(map[string]any)
			if !ok {
				return nil, []string{"each accuracy_scores entry must be an object"}
			}
			name, _ := em["dataset_name"].(string)
			if strings.TrimSpace(name) == "" {
				return nil, []string{"each accuracy_scores entry needs a non-empty dataset_name"}
			}
			if _, dup := a.Root[name]; dup {
				return nil, []string{fmt.Sprintf("dataset %q appears more than once", name)}
			}
			if _, ok := em["score"]; !ok {
				return nil, []string{fmt.Sprintf("dataset %q has no score", name)}
			}
			n := map[string]any{}
			for k, v := range em {
				n[k] = v
			}
			for _, al := range [][2]string{{"unit_samples", "num_samples"}, {"num_repeats", "n_repeats"}} {
				if v, ok := em[al[0]]; ok {
					if c, ok := em[al[1]]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
						return nil, []string{fmt.Sprintf("dataset %q gives %s and %s different values", name, al[0], al[1])}
					}
					n[al[1]] = v
				}
			}
			a.Root[name] = n
			a.Order = append(a.Order, name)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			em, ok := x[k].(map[string]any)
			if !ok {
				return nil, []string{k + ": expected an object"}
			}
			a.Root[k] = em
			a.Order = append(a.Order, k)
		}
	default:
		return nil, []string{"expected an object"}
	}
	var typed []string
	for _, k := range a.Order {
		if a.Root[k]["dataset_type"] == "performance" {
			typed = append(typed, k)
		}
	}
	if len(typed) > 1 {
		return nil, []string{"more than one entry has dataset_type: performance (" + strings.Join(typed, ", ") + ")"}
	}
	return a, nil
}

func (a *accuracy) performanceDataset() string {
	for _, k := range a.Order {
		if a.Root[k]["dataset_type"] == "performance" {
			return k
		}
	}
	if e, ok := a.Root["performance"]; ok {
		if _, typed := e["dataset_type"]; !typed {
			return "performance"
		}
	}
	return ""
}

var accuracyMetaKeys = map[string]bool{"dataset_name": true, "num_samples": true, "status": true, "extractor": true, "ground_truth_column": true, "n_repeats": true, "complete": true, "unit_samples": true, "total_samples": true, "num_repeats": true, "duration_s": true, "dataset_type": true, "response_counts": true}

// metricNames are a dataset's metrics as metric_scores() gives them (the
// metrics convertible to a float).
func (a *accuracy) metricNames(ds string) []string {
	var out []string
	for _, it := range a.items(ds) {
		if _, ok := laxFloat(it.v); ok {
			out = append(out, it.k)
		}
	}
	return out
}

func (a *accuracy) metric(ds, m string) (float64, bool) {
	for _, it := range a.items(ds) {
		if it.k == m {
			return laxFloat(it.v)
		}
	}
	return 0, false
}

type kv struct {
	k string
	v any
}

func (a *accuracy) items(ds string) []kv {
	e := a.Root[ds]
	var items []kv
	switch s := e["score"].(type) {
	case map[string]any:
		keys := make([]string, 0, len(s))
		for k := range s {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			items = append(items, kv{k, s[k]})
		}
	case nil:
		keys := make([]string, 0, len(e))
		for k := range e {
			if !accuracyMetaKeys[k] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			items = append(items, kv{k, e[k]})
		}
	default:
		items = []kv{{"score", s}}
	}
	return items
}

// datasetScore is the checker's _dataset_score input: the score metric, else the
// first metric, of one dataset; ok false when it has none.
func (a *accuracy) datasetScore(ds string) (float64, bool) {
	if _, ok := a.Root[ds]; !ok {
		return 0, false
	}
	var first *float64
	for _, it := range a.items(ds) {
		x, ok := laxFloat(it.v)
		if !ok {
			continue
		}
		if it.k == "score" {
			return x, true
		}
		if first == nil {
			v := x
			first = &v
		}
	}
	if first == nil {
		return 0, false
	}
	return *first, true
}
