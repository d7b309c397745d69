package sim

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Sequence states.
const (
	seqActive = iota
	seqDone
	seqFailed // the server closed before the sequence finished
)

// seq is one request inside the scheduler.
type seq struct {
	// Set before submit, then read-only.
	promptLen int
	target    int      // output tokens to generate (>= 1)
	hashes    []uint64 // chained hashes of the full blocks of prompt + output
	arrival   time.Time
	notify    chan struct{} // capacity 1: "progress made"

	// Owned by the scheduler goroutine.
	computed   int      // tokens whose KV is computed
	blocks     []*block // KV blocks held, in token order
	registered int      // leading blocks entered into the prefix index
	admitted   bool     // admitted at least once
	lastEmit   float64  // modelled time of the last emitted token

	// Shared with the request's goroutine.
	emitted   atomic.Int32 // output tokens generated so far
	cached    atomic.Int32 // prompt tokens found in the prefix cache at first admission
	state     atomic.Int32
	cancelled atomic.Bool
	preempted atomic.Int32
}

func newSeq(promptLen, target int, hashes []uint64) *seq {
	return &seq{promptLen: promptLen, target: target, hashes: hashes, notify: make(chan struct{}, 1)}
}

// numTokens is the number of tokens whose KV the sequence needs before it can
// generate its next token: the prompt and the output so far.
func (s *seq) numTokens() int { return s.promptLen + int(s.emitted.Load()) }

func (s *seq) poke() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// planned is one sequence's share of a step.
type planned struct {
	s *seq
	n int // tokens computed this step
}

// yieldEvery is how long the scheduler runs steps back to back, when it is
// behind the modelled pace, before it lets the request goroutines run.
const yieldEvery = 200 * time.Microsecond

// minSleep is the shortest wait the scheduler sleeps for; a step due sooner runs
// at once (a timer costs more than it would wait, at high speedups).
const minSleep = 20 * time.Microsecond

// errQueueFull is returned by submit when the waiting queue is at its bound.
var errQueueFull = errors.New("waiting queue full")

// errClosed is returned by submit after Close.
var errClosed = errors.New("sim server closed")

// engine is the continuous-batching scheduler: one goroutine advances modelled
// time step by step and wakes the request goroutines whose tokens are due.
type engine struct {
	prof    Profile
	speedup float64
	met     *metrics
	start   time.Time // wall time of modelled time 0

	mu      sync.Mutex
	waiting []*seq // FCFS; preempted sequences go back to the front
	running []*seq // admission order; the last is preempted first
	closed  bool
	stats   Stats

	// Owned by the scheduler goroutine.
	pool   *kvPool
	now    float64 // modelled time, seconds since start
	plan   []planned
	wake   chan struct{}
	quit   chan struct{}
	exited chan struct{}
}

// Stats are the scheduler's running totals.
type Stats struct {
	Steps           int64
	Preemptions     int64
	PrefixQueries   int64 // prompt tokens looked up at admission
	PrefixHits      int64 // of which found in the cache
	PromptTokens    int64
	GeneratedTokens int64
	Finished        int64
	Rejected        int64 // 429 for a full queue
	Evictions       int64 // cached blocks evicted
	// ModelledSeconds is the modelled time of the last step's end.
	ModelledSeconds float64
	// LagSeconds is the largest wall-clock delay of a step behind its due time:
	// how far the sim fell behind the modelled pace (0 when it kept up).
	LagSeconds float64
}

func newEngine(p Profile, speedup float64, met *metrics) *engine {
	e := &engine{
		prof:    p,
		speedup: speedup,
		met:     met,
		start:   time.Now(),
		pool:    newKVPool(p.KVBlocks),
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	go e.run()
	return e
}

// submit enqueues a sequence; errQueueFull when the waiting queue is full.
func (e *engine) submit(s *seq) error {
	s.arrival = time.Now()
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return errClosed
	case len(e.waiting) >= e.prof.MaxWaiting:
		e.stats.Rejected++
		e.mu.Unlock()
		return errQueueFull
	}
	e.waiting = append(e.waiting, s)
	e.met.waiting.Set(float64(len(e.waiting)))
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return nil
}

