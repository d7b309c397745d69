package score

import (
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestRegionsTable checks every row of rules.md's region table, the extra rows and
// the edge cases.
func TestRegionsTable(t *testing.T) {
	tests := []struct {
		cmax, cmin                int
		low, med, high, margin    Range
		lowEmpty, medEmpty, hiEmp bool
	}{
		{cmax: 64, cmin: 2, low: Range{3, 6}, med: Range{7, 18}, high: Range{19, 64}, margin: Range{65, 71}},
		{cmax: 128, cmin: 2, low: Range{3, 7}, med: Range{8, 27}, high: Range{28, 128}, margin: Range{129, 141}},
		{cmax: 256, cmin: 2, low: Range{3, 8}, med: Range{9, 42}, high: Range{43, 256}, margin: Range{257, 282}},
		{cmax: 256, cmin: 8, low: Range{9, 14}, med: Range{15, 47}, high: Range{48, 256}, margin: Range{257, 282}},
		{cmax: 512, cmin: 8, low: Range{9, 16}, med: Range{17, 71}, high: Range{72, 512}, margin: Range{513, 564}},
		{cmax: 1024, cmin: 8, low: Range{9, 18}, med: Range{19, 109}, high: Range{110, 1024}, margin: Range{1025, 1127}},
		{cmax: 512, cmin: 16, low: Range{17, 24}, med: Range{25, 79}, high: Range{80, 512}, margin: Range{513, 564}},
		{cmax: 1024, cmin: 16, low: Range{17, 26}, med: Range{27, 117}, high: Range{118, 1024}, margin: Range{1025, 1127}},
		{cmax: 2048, cmin: 16, low: Range{17, 29}, med: Range{30, 176}, high: Range{177, 2048}, margin: Range{2049, 2253}},
		{cmax: 1024, cmin: 32, low: Range{33, 42}, med: Range{43, 131}, high: Range{132, 1024}, margin: Range{1025, 1127}},
		{cmax: 2048, cmin: 32, low: Range{33, 45}, med: Range{46, 192}, high: Range{193, 2048}, margin: Range{2049, 2253}},
		{cmax: 4096, cmin: 32, low: Range{33, 48}, med: Range{49, 287}, high: Range{288, 4096}, margin: Range{4097, 4506}},
		{cmax: 8192, cmin: 32, low: Range{33, 52}, med: Range{53, 437}, high: Range{438, 8192}, margin: Range{8193, 9012}},
		{cmax: 16384, cmin: 32, low: Range{33, 57}, med: Range{58, 676}, high: Range{677, 16384}, margin: Range{16385, 18023}},
		// Extra rows.
		{cmax: 256, cmin: 1, low: Range{2, 7}, med: Range{8, 41}, high: Range{42, 256}, margin: Range{257, 282}},
		{cmax: 1024, cmin: 1, low: Range{2, 11}, med: Range{12, 103}, high: Range{104, 1024}, margin: Range{1025, 1127}},
		{cmax: 4096, cmin: 1, low: Range{2, 17}, med: Range{18, 257}, high: Range{258, 4096}, margin: Range{4097, 4506}},
		{cmax: 33, cmin: 1, low: Range{2, 4}, med: Range{5, 11}, high: Range{12, 33}, margin: Range{34, 37}},
		// Edge: 33,32 leaves medium and high empty.
		{cmax: 33, cmin: 32, low: Range{33, 33}, med: Range{34, 33}, high: Range{34, 33}, margin: Range{34, 37}, medEmpty: true, hiEmp: true},
		// Margins computed in floating point (rules' examples).
		{cmax: 100, cmin: 1, low: Range{2, 6}, med: Range{7, 22}, high: Range{23, 100}, margin: Range{101, 111}},
		{cmax: 90, cmin: 1, low: Range{2, 5}, med: Range{6, 21}, high: Range{22, 90}, margin: Range{91, 100}},
		{cmax: 50, cmin: 1, low: Range{2, 5}, med: Range{6, 14}, high: Range{15, 50}, margin: Range{51, 56}},
		{cmax: 1000, cmin: 1, low: Range{2, 11}, med: Range{12, 101}, high: Range{102, 1000}, margin: Range{1001, 1100}},
		// Smallest legal C_max with C_min 31: I = log2(2)/3.
		{cmax: 33, cmin: 31, low: Range{32, 32}, med: Range{33, 33}, high: Range{34, 33}, margin: Range{34, 37}, hiEmp: true},
	}
	for _, tt := range tests {
		rs, err := Regions(tt.cmax, tt.cmin)
		if err != nil {
			t.Fatalf("Regions(%d, %d): %v", tt.cmax, tt.cmin, err)
		}
		if rs.LowLatency != (Range{1, tt.cmin}) {
			t.Errorf("Regions(%d, %d) low_latency = %v, want 1-%d", tt.cmax, tt.cmin, rs.LowLatency, tt.cmin)
		}
		for _, c := range []struct {
			name      string
			got, want Range
			empty     bool
		}{
			{"low", rs.Low, tt.low, tt.lowEmpty},
			{"medium", rs.Medium, tt.med, tt.medEmpty},
			{"high", rs.High, tt.high, tt.hiEmp},
			{"margin", rs.Margin, tt.margin, false},
		} {
			if c.got != c.want {
				t.Errorf("Regions(%d, %d) %s = %v, want %v", tt.cmax, tt.cmin, c.name, c.got, c.want)
			}
			if c.got.Empty() != c.empty {
				t.Errorf("Regions(%d, %d) %s Empty() = %v, want %v", tt.cmax, tt.cmin, c.name, c.got.Empty(), c.empty)
			}
		}
	}
}

func TestRegionsMarginExamples(t *testing.T) {
	// rules.md: C_max 100 -> 111, 90 -> 100, 50 -> 56, 1000 -> 1100, 1024 -> 1127.
	for cmax, want := range map[int]int{100: 111, 90: 100, 50: 56, 1000: 1100, 1024: 1127} {
		rs, err := Regions(cmax, 1)
		if err != nil {
			t.Fatal(err)
		}
		if rs.Margin.End != want {
			t.Errorf("margin end for C_max %d = %d, want %d", cmax, rs.Margin.End, want)
		}
	}
}

func TestRegionsErrors(t *testing.T) {
	tests := []struct {
		cmax, cmin int
		want       string
	}{
		{32, 1, "C_max 32 must be greater than 32"},
		{0, 1, "C_max 0"},
		{-5, 1, "C_max -5"},
		{64, 0, "C_min 0 must be in 1..32"},
		{64, 33, "C_min 33 must be in 1..32"},
		{64, -1, "C_min -1"},
	}
	for _, tt := range tests {
		_, err := Regions(tt.cmax, tt.cmin)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Regions(%d, %d) error = %v, want one containing %q", tt.cmax, tt.cmin, err, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	rs, err := Regions(64, 2)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[int]string{
		-1: "", 0: "", 1: RegionLowLatency, 2: RegionLowLatency, 3: RegionLow, 6: RegionLow,
		7: RegionMedium, 18: RegionMedium, 19: RegionHigh, 64: RegionHigh,
		65: RegionMargin, 71: RegionMargin, 72: "", 1000: "",
	}
	for c, want := range tests {
		if got := rs.Classify(c); got != want {
			t.Errorf("Classify(%d) = %q, want %q", c, got, want)
		}
	}
	// Empty regions never classify: with 33,32 concurrency 34 is margin.
	rs, err = Regions(33, 32)
	if err != nil {
		t.Fatal(err)
	}
	if got := rs.Classify(34); got != RegionMargin {
		t.Errorf("Regions(33,32).Classify(34) = %q, want margin", got)
	}
	if got := rs.Classify(33); got != RegionLow {
		t.Errorf("Regions(33,32).Classify(33) = %q, want low_concurrency", got)
	}
}

func TestRegionsJSON(t *testing.T) {
	rs, err := Regions(64, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"low_latency":{"start":1,"end":2},"low_concurrency":{"start":3,"end":6},` +
		`"med_concurrency":{"start":7,"end":18},"high_concurrency":{"start":19,"end":64},` +
		`"margin":{"start":65,"end":71}}`
	if string(b) != want {
		t.Errorf("JSON = %s\nwant   %s", b, want)
	}
}

// refRegions restates §5.5 independently: 2^I is the cube root of (C_max - C_min),
// rounding half to even is done by hand, and the margin's product is formed exactly
// with math/big from float64(1.10) and then rounded to the nearest float64, as a
// binary floating-point multiplication does.
func refRegions(cmax, cmin int) (lowEnd, medEnd, marginEnd int) {
	roundHalfEven := func(x float64) int {
		f := math.Floor(x)
		d := x - f
		switch {
		case d > 0.5:
			return int(f) + 1
		case d < 0.5:
			return int(f)
		case int64(f)%2 == 0:
			return int(f)
		default:
			return int(f) + 1
		}
	}
	cube := math.Cbrt(float64(cmax - cmin))
	lowEnd = roundHalfEven(float64(cmin) + cube)
	medEnd = roundHalfEven(float64(cmin) + cube*cube)
	exact := new(big.Float).SetPrec(200).SetFloat64(1.10)
	exact.Mul(exact, new(big.Float).SetPrec(200).SetInt64(int64(cmax)))
	prod, _ := exact.Float64() // nearest float64, ties to even
	marginEnd = int(math.Ceil(prod))
	return lowEnd, medEnd, marginEnd
}

func refClassify(c, cmax, cmin int) string {
	lowEnd, medEnd, marginEnd := refRegions(cmax, cmin)
	switch {
	case c >= 1 && c <= cmin:
		return RegionLowLatency
	case c > cmin && c <= lowEnd:
		return RegionLow
	case c > lowEnd && c <= medEnd:
		return RegionMedium
	case c > medEnd && c <= cmax:
		return RegionHigh
	case c > cmax && c <= marginEnd:
		return RegionMargin
	}
	return ""
}

// TestRegionsRandomized compares Regions and Classify with the restatement on random
// (C_max, C_min) pairs and concurrencies.
func TestRegionsRandomized(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		cmin := 1 + rng.IntN(32)
		var cmax int
		switch rng.IntN(3) {
		case 0:
			cmax = 33 + rng.IntN(200)
		case 1:
			cmax = 33 + rng.IntN(20000)
		default:
			cmax = 33 + rng.IntN(2_000_000)
		}
		rs, err := Regions(cmax, cmin)
		if err != nil {
			t.Fatalf("Regions(%d, %d): %v", cmax, cmin, err)
		}
		lowEnd, medEnd, marginEnd := refRegions(cmax, cmin)
		if rs.Low.End != lowEnd || rs.Medium.End != medEnd || rs.Margin.End != marginEnd {
			t.Fatalf("Regions(%d, %d) = low end %d, med end %d, margin end %d; restatement %d, %d, %d",
				cmax, cmin, rs.Low.End, rs.Medium.End, rs.Margin.End, lowEnd, medEnd, marginEnd)
		}
		for range 5 {
			c := rng.IntN(marginEnd+10) - 2
			if got, want := rs.Classify(c), refClassify(c, cmax, cmin); got != want {
				t.Fatalf("Regions(%d, %d).Classify(%d) = %q, restatement %q", cmax, cmin, c, got, want)
			}
		}
	}
}
