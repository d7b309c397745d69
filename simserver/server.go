package simserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/schemas"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config configures a simulated server.
type Config struct {
	// Hardware holds the serving parameters (see AllHardware); the zero value means
	// DefaultHardware.
	Hardware Hardware
	// Speedup divides every modelled duration: 50 runs the model 50 times faster
	// than real time. 0 means 1.
	Speedup float64
	// Dataset, when set, makes answers the dataset's recorded assistant messages:
	// exact with probability Fidelity, plausibly perturbed otherwise. The turn is
	// found from the X-Session-ID header and the request's message count; a
	// request that matches no turn gets a synthetic answer.
	Dataset  *datasets.Dataset
	Fidelity float64
	// Output is the length distribution of synthetic answers; the zero value means
	// DefaultOutputLength.
	Output OutputLength
	// Faults are the rates of injected faults.
	Faults FaultSpec
	// Tokenizer, when set, supplies the token ids that prompts and answers are
	// counted and cached by (e.g. a *tokens.Tokenizer); nil uses the sim's
	// pseudo-tokenizer.
	Tokenizer Tokenizer
	// Seed makes fault and fidelity draws and synthetic answers reproducible.
	Seed int64

	// Limits that keep a hostile client from exhausting the server (Serve): at
	// most MaxConnections open connections (0: DefaultMaxConnections), one more is
	// answered 503 and closed; a request's headers must arrive within
	// HeaderTimeout (0: DefaultHeaderTimeout), its body within BodyTimeout (0:
	// DefaultBodyTimeout); an idle keep-alive connection is closed after
	// IdleTimeout (0: DefaultIdleTimeout). Request bodies are capped by the
	// hardware's MaxModelLen (MaxBodyBytes), and the bodies being read and
	// tokenized at once by BodyBudget bytes (0: DefaultBodyBudget; past it a
	// request is answered 503).
	MaxConnections int
	HeaderTimeout  time.Duration
	BodyTimeout    time.Duration
	IdleTimeout    time.Duration
	BodyBudget     int64
}

// Check checks the configuration's numbers before any work (New checks them
// too): a finite positive speedup (0 means 1), a fidelity in [0, 1], finite
// answer lengths, valid fault rates and limits, none NaN.
func (cfg Config) Check() error {
	o := cfg.Output
	if o == (OutputLength{}) {
		o = defaultOutputLength
	}
	switch {
	case !(cfg.Speedup >= 0) || math.IsInf(cfg.Speedup, 0):
		return fmt.Errorf("speedup %v: want a finite positive number", cfg.Speedup)
	case !(cfg.Fidelity >= 0 && cfg.Fidelity <= 1):
		return fmt.Errorf("fidelity %v: want a probability in [0, 1]", cfg.Fidelity)
	case !(o.Mean > 0) || math.IsInf(o.Mean, 0) || !(o.Sigma >= 0) || math.IsInf(o.Sigma, 0) || o.Min < 1 || o.Max < o.Min:
		return fmt.Errorf("output length %+v: want a finite mean > 0, a finite sigma >= 0, 1 <= min <= max", o)
	case cfg.MaxConnections < 0 || cfg.BodyBudget < 0 || cfg.HeaderTimeout < 0 || cfg.BodyTimeout < 0 || cfg.IdleTimeout < 0:
		return fmt.Errorf("limits: max connections %d, body budget %d, timeouts %v %v %v: none may be negative",
			cfg.MaxConnections, cfg.BodyBudget, cfg.HeaderTimeout, cfg.BodyTimeout, cfg.IdleTimeout)
	}
	return cfg.Faults.Validate()
}

// Defaults of the limits in Config.
const (
	DefaultHeaderTimeout = 30 * time.Second
	DefaultBodyTimeout   = 30 * time.Second
	DefaultIdleTimeout   = 5 * time.Minute
	DefaultBodyBudget    = 512 << 20
	// bodyBytesPerToken bounds a request body by the hardware's context length: a
	// prompt of MaxModelLen tokens is at most this many bytes a token, JSON
	// escapes and tools included (text is about 4).
	bodyBytesPerToken = 32
	minMaxBody        = 4 << 20
	maxMaxBody        = 256 << 20
	// poolTokens bounds the token buffers kept for reuse.
	poolTokens = 1 << 20
)

// MaxBodyBytes is the largest request body a server with hardware p reads: 32 bytes
// per token of its context length, between 4 MiB and 256 MiB.
func MaxBodyBytes(p Hardware) int64 {
	return min(max(int64(p.MaxModelLen)*bodyBytesPerToken, minMaxBody), maxMaxBody)
}

