package python

import (
	"math"
	"testing"
)

func TestRound(t *testing.T) {
	// Values checked with CPython 3.11: round(x, n).
	tests := []struct {
		x      float64
		places int
		want   float64
	}{
		{2.675, 2, 2.67},     // stored just below the tie
		{0.125, 2, 0.12},     // exact tie, to even
		{0.375, 2, 0.38},     // exact tie, to even
		{2.0 / 3, 4, 0.6667}, // spec run vector
		{0.66665, 4, 0.6666}, // 0.66665 is stored as 0.666649999...
		{0.00005, 4, 0.0001}, // 5.0000000000000002396e-05: above the tie
		{0.5, 0, 0},          //
		{1.5, 0, 2},          //
		{2.5, 0, 2},          //
		{-2.5, 0, -2},        //
		{1234.5, -1, 1230},   //
		{1235, -1, 1240},     // tie to even (123.5 -> 124)
		{1225, -1, 1220},     //
		{-1225, -1, -1220},   //
		{5, -1, 0},           //
		{15, -1, 20},         //
		{1e300, 4, 1e300},    //
		{0.1 + 0.2, 4, 0.3},  //
		{1.0 / 3, 4, 0.3333}, //
		{0.55555, 4, 0.5555}, // 0.55555 is 0.555549999999999988...
		{0.44445, 4, 0.4445}, // 0.44445 is 0.444450000000000012...
	}
	for _, tt := range tests {
		if got := Round(tt.x, tt.places); got != tt.want {
			t.Errorf("Round(%v, %d) = %v, want %v", tt.x, tt.places, got, tt.want)
		}
	}
	if got := Round(math.Inf(1), 4); !math.IsInf(got, 1) {
		t.Errorf("Round(+Inf) = %v", got)
	}
	if got := Round(math.NaN(), 4); !math.IsNaN(got) {
		t.Errorf("Round(NaN) = %v", got)
	}
	if got := Round(-0.00001, 4); got != 0 || !math.Signbit(got) {
		t.Errorf("Round(-0.00001, 4) = %v, want -0", got)
	}
}
