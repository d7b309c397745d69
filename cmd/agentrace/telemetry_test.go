package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// TestReplayTelemetryFlags replays against two sims given as two --endpoint
// flags: by default both /metrics pages are scraped into the run folder and
// the manifest says what was found; --endpoint-routing session keeps every
// trajectory on one; --no-metrics leaves the run as without scraping.
func TestReplayTelemetryFlags(t *testing.T) {
	root := t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	if _, err := runApp(t, "synth", "--scale", "0.01", "--domain", "workflow", "--seed", "5", "--out", p("traces.jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, err := runApp(t, "ingest", "--out", p("ds"), p("traces.jsonl")); err != nil {
		t.Fatal(err)
	}
	a, b := simServer(t), simServer(t)
	common := []string{"replay", "--dataset", p("ds"), "--endpoint", a, "--endpoint", b + "/v1", "--concurrency", "2", "--no-delays"}
	if _, err := runApp(t, append(common, "--out", p("scraped"), "--endpoint-routing", "session", "--metrics-interval", "200ms")...); err != nil {
		t.Fatal(err)
	}
	m, err := runlog.ReadManifest(p("scraped"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Config.Endpoints) != 1 || m.Routing == nil || m.Routing.Mode != "session" || m.Routing.Split != 0 || len(m.Routing.Endpoints) != 2 {
		t.Errorf("endpoints %v, routing %+v", m.Config.Endpoints, m.Routing)
	}
	sm := m.ServerMetrics
	if sm == nil || len(sm.Endpoints) != 2 || sm.IntervalSeconds != 0.2 || sm.Note != schemas.ServerMetricsNote {
		t.Fatalf("server_metrics %+v", sm)
	}
	for i, e := range sm.Endpoints {
		if e.Engine != schemas.EngineVLLM || e.Scrapes < 1 || e.Rows == 0 || e.Replica == nil || *e.Replica != i {
			t.Errorf("endpoint %d: %+v", i, e)
		}
	}
	if _, err := os.Stat(p("scraped/" + schemas.ServerMetricsFile)); err != nil {
		t.Error(err)
	}
	if _, err := runApp(t, append(common, "--out", p("plain"), "--no-metrics")...); err != nil {
		t.Fatal(err)
	}
	if m, err = runlog.ReadManifest(p("plain")); err != nil {
		t.Fatal(err)
	}
	if m.ServerMetrics != nil || m.Routing == nil || m.Routing.Mode != "round-robin" {
		t.Errorf("--no-metrics: server_metrics %+v, routing %+v", m.ServerMetrics, m.Routing)
	}
	if _, err := os.Stat(p("plain/" + schemas.ServerMetricsFile)); !os.IsNotExist(err) {
		t.Errorf("--no-metrics wrote %s: %v", schemas.ServerMetricsFile, err)
	}
	if _, err := runApp(t, append(common, "--out", p("bad"), "--endpoint-routing", "sticky")...); err == nil || exitCode(err) != 2 {
		t.Errorf("--endpoint-routing sticky: %v", err)
	}
}
