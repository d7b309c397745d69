package percentile

import (
	"math"
	"testing"
	"time"
)

func TestIndex(t *testing.T) {
	for _, c := range []struct {
		n    int
		p    float64
		want int
	}{
		{0, 50, -1},
		{1, 0, 0}, {1, 99.9, 0}, {1, 100, 0},
		{2, 50, 0}, {2, 99.9, 0}, {2, 100, 1},
		{10, 50, 4}, {10, 90, 8}, {10, 99, 8},
		{11, 50, 5}, {101, 99, 99}, {1001, 99.9, 999},
		{100, 99.5, 98}, // numpy: floor(0.995 * 99) = 98
		{5, -10, 0}, {5, 150, 4},
	} {
		if got := Index(c.n, c.p); got != c.want {
			t.Errorf("Index(%d, %v) = %d, want %d", c.n, c.p, got, c.want)
		}
	}
}

func TestLowerTypes(t *testing.T) {
	if v, ok := Lower([]float64{1, 2, 3, 4}, 50); !ok || v != 2 {
		t.Errorf("floats: %v %v", v, ok)
	}
	if v, ok := Lower([]int64{10, 20, 30}, 99); !ok || v != 20 {
		t.Errorf("ints: %v %v", v, ok)
	}
	if v, ok := Lower([]time.Duration{time.Millisecond}, 99); !ok || v != time.Millisecond {
		t.Errorf("durations: %v %v", v, ok)
	}
	if _, ok := Lower([]float64(nil), 50); ok {
		t.Error("no values: ok")
	}
}

func TestSummarize(t *testing.T) {
	cases := map[string]struct {
		in   []float64
		want Summary
	}{
		"none": {nil, Summary{}},
		"one":  {[]float64{7}, Summary{N: 1, Total: 7, Min: 7, Median: 7, P90: 7, P99: 7, Max: 7, Mean: 7}},
		// Sample standard deviation of 1..4: sqrt(5/3); lower percentiles take
		// v[floor(p/100*3)]: p50 -> v[1], p90 -> v[2], p99 -> v[2].
		"four unsorted": {[]float64{4, 1, 3, 2}, Summary{N: 4, Total: 10, Min: 1, Median: 2, P90: 3, P99: 3, Max: 4, Mean: 2.5, StdDev: math.Sqrt(5.0 / 3)}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Summarize(c.in); got != c.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", c.in, got, c.want)
			}
		})
	}
}
