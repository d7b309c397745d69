package simulate

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/big"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/simserver"
	"github.com/sourcegraph/conc/iter"
)

// Routing policies across replicas.
const (
	RouteSession     = "session"      // a trajectory's turns go to one replica (hash of its session id)
	RouteRoundRobin  = "round-robin"  // turns in turn to each replica
	RouteLeastLoaded = "least-loaded" // to the replica holding the fewest turns (running and waiting)
)

// Options configure one simulation point (Run) or a sweep (Sweep).
type Options struct {
	// Hardware is the simulated hardware and model; speculation as it says
	// (Hardware.WithSpeculative).
	Hardware simserver.Hardware
	// Data is the agentic workload; nil means random prompts of ISL tokens with
	// OSL output tokens, Requests of them (0: DefaultRequests), all in the
	// performance window.
	Data          *datasets.Dataset
	ISL, OSL      int
	Requests      int
	Concurrency   int
	Replicas      int    // 0 means 1
	Routing       string // "" means RouteSession
	Seed          int64
	Fidelity      float64 // probability of the exact recorded answer (dataset workload)
	Tokenizer     simserver.Tokenizer
	SamplingModel string // the request's model name ("": the sampling profile's)

	// The closed loop's settings, as replay's.
	Trajectories int // 0: one per conversation
	// OrderSeed is the dataloader seed of the trajectories' start order
	// (datasets.StartOrder); nil means the reference's default.
	OrderSeed           *big.Int
	NoSalt, NoDelays    bool
	DelayScale          float64 // 0 means 1
	ClearGeneratedCache bool
	MaxTokens           int
	// Sampling is the datasets sampling profile of the bodies; nil picks the one
	// whose model the simulated hardware serves.
	Sampling *datasets.Profile

	// Records, when set, receives every turn's record once the run is over, in
	// completion order (the turn log).
	Records func(*schemas.TurnRecord) error
	// manifest, when set, receives the point's run manifest (WriteSweep).
	manifest func(schemas.RunManifest)
	// rebuild prepares every turn from its whole body, as the HTTP server does,
	// rather than from what its trajectory's session knows (the same turns, at a
	// cost that grows with the history): the reference of the tests.
	rebuild bool
}

// Point is one simulated point: its settings, report's point metrics over the
// performance window, and the model's own figures. Its JSON form is one element
// of `agentrace simulate --json`.
type Point struct {
	Hardware    string `json:"hardware"`
	Speculative string `json:"speculative"`
	Workload    string `json:"workload"`
	Concurrency int    `json:"concurrency"`
	Replicas    int    `json:"replicas"`
	Routing     string `json:"routing,omitempty"`

	TTFTP50Ms           metrics.Num `json:"ttft_p50_ms"`
	TTFTP90Ms           metrics.Num `json:"ttft_p90_ms"`
	TTFTP99Ms           metrics.Num `json:"ttft_p99_ms"`
	TTFTMeanMs          metrics.Num `json:"ttft_mean_ms"`
	TPOTP50Ms           metrics.Num `json:"tpot_p50_ms"`
	TPOTP90Ms           metrics.Num `json:"tpot_p90_ms"`
	TPOTP99Ms           metrics.Num `json:"tpot_p99_ms"`
	ITLP50Ms            metrics.Num `json:"itl_p50_ms"`
	ITLP99Ms            metrics.Num `json:"itl_p99_ms"`
	LatencyP50Ms        metrics.Num `json:"latency_p50_ms"`
	OutputTPS           metrics.Num `json:"output_tps"`
	SystemTPS           metrics.Num `json:"system_tps"`
	E2EAvgInteractivity metrics.Num `json:"e2e_avg_interactivity"`
	TPSPerUser          metrics.Num `json:"tps_per_user"`
	PrefixCacheHitRatio metrics.Num `json:"prefix_cache_hit_ratio"`

	Turns           int         `json:"turns"`
	WindowTurns     int         `json:"window_turns"`
	WindowDurationS metrics.Num `json:"window_duration_s"`
	ModelledSeconds float64     `json:"modelled_seconds"`
	WallSeconds     float64     `json:"wall_seconds"`
	Failed          int         `json:"failed"`
	Steps           int64       `json:"steps"`
	Preemptions     int64       `json:"preemptions"`
	RunningLimit    int         `json:"running_limit"`
	KVPoolTokens    int         `json:"kv_pool_tokens"`

	// Report is report's point, for callers that want every metric.
	Report *metrics.Point `json:"-"`
	// RunDir is the run folder written (WriteSweep), "" otherwise.
	RunDir string `json:"run_dir,omitempty"`
}

