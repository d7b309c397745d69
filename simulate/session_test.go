package simulate

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentrace/agentrace/schemas"
)

// TestSessionsMatchRebuild: turns prepared from what each trajectory's session
// knows (the history's tokens and block hashes, the body read from where the
// last one ended, the last turn's blocks tried before the prefix index) give
// exactly the points and turn logs of turns prepared from their whole bodies,
// as the HTTP server prepares them: on one replica and across replicas, with
// repeats sharing the cache (no salt), with cleared generated tokens, and on a
// small pool and context length that evict, preempt and refuse prompts.
func TestSessionsMatchRebuild(t *testing.T) {
	d := synthDataset(t)
	p := defaultHardware(t)
	small := p
	small.MaxModelLen, small.KVBlocks = 12000, 2500
	n := len(d.Conversations)
	cases := []struct {
		name string
		o    Options
	}{
		{"c=4", Options{Hardware: p, Concurrency: 4, Fidelity: 0.9}},
		{"c=8 repeats no salt", Options{Hardware: p, Concurrency: 8, Trajectories: 2 * n, NoSalt: true, Fidelity: 0.5, NoDelays: true}},
		{"clear generated cache", Options{Hardware: p, Concurrency: 3, ClearGeneratedCache: true, Fidelity: 1}},
		{"3 replicas round-robin", Options{Hardware: p, Concurrency: 6, Replicas: 3, Routing: RouteRoundRobin, Fidelity: 0.9}},
		{"3 replicas least-loaded", Options{Hardware: p, Concurrency: 6, Replicas: 3, Routing: RouteLeastLoaded, Fidelity: 0.9}},
		{"small pool and context", Options{Hardware: small, Concurrency: 12, Trajectories: 2 * n, Fidelity: 0.8, NoDelays: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := func(rebuild bool) (*Point, []*schemas.TurnRecord) {
				var recs []*schemas.TurnRecord
				o := tc.o
				o.Data, o.Seed, o.rebuild = d, 3, rebuild
				o.Records = func(r *schemas.TurnRecord) error { recs = append(recs, r); return nil }
				pt, err := Run(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				pt.WallSeconds, pt.Report = 0, nil
				return pt, recs
			}
			want, wantRecs := run(true)
			got, gotRecs := run(false)
			if !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Errorf("point from sessions:\n%s\nfrom whole bodies:\n%s", g, w)
			}
			if len(gotRecs) != len(wantRecs) {
				t.Fatalf("%d records from sessions, %d from whole bodies", len(gotRecs), len(wantRecs))
			}
			for i := range gotRecs {
				if !reflect.DeepEqual(gotRecs[i], wantRecs[i]) {
					t.Fatalf("record %d from sessions:\n%+v\nfrom whole bodies:\n%+v", i, *gotRecs[i], *wantRecs[i])
				}
			}
			t.Logf("%d turns, %d failed, %d preemptions, hit ratio %.3f", got.Turns, got.Failed, got.Preemptions, float64(got.PrefixCacheHitRatio))
		})
	}
}
