package score

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/rulesets"
)

// DefaultSWEBenchEvaluated is the number of SWE-bench Verified instances a run is
// scored over: the first 200 of the test split, in dataset order.
const DefaultSWEBenchEvaluated = 200

// ReadSWEBenchReport reads a swebench.harness.run_evaluation report and validates it
// as the reference does (spec §9). evaluated <= 0 means DefaultSWEBenchEvaluated.
// path may also be the folder `agentrace swebench` wrote: its
// swe_bench_results.json is read, over the number of instances its swebench.json
// says were submitted for evaluation (the reference scorer's denominator), and a
// run that did not succeed is refused.
func ReadSWEBenchReport(ctx context.Context, path string, evaluated int) (*schemas.SWEBenchResult, []string, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		data, err := infile.ReadFile(ctx, filepath.Join(path, schemas.SWEBenchRunFile), infile.SmallFile)
		if err != nil {
			return nil, nil, fmt.Errorf("read SWE-bench run: %w", err)
		}
		var run schemas.SWEBenchRun
		if err := json.Unmarshal(data, &run); err != nil {
			return nil, nil, fmt.Errorf("read SWE-bench run %q: %w", filepath.Join(path, schemas.SWEBenchRunFile), err)
		}
		if run.State != "succeeded" {
			return nil, nil, fmt.Errorf("SWE-bench run %q (service run %s) ended %q: no result", path, run.RunID, run.State)
		}
		if run.Evaluated <= 0 || run.Evaluated != len(run.EvaluatedIDs) {
			return nil, nil, fmt.Errorf("SWE-bench run %q: evaluated %d disagrees with its %d evaluated_instance_ids", path, run.Evaluated, len(run.EvaluatedIDs))
		}
		path, evaluated = filepath.Join(path, "swe_bench_results.json"), run.Evaluated
	}
	data, err := infile.ReadFile(ctx, path, infile.LargeFile)
	if err != nil {
		return nil, nil, fmt.Errorf("read SWE-bench report: %w", err)
	}
	res, warn, err := ParseSWEBenchReport(data, evaluated)
	if err != nil {
		return nil, nil, fmt.Errorf("SWE-bench report %q: %w", path, err)
	}
	res.Report = path
	return res, warn, nil
}

// ParseSWEBenchReport validates a harness report: submitted_instances and
// resolved_instances must be non-negative integers (or strings of ASCII decimal
// digits; booleans and floats are refused), resolved <= submitted <= evaluated and
// submitted > 0. Score = resolved / evaluated; submitted != evaluated marks the
// result incomplete. A resolved_ids list whose length differs from
// resolved_instances gives a warning (the reference does not check it).
func ParseSWEBenchReport(data []byte, evaluated int) (*schemas.SWEBenchResult, []string, error) {
	if evaluated <= 0 {
		evaluated = DefaultSWEBenchEvaluated
	}
	var obj map[string]json.RawMessage
	if jsontext.KindOf(data) != jsontext.Object || json.Unmarshal(data, &obj) != nil {
		return nil, nil, fmt.Errorf("not a JSON object")
	}
	submitted, err := reportCounter(obj, "submitted_instances")
	if err != nil {
		return nil, nil, err
	}
	resolved, err := reportCounter(obj, "resolved_instances")
	if err != nil {
		return nil, nil, err
	}
	switch {
	case resolved.Cmp(submitted) > 0 || submitted.Cmp(big.NewInt(int64(evaluated))) > 0:
		return nil, nil, fmt.Errorf("inconsistent counts: resolved %s, submitted %s, evaluated %d (need resolved <= submitted <= evaluated)", resolved, submitted, evaluated)
	case submitted.Sign() == 0:
		return nil, nil, fmt.Errorf("submitted_instances is 0")
	}
	res := &schemas.SWEBenchResult{
		Submitted: int(submitted.Int64()), Resolved: int(resolved.Int64()), Evaluated: evaluated,
	}
	res.Score = float64(res.Resolved) / float64(evaluated)
	res.Incomplete = res.Submitted != evaluated
	var warn []string
	if res.Incomplete {
		warn = append(warn, fmt.Sprintf("SWE-bench: %d of %d evaluated instances submitted; the result is incomplete", res.Submitted, evaluated))
	}
	if ids, ok := obj["resolved_ids"]; ok {
		var list []json.RawMessage
		if json.Unmarshal(ids, &list) == nil && len(list) != res.Resolved {
			warn = append(warn, fmt.Sprintf("SWE-bench: resolved_ids lists %d instances, resolved_instances says %d", len(list), res.Resolved))
		}
	}
	return res, warn, nil
}

// reportCounter parses a required non-negative counter.
func reportCounter(obj map[string]json.RawMessage, key string) (*big.Int, error) {
	v := bytes.TrimSpace(obj[key])
	bad := fmt.Errorf("%s must be a non-negative integer, got %s", key, string(v))
	if len(v) == 0 {
		return nil, fmt.Errorf("%s is missing", key)
	}
	digits := string(v)
	if v[0] == '"' {
		if err := json.Unmarshal(v, &digits); err != nil {
			return nil, bad
		}
		// A string must be ASCII decimal digits only (no sign, no space).
		if digits == "" {
			return nil, bad
		}
		for i := 0; i < len(digits); i++ {
			if digits[i] < '0' || digits[i] > '9' {
				return nil, bad
			}
		}
	} else {
		// A JSON number that is an integer literal (no fraction or exponent).
		for i := 0; i < len(digits); i++ {
			c := digits[i]
			if (c < '0' || c > '9') && !(i == 0 && c == '-') {
				return nil, bad
			}
		}
	}
	n, ok := new(big.Int).SetString(digits, 10)
	if !ok || n.Sign() < 0 {
		return nil, bad
	}
	if !n.IsInt64() || n.Int64() > 1<<31 {
		return nil, fmt.Errorf("%s %s is out of range", key, n)
	}
	return n, nil
}

