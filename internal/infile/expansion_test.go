package infile

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestExpansion: the limit is ratio times the size with a floor, none for a
// negative ratio, and reading past it fails with ErrExpansion naming the input.
func TestExpansion(t *testing.T) {
	for _, tc := range []struct {
		size        int64
		ratio       float64
		floor, want int64
	}{
		{100, 10, 64, 1000},
		{1, 10, 64, 64},
		{100, -1, 64, -1},
		{0, 10, 0, 0},
	} {
		if got := ExpansionLimit(tc.size, tc.ratio, tc.floor); got != tc.want {
			t.Errorf("ExpansionLimit(%d, %g, %d) = %d, want %d", tc.size, tc.ratio, tc.floor, got, tc.want)
		}
	}
	for _, tc := range []struct {
		limit int64
		n     int
		fail  bool
	}{
		{10, 10, false}, {10, 11, true}, {-1, 1 << 20, false},
	} {
		r := &ExpansionReader{R: strings.NewReader(strings.Repeat("a", tc.n)), Limit: tc.limit, Size: 1, Ratio: 10, Name: "in.gz"}
		_, err := io.Copy(io.Discard, r)
		if fail := errors.Is(err, ErrExpansion); fail != tc.fail || (fail && !strings.Contains(err.Error(), `"in.gz"`)) {
			t.Errorf("limit %d, %d bytes: err %v, want failure %v naming the input", tc.limit, tc.n, err, tc.fail)
		}
	}
}