// Limits of one simulation, so that its memory and time stay bounded whatever
// the options ask: each replica holds its own scheduler and KV pool, every request
// and every trajectory's turns become a record.
const (
	MaxReplicas     = 256
	MaxRequests     = 1 << 20
	MaxTrajectories = 1 << 16
)

// Check checks the options' numbers against the limits and the hardware before any
// work: the random workload's prompt and output must fit the hardware's context
// length (as vLLM refuses what does not), the probabilities and scales are finite,
// and nothing is negative. A zero means the default, as for Run.
func (o Options) Check() error {
	ctx := o.Hardware.MaxModelLen
	switch {
	case o.Replicas < 0 || o.Replicas > MaxReplicas:
		return fmt.Errorf("replicas %d: want 1 to %d", o.Replicas, MaxReplicas)
	case o.ISL < 0 || o.OSL < 0:
		return fmt.Errorf("isl %d, osl %d: want positive numbers", o.ISL, o.OSL)
	case ctx > 0 && (o.ISL > ctx || o.OSL > ctx || o.ISL+o.OSL > ctx):
		return fmt.Errorf("isl %d + osl %d: more than the %d tokens of hardware %s's context length", o.ISL, o.OSL, ctx, o.Hardware.Name)
	case o.Requests < 0 || o.Requests > MaxRequests:
		return fmt.Errorf("requests %d: want 1 to %d", o.Requests, MaxRequests)
	case o.Trajectories < 0 || o.Trajectories > MaxTrajectories:
		return fmt.Errorf("trajectories %d: want 1 to %d", o.Trajectories, MaxTrajectories)
	case o.MaxTokens < 0 || ctx > 0 && o.MaxTokens > ctx:
		return fmt.Errorf("max tokens %d: want 1 to hardware %s's context length, %d", o.MaxTokens, o.Hardware.Name, ctx)
	case !(o.Fidelity >= 0 && o.Fidelity <= 1):
		return fmt.Errorf("fidelity %v: want a probability in [0, 1]", o.Fidelity)
	case !(o.DelayScale >= 0) || math.IsInf(o.DelayScale, 0):
		return fmt.Errorf("delay scale %v: want a finite number >= 0", o.DelayScale)
	}
	return nil
}

// DefaultRequests is the random workload's requests at concurrency c: ten per
// slot, so that the closed loop reaches its steady state, from 16 to 4096.
func DefaultRequests(c int) int { return min(max(10*c, 16), 4096) }

// Sweep runs one point per concurrency, jobs of them at once (each with its
// own model: jobs < 1 means 1), and returns them in the order given.
func Sweep(ctx context.Context, o Options, concurrencies []int, jobs int) ([]*Point, error) {
	return sweep(concurrencies, jobs, func(c int) (*Point, error) {
		o := o
		o.Concurrency = c
		return Run(ctx, o)
	})
}

// sweep runs point for each concurrency, jobs at once.
func sweep(concurrencies []int, jobs int, point func(c int) (*Point, error)) ([]*Point, error) {
	m := iter.Mapper[int, *Point]{MaxGoroutines: max(jobs, 1)}
	return m.MapErr(concurrencies, func(c *int) (*Point, error) { return point(*c) })
}

// event is a turn that becomes due at a modelled time.
type event struct {
	at  float64
	seq int64 // ties break in order of scheduling
	tr  *traj
}

type events []event

