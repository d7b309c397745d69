package percentile

import (
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
