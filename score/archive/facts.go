package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"sync"

	"github.com/agentrace/agentrace/schemas"
	"go.yaml.in/yaml/v3"
)

// Facts are what a run says about itself, gathered from its manifest (agentrace),
// config.yaml and result summary (reference), point.yaml and system_desc.json
// (submission point). Zero values mean "not stated".
type Facts struct {
	Model       string
	Concurrency int
	// Dataset is the dataset the run names (manifest config.dataset, the
	// reference config's performance dataset path), as written: relative paths
	// are relative to the run folder or to where the run was made.
	Dataset string
	// DatasetName is a submission point's dataset name (point.yaml dataset).
	DatasetName string
	// Trajectories is the trajectory budget (num_trajectories_to_issue).
	Trajectories int
	// DatasetSize is the conversations of the dataset replayed (agentrace runs).
	DatasetSize int
	DatasetHash string
	// Salt, Delays, StopIssuing and Stream are the official-settings switches,
	// nil when the run does not say.
	Salt, Delays, StopIssuing, Stream *bool
	// LoadPattern is the load pattern type (agentic_inference, concurrency, ...).
	LoadPattern   string
	MinDurationMs int64
	// Region is the region a submission point declares (point.yaml).
	Region string
	// MaxSupportedConcurrency is the declared C_max (system_desc.json, else
	// point.yaml: the checker reads the system description's).
	MaxSupportedConcurrency int
	// SystemDesc is the point's own system_desc.json as the checker's curve reads
	// it (CurveCMax); nil when the point has none that is a JSON object.
	SystemDesc *SystemDescCopy
	// State is an agentrace run's state, or a reference summary's.
	State string
	// Manifest is an agentrace run's manifest.
	Manifest *schemas.RunManifest
	// Warnings are facts that could not be read (a config that does not parse).
	Warnings []string
	// FileChecks are the submission checker's findings on a submission point's
	// point.yaml and system_desc.json (see pointFacts).
	FileChecks []FileCheck
}

// Facts reads what the run says about itself, once for the source it was found
// in: every later call gives what the first read (a command judges one state of
// a run's files, even one still being written). Only an unreadable manifest of
// an agentrace run is an error; other unreadable files become warnings.
func (r *Run) Facts() (Facts, error) {
	if r.Source == nil {
		return r.readFacts()
	}
	r.Source.factsMu.Lock()
	m, ok := r.Source.facts[r.Dir]
	if !ok {
		if r.Source.facts == nil {
			r.Source.facts = map[string]*factsRead{}
		}
		m = &factsRead{}
		r.Source.facts[r.Dir] = m
	}
	r.Source.factsMu.Unlock()
	m.once.Do(func() { m.f, m.err = r.readFacts() })
	return m.f, m.err
}

// factsRead is a run's facts as read the first time (Run.Facts).
type factsRead struct {
	once sync.Once
	f    Facts
	err  error
}

func (r *Run) readFacts() (Facts, error) {
	var f Facts
	switch r.Kind {
	case KindAgentrace:
		data, err := r.ReadFile(ManifestFile)
		if err != nil {
			return f, fmt.Errorf("read run manifest: %w", err)
		}
		var m schemas.RunManifest
		if err := json.Unmarshal(data, &m); err != nil {
			return f, fmt.Errorf("parse run manifest %q: %w", r.FileLabel(ManifestFile), err)
		}
		f.Manifest = &m
		c := m.Config
		f.Model, f.Concurrency, f.Dataset, f.Trajectories = c.Model, c.Concurrency, c.Dataset, c.Trajectories
		f.DatasetSize, f.DatasetHash, f.State = m.DatasetSize, m.DatasetHash, m.State
		f.Salt, f.Delays, f.Stream = boolp(c.Salt), boolp(c.Delays), boolp(c.Stream)
		f.StopIssuing = boolp(c.StopIssuingAtWindow)
		f.LoadPattern = "agentic_inference"
		return f, nil
	case KindReference, KindSubmission:
		if r.Has(ConfigFile) {
			r.configFacts(&f)
		}
		if n := r.SummaryName(); n != "" {
			r.summaryFacts(&f, n)
		}
		if r.Kind == KindSubmission {
			r.pointFacts(&f)
			if f.Concurrency == 0 {
				f.Concurrency = r.Point
			}
		}
	}
	return f, nil
}

func boolp(b bool) *bool { return &b }

func (r *Run) warn(f *Facts, name string, err error) {
	f.Warnings = append(f.Warnings, fmt.Sprintf("%s: %v", r.FileLabel(name), err))
}