func (h events) Len() int { return len(h) }
func (h events) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h events) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *events) Push(x any)   { *h = append(*h, x.(event)) }
func (h *events) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// traj is one slot's trajectory in flight.
type traj struct {
	k       int // start order
	conv    int // conversation index (dataset workload)
	repeat  int
	session string
	turns   []schemas.Turn
	next    int     // index of the next turn
	base    float64 // completion of the previous turn (or the trajectory's start)
	bo      datasets.BodyOptions
	failed  bool
	replica int // the replica the session routes to
	delay   float64
	sess    *simserver.Session
}

// run is one point's state.
type run struct {
	o           Options
	srv         *simserver.Server
	reps        []*simserver.Replica
	q           events
	seq         int64
	next        int                  // next trajectory to start
	order       *datasets.StartOrder // the conversation each trajectory replays
	budget      int
	windowAt    float64 // end of the performance window; +Inf until it closes
	recs        []*schemas.TurnRecord
	rr          int
	body        []byte
	inflight    map[*simserver.Turn]*inflight
	failed      int // turns
	failedTrajs int
}

type inflight struct {
	tr  *traj
	rec *schemas.TurnRecord
}

// Run simulates one point.
func Run(ctx context.Context, o Options) (*Point, error) {
	wall := time.Now()
	if o.Concurrency < 1 {
		return nil, fmt.Errorf("simulate: concurrency %d, want >= 1", o.Concurrency)
	}
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	switch o.Routing {
	case "":
		o.Routing = RouteSession
	case RouteSession, RouteRoundRobin, RouteLeastLoaded:
	default:
		return nil, fmt.Errorf("simulate: routing %q, want %s, %s or %s", o.Routing, RouteSession, RouteRoundRobin, RouteLeastLoaded)
	}
	if o.DelayScale == 0 {
		o.DelayScale = 1
	}
	if o.Data == nil && (o.ISL < 1 || o.OSL < 1) {
		return nil, notice.About(errors.New("simulate: give a dataset, or the input and output lengths of a turn (both >= 1)"), "dataset", "isl", "osl")
	}
	cfg := simserver.Config{Hardware: o.Hardware, Dataset: o.Data, Fidelity: o.Fidelity, Seed: o.Seed, Tokenizer: o.Tokenizer}
	srv, err := simserver.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	defer srv.Close()
	r := &run{o: o, srv: srv, windowAt: math.Inf(1), inflight: map[*simserver.Turn]*inflight{}}
	for i := range o.Replicas {
		r.reps = append(r.reps, srv.NewReplica(uint64(o.Seed)+uint64(i)*0x9e3779b97f4a7c15))
	}
	if o.Data != nil {
		if len(o.Data.Conversations) == 0 {
			return nil, errors.New("simulate: the dataset has no conversations")
		}
		if o.Sampling == nil {
			o.Sampling = samplingFor(o.Hardware)
			r.o.Sampling = o.Sampling
		}
		r.budget = o.Trajectories
		if r.budget == 0 {
			r.budget = len(o.Data.Conversations)
		}
		r.order = datasets.NewStartOrder(len(o.Data.Conversations), r.orderSeed())
	} else {
		r.budget = o.Requests
		if r.budget == 0 {
			r.budget = DefaultRequests(o.Concurrency)
		}
	}
	for range min(o.Concurrency, r.budget) {
		r.startTrajectory(0)
	}
	if err := r.loop(ctx); err != nil {
		return nil, err
	}
	return r.point(o, time.Since(wall))
}

// samplingFor is the datasets sampling profile of the simulated hardware's model.
func samplingFor(p simserver.Hardware) *datasets.Profile {
	for _, sp := range datasets.Profiles() {
		if p.Serves(sp.Model) {
			return &sp
		}
	}
	return nil
}

// orderSeed is the start order's seed: Options.OrderSeed, else the reference's
// default dataloader seed.
func (r *run) orderSeed() *big.Int {
	if r.o.OrderSeed != nil {
		return r.o.OrderSeed
	}
	return big.NewInt(datasets.DefaultSeed)
}

