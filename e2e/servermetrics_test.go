package e2e

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/replay"
	"github.com/agentrace/agentrace/report"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/simserver"
)

// TestServerMetricsTwoReplicas replays against two simulated replicas behind two
// endpoints, scraping both, with the reference's round-robin and with session
// routing. At concurrency 1 the performance window is the whole run, so the
// report's per-replica figures (scraped prefix-cache hits over queries,
// finished requests) must be each sim's own counters (within 1%), and the
// manifest's turns per endpoint what each sim finished. With session routing
// every conversation's turns go to one replica; round-robin splits them.
func TestServerMetricsTwoReplicas(t *testing.T) {
	dsDir, d := synthDataset(t, synth.Options{Scale: 0.02, Seed: 11})
	for _, mode := range []string{replay.RouteSession, replay.RouteRoundRobin} {
		t.Run(mode, func(t *testing.T) {
			var sims [2]*simserver.Server
			var urls [2]string
			for i := range sims {
				sims[i], urls[i] = startSim(t, simserver.Config{Speedup: 2000, Dataset: d, Seed: 3})
			}
			dir := t.TempDir()
			run := filepath.Join(dir, "run")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if _, err := replay.Run(ctx, replay.Options{Dataset: dsDir, Data: d, Endpoint: urls[0], Endpoints: urls[1:], Out: run,
				Concurrency: 1, NoDelays: true,
				Telemetry: replay.Telemetry{Metrics: true, MetricsInterval: 200 * time.Millisecond, EndpointRouting: mode}}); err != nil {
				t.Fatal(err)
			}
			m, err := runlog.ReadManifest(run)
			if err != nil {
				t.Fatal(err)
			}
			if m.ServerMetrics == nil || len(m.ServerMetrics.Endpoints) != 2 || m.Routing == nil || m.Routing.Mode != mode {
				t.Fatalf("manifest: server_metrics %+v, routing %+v", m.ServerMetrics, m.Routing)
			}
			rep, err := report.Build(ctx, report.Options{Out: filepath.Join(dir, "report"), Runs: []string{run}})
			if err != nil && rep == nil {
				t.Fatal(err)
			}
			p := rep.Systems[0].Points[0]
			if len(p.ServerReplicas) != 2 {
				t.Fatalf("replicas %+v", p.ServerReplicas)
			}
			var hits, queries float64
			for i, r := range p.ServerReplicas {
				st := sims[i].Stats()
				ep := m.ServerMetrics.Endpoints[i]
				if ep.Engine != schemas.EngineVLLM || ep.Scrapes < 3 {
					t.Errorf("endpoint %d: %+v", i, ep)
				}
				want := float64(st.PrefixHits) / float64(st.PrefixQueries)
				if r.PrefixCacheHitRate == nil || math.Abs(*r.PrefixCacheHitRate-want) > 0.01*want {
					t.Errorf("replica %d: scraped hit rate %v, the sim's counters %d/%d = %v", i, r.PrefixCacheHitRate, st.PrefixHits, st.PrefixQueries, want)
				}
				if r.Requests == nil || math.Abs(*r.Requests-float64(st.Finished)) > 0.01*float64(st.Finished) {
					t.Errorf("replica %d: scraped requests %v, the sim finished %d", i, *r.Requests, st.Finished)
				}
				if r.Turns == nil || int64(*r.Turns) != st.Finished || m.Routing.Endpoints[i].Turns != int(st.Finished) {
					t.Errorf("replica %d: client sent %v window turns (%d in all), the sim finished %d", i, r.Turns, m.Routing.Endpoints[i].Turns, st.Finished)
				}
				hits, queries = hits+float64(st.PrefixHits), queries+float64(st.PrefixQueries)
				t.Logf("%s replica %d: %d turns, %v trajectories, hit rate %.4f (sim %.4f), KV usage mean %v",
					mode, i, *r.Turns, *r.Trajectories, *r.PrefixCacheHitRate, want, *r.KVUsageMean)
			}
			if got := p.ServerPrefixCacheHitRate; got == nil || math.Abs(*got-hits/queries) > 0.01*hits/queries {
				t.Errorf("point hit rate %v, the sims' %v", got, hits/queries)
			}
			if p.ServerNote != schemas.ServerMetricsNote || p.ServerKVUsageMean == nil || p.ServerRunningMean == nil || p.ServerPreemptions == nil {
				t.Errorf("point telemetry %+v", p.ServerTelemetry)
			}
			// The per-conversation replica, from the routing record and the turn log.
			recs, err := runlog.ReadFile(context.Background(), filepath.Join(run, schemas.TurnLogFile))
			if err != nil {
				t.Fatal(err)
			}
			sessions := map[string]bool{}
			for _, r := range recs {
				sessions[r.SessionID] = true
			}
			if m.Routing.Trajectories != len(sessions) {
				t.Errorf("routing counts %d trajectories, the log has %d", m.Routing.Trajectories, len(sessions))
			}
			switch mode {
			case replay.RouteSession:
				if m.Routing.Split != 0 || *p.RoutingSplit != 0 {
					t.Errorf("session routing split %d conversations over the replicas", m.Routing.Split)
				}
				if n := m.Routing.Endpoints[0].Trajectories + m.Routing.Endpoints[1].Trajectories; n != len(sessions) {
					t.Errorf("session routing: %d trajectories on the replicas, %d in all", n, len(sessions))
				}
			case replay.RouteRoundRobin:
				if m.Routing.Split == 0 {
					t.Errorf("round-robin kept every conversation on one replica: %+v", m.Routing)
				}
			}
		})
	}
}
