// Package percentile holds the rules' "lower" percentile, the one formula every
// statistic agentrace prints uses (report, dataset statistics and cards, replay's
// client lag, the bench): the observed value at index floor(p/100 * (n-1)) of the
// sorted values, never an interpolation. It is numpy's percentile with
// method="lower", which the reference client's metrics use.
package percentile

import (
	"cmp"
	"math"
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