// cancel marks a sequence abandoned by its client; the scheduler frees it at its
// next step.
func (e *engine) cancel(s *seq) {
	s.cancelled.Store(true)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// close stops the scheduler; sequences still in flight fail.
func (e *engine) close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		<-e.exited
		return
	}
	e.closed = true
	e.mu.Unlock()
	close(e.quit)
	<-e.exited
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, q := range [][]*seq{e.waiting, e.running} {
		for _, s := range q {
			s.state.Store(seqFailed)
			s.poke()
		}
	}
	e.waiting, e.running = nil, nil
}

func (e *engine) snapshot() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.stats
	st.Evictions = e.pool.evictions
	return st
}

func (e *engine) run() {
	defer close(e.exited)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	lastYield := time.Now()
	for {
		e.mu.Lock()
		e.reap()
		if len(e.running) == 0 && len(e.waiting) == 0 {
			e.publish()
			e.mu.Unlock()
			select {
			case <-e.wake:
			case <-e.quit:
				return
			}
			// Idle time passes at the modelled pace.
			if t := time.Since(e.start).Seconds() * e.speedup; t > e.now {
				e.now = t
			}
			continue
		}
		e.schedule()
		d := e.stepCost()
		e.stats.Steps++
		e.publish()
		e.mu.Unlock()

		if len(e.plan) == 0 {
			// Nothing could run (cannot happen with a valid profile); wait for a
			// change rather than spin.
			select {
			case <-e.wake:
			case <-e.quit:
				return
			}
			continue
		}
		e.now += d
		due := e.start.Add(time.Duration(e.now / e.speedup * 1e9))
		if wait := time.Until(due); wait >= minSleep {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-e.quit:
				return
			}
		} else {
			if lag := -wait.Seconds(); lag > e.stats.LagSeconds {
				e.stats.LagSeconds = lag
			}
			// Behind the modelled pace: run steps back to back, but let the
			// request goroutines write what is due every yieldEvery of wall time,
			// so a burst of tokens goes out in one write rather than one each.
			if now := time.Now(); now.Sub(lastYield) >= yieldEvery {
				runtime.Gosched()
				lastYield = time.Now()
			}
		}
		e.mu.Lock()
		e.apply()
		e.stats.ModelledSeconds = e.now
		e.mu.Unlock()
	}
}

// reap frees the sequences whose clients went away.
func (e *engine) reap() {
	keep := e.running[:0]
	for _, s := range e.running {
		if s.cancelled.Load() {
			e.pool.release(s.blocks)
			s.blocks = nil
			continue
		}
		keep = append(keep, s)
	}
	clear(e.running[len(keep):])
	e.running = keep
	w := e.waiting[:0]
	for _, s := range e.waiting {
		if !s.cancelled.Load() {
			w = append(w, s)
		}
	}
	clear(e.waiting[len(w):])
	e.waiting = w
}

// ensure allocates blocks so that s holds enough for tokens; false (and nothing
// allocated) when the pool cannot supply them.
func (e *engine) ensure(s *seq, tokens int) bool {
	bs := e.prof.BlockSize
	need := (tokens+bs-1)/bs - len(s.blocks)
	if need <= 0 {
		return true
	}
	if need > e.pool.free() {
		return false
	}
	for range need {
		s.blocks = append(s.blocks, e.pool.alloc())
	}
	return true
}

// preempt frees a running sequence's KV and sends it back to the front of the
// waiting queue; it will recompute its prompt and output so far.
func (e *engine) preempt(s *seq) {
	e.pool.release(s.blocks)
	s.blocks = s.blocks[:0]
	s.computed, s.registered = 0, 0
	s.preempted.Add(1)
	e.stats.Preemptions++
	e.met.preemptions.Inc()
	e.waiting = append(e.waiting, nil)
	copy(e.waiting[1:], e.waiting)
	e.waiting[0] = s
}

// match looks the sequence's leading blocks up in the prefix cache, takes a
// reference on each hit and counts them as computed. At least one token is
// always left to compute, as in vLLM.
func (e *engine) match(s *seq) {
	bs := e.prof.BlockSize
	limit := (s.numTokens() - 1) / bs
	if limit > len(s.hashes) {
		limit = len(s.hashes)
	}
	for i := 0; i < limit; i++ {
		b := e.pool.lookup(s.hashes[i])
		if b == nil {
			break
		}
		e.pool.acquire(b)
		s.blocks = append(s.blocks, b)
	}
	s.computed = len(s.blocks) * bs
	s.registered = len(s.blocks)
}

