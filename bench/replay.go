package main

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentrace/agentrace/bench/yardstick"
	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/percentile"
	"github.com/agentrace/agentrace/replay"
)

const (
	replayConcurrency = 256
	replayPasses      = 16 // trajectories = 16 × the sample's 20 conversations
	replayTokens      = 64 // streamed per turn by the instant endpoint
	replayRounds      = 3
)

// benchReplay replays the shared sample (tiled by repeats: 16 passes, 320
// trajectories) closed-loop at 256 active trajectories against an in-process
// endpoint that answers at once, side by side with the yardstick client posting
// the same precomputed bodies and reading the same streams. Rounds alternate;
// each side keeps its best rate. The lag goal is checked on every round.
func benchReplay(env Env) (Row, error) {
	row := Row{
		Name: fmt.Sprintf("replay: sample x%d, %d active trajectories, instant endpoint (%d tokens/turn) vs minimal Go client", replayPasses, replayConcurrency, replayTokens),
		Goal: ">= 0.8x turns/s and tokens/s; client lag p99 < 1 ms",
	}
	if env.Shared == "" {
		return row, errors.New("needs AGENTRACE_SHARED (the sample)")
	}
	ctx := context.Background()
	dir, d, err := sampleDataset(env, "replay-ds")
	if err != nil {
		return row, err
	}
	prof, err := datasets.LookupProfile("qwen3.6-35b-a3b")
	if err != nil {
		return row, err
	}
	srv := httptest.NewServer(yardstick.Endpoint(replayTokens))
	defer srv.Close()
	n := len(d.Conversations)
	trajectories := replayPasses * n
	bodies := yardstick.Bodies(d, datasets.BodyOptions{Profile: &prof, Salt: true, Repeat: 1, Stream: true, IncludeUsage: true})

	var bestReplay, bestMin struct{ turns, tokens float64 }
	var replayLags, minLags []time.Duration
	for round := range replayRounds {
		sum, err := replay.Run(ctx, replay.Options{
			Data: d, Dataset: dir, Endpoint: srv.URL, Out: filepath.Join(env.Work, fmt.Sprintf("replay-run%d", round)),
			Concurrency: replayConcurrency, Trajectories: trajectories, NoDelays: true, Profile: prof.Name,
		})
		if err != nil {
			return row, err
		}
		if sum.Counts["ok"] != sum.Turns {
			return row, fmt.Errorf("replay: %d of %d turns ok", sum.Counts["ok"], sum.Turns)
		}
		bestReplay.turns = max(bestReplay.turns, sum.TurnsPerSecond())
		bestReplay.tokens = max(bestReplay.tokens, sum.TokensPerSecond())
		replayLags = append(replayLags, sum.LagP99)

		res, err := yardstick.Minimal(ctx, srv.URL+"/v1/chat/completions", replayConcurrency, trajectories,
			func(k int) [][]byte { return bodies[k%n] }, nil)
		if err != nil {
			return row, err
		}
		if res.Turns != int64(sum.Turns) || res.Tokens != sum.OutputTokens {
			return row, fmt.Errorf("clients did different work: replay %d turns %d tokens, minimal %d turns %d tokens", sum.Turns, sum.OutputTokens, res.Turns, res.Tokens)
		}
		bestMin.turns = max(bestMin.turns, res.TurnsPerSecond())
		bestMin.tokens = max(bestMin.tokens, res.TokensPerSecond())
		minLags = append(minLags, p99(res.Lags))
	}
	rt, rk := bestReplay.turns/bestMin.turns, bestReplay.tokens/bestMin.tokens
	worstLag := slices.Max(replayLags)
	row.Measured = fmt.Sprintf("replay %.0f turns/s, %.0f tokens/s; minimal %.0f turns/s, %.0f tokens/s; client lag p99 per round: replay %v, minimal %v",
		bestReplay.turns, bestReplay.tokens, bestMin.turns, bestMin.tokens, roundAll(replayLags), roundAll(minLags))
	row.Ratio = fmt.Sprintf("%.2fx turns/s, %.2fx tokens/s", rt, rk)
	row.Met = rt >= 0.8 && rk >= 0.8 && worstLag < time.Millisecond
	return row, nil
}

// p99 is the "lower" 99th percentile.
func p99(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	p, _ := percentile.Lower(s, 99)
	return p
}

func roundAll(v []time.Duration) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, d := range v {
		out[i] = d.Round(time.Microsecond)
	}
	return out
}
