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

func TestProblem(t *testing.T) {
	for _, tc := range []struct {
		cmd, kind, msg, want string
	}{
		{"report", Warning, "runs/c8: no window", "agentrace report: warning: runs/c8: no window"},
		{"agentrace log dump", Note, "x", "agentrace log dump: note: x"},
		{"report", Error, "report: no run given", "agentrace report: error: no run given"},
		{"sweep", Error, "replay: a fault", "agentrace sweep: error: replay: a fault"},
		{"", Error, "unknown command \"x\"", "agentrace: error: unknown command \"x\""},
		{"replay", Error, "GET http://u:hunter2@h/v1/models: 401", "agentrace replay: error: GET http://<redacted>@h/v1/models: 401"},
	} {
		if got := Problem(tc.cmd, tc.kind, tc.msg); got != tc.want {
			t.Errorf("Problem(%q, %q, %q) = %q, want %q", tc.cmd, tc.kind, tc.msg, got, tc.want)
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
