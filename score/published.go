package score

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

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
// submission checker reads them: accuracy_scores as a list of per-dataset
// entries (or a mapping by dataset name), the inline entry found by dataset_type
// "performance" (else an untyped entry named "performance"), SWE-bench by the
// dataset name swe_bench; a score is the entry's scalar "score", or its "score"
// metric, or its first metric; scores are fractions in [0, 1].
type PublishedAccuracy struct {
	File string
	// Inline and SWEBench are nil when the results have no such entry.
	Inline        *float64
	InlineDataset string
	SWEBench      *float64
}

// ReadPublishedAccuracy reads a run's published accuracy results; a run without
// any gives an empty result and no error.
func ReadPublishedAccuracy(run *archive.Run) (PublishedAccuracy, error) {
	var pa PublishedAccuracy
	name := run.AccuracyName()
	if name == "" {
		return pa, nil
	}
	pa.File = name
	data, err := run.ReadFile(name)
	if err != nil {
		return pa, err
	}
	entries, err := accuracyEntries(bytes.TrimSpace(data))
	if err != nil {
		return pa, fmt.Errorf("parse %q: %w", run.FileLabel(name), err)
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	perf := ""
	for _, n := range names {
		if entries[n]["dataset_type"] == PerformanceDatasetType {
			perf = n
			break
		}
	}
	if e, ok := entries[PerformanceDatasetType]; perf == "" && ok {
		if _, typed := e["dataset_type"]; !typed {
			perf = PerformanceDatasetType
		}
	}
	score := func(ds string) (*float64, error) {
		e := entries[ds]
		var v any
		switch sc := e["score"].(type) {
		case map[string]any:
			if x, ok := sc["score"]; ok {
				v = x
			} else {
				keys := make([]string, 0, len(sc))
				for k := range sc {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				if len(keys) > 0 {
					v = sc[keys[0]]
				}
			}
		default:
			v = sc
		}
		f, ok := toFloat(v)
		if !ok {
			return nil, nil
		}
		if f < 0 || f > 1 {
			return nil, fmt.Errorf("%s: dataset %q score %v is not a fraction in [0, 1]", run.FileLabel(name), ds, f)
		}
		return &f, nil
	}
	if perf != "" {
		pa.InlineDataset = perf
		if pa.Inline, err = score(perf); err != nil {
			return pa, err
		}
	}
	if _, ok := entries[SWEBenchDataset]; ok {
		if pa.SWEBench, err = score(SWEBenchDataset); err != nil {
			return pa, err
		}
	}
	return pa, nil
}

// accuracyEntries indexes accuracy results by dataset name.
func accuracyEntries(data []byte) (map[string]map[string]any, error) {
	var root any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		return nil, err
	}
	if m, ok := root.(map[string]any); ok {
		if sc, ok := m["accuracy_scores"]; ok {
			root = sc
		}
	}
	out := map[string]map[string]any{}
	switch r := root.(type) {
	case []any:
		for i, it := range r {
			e, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("accuracy_scores[%d] is not an object", i)
			}
			n, _ := e["dataset_name"].(string)
			if n == "" {
				return nil, fmt.Errorf("accuracy_scores[%d] has no dataset_name", i)
			}
			if _, dup := out[n]; dup {
				return nil, fmt.Errorf("dataset %q is listed twice", n)
			}
			out[n] = e
		}
	case map[string]any:
		for n, it := range r {
			if e, ok := it.(map[string]any); ok {
				out[n] = e
			}
		}
	default:
		return nil, fmt.Errorf("neither a list nor a mapping of per-dataset entries")
	}
	return out, nil
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}
