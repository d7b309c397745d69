package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChaosClientFault: a replay at concurrency 100 under `ulimit -n 64` runs out
// of file descriptors: that is the client's fault, not the endpoint's. The run
// exits 1 naming it (EMFILE, the open-file limit), its manifest says failed with
// stop_cause client_fault, and no row of its log is an endpoint error.
func TestChaosClientFault(t *testing.T) {
	h := chaos(t)
	root := t.TempDir()
	_, ds := h.dataset(root)
	sim, endpoint := h.sim(small, "--speedup", "1000", "--output-mean", "64")
	defer sim.stop()
	run := filepath.Join(root, "run")
	p := h.run(spec{budget: small, nofile: 64}, minute, "agentrace", "replay", "--dataset", ds, "--endpoint", endpoint,
		"--concurrency", "100", "--trajectories", "200", "--no-delays", "--out", run)
	p.expectExit(3) // a run that is not whole
	if msg := p.stderr.String(); !strings.Contains(msg, "a client fault, not the endpoint's") || !strings.Contains(msg, "EMFILE") || !strings.Contains(msg, "ulimit -n") {
		t.Errorf("the error does not name the client fault:\n%s", tail(msg))
	}
	b, err := os.ReadFile(filepath.Join(run, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		State     string         `json:"state"`
		StopCause string         `json:"stop_cause"`
		Counts    map[string]int `json:"counts"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.State != "failed" || m.StopCause != "client_fault" {
		t.Errorf("manifest state %q, stop_cause %q", m.State, m.StopCause)
	}
	counts, _ := logStatuses(t, h, run)
	if counts["error"] != 0 || counts["timeout"] != 0 || counts["not_issued"] == 0 {
		t.Errorf("log statuses %v: the fault is logged as the endpoint's", counts)
	}
	if total(counts) != total(m.Counts) {
		t.Errorf("log rows %v, manifest counts %v", counts, m.Counts)
	}
}
