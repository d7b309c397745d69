package simulate

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/agentrace/agentrace/score/scoretest"
	"github.com/agentrace/agentrace/simserver"
)

// synthDataset ingests a small synthetic dataset (12 trajectories, 369 turns).
func synthDataset(t testing.TB) *datasets.Dataset {
	t.Helper()
	dir := t.TempDir()
	trace := filepath.Join(dir, "synth.jsonl")
	if _, err := synth.WriteFile(context.Background(), trace, synth.Options{Scale: 0.02, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	return scoretest.Ingest(t, filepath.Join(dir, "ds"), trace)
}

func defaultHardware(t testing.TB) simserver.Hardware {
	p, err := simserver.LookupHardware(simserver.DefaultHardware)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRouting: across 4 replicas, routing by session keeps each trajectory's
// KV on one replica, so its later turns hit the prefix cache as on one server;
// round robin scatters them, and the hit ratio and throughput fall, TTFT rises.
// (Least-loaded, in a closed loop, mostly sends a turn back to the replica its
// trajectory's previous turn just left, and keeps most hits: logged, not
// asserted.)
func TestRouting(t *testing.T) {
	d := synthDataset(t)
	p := defaultHardware(t)
	hit, tps, ttft := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, r := range []string{RouteSession, RouteRoundRobin, RouteLeastLoaded} {
		pt, err := Run(context.Background(), Options{Hardware: p, Data: d, Concurrency: 8, Replicas: 4, Routing: r, Fidelity: 1, Seed: 1, NoDelays: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: hit %.3f, system %.0f tok/s, TTFT p50 %.1f ms, p99 %.1f ms", r, float64(pt.PrefixCacheHitRatio), float64(pt.SystemTPS),
			float64(pt.TTFTP50Ms), float64(pt.TTFTP99Ms))
		hit[r], tps[r], ttft[r] = float64(pt.PrefixCacheHitRatio), float64(pt.SystemTPS), float64(pt.TTFTP50Ms)
	}
	if hit[RouteSession] < 0.85 {
		t.Errorf("session routing: hit ratio %.3f, want >= 0.85", hit[RouteSession])
	}
	rr := RouteRoundRobin
	if hit[rr] > hit[RouteSession]-0.2 || tps[rr] >= tps[RouteSession] || ttft[rr] <= ttft[RouteSession] {
		t.Errorf("round robin: hit %.3f, %.0f tok/s, TTFT p50 %.1f ms; want all worse than session routing's %.3f, %.0f, %.1f",
			hit[rr], tps[rr], ttft[rr], hit[RouteSession], tps[RouteSession], ttft[RouteSession])
	}
}

// TestClosedLoop checks the loop against replay's rules: every client turn of
// every trajectory gets one record, the trajectories beyond the dataset are its
// repeats (salted: they share no prefix with the first pass), and turns issued
// after the performance window closed are out of it.
func TestClosedLoop(t *testing.T) {
	d := synthDataset(t)
	var recs []*schemas.TurnRecord
	n := len(d.Conversations)
	pt, err := Run(context.Background(), Options{Hardware: defaultHardware(t), Data: d, Concurrency: 4, Trajectories: 2 * n, Fidelity: 1, Seed: 1,
		Records: func(r *schemas.TurnRecord) error { recs = append(recs, r); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * len(d.Turns); len(recs) != want || pt.Turns != want {
		t.Fatalf("%d records (point: %d), want %d", len(recs), pt.Turns, want)
	}
	out, repeats := 0, map[int32]int{}
	for _, r := range recs {
		if r.Status != schemas.StatusOK {
			t.Errorf("session %s turn %d: %s %s", r.SessionID, r.Turn, r.Status, r.Error)
		}
		if !r.InWindow {
			out++
		}
		repeats[r.Repeat]++
		if r.Repeat == 2 && r.SessionID != datasets.SessionID(r.ConversationID, 2) {
			t.Errorf("repeat 2 of %s has session %s", r.ConversationID, r.SessionID)
		}
	}
	if repeats[1] != len(d.Turns) || repeats[2] != len(d.Turns) {
		t.Errorf("turns by repeat %v, want %d each", repeats, len(d.Turns))
	}
	if out == 0 || pt.WindowTurns+out != len(recs) {
		t.Errorf("%d turns out of the window, %d in: want some out, and all counted", out, pt.WindowTurns)
	}
	if !(pt.SystemTPS > 0) || !(pt.E2EAvgInteractivity > 0) || !(pt.TTFTP50Ms > 0) || !(pt.TPOTP50Ms > 0) {
		t.Errorf("metrics not evaluated: %+v", pt)
	}
}

// TestWriteSweep: the run folders simulate writes read back through report and
// score like a replay's: the same point metrics, and a scored run.
func TestWriteSweep(t *testing.T) {
	d := synthDataset(t)
	dsDir := d.Dir
	out := filepath.Join(t.TempDir(), "sweep")
	pts, err := WriteSweep(context.Background(), Options{Hardware: defaultHardware(t), Data: d, Fidelity: 1, Seed: 1}, []int{2}, 1, out, dsDir, false)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := curve.LoadPoint(context.Background(), pts[0].RunDir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rp.SystemTPS != pts[0].SystemTPS || rp.Completed != pts[0].WindowTurns {
		t.Errorf("report reads system_tps %v over %d turns, simulate said %v over %d", rp.SystemTPS, rp.Completed, pts[0].SystemTPS, pts[0].WindowTurns)
	}
	sc, err := score.ScoreRun(context.Background(), score.Options{Run: pts[0].RunDir})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Turns.Scored == 0 || sc.Score < 0.99 {
		t.Errorf("scored %d turns at %v, want all at 1 (fidelity 1)", sc.Turns.Scored, sc.Score)
	}
	if _, err := WriteSweep(context.Background(), Options{Hardware: defaultHardware(t), Data: d}, []int{2}, 1, out, dsDir, false); err == nil {
		t.Error("a second sweep into the same folder without overwrite succeeded")
	}
}

// TestSweepJobs: points simulated at once come out as they do one at a time, in
// the order given (each point has its own model; the runs are deterministic).
func TestSweepJobs(t *testing.T) {
	d := synthDataset(t)
	o := Options{Hardware: defaultHardware(t), Data: d, Fidelity: 1, Seed: 1, NoDelays: true}
	one, err := Sweep(context.Background(), o, []int{4, 1, 2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	three, err := Sweep(context.Background(), o, []int{4, 1, 2}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range one {
		a, b := one[i], three[i]
		if a.Concurrency != b.Concurrency || a.SystemTPS != b.SystemTPS || a.TTFTP50Ms != b.TTFTP50Ms || a.Turns != b.Turns {
			t.Errorf("point %d: one at a time c=%d %v tok/s %v ms; three at once c=%d %v tok/s %v ms",
				i, a.Concurrency, a.SystemTPS, a.TTFTP50Ms, b.Concurrency, b.SystemTPS, b.TTFTP50Ms)
		}
	}
}
