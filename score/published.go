package score

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
)

// Where Scores.Score comes from (Scores.AccuracySource).
const (
	AccuracyFromEvents = "events"
	AccuracyPublished  = "published"
)

// Dataset names the submission checker reads from accuracy results
// (agentic_targets.py).
const (
	// PerformanceDatasetType is the dataset_type of the entry scored inline on the
	// performance run; clients older than dataset_type name the entry
	// "performance".
	PerformanceDatasetType = "performance"
	// SWEBenchDataset is the accuracy dataset scored by swe_bench_scorer.
	SWEBenchDataset = "swe_bench"
)

// PublishedAccuracy is what a run's published accuracy results say, read as the
// submission checker reads them (models/file/accuracy.py): accuracy_scores as a
// list of per-dataset entries (each a mapping with a dataset_name and a score) or a
// mapping by dataset name; the inline entry found by dataset_type "performance"
// (at most one), else an untyped entry named "performance"; SWE-bench by the
// dataset name swe_bench. A score is the entry's scalar score, or the "score"
// metric of its mapping, or the mapping's first metric in file order, each read as
// Python's float() reads it; without a score key, the entry's own numeric keys.
// A score must be a fraction in [0, 1]: a percentage is an error, never rescaled.
type PublishedAccuracy struct {
	File string
	// FileProblem is set when the file is absent (a warning) or does not validate
	// (an error): the point then carries no accuracy results, as the checker
	// counts them for accuracy-coverage.
	FileProblem *schemas.Problem
	// Inline and SWEBench are nil when the results have no usable such entry; the
	// Problem beside each says why (absent: a warning; malformed: an error).
	Inline          *float64
	InlineDataset   string
	InlineProblem   *schemas.Problem
	SWEBench        *float64
	SWEBenchProblem *schemas.Problem
}

func warning(format string, a ...any) *schemas.Problem {
	return &schemas.Problem{Severity: schemas.SeverityWarning, Reason: fmt.Sprintf(format, a...)}
}

func fault(format string, a ...any) *schemas.Problem {
	return &schemas.Problem{Severity: schemas.SeverityError, Reason: fmt.Sprintf(format, a...)}
}

// ReadPublishedAccuracy reads a run's published accuracy results. A run without
// any, or results that do not parse, give problems rather than an error; only a
// file that cannot be read is an error.
func ReadPublishedAccuracy(run *archive.Run) (PublishedAccuracy, error) {
	var pa PublishedAccuracy
	name := run.AccuracyName()
	if name == "" {
		pa.FileProblem = warning("no accuracy results (accuracy/accuracy_results.json)")
		pa.InlineProblem, pa.SWEBenchProblem = pa.FileProblem, pa.FileProblem
		return pa, nil
	}
	pa.File = name
	data, err := run.ReadFile(name)
	if err != nil {
		return pa, err
	}
	label := run.FileLabel(name)
	entries, err := accuracyEntries(bytes.TrimSpace(data))
	if err != nil {
		pa.FileProblem = fault("%s: %v", label, err)
		pa.InlineProblem, pa.SWEBenchProblem = pa.FileProblem, pa.FileProblem
		return pa, nil
	}
	perf := ""
	var typed []string
	for _, e := range entries {
		if t, ok := e.fields["dataset_type"].(string); ok && t == PerformanceDatasetType {
			typed = append(typed, e.name)
		}
	}
	switch {
	case len(typed) > 1:
		pa.FileProblem = fault("%s: %d entries have dataset_type %q (%s): the client writes one", label, len(typed), PerformanceDatasetType, strings.Join(typed, ", "))
		pa.InlineProblem, pa.SWEBenchProblem = pa.FileProblem, pa.FileProblem
		return pa, nil
	case len(typed) == 1:
		perf = typed[0]
	default:
		if e := entries.get(PerformanceDatasetType); e != nil {
			if _, has := e.fields["dataset_type"]; !has {
				perf = PerformanceDatasetType
			}
		}
	}
	read := func(ds string) (*float64, *schemas.Problem) {
		e := entries.get(ds)
		f, ok := e.score()
		if !ok {
			return nil, warning("%s: dataset %q has no numeric score", label, ds)
		}
		if math.IsNaN(f) || f < 0 || f > 1 {
			return nil, fault("%s: dataset %q score %v is not a fraction in [0, 1]", label, ds, f)
		}
		return &f, nil
	}
	if perf == "" {
		why := "no entry of dataset_type \"performance\" (nor an untyped entry named \"performance\")"
		if e := entries.get(PerformanceDatasetType); e != nil {
			why = fmt.Sprintf("the entry named \"performance\" has dataset_type %v, so it is not the inline result", pyRepr(e.fields["dataset_type"]))
		}
		pa.InlineProblem = warning("%s: inline result absent: %s", label, why)
	} else {
		pa.InlineDataset = perf
		pa.Inline, pa.InlineProblem = read(perf)
	}
	if entries.get(SWEBenchDataset) != nil {
		pa.SWEBench, pa.SWEBenchProblem = read(SWEBenchDataset)
	} else {
		pa.SWEBenchProblem = warning("%s: no %q entry", label, SWEBenchDataset)
	}
	return pa, nil
}