// startTrajectory takes the next trajectory (false when none is left) and
// schedules its first turn after its delay from at.
func (r *run) startTrajectory(at float64) bool {
	if r.next >= r.budget {
		return false
	}
	k := r.next
	r.next++
	tr := &traj{k: k, base: at}
	if d := r.o.Data; d != nil {
		n := len(d.Conversations)
		tr.conv, tr.repeat = r.order.Next(), k/n+1
		conv := &d.Conversations[tr.conv]
		tr.turns = d.ConversationTurns(tr.conv)
		tr.session = datasets.SessionID(conv.ConversationID, tr.repeat)
		tr.bo = datasets.BodyOptions{Model: r.o.SamplingModel, Profile: r.o.Sampling, Salt: !r.o.NoSalt, Repeat: tr.repeat,
			Stream: true, MaxTokens: r.o.MaxTokens, ClearGeneratedCache: r.o.ClearGeneratedCache}
		if !r.o.rebuild {
			tr.sess = r.srv.NewSession(tr.session)
		}
	} else {
		tr.session = fmt.Sprintf("random_%06d", k)
		tr.turns = make([]schemas.Turn, 1)
	}
	tr.replica = r.route(tr)
	r.schedule(tr)
	return true
}

// schedule puts the trajectory's next turn on the queue, its delay after base.
func (r *run) schedule(tr *traj) {
	tr.delay = 0
	if t := &tr.turns[tr.next]; !r.o.NoDelays && t.DelaySeconds > 0 {
		tr.delay = t.DelaySeconds * r.o.DelayScale
	}
	r.seq++
	heap.Push(&r.q, event{at: tr.base + tr.delay, seq: r.seq, tr: tr})
}

// route picks the replica for a trajectory's turn.
func (r *run) route(tr *traj) int {
	n := len(r.reps)
	if n == 1 {
		return 0
	}
	switch r.o.Routing {
	case RouteRoundRobin:
		r.rr++
		return (r.rr - 1) % n
	case RouteLeastLoaded:
		best := 0
		for i, rep := range r.reps {
			if rep.Load() < r.reps[best].Load() {
				best = i
			}
		}
		return best
	}
	h := fnv.New64a()
	h.Write([]byte(tr.session))
	return int(h.Sum64() % uint64(n))
}

// loop runs the discrete-event loop until every trajectory is done.
func (r *run) loop(ctx context.Context) error {
	steps := 0
	for {
		if steps++; steps&4095 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		// The next event: a turn due, or a replica's step end; turns due at the
		// same moment as a step end are submitted first, so the next step sees
		// them.
		rep, end := -1, math.Inf(1)
		for i, x := range r.reps {
			if x.Busy() && x.Next() < end {
				rep, end = i, x.Next()
			}
		}
		if len(r.q) > 0 && r.q[0].at <= end {
			ev := heap.Pop(&r.q).(event)
			if err := r.issue(ev.tr, ev.at); err != nil {
				return err
			}
			continue
		}
		if rep < 0 {
			return nil
		}
		x := r.reps[rep]
		x.Finish(func(t *simserver.Turn) { r.complete(t) })
		x.Start(end)
	}
}

