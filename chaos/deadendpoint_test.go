package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestChaosEndpointKilledMidSweep: `sweep --concurrency 4,8` against a sim that
// is killed (SIGKILL) two seconds into the first point. The first point is not
// whole: its manifest says failed with stop_cause endpoint_lost and the error
// names the failure; by the sweep's rule (it stops at its first point that is not
// whole) c8 is never run; the sweep exits 3, its worst point's status.
func TestChaosEndpointKilledMidSweep(t *testing.T) {
	h := chaos(t)
	root := t.TempDir()
	ds := h.workflowDataset(root, "0.5")
	sim, endpoint := h.sim(small, "--speedup", "10", "--output-mean", "64")
	sweep := filepath.Join(root, "sweep")
	p := h.start(spec{budget: small}, "agentrace", "sweep", "--dataset", ds, "--endpoint", endpoint,
		"--concurrency", "4,8", "--no-delays", "--out", sweep)
	p.waitFor(`sweep point 1/2`, 30*time.Second)
	time.Sleep(2 * time.Second)
	sim.kill()
	sim.wait(10 * time.Second)
	p.wait(minute)
	p.expectExit(3)
	msg := p.stderr.String()
	if !strings.Contains(msg, "the endpoint stopped answering at") || strings.Contains(msg, "official settings") {
		t.Errorf("the sweep's output does not name the lost endpoint, or calls the point official:\n%s", tail(msg))
	}
	b, err := os.ReadFile(filepath.Join(sweep, "c4", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		State     string `json:"state"`
		StopCause string `json:"stop_cause"`
		Error     string `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.State != "failed" || m.StopCause != "endpoint_lost" || !strings.Contains(m.Error, "the endpoint stopped answering at") {
		t.Errorf("c4 manifest: state %q, stop_cause %q, error %q; want failed, endpoint_lost, the endpoint named", m.State, m.StopCause, m.Error)
	}
	if _, err := os.Lstat(filepath.Join(sweep, "c8")); !os.IsNotExist(err) {
		t.Errorf("c8 exists (%v): the sweep went on past a point that is not whole", err)
	}
}