// Server is a simulated OpenAI-compatible LLM server. It is safe for concurrent
// use; Close stops it.
type Server struct {
	cfg      Config
	prof     Hardware
	eng      *engine
	met      *metrics
	rec      *recordedIndex
	tt       textTokens
	mux      *http.ServeMux
	speedup  string
	ids      atomic.Uint64
	memo     *tokenMemo
	bufs     sync.Pool // *[]uint64 token buffers
	bodies   sync.Pool // *bytes.Buffer request bodies
	sessions sessionTable
	chunks   sync.Pool // *[]byte SSE write buffers

	maxBody     int64
	bodyTimeout time.Duration
	bodyBudget  int64
	bodyBytes   atomic.Int64 // bytes of the bodies being read and tokenized now
	lastFree    atomic.Int64 // unix ns of the last giveBack
}

// giveBackBody is the body size past which the memory a request used is handed back
// to the system once it is done (at most every giveBackEvery): an outsized prompt
// must not leave the server holding gigabytes.
const (
	giveBackBody  = 4 << 20
	giveBackEvery = 10 * time.Second
)

// giveBack returns freed memory to the system, in the background, at most once
// every giveBackEvery.
func (s *Server) giveBack() {
	now := time.Now().UnixNano()
	last := s.lastFree.Load()
	if now-last < int64(giveBackEvery) || !s.lastFree.CompareAndSwap(last, now) {
		return
	}
	go debug.FreeOSMemory()
}

// New starts a simulated server's scheduler; serve its Handler and Close it when
// done.
func New(cfg Config) (*Server, error) {
	if cfg.Hardware.Name == "" && cfg.Hardware.Model == "" {
		p, err := LookupHardware(DefaultHardware)
		if err != nil {
			return nil, err
		}
		cfg.Hardware = p
	}
	if err := cfg.Hardware.Validate(); err != nil {
		return nil, fmt.Errorf("new sim: %w", err)
	}
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("new sim: %w", err)
	}
	if cfg.Speedup == 0 {
		cfg.Speedup = 1
	}
	if cfg.Output == (OutputLength{}) {
		cfg.Output = defaultOutputLength
	}
	s := &Server{cfg: cfg, prof: cfg.Hardware, tt: textTokens{tok: cfg.Tokenizer},
		speedup: strconv.FormatFloat(cfg.Speedup, 'g', -1, 64)}
	s.met = newMetrics(s.prof, cfg.Speedup)
	s.memo = newTokenMemo(memoTokens)
	s.maxBody, s.bodyTimeout, s.bodyBudget = MaxBodyBytes(s.prof), cfg.BodyTimeout, cfg.BodyBudget
	if s.bodyTimeout <= 0 {
		s.bodyTimeout = DefaultBodyTimeout
	}
	if s.bodyBudget <= 0 {
		s.bodyBudget = DefaultBodyBudget
	}
	if cfg.Dataset != nil {
		s.rec = newRecordedIndex(cfg.Dataset)
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.met.reg, promhttp.HandlerOpts{}))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})
	s.eng = newEngine(s.prof, cfg.Speedup, s.met, uint64(cfg.Seed))
	return s, nil
}

// Handler returns the server's HTTP handler: POST /v1/chat/completions,
// GET /v1/models, GET /health and GET /metrics. Every response carries the
// headers X-Sim-Speedup and X-Sim-Hardware.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Sim-Speedup", s.speedup)
		h.Set("X-Sim-Hardware", s.prof.Name)
		s.mux.ServeHTTP(w, r)
	})
}

// Close stops the scheduler; requests still in flight fail (a 503, or a cut
// stream).
func (s *Server) Close() error {
	s.eng.close()
	return nil
}

// Stats returns the scheduler's running totals.
func (s *Server) Stats() Stats { return s.eng.snapshot() }

// Serve serves a simulated server on ln until ctx is done, then shuts down
// gracefully.
func Serve(ctx context.Context, ln net.Listener, cfg Config) error {
	s, err := New(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	// No ReadTimeout: it would cut long streamed answers (net/http cancels a
	// request whose connection's read deadline passes); the body has its own
	// deadline (BodyTimeout), the headers ReadHeaderTimeout.
	idle := cfg.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	maxConns := cfg.MaxConnections
	if maxConns <= 0 {
		maxConns = DefaultMaxConnections()
	}
	header := cfg.HeaderTimeout
	if header <= 0 {
		header = DefaultHeaderTimeout
	}
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: header, IdleTimeout: idle}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(newLimitListener(ln, maxConns)) }()
	select {
	case err := <-errc:
		s.Close()
		return fmt.Errorf("sim serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	s.Close() // in-flight requests fail fast, so Shutdown does not wait on them
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("sim shutdown %s: %w", ln.Addr(), err)
	}
	return nil
}

