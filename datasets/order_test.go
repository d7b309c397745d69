package datasets

import (
	"math/big"
	"slices"
	"testing"
)

func TestStartOrder(t *testing.T) {
	// CPython 3.11: r = random.Random(seed); x = list(range(n)); r.shuffle(x)
	// once per pass, the same list reshuffled.
	tests := []struct {
		seed string
		n    int
		want []int // draws over two passes
	}{
		{"42", 5, []int{3, 1, 2, 4, 0, 4, 2, 3, 0, 1}},
		{"586478644936801402", 5, []int{4, 2, 0, 1, 3, 3, 1, 2, 0, 4}},
		{"10487924139932647040", 3, []int{1, 0, 2, 2, 0, 1}},
		{"42", 1, []int{0, 0}},
	}
	for _, tc := range tests {
		seed, err := ParseSeed(tc.seed)
		if err != nil {
			t.Fatal(err)
		}
		o := NewStartOrder(tc.n, seed)
		got := make([]int, len(tc.want))
		for i := range got {
			got[i] = o.Next()
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("seed %s n %d: %v, want %v", tc.seed, tc.n, got, tc.want)
		}
	}
}

// TestStartOrderPasses checks that each pass holds every conversation once.
func TestStartOrderPasses(t *testing.T) {
	const n = 37
	o := NewStartOrder(n, big.NewInt(7))
	for pass := range 4 {
		seen := make([]bool, n)
		for range n {
			c := o.Next()
			if seen[c] {
				t.Fatalf("pass %d: conversation %d twice", pass, c)
			}
			seen[c] = true
		}
	}
}

func TestParseSeed(t *testing.T) {
	for _, s := range []string{"", "4.2", "0x10", "seed"} {
		if _, err := ParseSeed(s); err == nil {
			t.Errorf("ParseSeed(%q): no error", s)
		}
	}
}
