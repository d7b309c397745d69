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
