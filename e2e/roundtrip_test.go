package e2e

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/replay"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/scoretest"
	"github.com/agentrace/agentrace/simserver"
)

// roundTrip replays dataset d (two passes) against the embedded sim answering with
// the dataset's recorded messages at the given fidelity, and scores the run.
func roundTrip(t *testing.T, dsDir string, d *datasets.Dataset, fidelity float64) *schemas.Scores {
	t.Helper()
	_, url := startSim(t, simserver.Config{Speedup: 1e5, Dataset: d, Fidelity: fidelity, Seed: 3})
	run := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := replay.Run(ctx, replay.Options{Dataset: dsDir, Data: d, Endpoint: url, Out: run,
		// Room for the longest recorded answer (the default, 1024 as the reference
		// client's, would cut a few).
		Concurrency: 4, Trajectories: 2 * len(d.Conversations), NoDelays: true, MaxTokens: 1 << 16}); err != nil {
		t.Fatal(err)
	}
	sc, err := score.ScoreRun(ctx, score.Options{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	if err := score.WriteScores(context.Background(), run, sc); err != nil {
		t.Fatal(err)
	}
	return sc
}

// startSim serves the sim of cfg until the test ends: the sim and its URL.
func startSim(t *testing.T, cfg simserver.Config) (*simserver.Server, string) {
	t.Helper()
	s, err := simserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		srv.Close()
		s.Close()
	})
	return s, srv.URL
}

// synthDataset writes a synthetic trace with o and ingests it: the dataset folder
// and the opened dataset.
func synthDataset(t *testing.T, o synth.Options) (string, *datasets.Dataset) {
	t.Helper()
	dir := t.TempDir()
	trace := filepath.Join(dir, "synth.jsonl")
	if _, err := synth.WriteFile(context.Background(), trace, o); err != nil {
		t.Fatal(err)
	}
	dsDir := filepath.Join(dir, "ds")
	return dsDir, scoretest.Ingest(t, dsDir, trace)
}

// TestReplayScoreRoundTrip: replaying against the sim at fidelity 1 (it answers
// with the dataset's own assistant messages) scores 1.0 on every scorable turn of
// every repeat, in both domains; at fidelity 0 (every answer perturbed) the score
// is low.
func TestReplayScoreRoundTrip(t *testing.T) {
	dsDir, d := synthDataset(t, synth.Options{CodingScale: 0.01, WorkflowScale: 0.02, Seed: 11})

	exact := roundTrip(t, dsDir, d, 1)
	if exact.Turns.Scored == 0 || exact.Domains[schemas.DomainCoding].Scored == 0 || exact.Domains[schemas.DomainWorkflow].Scored == 0 {
		t.Fatalf("fidelity 1: nothing scored in some domain: %+v %+v", exact.Turns, exact.Domains)
	}
	if exact.Score != 1 || exact.Turns.Missing != 0 {
		t.Errorf("fidelity 1: score %v, turns %+v, want 1.0 with none missing", exact.Score, exact.Turns)
	}
	bad := 0
	for _, p := range exact.PerTurn {
		if p.Score != 1 {
			if bad++; bad <= 5 {
				t.Errorf("fidelity 1: %s repeat %d turn %d scored %v (gt %v %v, got %v %v)", p.ConversationID, p.Repeat,
					p.Turn, p.Score, p.GTActions, p.GTIntents, p.ModelActions, p.ModelIntent)
			}
		}
	}
	repeats := map[int32]bool{}
	for _, p := range exact.PerTurn {
		repeats[p.Repeat] = true
	}
	if !repeats[1] || !repeats[2] {
		t.Errorf("repeats scored: %v, want 1 and 2", repeats)
	}

	low := roundTrip(t, dsDir, d, 0)
	if low.Turns.Scored != exact.Turns.Scored {
		t.Errorf("fidelity 0 scored %d turns, fidelity 1 %d", low.Turns.Scored, exact.Turns.Scored)
	}
	if low.Score >= 0.5 {
		t.Errorf("fidelity 0: score %v, want low (< 0.5); domains %+v", low.Score, low.Domains)
	}
	t.Logf("fidelity 1: %v over %d turns; fidelity 0: %v (coding %v, workflow %v)", exact.Score, exact.Turns.Scored,
		low.Score, low.Domains[schemas.DomainCoding].Score, low.Domains[schemas.DomainWorkflow].Score)
}
