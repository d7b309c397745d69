package audit

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"

	"github.com/agentrace/agentrace/score"
)

// jsonDoc is a published JSON file, numbers kept as json.Number.
type jsonDoc map[string]any

func parseJSON(b []byte) (jsonDoc, error) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimSpace(b)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// get walks keys through nested objects.
func get(v any, keys ...string) (any, bool) {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			if d, ok2 := v.(jsonDoc); ok2 {
				m, ok = d, true
			}
		}
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func asObject(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case jsonDoc:
		return m, true
	}
	return nil, false
}

// numAt returns the number at a path: published is nil when the path is absent
// or null.
func numAt(d any, keys ...string) *float64 {
	v, ok := get(d, keys...)
	if !ok {
		return nil
	}
	f, ok := score.PyFloat(v)
	if !ok {
		return nil
	}
	return &f
}

// percentileKeys returns a block's percentile keys, parsed, in ascending order of
// percentile (duplicates such as "90" and "90.0" kept once, the first seen).
func percentileKeys(p map[string]any) []struct {
	Key string
	P   float64
} {
	seen := map[float64]bool{}
	var out []struct {
		Key string
		P   float64
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, err := strconv.ParseFloat(k, 64)
		if err != nil || seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, struct {
			Key string
			P   float64
		}{k, f})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].P < out[j].P })
	return out
}