// models lists every name the hardware answers to (servesModel): its model, its
// aliases and the reference client's placeholder, as vLLM lists each
// --served-model-name, so that a client can check its model name before a run.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	var data []map[string]any
	for _, name := range append(append([]string{s.prof.Model}, s.prof.Aliases...), datasets.DefaultModelName) {
		data = append(data, map[string]any{
			"id": name, "object": "model", "created": time.Now().Unix(), "owned_by": "agentrace-sim",
			"root": s.prof.Model, "max_model_len": s.prof.MaxModelLen,
		})
	}
	body := map[string]any{"object": "list", "data": data}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	b := make([]byte, 0, 128+len(msg))
	b = append(b, `{"error":{"message":`...)
	b = jsontext.AppendString(b, msg)
	b = append(b, `,"type":`...)
	b = jsontext.AppendString(b, typ)
	b = append(b, `,"param":null,"code":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, "}}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// event is one streamed part of a generated token: a piece of reasoning,
// content or tool-call arguments, or a tool call's header (its name).
type event struct {
	kind int8 // segReasoning, segContent, segToolName (the call's header) or segToolArgs
	call int16
	off  int32 // where text starts in the answer's rendering (output.body)
	text string
}

// output is a planned answer: its events, and where each token's events end.
type output struct {
	body   string   // the answer's rendering, of which the events' texts are slices
	toks   []uint64 // token identities, for the cache
	events []event
	tokEnd []int32 // token k streams events[tokEnd[k-1]:tokEnd[k]]
	calls  []answerCall
}

// text is the answer as its first target tokens stream it: reasoning, content
// and tool calls (one per call begun, a call cut before its name with no name).
func (o *output) text(target int) (reasoning, content string, calls []schemas.ToolCall) {
	var r, c strings.Builder
	type call struct{ name, args strings.Builder }
	cs := make([]call, len(o.calls))
	end := int32(0)
	if target > 0 {
		end = o.tokEnd[target-1]
	}
	for _, ev := range o.events[:end] {
		switch ev.kind {
		case segReasoning:
			r.WriteString(ev.text)
		case segContent:
			c.WriteString(ev.text)
		case segToolName:
			cs[ev.call].name.WriteString(ev.text)
		case segToolArgs:
			cs[ev.call].args.WriteString(ev.text)
		}
	}
	calls = make([]schemas.ToolCall, len(cs))
	for i := range cs {
		calls[i] = schemas.ToolCall{Index: i, ID: o.calls[i].ID, Type: "function",
			Function: schemas.ToolFunction{Name: cs[i].name.String(), Arguments: cs[i].args.String()}}
	}
	return r.String(), c.String(), calls
}

// tokenEvents returns the events of token k.
func (o *output) tokenEvents(k int) []event {
	lo := int32(0)
	if k > 0 {
		lo = o.tokEnd[k-1]
	}
	return o.events[lo:o.tokEnd[k]]
}

// planOutput renders an answer, tokenizes it as a whole (as a later prompt that
// echoes it will be), appends the token identities to toks and maps each token
// to what it streams. It plans at most limit+1 tokens, so that a cut shows.
// With a real tokenizer the pseudo-tokens' text is spread evenly over the real
// tokens.
func (s *Server) planOutput(a *answer, toks []uint64, limit int) output {
	body, segs := a.render()
	o := output{body: body, calls: a.ToolCalls}
	var ends []int // end of each pseudo-token
	for i := 0; i < len(body) && (s.tt.tok != nil || len(ends) <= limit); {
		i = nextPiece(body, i)
		ends = append(ends, i)
	}
	n := len(ends)
	if s.tt.tok != nil {
		ids := s.tt.tok.Encode(body, false)
		n = min(len(ids), limit+1)
		for _, id := range ids[:n] {
			toks = append(toks, uint64(id)+1)
		}
	} else {
		for k, e := range ends {
			start := 0
			if k > 0 {
				start = ends[k-1]
			}
			toks = append(toks, hashString(fnvOffset, body[start:e]))
		}
	}
	o.toks = toks
	p, si := len(ends), 0
	for j := range n {
		lo, hi := j*p/n, (j+1)*p/n
		start, end := 0, 0
		if lo > 0 {
			start = ends[lo-1]
		}
		end = start
		if hi > lo {
			end = ends[hi-1]
		}
		for si < len(segs) && segs[si].end <= start {
			si++
		}
		for k := si; k < len(segs) && segs[k].start < end; k++ {
			sg := &segs[k]
			ev := event{kind: int8(sg.kind), call: int16(sg.call)}
			if sg.kind == segToolName {
				if end < sg.end {
					continue // the call's header goes out with the name's last token
				}
				ev.off, ev.text = int32(sg.start), body[sg.start:sg.end]
			} else {
				lo := max(start, sg.start)
				ev.off, ev.text = int32(lo), body[lo:min(end, sg.end)]
			}
			o.events = append(o.events, ev)
		}
		o.tokEnd = append(o.tokEnd, int32(len(o.events)))
	}
	return o
}

// response is what the handler knows of a request in flight.
type response struct {
	id, model string
	created   int64
	stream    bool
	usage     bool // stream_options.include_usage
	fault     int
	faultAt   int    // token index at which a mid-answer fault strikes
	out       output // events and calls; no tokens
	target    int
	finish    string
	q         *seq
	head      []byte // chunkHead's bytes, once made
}

// memoTokens bounds each of the token memo's two generations (8 bytes a token).
const memoTokens = 4 << 20

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	// The body's size is checked before it is read (when declared) and as it is
	// read; it must arrive within the body timeout, and the bodies held at once are
	// bounded (s.bodyBudget).
	if r.ContentLength > s.maxBody {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestEntityTooLarge, "BadRequestError", fmt.Sprintf("request body of %d bytes: over the %d this server reads", r.ContentLength, s.maxBody))
		return
	}
	reserved := max(r.ContentLength, 64<<10)
	defer func() { s.bodyBytes.Add(-reserved) }()
	if s.bodyBytes.Add(reserved) > s.bodyBudget {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "server busy: too many request bodies being read")
		return
	}
	body, _ := s.bodies.Get().(*bytes.Buffer)
	if body == nil {
		body = new(bytes.Buffer)
	}
	defer func() {
		if body.Cap() <= 4<<20 {
			body.Reset()
			s.bodies.Put(body)
		}
	}()
	defer func() {
		if body.Len() >= giveBackBody || r.ContentLength >= giveBackBody {
			s.giveBack()
		}
	}()
	if r.ContentLength > 0 {
		body.Grow(int(r.ContentLength))
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.bodyTimeout))
	_, err := body.ReadFrom(io.LimitReader(r.Body, s.maxBody+1))
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		w.Header().Set("Connection", "close")
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			writeError(w, http.StatusRequestTimeout, "BadRequestError", fmt.Sprintf("request body not received within %s", s.bodyTimeout))
			return
		}
		writeError(w, http.StatusBadRequest, "BadRequestError", "read request body: "+err.Error())
		return
	}
	if int64(body.Len()) > s.maxBody {
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestEntityTooLarge, "BadRequestError", fmt.Sprintf("request body over the %d bytes this server reads", s.maxBody))
		return
	}
	if n := int64(body.Len()); n > reserved {
		s.bodyBytes.Add(n - reserved)
		reserved = n
	}
	res, refused := s.admit(body.Bytes(), r.Header.Get("X-Session-ID"))
	if refused != nil {
		writeError(w, refused.status, refused.typ, refused.msg)
		return
	}
	// The body is no longer needed: its budget goes back before the answer.
	s.bodyBytes.Add(-reserved)
	reserved = 0
	switch err := s.eng.submit(res.q); {
	case errors.Is(err, errQueueFull):
		writeError(w, http.StatusTooManyRequests, "TooManyRequestsError", fmt.Sprintf("server busy: %d requests waiting", s.prof.MaxWaiting))
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", err.Error())
		return
	}
	if res.stream {
		s.streamResponse(w, r, res)
	} else {
		s.fullResponse(w, r, res)
	}
}

// refusal is the error answer to a request the server does not serve.
type refusal struct {
	status   int
	typ, msg string
}

// admit reads, checks and prepares a request body, or says how to refuse it
// (the fault draws included). With a session id the session's Session reads and
// prepares it, so that a turn costs what is new in it; a session busy with
// another request of its own is not waited for: that request is prepared whole.
func (s *Server) admit(body []byte, session string) (*response, *refusal) {
	x := s.sessions.take(s, session)
	prepared := false
	defer func() {
		if x != nil {
			if !prepared {
				x.forget() // what it read was not prepared: its history is not the request's
			}
			s.sessions.give(x)
		}
	}()
	var req *chatRequest
	var known int
	var err error
	if x != nil {
		req, known, err = x.decode(body)
	} else {
		req, err = decodeRequest(body)
	}
	if err != nil {
		return nil, &refusal{http.StatusBadRequest, "BadRequestError", "invalid JSON body: " + err.Error()}
	}
	check := validate
	if x != nil {
		check = x.validate
	}
	if msg := check(req); msg != "" {
		return nil, &refusal{http.StatusBadRequest, "BadRequestError", msg}
	}
	if !s.prof.Serves(req.Model) {
		return nil, &refusal{http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist; this server serves `%s`.", req.Model, s.prof.Model)}
	}
	key := requestKey(s.cfg.Seed, session, req)
	rng := rand.New(rand.NewPCG(key, 0x5eed))
	fault := s.cfg.Faults.draw(rng.Float64())
	switch fault {
	case fault5xx:
		return nil, &refusal{http.StatusInternalServerError, "InternalServerError", "simulated server error (fault injection)"}
	case fault429:
		return nil, &refusal{http.StatusTooManyRequests, "TooManyRequestsError", "simulated overload (fault injection)"}
	}
	var res *response
	var msg string
	if x != nil {
		res, msg = x.prepare(req, known, rng)
	} else {
		bp := s.tokenBuf()
		defer s.putTokenBuf(bp)
		res, msg = s.prepare(req, session, rng, bp)
	}
	if msg != "" {
		return nil, &refusal{http.StatusBadRequest, "BadRequestError", msg}
	}
	prepared = true
	res.fault = fault
	res.q.sess = x
	return res, nil
}

// tokenBuf returns a token buffer from the pool; putTokenBuf gives it back.
func (s *Server) tokenBuf() *[]uint64 {
	bp, _ := s.bufs.Get().(*[]uint64)
	if bp == nil {
		bp = new([]uint64)
	}
	return bp
}

func (s *Server) putTokenBuf(bp *[]uint64) {
	// A big buffer is not kept: memory goes back after an outsized prompt.
	if cap(*bp) <= poolTokens {
		*bp = (*bp)[:0]
		s.bufs.Put(bp)
	}
}

// prepare tokenizes a valid request for a model the server serves, picks and
// plans its answer and makes its sequence; msg says why a request is refused
// (a 400), "" when it is not. *bp is a scratch token buffer.
func (s *Server) prepare(req *chatRequest, session string, rng *rand.Rand, bp *[]uint64) (res *response, msg string) {
	// Tokenizing stops at the context length: a longer prompt is refused without
	// being counted whole.
	toks, bad, complete := s.promptTokensUpTo((*bp)[:0], req, s.prof.MaxModelLen)
	if bad != "" {
		return nil, bad
	}
	promptLen := len(toks)
	res, toks, msg = s.respond(req, session, rng, promptLen, complete, toks)
	*bp = toks // the pooled buffer is reused once the hashes are computed
	if msg != "" {
		return nil, msg
	}
	all := toks[:promptLen+res.target]
	hashes := blockHashes(make([]uint64, 0, len(all)/s.prof.BlockSize), cacheSeed(req), all, s.prof.BlockSize)
	res.q = newSeq(promptLen, res.target, hashes)
	return res, ""
}

// respond refuses a prompt of promptLen tokens (complete: all counted) that
// does not fit the context length, or picks and plans its answer, appending the
// answer's token identities to toks; the response still lacks its sequence.
func (s *Server) respond(req *chatRequest, session string, rng *rand.Rand, promptLen int, complete bool, toks []uint64) (*response, []uint64, string) {
	if promptLen >= s.prof.MaxModelLen {
		more := ""
		if !complete {
			more = "at least "
		}
		return nil, toks, fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %s%d input tokens.", s.prof.MaxModelLen, more, promptLen)
	}
	maxOut := s.prof.MaxModelLen - promptLen
	if m := req.maxTokens(); m > 0 && m < maxOut {
		maxOut = m
	}
	n := s.ids.Add(1)
	idHex := strconv.FormatUint(mix(uint64(s.cfg.Seed), n)&0xffffffffffff, 16)
	a := s.answer(rng, req, session, "chatcmpl-tool-"+idHex, maxOut)
	out := s.planOutput(&a, toks, maxOut)
	toks = out.toks
	out.toks = nil
	res := &response{id: "chatcmpl-" + idHex, model: req.Model, created: time.Now().Unix(), stream: bool(req.Stream),
		usage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage, out: out}
	if res.model == "" {
		res.model = s.prof.Model
	}
	res.target = len(out.tokEnd)
	switch {
	case res.target > maxOut:
		res.target = maxOut
		res.finish = "length"
	case len(a.ToolCalls) > 0:
		res.finish = "tool_calls"
	default:
		res.finish = "stop"
	}
	res.faultAt = res.target / 2
	return res, toks, ""
}

// cacheSeed starts the chain of a request's block hashes: a hash of its
// cache_salt, 0 without one.
func cacheSeed(req *chatRequest) uint64 {
	if req.CacheSalt == "" {
		return 0
	}
	return hashString(fnvOffset, "cache_salt:"+req.CacheSalt)
}

// requestKeys are the request fields the sim reads, in the order of
// decodeRequest's vals.
var requestKeys = []string{"model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "tools", "tool_choice", "cache_salt"}

// decodeRequest reads a request body. The messages are kept raw, as slices of
// b: one validating scan finds them (a body of a long history is mostly its
// messages), and only the small fields go through encoding/json.
func decodeRequest(b []byte) (*chatRequest, error) {
	var r chatRequest
	sc := jsontext.NewScanner(b, jsontext.JSON)
	vals := make([][]byte, len(requestKeys))
	if err := sc.Fields(requestKeys, vals); err != nil {
		return nil, err
	}
	if err := sc.End(); err != nil {
		return nil, err
	}
	if m := vals[1]; len(m) > 0 && string(m) != "null" {
		ms := jsontext.NewScanner(m, jsontext.JSON)
		if err := ms.Array(func(int) error {
			v, err := ms.Value()
			r.Messages = append(r.Messages, v)
			return err
		}); err != nil {
			return nil, fmt.Errorf("messages: %w", err)
		}
	}
	if err := r.setFields(vals); err != nil {
		return nil, err
	}
	return &r, nil
}

// setFields decodes the raw values of the request's fields other than the
// messages, in the order of requestKeys.
func (r *chatRequest) setFields(vals [][]byte) error {
	fields := []any{&r.Model, nil, &r.Stream, &r.StreamOptions, &r.MaxTokens, &r.MaxCompletionTokens, &r.Tools, &r.ToolChoice, &r.CacheSalt}
	for i, v := range vals {
		if v == nil || fields[i] == nil {
			continue
		}
		if err := json.Unmarshal(v, fields[i]); err != nil {
			return fmt.Errorf("%s: %w", requestKeys[i], err)
		}
	}
	return nil
}

func (r *chatRequest) maxTokens() int {
	if r.MaxCompletionTokens != nil {
		return int(*r.MaxCompletionTokens)
	}
	if r.MaxTokens != nil {
		return int(*r.MaxTokens)
	}
	return 0
}

// validate returns what is wrong with a request, "" when nothing is.
func validate(r *chatRequest) string {
	if len(r.Messages) == 0 {
		return "messages must be a non-empty list"
	}
	for _, p := range []*laxInt{r.MaxTokens, r.MaxCompletionTokens} {
		if p != nil && *p < 1 {
			return fmt.Sprintf("max tokens %d must be at least 1", *p)
		}
	}
	if t := bytes.TrimSpace(r.Tools); len(t) > 0 && string(t) != "null" {
		var tools []toolInfo
		if err := json.Unmarshal(t, &tools); err != nil {
			return "tools must be a list of tool definitions: " + err.Error()
		}
	}
	return ""
}

// answer picks the answer: the recorded one (exact or perturbed) when the
// dataset has the turn, else a synthetic one.
func (s *Server) answer(rng *rand.Rand, req *chatRequest, session, callID string, limit int) answer {
	u := rng.Float64()
	if s.rec != nil && session != "" {
		if rec, ok := s.rec.lookup(session, len(req.Messages)); ok {
			rec.ToolCalls = slices.Clone(rec.ToolCalls)
			for i := range rec.ToolCalls {
				if rec.ToolCalls[i].ID == "" {
					rec.ToolCalls[i].ID = callID + "-" + strconv.Itoa(i)
				}
			}
			if u < s.cfg.Fidelity {
				return answer{Reasoning: rec.Reasoning, Content: rec.Content, ToolCalls: rec.ToolCalls}
			}
			return perturb(rng, rec)
		}
	}
	// Text past the limit would be cut anyway: do not make it.
	return synthesize(rng, req, min(s.cfg.Output.draw(rng), limit+32), callID)
}

// wait blocks until the sequence has made progress, reporting false when the
// client went away or the server closed.
func (s *Server) wait(r *http.Request, q *seq) bool {
	select {
	case <-q.notify:
		return q.state.Load() != seqFailed
	case <-r.Context().Done():
		s.eng.cancel(q)
		return false
	}
}

// sleep waits a modelled duration (divided by the speedup), false when the client
// went away first.
func (s *Server) sleep(r *http.Request, modelled float64) bool {
	t := time.NewTimer(time.Duration(modelled / s.cfg.Speedup * 1e9))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (s *Server) finished(res *response) {
	reason := res.finish
	if reason == "tool_calls" {
		reason = "stop" // vLLM's engine counts the stop; the tool call is its API's reading
	}
	s.met.requests.WithLabelValues(reason).Inc()
}

func (s *Server) fullResponse(w http.ResponseWriter, r *http.Request, res *response) {
	q := res.q
	for int(q.emitted.Load()) < res.target {
		if !s.wait(r, q) {
			if q.state.Load() == seqFailed {
				writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", errClosed.Error())
			}
			return
		}
	}
	s.finished(res)
	switch res.fault {
	case faultCut:
		panic(http.ErrAbortHandler) // the client sees the connection close without a response
	case faultStall:
		if !s.sleep(r, s.cfg.Faults.stallSeconds()) {
			return
		}
	}
	reasoning, content, calls := res.out.text(res.target)
	b := make([]byte, 0, 512+len(reasoning)+len(content))
	b = append(b, `{"id":"`...)
	b = append(b, res.id...)
	b = append(b, `","object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, res.created, 10)
	b = append(b, `,"model":`...)
	b = jsontext.AppendString(b, res.model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if content == "" && len(calls) > 0 {
		b = append(b, "null"...)
	} else {
		b = jsontext.AppendString(b, content)
	}
	if reasoning != "" {
		b = append(b, `,"reasoning_content":`...)
		b = jsontext.AppendString(b, reasoning)
	}
	ncalls := 0
	for i := range calls {
		if calls[i].Function.Name == "" {
			continue // cut off by max tokens before its name
		}
		if ncalls == 0 {
			b = append(b, `,"tool_calls":[`...)
		} else {
			b = append(b, ',')
		}
		ncalls++
		b = append(b, `{"id":`...)
		b = jsontext.AppendString(b, calls[i].ID)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = jsontext.AppendString(b, calls[i].Function.Name)
		b = append(b, `,"arguments":`...)
		b = jsontext.AppendString(b, calls[i].Function.Arguments)
		b = append(b, "}}"...)
	}
	if ncalls > 0 {
		b = append(b, ']')
	}
	b = append(b, `},"logprobs":null,"finish_reason":"`...)
	b = append(b, res.finish...)
	b = append(b, `","stop_reason":null}],"usage":`...)
	b = s.appendUsage(b, res)
	b = append(b, "}\n"...)
	if res.fault == faultMalformed {
		b = b[:len(b)/2]
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (s *Server) appendUsage(b []byte, res *response) []byte {
	p, c := int64(res.q.promptLen), int64(res.q.emitted.Load())
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, p, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, p+c, 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, c, 10)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(res.q.cached.Load()), 10)
	return append(b, "}}"...)
}

// chunkHead starts an SSE chunk of the response, up to the delta's fields: the
// same bytes in every chunk, made once.
func chunkHead(b []byte, res *response) []byte {
	if res.head == nil {
		h := make([]byte, 0, 96+len(res.id)+len(res.model))
		h = append(h, `data: {"id":"`...)
		h = append(h, res.id...)
		h = append(h, `","object":"chat.completion.chunk","created":`...)
		h = strconv.AppendInt(h, res.created, 10)
		h = append(h, `,"model":`...)
		res.head = jsontext.AppendString(h, res.model)
	}
	return append(b, res.head...)
}

func appendDelta(b []byte, res *response, delta func([]byte) []byte, finish string) []byte {
	b = chunkHead(b, res)
	b = append(b, `,"choices":[{"index":0,"delta":{`...)
	b = delta(b)
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = append(b, finish...)
		b = append(b, '"')
	}
	return append(b, "}]}\n\n"...)
}

// appendEvent appends the SSE chunk of one generated token (nothing for markup).
func appendEvent(b []byte, res *response, ev *event) []byte {
	switch ev.kind {
	case segReasoning:
		return appendDelta(b, res, func(b []byte) []byte {
			b = append(b, `"reasoning_content":`...)
			return jsontext.AppendString(b, ev.text)
		}, "")
	case segContent:
		return appendDelta(b, res, func(b []byte) []byte {
			b = append(b, `"content":`...)
			return jsontext.AppendString(b, ev.text)
		}, "")
	case segToolName:
		return appendDelta(b, res, func(b []byte) []byte {
			b = append(b, `"tool_calls":[{"id":`...)
			b = jsontext.AppendString(b, res.out.calls[ev.call].ID)
			b = append(b, `,"type":"function","index":`...)
			b = strconv.AppendInt(b, int64(ev.call), 10)
			b = append(b, `,"function":{"name":`...)
			b = jsontext.AppendString(b, ev.text)
			return append(b, `,"arguments":""}}]`...)
		}, "")
	case segToolArgs:
		return appendDelta(b, res, func(b []byte) []byte {
			b = append(b, `"tool_calls":[{"index":`...)
			b = strconv.AppendInt(b, int64(ev.call), 10)
			b = append(b, `,"function":{"arguments":`...)
			b = jsontext.AppendString(b, ev.text)
			return append(b, "}}]"...)
		}, "")
	}
	return b
}

func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, res *response) {
	q := res.q
	rc := http.NewResponseController(w)
	sent, started := 0, false
	bp, _ := s.chunks.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b := (*bp)[:0]
	defer func() {
		if cap(b) <= 1<<20 {
			*bp = b[:0]
			s.chunks.Put(bp)
		}
	}()
	for {
		if !s.wait(r, q) {
			if q.state.Load() == seqFailed {
				if !started {
					writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", errClosed.Error())
					return
				}
				panic(http.ErrAbortHandler)
			}
			return
		}
		n := int(q.emitted.Load())
		if n > sent && !started {
			started = true
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
			b = appendDelta(b, res, func(b []byte) []byte {
				return append(b, `"role":"assistant","content":""`...)
			}, "")
		}
		// The tokens due now (one step's: one token, or with speculation the
		// accepted drafts and one more) go out as one chunk per part, as a server
		// streams a step's output as one delta.
		var pend event
		flush := func() {
			if pend.kind != segMarkup {
				b = appendEvent(b, res, &pend)
				pend = event{}
			}
		}
		for ; sent < n; sent++ {
			if sent == res.faultAt {
				flush()
				switch res.fault {
				case faultCut:
					_, _ = w.Write(b)
					_ = rc.Flush()
					s.eng.cancel(q)
					panic(http.ErrAbortHandler)
				case faultMalformed:
					b = chunkHead(b, res)
					b = append(b, `,"choices":[{"index":0,"delta":{"content":`+"\n\n"...)
				case faultStall:
					_, _ = w.Write(b)
					_ = rc.Flush()
					b = b[:0]
					if !s.sleep(r, s.cfg.Faults.stallSeconds()) {
						s.eng.cancel(q)
						return
					}
				}
			}
			for _, ev := range res.out.tokenEvents(sent) {
				if pend.kind == ev.kind && pend.call == ev.call && ev.kind != segToolName {
					// Consecutive events of one part are adjacent in the rendering:
					// the merged text is a slice of it, not a copy.
					pend.text = res.out.body[pend.off : int(ev.off)+len(ev.text)]
					continue
				}
				flush()
				pend = ev
			}
		}
		flush()
		if n == res.target {
			b = appendDelta(b, res, func(b []byte) []byte { return append(b, `"content":""`...) }, res.finish)
			if res.usage {
				b = chunkHead(b, res)
				b = append(b, `,"choices":[],"usage":`...)
				b = s.appendUsage(b, res)
				b = append(b, "}\n\n"...)
			}
			b = append(b, "data: [DONE]\n\n"...)
			_, _ = w.Write(b)
			_ = rc.Flush()
			s.finished(res)
			return
		}
		if len(b) > 0 {
			if _, err := w.Write(b); err != nil {
				s.eng.cancel(q)
				return
			}
			_ = rc.Flush()
			b = b[:0]
		}
	}
}
