package metrics

import (
	"math"
	"slices"

	"github.com/agentrace/agentrace/internal/percentile"
)

// Percentile returns the rules' "lower" percentile of sorted values: the observed
// value v[floor(p/100*(n-1))], never an interpolation. It returns NaN for no values.
func Percentile(sorted []float64, p float64) float64 {
	v, ok := percentile.Lower(sorted, p)
	if !ok {
		return math.NaN()
	}
	return v
}

// summaryPercentiles are the percentiles written into every Stats, as the reference
// names them in result_summary.json (str(float) keys).
func summaryPercentiles() []float64 { return []float64{1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9} }

// Stats summarizes one series of points.json (ISL, OSL, progress rate) with the
// names of the reference's rollups (total, min, max, median, avg, std_dev,
// percentiles, histogram) plus the count. Percentiles are "lower" percentiles;
// std_dev is the sample standard deviation (n-1), as the reference computes it.
// result_summary.json's own blocks are StatBlock's (refstats.go): the
// reference's percentile grid, its sums and its log-spaced histogram.
type Stats struct {
	Count       int                `json:"count"`
	Total       float64            `json:"total"`
	Min         float64            `json:"min"`
	Max         float64            `json:"max"`
	Median      float64            `json:"median"`
	Avg         float64            `json:"avg"`
	StdDev      float64            `json:"std_dev"`
	Percentiles map[string]float64 `json:"percentiles"`
	Histogram   Histogram          `json:"histogram"`
}

// Histogram is a series' histogram in the reference's shape: bucket bounds
// [lo, hi) (the last one closed) and a count per bucket.
type Histogram struct {
	Buckets [][2]float64 `json:"buckets"`
	Counts  []int        `json:"counts"`
}

// Series collects samples of one metric.
type Series struct {
	v      []float64
	sorted bool
}

// Add appends a sample.
func (s *Series) Add(x float64) { s.v = append(s.v, x); s.sorted = false }

// Len is the number of samples.
func (s *Series) Len() int { return len(s.v) }

// Sorted returns the samples in ascending order.
func (s *Series) Sorted() []float64 {
	if !s.sorted {
		slices.Sort(s.v)
		s.sorted = true
	}
	return s.v
}

// P returns the lower percentile p of the samples (NaN when empty).
func (s *Series) P(p float64) float64 { return Percentile(s.Sorted(), p) }

// Sum is the total of the samples.
func (s *Series) Sum() float64 {
	var t float64
	for _, x := range s.v {
		t += x
	}
	return t
}

// Stats computes the summary; nil when there are no samples (the reference writes
// an empty object then).
func (s *Series) Stats(bins int) *Stats {
	v := s.Sorted()
	n := len(v)
	if n == 0 {
		return nil
	}
	sum := percentile.SummarizeSorted(v)
	st := &Stats{Count: n, Total: sum.Total, Min: sum.Min, Max: sum.Max, Median: sum.Median, Avg: sum.Mean, StdDev: sum.StdDev,
		Percentiles: map[string]float64{}}
	for _, p := range summaryPercentiles() {
		st.Percentiles[PercentileKey(p)] = Percentile(v, p)
	}
	st.Histogram = histogram(v, bins)
	return st
}

// histogram splits sorted values into bins equal-width buckets from min to max.
func histogram(sorted []float64, bins int) Histogram {
	h := Histogram{Buckets: [][2]float64{}, Counts: []int{}}
	if len(sorted) == 0 || bins <= 0 {
		return h
	}
	lo, hi := sorted[0], sorted[len(sorted)-1]
	if lo == hi {
		h.Buckets = append(h.Buckets, [2]float64{lo, hi})
		h.Counts = append(h.Counts, len(sorted))
		return h
	}
	w := (hi - lo) / float64(bins)
	h.Counts = make([]int, bins)
	for i := range bins {
		b := [2]float64{lo + float64(i)*w, lo + float64(i+1)*w}
		if i == bins-1 {
			b[1] = hi
		}
		h.Buckets = append(h.Buckets, b)
	}
	for _, x := range sorted {
		i := int((x - lo) / w)
		h.Counts[min(max(i, 0), bins-1)]++
	}
	return h
}
