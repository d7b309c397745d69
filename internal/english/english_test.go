package english

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 curves"}, {1, "1 curve"}, {2, "2 curves"}, {-1, "-1 curves"}} {
		if got := Count(tc.n, "curve", "curves"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for _, tt := range []struct {
		x    float64
		prec int
		want string
	}{
		{218374.74, 1, "218,374.7"}, {999.96, 1, "1,000.0"}, {12, 0, "12"}, {1234567, 0, "1,234,567"},
		{-1234.5, 1, "-1,234.5"}, {0.04, 1, "0.0"}, {-0.04, 1, "0.0"}, {100000, -1, "100,000"}, {2000.5, -1, "2,000.5"},
	} {
		if got := Thousands(tt.x, tt.prec); got != tt.want {
			t.Errorf("Thousands(%v, %d) = %q, want %q", tt.x, tt.prec, got, tt.want)
		}
	}
}

func TestShorten(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"official settings: c=1: delays scaled", 20, "official settings: ..."},
		{"abcdefghijklmnopqrstuvwxyz", 10, "abcdefghij ..."},
	} {
		if got := Shorten(tc.s, tc.n); got != tc.want {
			t.Errorf("Shorten(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
