// Package percentile holds the rules' "lower" percentile, the one formula every
// statistic agentrace prints uses (report, dataset statistics and cards, replay's
// client lag, the bench): the observed value at index floor(p/100 * (n-1)) of the
// sorted values, never an interpolation. It is numpy's percentile with
// method="lower", which the reference client's metrics use. Summary is the one
// distribution summary built on it.
package percentile

import (
	"cmp"
	"math"
	"slices"
)

// Index is the position of the lower percentile p (0 to 100) in n sorted values,
// clamped to [0, n-1]; -1 when n is 0.
func Index(n int, p float64) int {
	if n == 0 {
		return -1
	}
	i := int(math.Floor(p / 100 * float64(n-1)))
	return max(0, min(i, n-1))
}

// Lower returns the lower percentile p of sorted values, and false when there are
// none.
func Lower[T cmp.Ordered](sorted []T, p float64) (T, bool) {
	i := Index(len(sorted), p)
	if i < 0 {
		var zero T
		return zero, false
	}
	return sorted[i], true
}

// Summary describes a distribution: its count, total, extremes, mean, sample
// standard deviation (n-1, as the reference computes it; 0 for fewer than two
// values) and lower percentiles. It is the one distribution summary of the tree:
// the dataset statistics and cards carry it as it is, and the report's series
// (the reference's names: count, avg) are built from it.
type Summary struct {
	N      int     `json:"n"`
	Total  float64 `json:"total"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
	StdDev float64 `json:"std_dev"`
}

// Summarize sorts v in place and summarizes it; the zero Summary for no values.
func Summarize(v []float64) Summary {
	slices.Sort(v)
	return SummarizeSorted(v)
}

// SummarizeSorted summarizes values already in ascending order.
func SummarizeSorted(sorted []float64) Summary {
	n := len(sorted)
	if n == 0 {
		return Summary{}
	}
	s := Summary{N: n, Min: sorted[0], Max: sorted[n-1]}
	for _, x := range sorted {
		s.Total += x
	}
	s.Mean = s.Total / float64(n)
	if n > 1 {
		var ss float64
		for _, x := range sorted {
			d := x - s.Mean
			ss += d * d
		}
		s.StdDev = math.Sqrt(ss / float64(n-1))
	}
	s.Median, _ = Lower(sorted, 50)
	s.P90, _ = Lower(sorted, 90)
	s.P99, _ = Lower(sorted, 99)
	return s
}