// accuracyEntry is one per-dataset entry, its keys in file order.
type accuracyEntry struct {
	name   string
	fields map[string]any
	keys   []string
	// scoreKeys are the keys of a mapping score, in file order.
	scoreKeys []string
}

type entryList []accuracyEntry

func (l entryList) get(name string) *accuracyEntry {
	for i := range l {
		if l[i].name == name {
			return &l[i]
		}
	}
	return nil
}

// metaKeys are the bookkeeping keys of an entry that are not metrics (the
// checker's AccuracyResult._META_KEYS).
var metaKeys = map[string]bool{"dataset_name": true, "num_samples": true, "status": true, "extractor": true,
	"ground_truth_column": true, "n_repeats": true, "complete": true, "unit_samples": true, "total_samples": true,
	"num_repeats": true, "duration_s": true, "dataset_type": true, "response_counts": true}

// score is the entry's score as the checker's metric_scores and _dataset_score
// read it: the "score" metric, else the first metric that converts.
func (e *accuracyEntry) score() (float64, bool) {
	var metrics []string
	var values map[string]any
	switch sc := e.fields["score"].(type) {
	case map[string]any:
		metrics, values = e.scoreKeys, sc
	case nil:
		for _, k := range e.keys {
			if !metaKeys[k] {
				metrics = append(metrics, k)
			}
		}
		values = e.fields
	default:
		metrics, values = []string{"score"}, map[string]any{"score": sc}
	}
	first, found := 0.0, false
	for _, k := range metrics {
		f, ok := PyFloat(values[k])
		if !ok {
			continue
		}
		if k == "score" {
			return f, true
		}
		if !found {
			first, found = f, true
		}
	}
	return first, found
}

// PyFloat converts a JSON (or YAML) value as Python's float() does: numbers, booleans
// (True is 1.0) and numeric strings (surrounding white space allowed); nil, lists
// and mappings do not convert.
func PyFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		t := strings.TrimSpace(x)
		switch strings.ToLower(strings.TrimLeft(t, "+-")) {
		case "inf", "infinity", "nan":
		default:
			if strings.ContainsAny(t, "xXpP") {
				return 0, false // Go reads hex floats, Python's float() does not
			}
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(t, "_", ""), 64)
		return f, err == nil
	}
	return 0, false
}

func pyRepr(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case nil:
		return "null"
	}
	return fmt.Sprint(v)
}

