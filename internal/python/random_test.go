package python

import (
	"encoding/json"
	"math/big"
	"os"
	"slices"
	"testing"
)

func TestRandomCorpus(t *testing.T) {
	raw, err := os.ReadFile("testdata/random.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Seed     string   `json:"seed"`
		Uint32   []uint32 `json:"uint32"`
		Shuffles []struct {
			N      int     `json:"n"`
			Passes [][]int `json:"passes"`
		} `json:"shuffles"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range cases {
		seed, ok := new(big.Int).SetString(c.Seed, 10)
		if !ok {
			t.Fatalf("seed %q", c.Seed)
		}
		r := NewRandom(seed)
		for i, want := range c.Uint32 {
			if got := r.Uint32(); got != want {
				t.Errorf("seed %s draw %d: %d, CPython %d", c.Seed, i, got, want)
			}
		}
		for _, s := range c.Shuffles {
			r := NewRandom(seed)
			x := make([]int, s.N)
			for i := range x {
				x[i] = i
			}
			for p, want := range s.Passes {
				r.Shuffle(x)
				if !slices.Equal(x, want) {
					t.Errorf("seed %s n %d pass %d: %v, CPython %v", c.Seed, s.N, p, x, want)
				}
			}
		}
	}
}

// FuzzShuffle checks that a shuffle is a permutation and that the same seed
// gives the same one.
func FuzzShuffle(f *testing.F) {
	f.Add(uint64(42), uint16(10))
	f.Add(uint64(586478644936801402), uint16(1))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16) {
		s := new(big.Int).SetUint64(seed)
		a, b := make([]int, n), make([]int, n)
		for i := range a {
			a[i], b[i] = i, i
		}
		NewRandom(s).Shuffle(a)
		NewRandom(s).Shuffle(b)
		if !slices.Equal(a, b) {
			t.Fatal("same seed, different shuffles")
		}
		slices.Sort(b)
		for i, v := range b {
			if v != i {
				t.Fatalf("not a permutation: %v", a)
			}
		}
	})
}