// yamlDoc parses a YAML mapping.
func yamlDoc(data []byte) (map[string]any, error) {
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func get(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func num(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		return int64(x), true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
		if v, err := x.Float64(); err == nil && v == float64(int64(v)) {
			return int64(v), true
		}
	}
	return 0, false
}

func boolv(v any) *bool {
	if b, ok := v.(bool); ok {
		return &b
	}
	return nil
}

// configFacts reads the reference's config.yaml: model_params.name, the
// performance dataset (its path and agentic_inference settings),
// settings.load_pattern and settings.runtime.
func (r *Run) configFacts(f *Facts) {
	data, err := r.ReadFile(ConfigFile)
	if err != nil {
		r.warn(f, ConfigFile, err)
		return
	}
	m, err := yamlDoc(data)
	if err != nil {
		r.warn(f, ConfigFile, err)
		return
	}
	f.Model = str(get(m, "model_params", "name"))
	if n, ok := num(get(m, "settings", "load_pattern", "target_concurrency")); ok {
		f.Concurrency = int(n)
	}
	f.LoadPattern = str(get(m, "settings", "load_pattern", "type"))
	if n, ok := num(get(m, "settings", "runtime", "min_duration_ms")); ok {
		f.MinDurationMs = n
	}
	if b := boolv(get(m, "model_params", "streaming")); b != nil {
		f.Stream = b
	}
	list, _ := get(m, "datasets").([]any)
	var perf map[string]any
	for _, it := range list {
		d, _ := it.(map[string]any)
		if d == nil {
			continue
		}
		if perf == nil || (str(d["type"]) == "performance" && str(perf["type"]) != "performance") {
			perf = d
		}
	}
	if perf != nil {
		f.Dataset = str(perf["path"])
		ai, _ := perf["agentic_inference"].(map[string]any)
		if n, ok := num(ai["num_trajectories_to_issue"]); ok {
			f.Trajectories = int(n)
		}
		f.Salt = boolv(ai["enable_salt"])
		f.Delays = boolv(ai["inject_tool_delay"])
		f.StopIssuing = boolv(ai["stop_issuing_on_first_user_complete"])
	}
}

// summaryFacts reads state and run_config from a published result summary.
func (r *Run) summaryFacts(f *Facts, name string) {
	data, err := r.ReadFile(name)
	if err != nil {
		r.warn(f, name, err)
		return
	}
	var s struct {
		State     string         `json:"state"`
		RunConfig map[string]any `json:"run_config"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(data), &s); err != nil {
		r.warn(f, name, err)
		return
	}
	f.State = s.State
	if f.LoadPattern == "" {
		if lp, ok := s.RunConfig["load_pattern"].(map[string]any); ok {
			f.LoadPattern = str(lp["type"])
			if n, ok := num(lp["target_concurrency"]); ok && f.Concurrency == 0 {
				f.Concurrency = int(n)
			}
		} else {
			f.LoadPattern = str(s.RunConfig["load_pattern"])
		}
	}
}

// FileCheck is a submission checker finding on a submission point's point.yaml
// or system_desc.json that agentrace reproduces: the checker's rule id, its
// severity (schemas.SeverityError or SeverityWarning), the file and why.
type FileCheck struct {
	Rule     string `json:"rule"`
	Severity string `json:"severity"`
	File     string `json:"file"`
	Reason   string `json:"reason"`
}

// String is the finding as one line: "point-config-valid (error): point.yaml: ...".
func (c FileCheck) String() string {
	return fmt.Sprintf("%s (%s): %s: %s", c.Rule, c.Severity, c.File, c.Reason)
}

func (r *Run) fileCheck(f *Facts, rule, severity, file, reason string) {
	f.FileChecks = append(f.FileChecks, FileCheck{Rule: rule, Severity: severity, File: file, Reason: reason})
}

// declaredRegions are the values point.yaml's region may take (the checker's
// region names and submitters_choice).
var declaredRegions = map[string]bool{"low_latency": true, "low_concurrency": true, "med_concurrency": true,
	"high_concurrency": true, "margin": true, "submitters_choice": true}

// pointFacts reads point.yaml and system_desc.json (the point's, else the
// system folder's) as the submission checker reads them: point.yaml's
// concurrency is a required integer, max_supported_concurrency an optional one,
// region an optional name, runtime_settings a required mapping with a runtime
// mapping (point-config-valid, an error: the checker then leaves the point off
// its curve); a concurrency that is not positive is load-pattern's error, a
// region name outside the vocabulary region-declared's, a concurrency other
// than the folder's point-dirname-concurrency's warning; a point.yaml that does
// not validate gives the checker's fallback concurrency (unparsedPoint). The
// system description's max_supported_concurrency is C_max (a required integer,
// system_name a string: system-description-valid, an error, as is a file that
// is not a JSON object); the point's own copy is kept for the curve's C_max
// (SystemDesc, CurveCMax); point.yaml's is read only when no system
// description declares one.
func (r *Run) pointFacts(f *Facts) {
	var yamlCMax int
	if !r.Has(SystemDescFile) {
		r.fileCheck(f, "system-description-present", schemas.SeverityError, r.FileLabel(SystemDescFile),
			"the point has no system description of its own (the checker reads no other for the curve's C_max)")
	}
	if r.Has(PointFile) {
		label := r.FileLabel(PointFile)
		data, err := r.ReadFile(PointFile)
		var m map[string]any
		if err == nil {
			m, err = yamlDoc(data)
			if err == nil && m == nil {
				err = fmt.Errorf("not a YAML mapping")
			}
		}
		if err != nil {
			r.fileCheck(f, "point-config-valid", schemas.SeverityError, label, err.Error())
		} else {
			r.readPointYAML(f, m, label, &yamlCMax)
		}
		if configInvalid(f.FileChecks) {
			r.unparsedPoint(f, m)
		}
	}
	for i, p := range []string{r.rel(SystemDescFile), path.Join(path.Dir(path.Dir(r.Dir)), SystemDescFile)} {
		if !r.Source.IsFile(p) {
			continue
		}
		label := r.Source.Label(p)
		data, err := r.Source.ReadFile(p)
		var sd map[string]any
		if err == nil {
			d := json.NewDecoder(bytes.NewReader(data))
			d.UseNumber() // 1024 and 1024.0 are told apart, as Python's json tells them
			err = d.Decode(&sd)
			if err == nil && sd == nil {
				err = fmt.Errorf("not a JSON object")
			}
		}
		if err != nil {
			r.fileCheck(f, "system-description-valid", schemas.SeverityError, label, "not readable as a JSON object: "+err.Error())
			break
		}
		c := SystemDescCopy{File: label, Valid: true}
		invalid := func(format string, a ...any) {
			c.Valid = false
			r.fileCheck(f, "system-description-valid", schemas.SeverityError, label, fmt.Sprintf(format, a...))
		}
		if n, ok := requiredInt(sd, "max_supported_concurrency", invalid); ok {
			f.MaxSupportedConcurrency, c.CMax = int(n), int(n)
		}
		if v, ok := sd["system_name"]; ok {
			if _, isStr := v.(string); !isStr {
				invalid("system_name %v is not a string", v)
			}
		}
		if !c.Valid {
			// The checker's C_max from a copy that does not validate: the raw
			// field when it is a positive JSON integer, else none.
			f.MaxSupportedConcurrency, c.CMax = 0, rawPositiveInt(sd["max_supported_concurrency"])
		}
		if i == 0 {
			f.SystemDesc = &c
		}
		break
	}
	if f.MaxSupportedConcurrency == 0 {
		f.MaxSupportedConcurrency = yamlCMax
	}
	if f.Model == "" {
		f.Model = r.Model
	}
}

// SystemDescCopy is one point's own system_desc.json as the submission checker
// reads it for the curve: Valid when it validates (as far as agentrace checks
// its schema: max_supported_concurrency an integer, system_name a string when
// given), CMax its max_supported_concurrency, or for a copy that does not
// validate the raw field when it is a positive JSON integer, else 0.
type SystemDescCopy struct {
	File  string
	Valid bool
	CMax  int
}

// CurveCMax is the C_max of a curve as the submission checker takes it
// (checker.py _check_model): from the first point, in the order of the folders'
// concurrency, whose own system_desc.json is a JSON object; a copy that does not
// validate gives its raw positive integer, else the curve has no C_max and no
// region rule runs (region-basis, a warning). copies are the submission points'
// SystemDesc in that order, nil for a point without one: when none has one the
// curve has no C_max either; found is false only for no points.
func CurveCMax(copies []*SystemDescCopy) (cmax int, reason string, found bool) {
	for _, c := range copies {
		if c == nil {
			continue
		}
		switch {
		case c.Valid:
			return c.CMax, "declared in " + c.File, true
		case c.CMax > 0:
			return c.CMax, "the raw max_supported_concurrency of " + c.File + ", which does not validate", true
		default:
			return 0, c.File + " does not validate and holds no positive integer max_supported_concurrency: no C_max, so no region rule runs (region-basis, a warning)", true
		}
	}
	if len(copies) > 0 {
		return 0, "no point folder holds a system_desc.json: no C_max, so no region rule runs (region-basis, a warning)", true
	}
	return 0, "", false
}

// requiredInt is the integer m[key] (num), or false after invalid has said that
// it is missing (or null) or not an integer.
func requiredInt(m map[string]any, key string, invalid func(format string, a ...any)) (int64, bool) {
	v, ok := m[key]
	if !ok || v == nil {
		invalid("%s is required", key)
		return 0, false
	}
	n, isInt := num(v)
	if !isInt {
		invalid("%s %v is not an integer", key, v)
	}
	return n, isInt
}

// rawPositiveInt is v when it is a positive JSON integer (not 1024.0, not
// "1024", not true), else 0: the checker's _positive_int on json.loads' value.
func rawPositiveInt(v any) int {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || i <= 0 {
		return 0
	}
	return int(i)
}

// configInvalid tells whether the findings hold point.yaml's point-config-valid
// error (the checker's _UnparsedPoint).
func configInvalid(cs []FileCheck) bool {
	for _, c := range cs {
		if c.Rule == "point-config-valid" && c.Severity == schemas.SeverityError {
			return true
		}
	}
	return false
}

// unparsedPoint gives a point whose point.yaml does not validate (m, nil when it
// does not parse as a mapping) the concurrency the checker gives it
// (_fallback_concurrency): the raw concurrency when it is a positive YAML
// integer, else the folder's r<N>. The checker compares the folder's
// concurrency with the declared one only for a point.yaml that validates
// (checker.py _load_point_configs), and PointConfig's rules on a validated
// model (load-pattern, region-declared) do not run when a field fails, so
// only the point-config-valid findings are kept.
func (r *Run) unparsedPoint(f *Facts, m map[string]any) {
	f.Concurrency = r.Point
	switch v := m["concurrency"].(type) {
	case int:
		if v > 0 {
			f.Concurrency = v
		}
	case uint64:
		if v > 0 && v <= uint64(int(^uint(0)>>1)) {
			f.Concurrency = int(v)
		}
	}
	kept := f.FileChecks[:0]
	for _, c := range f.FileChecks {
		if c.Rule != "point-dirname-concurrency" && c.Rule != "load-pattern" && c.Rule != "region-declared" {
			kept = append(kept, c)
		}
	}
	f.FileChecks = kept
}

// readPointYAML reads a parsed point.yaml into f (see pointFacts).
func (r *Run) readPointYAML(f *Facts, m map[string]any, label string, cmax *int) {
	invalid := func(format string, a ...any) {
		r.fileCheck(f, "point-config-valid", schemas.SeverityError, label, fmt.Sprintf(format, a...))
	}
	if n, ok := requiredInt(m, "concurrency", invalid); ok {
		f.Concurrency = int(n)
		if n <= 0 {
			r.fileCheck(f, "load-pattern", schemas.SeverityError, label, fmt.Sprintf("concurrency must be positive, got %d", n))
		}
		if r.Point > 0 && int(n) != r.Point {
			r.fileCheck(f, "point-dirname-concurrency", schemas.SeverityWarning, label,
				fmt.Sprintf("the folder's concurrency %d differs from the declared %d (the declared one is used)", r.Point, n))
		}
	}
	switch v := m["region"].(type) {
	case nil:
	case string:
		f.Region = v
		if !declaredRegions[v] {
			r.fileCheck(f, "region-declared", schemas.SeverityError, label, fmt.Sprintf("region %q is not one the rules define", v))
		}
	default:
		invalid("region %v is not a string", v)
	}
	if v, ok := m["max_supported_concurrency"]; ok && v != nil {
		if n, isInt := num(v); isInt {
			*cmax = int(n)
		} else {
			invalid("max_supported_concurrency %v is not an integer", v)
		}
	}
	rs, ok := m["runtime_settings"].(map[string]any)
	switch {
	case !ok:
		invalid("runtime_settings is required (a mapping)")
	default:
		if _, ok := rs["runtime"].(map[string]any); !ok {
			invalid("runtime_settings.runtime is required (a mapping)")
		}
	}
	f.DatasetName = str(m["dataset"])
	if lp := str(get(m, "runtime_settings", "load_pattern")); lp != "" {
		f.LoadPattern = lp
	}
	if n, ok := num(get(m, "runtime_settings", "min_duration_ms")); ok {
		f.MinDurationMs = n
	}
	if mn := str(m["model_name"]); mn != "" && f.Model == "" {
		f.Model = mn
	}
}
