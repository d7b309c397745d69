package main

import "testing"

func TestProblemLine(t *testing.T) {
	for _, tc := range []struct {
		cmd, kind, msg, want string
	}{
		{"report", kindWarning, "runs/c8: no window", "agentrace report: warning: runs/c8: no window"},
		{"agentrace log dump", kindNote, "x", "agentrace log dump: note: x"},
		{"report", kindError, "report: no run given", "agentrace report: error: no run given"},
		{"sweep", kindError, "replay: a fault", "agentrace sweep: error: replay: a fault"},
		{"", kindError, "unknown command \"x\"", "agentrace: error: unknown command \"x\""},
		{"replay", kindError, "GET http://u:hunter2@h/v1/models: 401", "agentrace replay: error: GET http://<redacted>@h/v1/models: 401"},
	} {
		if got := problemLine(tc.cmd, tc.kind, tc.msg); got != tc.want {
			t.Errorf("problemLine(%q, %q, %q) = %q, want %q", tc.cmd, tc.kind, tc.msg, got, tc.want)
		}
	}
}
