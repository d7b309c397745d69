package simserver

import (
	"errors"
	"math/rand/v2"

	"github.com/agentrace/agentrace/schemas"
)

// Turn is one request prepared for virtual time (Server.PrepareTurn) and, once
// a Replica has run it, what happened to it. Times are modelled seconds.
type Turn struct {
	// PromptTokens and OutputTokens are the request's tokens and those its answer
	// has; Finish is its finish reason (stop, tool_calls, length).
	PromptTokens, OutputTokens int
	Finish                     string
	// Streamed tells whether the request asked for a streamed answer.
	Streamed bool

	// Filled as the turn runs.
	SubmittedAt, FirstTokenAt, DoneAt float64
	// CachedTokens are the prompt tokens found in the prefix cache.
	CachedTokens int
	// ChunkAt holds, for every step after the first that streamed tokens of the
	// answer, its end: a server streams a step's tokens (one, or the accepted
	// drafts and one more) as one chunk.
	ChunkAt []float64
	// Replica is the index of the replica that served the turn (the caller's).
	Replica int

	res  *response
	q    *seq
	sess *Session // the session that prepared it, nil for none
}

// Answer returns the answer's text as a client would assemble it.
func (t *Turn) Answer() (reasoning, content string, calls []schemas.ToolCall) {
	return t.res.out.text(t.res.target)
}

// errNotServed refuses a request for a model the server does not serve.
var errNotServed = errors.New("model not served")

// PrepareTurn reads a request body as the handler would (its model, messages,
// tools, cache_salt and max tokens), tokenizes it, picks its answer (the
// dataset's, by session and message count, or a synthetic one) and makes its
// sequence, ready to submit to a Replica. The answer draws depend on the seed,
// the session and the request only, as the HTTP server's do; faults are not
// injected.
func (s *Server) PrepareTurn(body []byte, session string) (*Turn, error) {
	req, err := decodeRequest(body)
	if err != nil {
		return nil, err
	}
	return s.newTurn(req, session, validate, func(rng *rand.Rand) (*response, string) {
		var buf []uint64
		return s.prepare(req, session, rng, &buf)
	})
}

// newTurn checks a decoded request as the handler does (check is validate, or
// one that gives the same answers), draws as it draws and makes the turn of what
// prepare makes of the request.
func (s *Server) newTurn(req *chatRequest, session string, check func(*chatRequest) string, prepare func(*rand.Rand) (*response, string)) (*Turn, error) {
	if msg := check(req); msg != "" {
		return nil, errors.New(msg)
	}
	if !s.prof.Serves(req.Model) {
		return nil, errNotServed
	}
	rng := rand.New(rand.NewPCG(requestKey(s.cfg.Seed, session, req), 0x5eed))
	rng.Float64() // the fault draw of the HTTP server
	res, msg := prepare(rng)
	if msg != "" {
		return nil, errors.New(msg)
	}
	t := &Turn{PromptTokens: res.q.promptLen, OutputTokens: res.target, Finish: res.finish, Streamed: res.stream, res: res, q: res.q}
	res.q.turn = t
	return t, nil
}

// Replica is one simulated server in virtual time: the scheduler and cost
// model of the real-time server, with steps that run when the caller says and
// take no wall time. It is not safe for concurrent use. Drive it as a
// discrete-event loop: Submit turns as they arrive, Start a step when it is
// idle, and at the step's end (Next) Finish it.
type Replica struct {
	core
	busy bool
	end  float64
}

// NewReplica returns an idle replica of the server's hardware; seed draws its
// speculative acceptances.
func (s *Server) NewReplica(seed uint64) *Replica {
	return &Replica{core: newCore(s.prof, nil, seed)}
}

// Submit enqueues a turn at modelled time now; an error when the waiting queue
// is full (the HTTP server's 429).
func (r *Replica) Submit(t *Turn, now float64) error {
	if len(r.waiting) >= r.prof.MaxWaiting {
		r.stats.Rejected++
		return errQueueFull
	}
	t.SubmittedAt = now
	t.q.arrivalAt = now
	if x := t.sess; x != nil && x.pool == r.pool {
		t.q.known = x.blocks
	}
	r.waiting = append(r.waiting, t.q)
	return nil
}

// Busy tells whether a step is running; Next is when it ends.
func (r *Replica) Busy() bool    { return r.busy }
func (r *Replica) Next() float64 { return r.end }

// Load is the number of turns the replica holds, running or waiting.
func (r *Replica) Load() int { return len(r.running) + len(r.waiting) }

// Stats returns the replica's running totals.
func (r *Replica) Stats() Stats {
	st := r.stats
	st.Evictions = r.pool.evictions
	st.ModelledSeconds = r.now
	return st
}

// Start plans a step at modelled time now when the replica is idle and has
// work; it tells whether a step started.
func (r *Replica) Start(now float64) bool {
	if r.busy || len(r.running)+len(r.waiting) == 0 {
		return false
	}
	r.now = max(r.now, now)
	r.schedule()
	if len(r.plan) == 0 {
		return false
	}
	r.stats.Steps++
	r.end = r.now + r.stepCost()
	r.busy = true
	return true
}

// Finish completes the running step at its end and calls done for every turn
// that generated its last token in it.
func (r *Replica) Finish(done func(*Turn)) {
	r.now = r.end
	r.busy = false
	r.apply(func(s *seq, gen int) {
		t := s.turn
		if gen == 0 || t == nil {
			return
		}
		if t.FirstTokenAt == 0 {
			t.FirstTokenAt = r.now
			t.CachedTokens = int(s.cached.Load())
		} else {
			t.ChunkAt = append(t.ChunkAt, r.now)
		}
		if s.state.Load() == seqDone {
			t.DoneAt = r.now
			done(t)
		}
	})
	r.stats.ModelledSeconds = r.now
}

// RandomTurn is a request of isl random prompt tokens, shared with no other
// request, and an answer of exactly osl tokens (no text): a serving
// benchmark's random workload. key makes the prompt unique.
func (s *Server) RandomTurn(isl, osl int, key uint64) *Turn {
	toks := make([]uint64, isl+osl)
	for i := range toks {
		toks[i] = mix(key, uint64(i))
	}
	q := newSeq(isl, osl, blockHashes(make([]uint64, 0, len(toks)/s.prof.BlockSize), mix(key, 0x7a11), toks, s.prof.BlockSize))
	res := &response{target: osl, finish: "length", stream: true, q: q, out: output{tokEnd: make([]int32, osl)}}
	t := &Turn{PromptTokens: isl, OutputTokens: osl, Finish: res.finish, Streamed: true, res: res, q: q}
	q.turn = t
	return t
}
