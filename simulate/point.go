package simulate

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
)

// manifest is the run manifest the point's records are folded under (and
// written with, as a turn log).
func (r *run) manifest() schemas.RunManifest {
	o := r.o
	m := schemas.RunManifest{
		SchemaVersion:  schemas.Version,
		ToolVersion:    schemas.ToolVersion,
		TurnLogVersion: schemas.TurnLogVersion,
		State:          schemas.RunComplete,
		Config: schemas.RunConfig{
			Concurrency: o.Concurrency, Trajectories: r.budget, Salt: !o.NoSalt, Delays: !o.NoDelays,
			DelayScale: o.DelayScale, Stream: true, MaxTokens: o.MaxTokens, ClearGeneratedCache: o.ClearGeneratedCache,
		},
		EndpointDescription: r.describe(),
	}
	m.Config.Model = o.SamplingModel
	if o.Sampling != nil {
		m.Config.Profile = o.Sampling.Name
		if m.Config.Model == "" {
			m.Config.Model = o.Sampling.Model
		}
	}
	if o.Data != nil {
		// The seeds replay records without a config: the reference's defaults,
		// but for the dataloader seed that ordered the starts.
		d := json.Number(strconv.Itoa(datasets.DefaultSeed))
		m.Config.Seeds = &schemas.RunSeeds{Scheduler: d, Dataloader: json.Number(r.orderSeed().String()), Warmup: d}
		m.Config.StartOrder = datasets.StartOrderRule
		m.DatasetHash = o.Data.Manifest.ContentHash
		m.DatasetSize = len(o.Data.Conversations)
	}
	if !math.IsInf(r.windowAt, 1) {
		m.WindowEndNs = ns(r.windowAt)
	}
	var end int64
	counts := map[string]int{}
	for _, rec := range r.recs {
		end = max(end, rec.CompletedNs)
		counts[rec.Status]++
	}
	m.EndedNs, m.Counts = end, counts
	var lastTracked int64
	for _, rec := range r.recs {
		if rec.InWindow && rec.CompletedNs > 0 {
			lastTracked = max(lastTracked, rec.CompletedNs)
		}
	}
	m.LastTrackedDoneNs = lastTracked
	m.Trajectories = &schemas.TrajectoryCounts{Started: r.next, Finished: r.next - r.failedTrajs, Failed: r.failedTrajs}
	return m
}

// describe says what was simulated, for the manifest and the report.
func (r *run) describe() string {
	p := r.o.Hardware
	d := "agentrace simulate (virtual time): hardware " + p.Name + ", speculation " + p.Speculative.String()
	if r.o.Replicas > 1 {
		d += ", " + itoa(r.o.Replicas) + " replicas routed by " + r.o.Routing
	}
	return d
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// point folds the records with metrics' Accumulator, then adds the model's
// own figures.
func (r *run) point(o Options, wall time.Duration) (*Point, error) {
	m := r.manifest()
	acc := metrics.NewAccumulator(m, nil, nil)
	var out float64
	for _, rec := range r.recs {
		acc.Add(rec)
		if rec.Status == schemas.StatusOK && rec.UsageCompletionTokens > 0 {
			out += float64(rec.UsageCompletionTokens)
		}
	}
	rp, err := acc.Close()
	if err != nil {
		return nil, err
	}
	p := &Point{
		Hardware: o.Hardware.Name, Speculative: o.Hardware.Speculative.String(), Concurrency: o.Concurrency,
		Replicas: o.Replicas, TTFTP50Ms: rp.TTFTP50Ms, TTFTP90Ms: rp.TTFTP90Ms, TTFTP99Ms: rp.TTFTP99Ms,
		TPOTP50Ms: rp.TPOTP50Ms, TPOTP90Ms: rp.TPOTP90Ms, TPOTP99Ms: rp.TPOTP99Ms,
		ITLP50Ms: rp.ITLP50Ms, ITLP99Ms: rp.ITLP99Ms, LatencyP50Ms: rp.LatencyP50Ms,
		SystemTPS: rp.SystemTPS, E2EAvgInteractivity: rp.E2EAvgInteractivity, TPSPerUser: rp.TPSPerUser,
		PrefixCacheHitRatio: rp.PrefixCacheHitRatio, Turns: len(r.recs), WindowTurns: rp.Completed,
		WindowDurationS: rp.WindowDurationS, ModelledSeconds: float64(m.EndedNs-ns(0)) / 1e9, WallSeconds: wall.Seconds(),
		Failed: r.failed, RunningLimit: o.Hardware.RunningLimit(), KVPoolTokens: o.Hardware.KVBlocks * o.Hardware.BlockSize,
		Report: rp,
	}
	if o.Replicas > 1 {
		p.Routing = o.Routing
	}
	if o.Data != nil {
		p.Workload = "dataset"
	} else {
		p.Workload = "random isl " + itoa(o.ISL) + " osl " + itoa(o.OSL)
	}
	p.OutputTPS = metrics.Num(math.NaN())
	if m.EndedNs > 0 {
		p.OutputTPS = metrics.Num(out / (float64(m.EndedNs-ns(0)) / 1e9))
	}
	var ttft metrics.Series
	for _, s := range rp.Samples {
		if s.InWindow && !math.IsNaN(s.TTFTMs) {
			ttft.Add(s.TTFTMs)
		}
	}
	p.TTFTMeanMs = metrics.Num(math.NaN())
	if ttft.Len() > 0 {
		p.TTFTMeanMs = metrics.Num(ttft.Sum() / float64(ttft.Len()))
	}
	for _, x := range r.reps {
		st := x.Stats()
		p.Steps += st.Steps
		p.Preemptions += st.Preemptions
	}
	if o.manifest != nil {
		o.manifest(m)
	}
	if o.Records != nil {
		for _, rec := range r.recs {
			if err := o.Records(rec); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// toolCallsJSON is the turn log's form of merged tool calls.
func toolCallsJSON(calls []schemas.ToolCall) string {
	b, _ := json.Marshal(calls)
	return string(b)
}
