package synth

import (
	"math"
	"math/rand/v2"
	"slices"
)

// normQuantile is the standard normal quantile function.
func normQuantile(p float64) float64 {
	return math.Sqrt2 * math.Erfinv(2*p-1)
}

// logNormal draws from a log-normal distribution with the given median and sigma.
func logNormal(r *rand.Rand, median, sigma float64) float64 {
	return median * math.Exp(sigma*r.NormFloat64())
}

// clampInt bounds v to [lo, hi].
func clampInt(v, lo, hi int) int {
	return max(lo, min(hi, v))
}

// stratifiedCounts draws n integer counts whose shape is the log-normal (median,
// sigma) clamped to [lo, hi], with one draw per n-quantile stratum (so the sample's
// shape is close to the distribution's even for small n), then nudges them so they
// sum exactly to total, and shuffles them. total must lie in [n*lo, n*hi].
func stratifiedCounts(r *rand.Rand, n int, median, sigma float64, lo, hi, total int) []int {
	counts := make([]int, n)
	sum := 0
	for i := range counts {
		p := (float64(i) + r.Float64()) / float64(n)
		v := int(math.Round(median * math.Exp(sigma*normQuantile(p))))
		counts[i] = clampInt(v, lo, hi)
		sum += counts[i]
	}
	// Spread the difference over the trajectories, in proportion to their length, so
	// that the shape (ratios between quantiles) is kept.
	for sum != total {
		diff := total - sum
		changed := false
		for i := range counts {
			if diff == 0 {
				break
			}
			step := max(1, abs(diff)*counts[i]/max(1, sum))
			step = min(step, abs(diff))
			if diff < 0 {
				step = -min(step, counts[i]-lo)
			} else {
				step = min(step, hi-counts[i])
			}
			if step != 0 {
				counts[i] += step
				sum += step
				diff -= step
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	r.Shuffle(n, func(i, j int) { counts[i], counts[j] = counts[j], counts[i] })
	return counts
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// toolDelay draws the delay before a tool row: the time the agent's harness took to
// run the command and hand the result back. The shape follows the real coding
// sample: most delays are a few tens of milliseconds (median about 0.06 s), a
// quarter are a few hundred milliseconds to seconds (a test run, a pip install), and
// a thin tail reaches two minutes.
func toolDelay(r *rand.Rand) float64 {
	var d float64
	switch u := r.Float64(); {
	case u < 0.63:
		d = logNormal(r, 0.056, 0.13)
	case u < 0.97:
		d = logNormal(r, 0.26, 0.8)
	case u < 0.997:
		d = logNormal(r, 2.5, 0.9)
	default:
		x := r.Float64()
		d = 20 + 100*x*x
	}
	return roundDelay(min(max(d, 0.03), 120))
}

// userDelay draws the delay before a customer's message in a workflow conversation
// (the customer reading and typing), in seconds.
func userDelay(r *rand.Rand) float64 {
	return roundDelay(min(max(logNormal(r, 1.6, 0.6), 0.3), 30))
}

func roundDelay(d float64) float64 { return math.Round(d*1e4) / 1e4 }

// pick returns one element of xs, uniformly.
func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// weighted is a discrete distribution over values, by integer weights.
type weighted[T any] struct {
	values  []T
	cumul   []int
	totalWt int
}

type choice[T any] struct {
	v T
	w int
}

func newWeighted[T any](cs ...choice[T]) weighted[T] {
	var w weighted[T]
	for _, c := range cs {
		w.totalWt += c.w
		w.values = append(w.values, c.v)
		w.cumul = append(w.cumul, w.totalWt)
	}
	return w
}

func (w weighted[T]) draw(r *rand.Rand) T {
	x := r.IntN(w.totalWt)
	i, _ := slices.BinarySearch(w.cumul, x+1)
	return w.values[i]
}
