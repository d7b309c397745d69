package score

import (
	"fmt"
	"math"

	"github.com/agentrace/agentrace/score/rulesets"
)

// Region names, as used in point.yaml and in RegionSet's JSON form.
const (
	RegionLowLatency = "low_latency"
	RegionLow        = "low_concurrency"
	RegionMedium     = "med_concurrency"
	RegionHigh       = "high_concurrency"
	RegionMargin     = "margin"
)

// Limits of the rules' declared concurrencies (§5.4).
const (
	// MaxCMin is the highest lowest-concurrency a curve may have (C_min in 1..32).
	MaxCMin = 32
	// MinCMaxExclusive is the bound C_max must exceed (C_max > 32).
	MinCMaxExclusive = 32
)

// Range is an inclusive range of concurrencies. A range whose Start is greater than
// its End is empty: rounding collisions can leave a region empty and the rules do
// not resolve that, so it is kept and reported as is.
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Empty tells whether the range holds no concurrency.
func (r Range) Empty() bool { return r.Start > r.End }

// Contains tells whether c lies in the range.
func (r Range) Contains(c int) bool { return !r.Empty() && c >= r.Start && c <= r.End }

// String writes the range as "start-end", or "empty (start-end)" when empty.
func (r Range) String() string {
	if r.Empty() {
		return fmt.Sprintf("empty (%d-%d)", r.Start, r.End)
	}
	return fmt.Sprintf("%d-%d", r.Start, r.End)
}

// RegionSet is the partition of concurrencies of §5.5 for one (C_max, C_min) pair.
type RegionSet struct {
	CMax int `json:"-"`
	CMin int `json:"-"`
	// Form is the region form (rulesets.RegionsCMin, rulesets.RegionsFixed32); CMinClamped tells that
	// the curve's lowest point was above 32 and C_min was clamped to 32.
	Form        string `json:"-"`
	CMinClamped bool   `json:"-"`
	// LowLatency is the ultra-low (low-latency) region 1..C_min.
	LowLatency Range `json:"low_latency"`
	Low        Range `json:"low_concurrency"`
	Medium     Range `json:"med_concurrency"`
	High       Range `json:"high_concurrency"`
	// Margin holds concurrencies above C_max up to ceil(1.10*C_max): legal, but a
	// point there satisfies no region.
	Margin Range `json:"margin"`
}

// Regions computes the §5.5 regions for a declared maximum concurrency cmax and the
// curve's lowest concurrency cmin:
//
//	I = log2(cmax - cmin) / 3
//	low_end = round(cmin + 2^I), med_end = round(cmin + 2^(2I))   (half to even)
//	low_latency 1..cmin, low cmin+1..low_end, medium low_end+1..med_end,
//	high med_end+1..cmax, margin cmax+1..ceil(1.10*cmax)
//
// all in binary floating point. cmax must exceed 32 and cmin lie in 1..32.
func Regions(cmax, cmin int) (RegionSet, error) {
	if cmax <= MinCMaxExclusive {
		return RegionSet{}, fmt.Errorf("regions: C_max %d must be greater than %d", cmax, MinCMaxExclusive)
	}
	if cmin < 1 || cmin > MaxCMin {
		return RegionSet{}, fmt.Errorf("regions: C_min %d must be in 1..%d", cmin, MaxCMin)
	}
	i := math.Log2(float64(cmax-cmin)) / 3
	lowEnd := int(math.RoundToEven(float64(cmin) + math.Pow(2, i)))
	medEnd := int(math.RoundToEven(float64(cmin) + math.Pow(2, 2*i)))
	return RegionSet{
		CMax:       cmax,
		CMin:       cmin,
		LowLatency: Range{1, cmin},
		Low:        Range{cmin + 1, lowEnd},
		Medium:     Range{lowEnd + 1, medEnd},
		High:       Range{medEnd + 1, cmax},
		Margin:     Range{cmax + 1, int(math.Ceil(1.10 * float64(cmax)))},
	}, nil
}

// Named returns the regions in order with their names, margin last.
func (r RegionSet) Named() []NamedRange {
	return []NamedRange{
		{RegionLowLatency, r.LowLatency},
		{RegionLow, r.Low},
		{RegionMedium, r.Medium},
		{RegionHigh, r.High},
		{RegionMargin, r.Margin},
	}
}

// NamedRange is a region's name and range.
type NamedRange struct {
	Name  string `json:"name"`
	Range Range  `json:"range"`
}

// Classify names the region holding concurrency c: one of the Region* constants, or
// "" when c lies outside every region (below 1 or above the margin).
func (r RegionSet) Classify(c int) string {
	for _, n := range r.Named() {
		if n.Range.Contains(c) {
			return n.Name
		}
	}
	return ""
}

// Mandatory tells whether name is one of the four regions a curve must cover (the
// margin is not).
func Mandatory(name string) bool {
	switch name {
	case RegionLowLatency, RegionLow, RegionMedium, RegionHigh:
		return true
	}
	return false
}

// UltraLowMax is the upper bound of the Ultra Low Concurrency band (§5.4), fixed
// for every curve.
const UltraLowMax = 32

// RegionsFor computes a curve's regions in a form, from its declared C_max and its
// lowest concurrency.
func RegionsFor(form string, cmax, lowest int) (RegionSet, error) {
	switch form {
	case "", rulesets.RegionsCMin:
		if lowest < 1 {
			return RegionSet{}, fmt.Errorf("regions: lowest concurrency %d must be at least 1", lowest)
		}
		rs, err := Regions(cmax, min(lowest, UltraLowMax))
		rs.Form = rulesets.RegionsCMin
		rs.CMinClamped = lowest > UltraLowMax
		return rs, err
	case rulesets.RegionsFixed32:
		if cmax <= MinCMaxExclusive {
			return RegionSet{}, fmt.Errorf("regions: C_max %d must be greater than %d", cmax, MinCMaxExclusive)
		}
		rs, err := Regions(cmax, UltraLowMax)
		if err != nil {
			return rs, err
		}
		rs.Form = rulesets.RegionsFixed32
		rs.High.End = rs.Margin.End
		rs.Margin = Range{rs.Margin.End + 1, rs.Margin.End}
		return rs, nil
	}
	return RegionSet{}, fmt.Errorf("regions: unknown region form %q (known: %v)", form, rulesets.RegionForms())
}

// SWEBenchBand is the mandatory band a point's SWE-bench result counts towards, as
// the checker assigns it (one band per point): any point at or below 32 is the
// ultra-low band (low_latency), else the region holding it; "" for a margin
// point or one outside every region.
func (r RegionSet) SWEBenchBand(c int) string {
	if c >= 1 && c <= UltraLowMax {
		return RegionLowLatency
	}
	reg := r.Classify(c)
	if !Mandatory(reg) {
		return ""
	}
	return reg
}