// schedule plans one step, as vLLM V1's scheduler does: running sequences first,
// in admission order, each computing what it lacks (one token when decoding, a
// chunk of its prompt when prefilling) within the step's token budget; when the
// pool runs dry the last-admitted running sequence is preempted. Then, unless a
// preemption happened, waiting sequences are admitted in order while the budget,
// the sequence limit and the pool allow.
func (e *engine) schedule() {
	e.plan = e.plan[:0]
	budget := e.prof.MaxBatchedTokens
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		n := min(s.numTokens()-s.computed, budget)
		for !e.ensure(s, s.computed+n) {
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			e.preempt(victim)
			preempted = true
			if victim == s {
				n = 0
				break
			}
		}
		if n == 0 {
			continue
		}
		e.plan = append(e.plan, planned{s, n})
		budget -= n
	}
	if preempted {
		return
	}
	for len(e.waiting) > 0 && len(e.running) < e.prof.MaxNumSeqs && budget > 0 {
		s := e.waiting[0]
		e.match(s)
		n := min(s.numTokens()-s.computed, budget)
		if !e.ensure(s, s.computed+n) {
			e.pool.release(s.blocks)
			s.blocks = s.blocks[:0]
			s.computed, s.registered = 0, 0
			break
		}
		e.waiting[0] = nil
		e.waiting = e.waiting[1:]
		e.running = append(e.running, s)
		hit := s.computed
		e.stats.PrefixQueries += int64(s.numTokens())
		e.stats.PrefixHits += int64(hit)
		e.met.prefixQueries.Add(float64(s.numTokens()))
		e.met.prefixHits.Add(float64(hit))
		if !s.admitted {
			s.admitted = true
			s.cached.Store(int32(hit))
			e.stats.PromptTokens += int64(s.promptLen)
			e.met.promptTokens.Add(float64(s.promptLen))
		}
		e.plan = append(e.plan, planned{s, n})
		budget -= n
	}
}

// stepCost is the modelled duration of the planned step.
func (e *engine) stepCost() float64 {
	p := &e.prof
	prefill, decode, context := 0, 0, 0
	for _, x := range e.plan {
		if x.n == 1 && x.s.emitted.Load() > 0 {
			decode++
		} else {
			prefill += x.n
		}
		context += x.s.computed + x.n
	}
	return p.StepOverhead + p.PrefillPerToken*float64(prefill) + p.DecodePerSeq*float64(decode) + p.AttendPerToken*float64(context)
}

// apply completes the planned step: tokens computed, full blocks registered in
// the prefix index, a token generated by each sequence that is now up to date,
// finished sequences released.
func (e *engine) apply() {
	bs := e.prof.BlockSize
	finished := false
	for _, x := range e.plan {
		s := x.s
		if s.cancelled.Load() {
			continue
		}
		s.computed += x.n
		for s.registered < len(s.hashes) && (s.registered+1)*bs <= s.computed {
			e.pool.register(s.blocks[s.registered], s.hashes[s.registered])
			s.registered++
		}
		if s.computed < s.numTokens() {
			continue // prefill not done yet
		}
		k := s.emitted.Load()
		if k == 0 {
			e.met.ttft.Observe(time.Since(s.arrival).Seconds() * e.speedup)
		} else {
			e.met.itl.Observe(e.now - s.lastEmit)
		}
		s.lastEmit = e.now
		e.stats.GeneratedTokens++
		e.met.generationTokens.Inc()
		if int(k)+1 == s.target {
			e.pool.release(s.blocks)
			s.blocks = nil
			e.stats.Finished++
			e.met.e2e.Observe(time.Since(s.arrival).Seconds() * e.speedup)
			s.state.Store(seqDone) // before the count: a reader seeing the last token sees done
			finished = true
		}
		s.emitted.Store(k + 1)
	}
	if finished {
		keep := e.running[:0]
		for _, s := range e.running {
			if s.state.Load() != seqDone {
				keep = append(keep, s)
			}
		}
		clear(e.running[len(keep):])
		e.running = keep
	}
	for _, x := range e.plan {
		x.s.poke()
	}
	clear(e.plan)
	e.plan = e.plan[:0]
}

// publish updates the gauges.
func (e *engine) publish() {
	e.met.running.Set(float64(len(e.running)))
	e.met.waiting.Set(float64(len(e.waiting)))
	e.met.kvUsage.Set(e.pool.usage())
	e.met.lag.Set(e.stats.LagSeconds)
}
