// Package metricstest makes turn records for the tests of the metrics fold and of
// the stages above it: a fake closed-loop run whose figures move with its
// concurrency as a served model's do.
package metricstest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/agentrace/agentrace/schemas"
)

// RunOptions shape a fake run.
type RunOptions struct {
	// Concurrency is the run's; Trajectories the trajectories it runs over
	// DatasetSize conversations (a conversation's turns: 4 + its index mod 5).
	Concurrency, DatasetSize, Trajectories int
	Seed                                   uint64
	// Model goes into the manifest; ConvPrefix starts every coding
	// conversation's id (every third conversation is a workflow one).
	Model, ConvPrefix string
	// FailEvery makes every n-th trajectory fail on its 2nd turn; 0 never.
	FailEvery int
	// Speed scales the server's speed (0: 1).
	Speed float64
}

// Run simulates a closed-loop run against a server whose prefill and decode
// slow down with load, and returns its manifest and records. It imitates
// replay's rules: one turn in flight per trajectory, delays before every turn
// but the first, the window closing when a slot finishes a trajectory and no
// trajectory is left to start.
func Run(o RunOptions) (schemas.RunManifest, []schemas.TurnRecord) {
	if o.Speed == 0 {
		o.Speed = 1
	}
	rng := rand.New(rand.NewPCG(o.Seed, uint64(o.Concurrency)))
	slots := make([]int64, o.Concurrency) // next free time of each slot (ns)
	var recs []schemas.TurnRecord
	load := float64(min(o.Concurrency, o.Trajectories))
	perTok := 8e6 * (1 + load/24) / o.Speed      // ns per output token
	prefill := 0.004e6 * (1 + load/48) / o.Speed // ns per input token
	for k := 0; k < o.Trajectories; k++ {
		s := 0
		for i := range slots {
			if slots[i] < slots[s] {
				s = i
			}
		}
		conv := k % o.DatasetSize
		repeat := k/o.DatasetSize + 1
		domain := schemas.DomainCoding
		id := fmt.Sprintf("%s%04d", o.ConvPrefix, conv)
		if conv%3 == 0 {
			domain = schemas.DomainWorkflow
			id = fmt.Sprintf("sim_%06d", conv)
		}
		sid := id
		if repeat > 1 {
			sid = fmt.Sprintf("%s__repeat_%d", id, repeat)
		}
		turns := 4 + conv%5
		t := slots[s]
		failed := false
		for ti := 0; ti < turns; ti++ {
			r := schemas.TurnRecord{
				SessionID: sid, ConversationID: id, Repeat: int32(repeat), Trajectory: int32(k),
				Turn: int32(2*ti + 1), ClientIndex: int32(ti), Domain: domain,
				UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1,
			}
			if failed {
				r.Status, r.Error = schemas.StatusAborted, "aborted after an earlier failure"
				recs = append(recs, r)
				continue
			}
			if ti > 0 {
				r.DelayNs = int64(200e6 + rng.Float64()*300e6)
			}
			t += r.DelayNs
			r.ScheduledNs = t
			r.IssuedNs = t + int64(rng.Float64()*2e6)
			isl := 1500 + 900*ti
			if domain == schemas.DomainWorkflow {
				isl = 700 + 250*ti
			}
			osl := 250 + rng.IntN(300)
			ttft := int64(30e6 + float64(isl)*prefill*(0.8+0.4*rng.Float64()))
			r.HeadersNs = r.IssuedNs + ttft/2
			r.FirstTokenNs = r.IssuedNs + ttft
			chunks := osl / 4
			r.ChunkTimesNs = make([]int64, chunks)
			for j := range chunks {
				r.ChunkTimesNs[j] = int64(float64(j*4) * perTok * (0.9 + 0.2*rng.Float64()))
			}
			r.CompletedNs = r.FirstTokenNs + int64(float64(osl-1)*perTok)
			r.Chunks = int32(chunks)
			if o.FailEvery > 0 && k%o.FailEvery == o.FailEvery-1 && ti == 1 {
				r.Status, r.Error, r.HTTPStatus = schemas.StatusError, "HTTP 500", 500
				r.FirstTokenNs, r.ChunkTimesNs, r.Chunks = 0, nil, 0
				failed = true
			} else {
				r.Status, r.HTTPStatus, r.FinishReason = schemas.StatusOK, 200, "stop"
				r.OutputContent = fmt.Sprintf("answer %d of %s", ti, id)
				r.FirstContentBytes = 6
				r.UsagePromptTokens = int32(isl)
				r.UsageCompletionTokens = int32(osl)
				r.UsageCachedTokens = int32(max(0, isl-900))
			}
			t = r.CompletedNs
			recs = append(recs, r)
		}
		slots[s] = t
	}
	// The window closes when the first slot finishes after the last start.
	lastStart := int64(0)
	for i := range recs {
		if recs[i].ClientIndex == 0 {
			lastStart = max(lastStart, recs[i].IssuedNs)
		}
	}
	windowEnd := int64(math.MaxInt64)
	for _, x := range slots {
		if x >= lastStart {
			windowEnd = min(windowEnd, x)
		}
	}
	var lastDone int64
	counts := map[string]int{}
	for i := range recs {
		r := &recs[i]
		issuedAt := r.IssuedNs
		if r.Status == schemas.StatusAborted {
			issuedAt = 0
		}
		r.InWindow = issuedAt < windowEnd
		if r.Status == schemas.StatusAborted {
			r.InWindow = true
		}
		if r.InWindow && r.CompletedNs > lastDone {
			lastDone = r.CompletedNs
		}
		counts[r.Status]++
	}
	var ended int64
	for _, x := range slots {
		ended = max(ended, x)
	}
	m := schemas.RunManifest{
		SchemaVersion: schemas.Version, ToolVersion: schemas.ToolVersion,
		Config: schemas.RunConfig{
			Dataset: "/data/fake-dataset", Endpoint: "http://127.0.0.1:8000", Model: o.Model,
			Profile: "qwen3.6-35b-a3b", Concurrency: o.Concurrency, Trajectories: o.Trajectories,
			Salt: true, Delays: true, DelayScale: 1, TurnTimeoutSeconds: 86400, Stream: true, MaxTokens: 8192,
			Official: true,
		},
		DatasetHash: "sha256:0123456789abcdef", DatasetSize: o.DatasetSize,
		StartedAt: "2026-11-29T12:00:00Z", WindowEndNs: windowEnd, LastTrackedDoneNs: lastDone,
		EndedNs: ended, Counts: counts, State: schemas.RunComplete,
		EndpointDescription: "fake closed-loop model (metricstest)",
	}
	return m, recs
}