// SWEBenchPoint is one curve point's SWE-bench result.
type SWEBenchPoint struct {
	Concurrency int
	Score       float64
	// Label names the point in warnings (its report path, say).
	Label string
}

// SWEBenchBand is the SWE-bench result of one mandatory region.
type SWEBenchBand struct {
	Region string `json:"region"`
	// Points are the concurrencies of the points in the band; Score their mean.
	Points []int   `json:"points"`
	Score  float64 `json:"score"`
}

// SWEBenchMean is the mean-of-N SWE-bench result of a curve: the mean of one result
// per mandatory region (several results in one band averaged first).
type SWEBenchMean struct {
	Mean  float64        `json:"mean"`
	N     int            `json:"n"`
	Bands []SWEBenchBand `json:"bands"`
	// Complete is false when a mandatory band has no result.
	Complete bool     `json:"complete"`
	Warnings []string `json:"warnings,omitempty"`
}

// MandatoryRegions are the N = 4 regions whose SWE-bench results are averaged.
func MandatoryRegions() []string {
	return []string{RegionLowLatency, RegionLow, RegionMedium, RegionHigh}
}

// SWEBenchMeanOfN averages a curve's SWE-bench results as the submission checker
// does (models/aggregate/context.py, the agentic SWE-bench gate; rules §4.3): one
// value per mandatory band, the mean of those values against the threshold. A
// point counts towards one band: the ultra-low band (low_latency) when its
// concurrency is at most 32, else the region holding it in the given form
// (regions of C_max = cmax and the curve's lowest concurrency). Margin points and
// points outside every region are left out, with a warning; a band with several
// results is averaged first, with a warning; a missing band gives a warning and
// Complete false, and the mean is then over the bands present (the checker gates
// a short set too, and says it is short).
func SWEBenchMeanOfN(points []SWEBenchPoint, cmax int, form string) (*SWEBenchMean, error) {
	if len(points) == 0 {
		return nil, fmt.Errorf("SWE-bench mean of N: no points")
	}
	lowest := points[0].Concurrency
	for _, p := range points {
		lowest = min(lowest, p.Concurrency)
	}
	rs, err := RegionsFor(form, cmax, lowest)
	if err != nil {
		return nil, fmt.Errorf("SWE-bench mean of N: %w", err)
	}
	sorted := append([]SWEBenchPoint(nil), points...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Concurrency < sorted[j].Concurrency })
	byRegion := map[string][]SWEBenchPoint{}
	m := &SWEBenchMean{Complete: true}
	for _, p := range sorted {
		band := rs.SWEBenchBand(p.Concurrency)
		switch {
		case band != "":
			byRegion[band] = append(byRegion[band], p)
		case rs.Classify(p.Concurrency) == RegionMargin:
			m.Warnings = append(m.Warnings, fmt.Sprintf("point at concurrency %d%s is in the margin (%s): left out", p.Concurrency, label(p), rs.Margin))
		default:
			m.Warnings = append(m.Warnings, fmt.Sprintf("point at concurrency %d%s is outside every region: left out", p.Concurrency, label(p)))
		}
	}
	var sum float64
	for _, reg := range MandatoryRegions() {
		ps := byRegion[reg]
		if len(ps) == 0 {
			m.Complete = false
			m.Warnings = append(m.Warnings, fmt.Sprintf("region %s has no SWE-bench result", reg))
			continue
		}
		band := SWEBenchBand{Region: reg}
		var bsum float64
		for _, p := range ps {
			band.Points = append(band.Points, p.Concurrency)
			bsum += p.Score
		}
		band.Score = bsum / float64(len(ps))
		if len(ps) > 1 {
			m.Warnings = append(m.Warnings, fmt.Sprintf("region %s has %d SWE-bench results (concurrency %v): averaged first", reg, len(ps), band.Points))
		}
		m.Bands = append(m.Bands, band)
		sum += band.Score
	}
	m.N = len(m.Bands)
	if m.N > 0 {
		m.Mean = sum / float64(m.N)
	}
	return m, nil
}

// JudgeSWEBenchCurve is the curve's SWE-bench gate: the mean of N against the
// ruleset's threshold. It is not evaluated (Note says why) when no point has a
// result.
func JudgeSWEBenchCurve(rs rulesets.Ruleset, points []SWEBenchPoint, cmax int) (schemas.Gate, *SWEBenchMean) {
	g := schemas.Gate{Name: GateSWEBench, Threshold: rs.SWEBenchThreshold()}
	if len(points) == 0 {
		// The checker warns ("No point reports a swe_bench accuracy score").
		notEvaluated(&g, schemas.SeverityWarning, "no point has a SWE-bench result")
		g.Note = "not evaluated: " + g.Reason
		return g, nil
	}
	m, err := SWEBenchMeanOfN(points, cmax, rs.RegionForm())
	if err != nil {
		notEvaluated(&g, schemas.SeverityWarning, err.Error())
		g.Note = "not evaluated: " + g.Reason
		return g, nil
	}
	g.Value = m.Mean
	decide(&g, rs.SWEBenchPass(m.Mean))
	g.Note = fmt.Sprintf("mean of %d region results", m.N)
	if m.N != len(MandatoryRegions()) {
		g.Note += fmt.Sprintf(" (the rules ask %d)", len(MandatoryRegions()))
	}
	return g, m
}

func label(p SWEBenchPoint) string {
	if p.Label == "" {
		return ""
	}
	return " (" + p.Label + ")"
}