// accuracyEntries lists accuracy results by dataset, in file order, as the
// checker validates them: a list entry must be a mapping with a non-empty
// dataset_name and a score, names are unique, and a mapping's entries are
// mappings.
func accuracyEntries(data []byte) (entryList, error) {
	sc := jsontext.NewScanner(data, jsontext.Python)
	root, err := decodeOrdered(&sc)
	if err == nil {
		err = sc.End()
	}
	if err != nil {
		return nil, err
	}
	if m, ok := root.(*ordered); ok {
		if sc, ok := m.get("accuracy_scores"); ok {
			root = sc
			if _, isList := sc.([]any); !isList {
				if _, isMap := sc.(*ordered); !isMap {
					return nil, fmt.Errorf("accuracy_scores is neither a list nor a mapping")
				}
			}
		}
	}
	var out entryList
	add := func(name string, v any, where string) error {
		m, ok := v.(*ordered)
		if !ok {
			return fmt.Errorf("%s is not an object", where)
		}
		if out.get(name) != nil {
			return fmt.Errorf("dataset %q is listed twice", name)
		}
		e := accuracyEntry{name: name, fields: m.plain(), keys: m.keys}
		if sc, ok := m.get("score"); ok {
			if sm, ok := sc.(*ordered); ok {
				e.scoreKeys = sm.keys
			}
		}
		out = append(out, e)
		return nil
	}
	switch r := root.(type) {
	case []any:
		for i, it := range r {
			m, ok := it.(*ordered)
			if !ok {
				return nil, fmt.Errorf("accuracy_scores[%d] is not an object", i)
			}
			nv, _ := m.get("dataset_name")
			n, _ := nv.(string)
			if strings.TrimSpace(n) == "" {
				return nil, fmt.Errorf("accuracy_scores[%d] has no dataset_name", i)
			}
			if _, ok := m.get("score"); !ok {
				return nil, fmt.Errorf("dataset %q has no score", n)
			}
			if err := add(n, m, fmt.Sprintf("accuracy_scores[%d]", i)); err != nil {
				return nil, err
			}
		}
	case *ordered:
		for i, k := range r.keys {
			if err := add(k, r.values[i], fmt.Sprintf("dataset %q", k)); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("neither a list nor a mapping of per-dataset entries")
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no per-dataset entry")
	}
	return out, nil
}

// ordered is a JSON object with its keys in file order (the last of a repeated
// key wins, as in Python's json).
type ordered struct {
	keys   []string
	values []any
}

func (o *ordered) get(k string) (any, bool) {
	for i, kk := range o.keys {
		if kk == k {
			return o.values[i], true
		}
	}
	return nil, false
}

// plain is the object as a map, nested objects included.
func (o *ordered) plain() map[string]any {
	m := make(map[string]any, len(o.keys))
	for i, k := range o.keys {
		m[k] = plainValue(o.values[i])
	}
	return m
}

func plainValue(v any) any {
	switch x := v.(type) {
	case *ordered:
		return x.plain()
	case []any:
		out := make([]any, len(x))
		for i, it := range x {
			out[i] = plainValue(it)
		}
		return out
	}
	return v
}

// decodeOrdered reads one JSON value as Python's json.loads does (jsontext's
// Python dialect: NaN and Infinity are numbers), objects as *ordered, numbers as
// json.Number.
func decodeOrdered(s *jsontext.Scanner) (any, error) {
	switch s.Peek() {
	case '{':
		o := &ordered{}
		err := s.Object(func(key []byte) error {
			k, _ := jsontext.Unquote(key)
			v, err := decodeOrdered(s)
			if err != nil {
				return err
			}
			if i := indexOf(o.keys, k); i >= 0 {
				o.values[i] = v
			} else {
				o.keys, o.values = append(o.keys, k), append(o.values, v)
			}
			return nil
		})
		return o, err
	case '[':
		l := []any{}
		err := s.Array(func(int) error {
			v, err := decodeOrdered(s)
			l = append(l, v)
			return err
		})
		return l, err
	}
	v, err := s.Value()
	if err != nil {
		return nil, err
	}
	switch jsontext.KindOf(v) {
	case jsontext.String:
		str, _ := jsontext.Unquote(v)
		return str, nil
	case jsontext.Bool:
		return v[0] == 't', nil
	case jsontext.Null:
		return nil, nil
	}
	return json.Number(v), nil
}

func indexOf(l []string, s string) int {
	for i, x := range l {
		if x == s {
			return i
		}
	}
	return -1
}

// SummaryFigures are a published result summary's system_tps and
// e2e_avg_interactivity as the submission checker takes them
// (models/file/point_summary.py, PointSummary's computed fields): derived from the
// summary's totals, never read from its own system_tps and
// e2e_avg_interactivity fields, which the checker only compares with the derived
// figures (the metric-consistency-system-tps and agentic-metric-consistency
// errors, models/aggregate/point_result.py).
type SummaryFigures struct {
	// SystemTPS is int(output_sequence_lengths.total) over duration_ns in
	// seconds, 0 when the duration is not positive (the checker's 0.0); HasSystemTPS
	// is false when the summary has no numeric duration_ns (the checker's schema
	// requires one: without it the point has no summary at all).
	SystemTPS    float64
	HasSystemTPS bool
	// Interactivity is output_tokens_per_turn_total over
	// e2e_turn_time_seconds_total; HasInteractivity is false when either is absent
	// or null or the seconds are not positive (the checker's None).
	Interactivity    float64
	HasInteractivity bool
	// TPSPerUser is 1000 over tpot's P90 in milliseconds (the percentile keyed
	// "90" or "90.0": the checker normalises the keys); HasTPSPerUser is false
	// without a finite, positive P90 (the checker's metric-consistency-tpot-p90
	// error).
	TPSPerUser    float64
	HasTPSPerUser bool
	// StoredSystemTPS, StoredInteractivity and StoredTPSPerUser are the summary's
	// own fields, nil when absent or null.
	StoredSystemTPS     *float64
	StoredInteractivity *float64
	StoredTPSPerUser    *float64
}

// DecodeSummary decodes a result summary (its first JSON value) as its figures
// are read (SummaryNumber, ReadSummaryFigures, the checker's validation): numbers
// as json.Number, so that 11 and 11.0 stay apart as Python's json tells them.
func DecodeSummary(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var s map[string]any
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	return s, nil
}

// SummaryNumber reads the finite number at a path of nested mappings of a
// summary decoded with UseNumber, as pydantic's lax mode reads a float field
// (Python's float(): a numeric string is a number).
func SummaryNumber(s map[string]any, keys ...string) (float64, bool) {
	var v any = s
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		v = m[k]
	}
	f, ok := PyFloat(v)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// ReadSummaryFigures takes a result summary decoded with UseNumber, its values
// read with SummaryNumber.
func ReadSummaryFigures(s map[string]any) SummaryFigures {
	num := func(keys ...string) (float64, bool) { return SummaryNumber(s, keys...) }
	var f SummaryFigures
	if ns, ok := num("duration_ns"); ok {
		f.HasSystemTPS = true
		total, _ := num("output_sequence_lengths", "total")
		if secs := ns / 1e9; secs > 0 {
			f.SystemTPS = math.Trunc(total) / secs
		}
	}
	tokens, okT := num("output_tokens_per_turn_total")
	secs, okS := num("e2e_turn_time_seconds_total")
	failed, _ := num("n_samples_failed")
	if s["output_tokens_per_turn_total"] == nil && s["e2e_turn_time_seconds_total"] == nil && failed == 0 {
		// The reference client's own names for the two sums, used by the checker
		// when the named ones are absent and no sample failed
		// (point_summary.py e2e_avg_interactivity).
		tokens, _ = num("output_sequence_lengths", "total")
		lat, _ := num("latency", "total")
		secs, okT, okS = lat/1e9, true, true
	}
	if okT && okS && secs > 0 {
		f.Interactivity, f.HasInteractivity = tokens/secs, true
	}
	if pct, ok := s["tpot"].(map[string]any); ok {
		pm, _ := pct["percentiles"].(map[string]any)
		for k := range pm {
			if q, err := strconv.ParseFloat(strings.TrimSpace(k), 64); err != nil || q != 90 {
				continue
			}
			if ns, ok := num("tpot", "percentiles", k); ok && ns > 0 {
				f.TPSPerUser, f.HasTPSPerUser = 1000/(ns/1e6), true
			}
		}
	}
	if v, ok := num("system_tps"); ok {
		f.StoredSystemTPS = &v
	}
	if v, ok := num("tps_per_user"); ok {
		f.StoredTPSPerUser = &v
	}
	if v, ok := num("e2e_avg_interactivity"); ok {
		f.StoredInteractivity = &v
	}
	return f
}

// CheckerRelErr is the submission checker's relative difference of a stored
// figure from its derivation: |stored - derived| / max(|derived|, 1e-9), an error
// past 1% (models/aggregate/point_result.py, _TPS_TOLERANCE).
func CheckerRelErr(stored, derived float64) float64 {
	return math.Abs(stored-derived) / math.Max(math.Abs(derived), 1e-9)
}