// HandRun is a small run whose metrics the tests compute by hand (metrics'
// TestFoldHandComputed): five turns of three trajectories, one failed, one
// aborted, one issued after the window.
func HandRun() (schemas.RunManifest, []schemas.TurnRecord) {
	m := schemas.RunManifest{
		Config:      schemas.RunConfig{Concurrency: 2, Trajectories: 3, Stream: true, Salt: true, Delays: true, DelayScale: 1},
		DatasetSize: 3, State: schemas.RunComplete,
		Counts:            map[string]int{"ok": 3, "error": 1, "aborted": 1},
		LastTrackedDoneNs: 2652e6,
	}
	ms := int64(1e6)
	recs := []schemas.TurnRecord{
		{SessionID: "a", Trajectory: 0, ClientIndex: 0, Domain: "coding", Status: "ok", InWindow: true,
			ScheduledNs: 0, IssuedNs: 1 * ms, FirstTokenNs: 101 * ms, CompletedNs: 1101 * ms,
			ChunkTimesNs: []int64{0, 10 * ms, 30 * ms}, OutputContent: "x",
			UsagePromptTokens: 1000, UsageCompletionTokens: 101, UsageCachedTokens: 500},
		{SessionID: "a", Trajectory: 0, ClientIndex: 1, Domain: "coding", Status: "ok", InWindow: true,
			DelayNs: 500 * ms, ScheduledNs: 1601 * ms, IssuedNs: 1602 * ms, FirstTokenNs: 1652 * ms, CompletedNs: 2652 * ms,
			OutputContent: "y", UsagePromptTokens: 2000, UsageCompletionTokens: 51, UsageCachedTokens: 1500},
		{SessionID: "sim_1", Trajectory: 1, ClientIndex: 0, Domain: "workflow", Status: "error", InWindow: true,
			ScheduledNs: 2 * ms, IssuedNs: 3 * ms, CompletedNs: 203 * ms,
			UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1},
		{SessionID: "sim_1", Trajectory: 1, ClientIndex: 1, Domain: "workflow", Status: "aborted", InWindow: true,
			UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1},
		{SessionID: "b", Trajectory: 2, ClientIndex: 0, Domain: "coding", Status: "ok", InWindow: false,
			ScheduledNs: 2999 * ms, IssuedNs: 3000 * ms, FirstTokenNs: 3100 * ms, CompletedNs: 4000 * ms,
			OutputContent: "z", UsagePromptTokens: 900, UsageCompletionTokens: 77, UsageCachedTokens: -1},
	}
	return m, recs
}