// issue sends a trajectory's next turn at modelled time at.
func (r *run) issue(tr *traj, at float64) error {
	t := &tr.turns[tr.next]
	rec := &schemas.TurnRecord{SessionID: tr.session, Repeat: int32(max(tr.repeat, 1)), Trajectory: int32(tr.k), Turn: t.Turn,
		ClientIndex: t.ClientIndex, Status: schemas.StatusOK, Streamed: true,
		DelayNs: ns(tr.delay), ScheduledNs: ns(at), IssuedNs: ns(at), InWindow: at < r.windowAt,
		UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1}
	var turn *simserver.Turn
	var err error
	if d := r.o.Data; d != nil {
		conv := &d.Conversations[tr.conv]
		rec.ConversationID, rec.Domain = conv.ConversationID, conv.Domain
		r.body = d.AppendBody(r.body[:0], t, tr.bo)
		rec.RequestBytes = int64(len(r.body))
		if tr.sess != nil {
			turn, err = tr.sess.PrepareTurn(r.body)
		} else {
			turn, err = r.srv.PrepareTurn(r.body, tr.session)
		}
	} else {
		rec.ConversationID, rec.Domain = tr.session, "random"
		turn = r.srv.RandomTurn(r.o.ISL, r.o.OSL, uint64(r.o.Seed)<<32^uint64(tr.k))
	}
	if err != nil {
		// The HTTP server answers 400 (a prompt over the context length): the
		// turn fails and, as replay does, the rest of its trajectory is aborted.
		rec.Status, rec.Error, rec.HTTPStatus, rec.CompletedNs = schemas.StatusError, err.Error(), 400, rec.IssuedNs
		r.recs = append(r.recs, rec)
		r.failed++
		tr.failed = true
		r.afterTurn(tr, at)
		return nil
	}
	rep := tr.replica
	if r.o.Routing != RouteSession {
		rep = r.route(tr)
	}
	turn.Replica = rep
	if err := r.reps[rep].Submit(turn, at); err != nil {
		rec.Status, rec.Error, rec.HTTPStatus, rec.CompletedNs = schemas.StatusError, "server busy: waiting queue full", 429, rec.IssuedNs
		r.recs = append(r.recs, rec)
		r.failed++
		tr.failed = true
		r.afterTurn(tr, at)
		return nil
	}
	r.inflight[turn] = &inflight{tr: tr, rec: rec}
	r.reps[rep].Start(at)
	return nil
}

// complete records a finished turn and schedules what follows it.
func (r *run) complete(t *simserver.Turn) {
	f := r.inflight[t]
	delete(r.inflight, t)
	rec := f.rec
	first := ns(t.FirstTokenAt)
	rec.FirstTokenNs, rec.HeadersNs, rec.CompletedNs = first, first, ns(t.DoneAt)
	rec.UsagePromptTokens, rec.UsageCompletionTokens, rec.UsageCachedTokens = int32(t.PromptTokens), int32(t.OutputTokens), int32(t.CachedTokens)
	rec.FinishReason = t.Finish
	rec.Chunks = int32(1 + len(t.ChunkAt))
	rec.ChunkTimesNs = make([]int64, 1, 1+len(t.ChunkAt))
	for _, c := range t.ChunkAt {
		rec.ChunkTimesNs = append(rec.ChunkTimesNs, ns(c)-first)
	}
	if r.o.Records != nil {
		reasoning, content, calls := t.Answer()
		rec.OutputReasoning, rec.OutputContent = reasoning, content
		if len(calls) > 0 {
			rec.OutputToolCalls = toolCallsJSON(calls)
		}
	}
	r.recs = append(r.recs, rec)
	r.afterTurn(f.tr, t.DoneAt)
}

// afterTurn moves a trajectory on after its turn ended at modelled time at: its
// next turn, or (finished or failed) the slot's next trajectory. When none is
// left, the performance window closes.
func (r *run) afterTurn(tr *traj, at float64) {
	tr.next++
	if !tr.failed && tr.next < len(tr.turns) {
		tr.base = at
		r.schedule(tr)
		return
	}
	if tr.failed {
		r.failedTrajs++
		// The rest is aborted, not sent, as replay logs it.
		for ; tr.next < len(tr.turns); tr.next++ {
			t := &tr.turns[tr.next]
			r.recs = append(r.recs, &schemas.TurnRecord{SessionID: tr.session, Repeat: int32(max(tr.repeat, 1)), Trajectory: int32(tr.k),
				Turn: t.Turn, ClientIndex: t.ClientIndex, Status: schemas.StatusAborted, Error: "aborted: an earlier turn failed",
				InWindow: at < r.windowAt, UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1})
		}
	}
	// A serving benchmark measures every request: the random workload's window
	// never closes.
	if !r.startTrajectory(at) && math.IsInf(r.windowAt, 1) && r.o.Data != nil {
		r.windowAt = at
	}
}

// ns is a modelled time on the run clock, in nanoseconds. As replay's, the run
// clock starts a microsecond before the first turn (0 means "did not happen").
func ns(s float64) int64 { return int64(math.Round(s*1e9)) + 1000 }
