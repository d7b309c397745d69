package replay

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/redact"
	"github.com/agentrace/agentrace/schemas"
)

// client sends turns to the endpoint.
type client struct {
	s   *settings
	hc  *http.Client
	own *http.Transport // closed at the end when the client made it
	// chats are the endpoints' chat URLs; route picks each turn's: request k
	// goes to chats[k mod n] (next counts them), or by session.
	chats []string
	next  atomic.Uint64
	route *router
	// dialer is the transport's dialer when the client made the transport.
	dialer *warmDialer
	// simSpeedup is the X-Sim-Speedup the endpoint answered the probe with (the
	// embedded simulated server's), 0 for a real server.
	simSpeedup float64
	// served are the model names GET /v1/models listed (nil: no list).
	served []string
	// traced tells that the transport is an *http.Transport, which reports
	// through httptrace when it has written a request's body (see bodyDone).
	traced bool
}

// newTransport returns the load generator's HTTP transport: a connection kept per
// active trajectory (idle pool at least the concurrency), HTTP/1.1 as the reference
// client speaks, no transparent compression (bytes are timed as they arrive), no
// proxy from the environment, and no timeouts of its own beyond dialing: the turn
// timeout bounds each request.
func newTransport(s *settings, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		MaxIdleConns:          0,
		MaxIdleConnsPerHost:   s.slots + 16,
		MaxConnsPerHost:       max(s.MaxConnections, 0),
		IdleConnTimeout:       s.idleTimeout(),
		TLSHandshakeTimeout:   30 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        64 << 10,
		ExpectContinueTimeout: 0,
	}
}

func newClient(s *settings) *client {
	c := &client{s: s, chats: s.chatURLs, route: newRouter(s)}
	rt := s.transport
	if rt == nil {
		c.dialer = &warmDialer{d: &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}, idle: s.idleTimeout(), pool: map[string][]warmConn{}}
		c.own = newTransport(s, c.dialer.DialContext)
		rt = c.own
	}
	_, c.traced = rt.(*http.Transport)
	// No redirects: a redirected POST would be a hidden second request.
	c.hc = &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	return c
}

func (c *client) close() {
	if c.own != nil {
		c.own.CloseIdleConnections()
	}
	if c.dialer != nil {
		c.dialer.close()
	}
}

// probe checks that the endpoint answers before the first turn, so that a wrong
// address fails clearly and at once: any status will do but 401 and 403 (a key
// every turn would lack). A list of models it answers is kept for checkModels.
func (c *client) probe(ctx context.Context) error {
	for i, u := range c.s.modelsURLs {
		if err := c.probeOne(ctx, c.s.endpoints[i], u); err != nil {
			return err
		}
	}
	return c.warm(ctx)
}

// warmDials is how many warm-up connections are being opened at once (the
// reference's max_concurrent_warmup_connects).
const warmDials = 128

// warm opens WarmupConnections TCP connections before the first turn, spread
// over the endpoints, for the turns to use as they need new ones (the
// reference's warmup_connections); a connection that cannot be opened is not an
// error, the turns open their own. It is bounded as the run is: at most one
// connection per trajectory that can be active at once, warmDials opened at a
// time, 30 seconds in all, and it stops when ctx is done.
func (c *client) warm(ctx context.Context) error {
	n := min(c.s.WarmupConnections, c.s.slots)
	if n <= 0 || c.dialer == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	next := make(chan string)
	for range min(n, warmDials) {
		wg.Go(func() {
			for addr := range next {
				c.dialer.open(ctx, addr)
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case next <- c.s.dialAddrs[i%len(c.s.dialAddrs)]:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	return nil
}

// warmDialer dials for the transport, handing out the connections warm opened
// first. One kept longer than the idle timeout is closed instead, as the
// transport would close it idle.
type warmDialer struct {
	d    *net.Dialer
	idle time.Duration
	mu   sync.Mutex
	pool map[string][]warmConn
}

type warmConn struct {
	net.Conn
	at time.Time
}

func (w *warmDialer) open(ctx context.Context, addr string) {
	conn, err := w.d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pool[addr] = append(w.pool[addr], warmConn{conn, time.Now()})
}

func (w *warmDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	w.mu.Lock()
	for len(w.pool[addr]) > 0 {
		cs := w.pool[addr]
		c := cs[len(cs)-1]
		w.pool[addr] = cs[:len(cs)-1]
		if time.Since(c.at) < w.idle {
			w.mu.Unlock()
			return bodyConn{c.Conn}, nil
		}
		c.Close()
	}
	w.mu.Unlock()
	conn, err := w.d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return bodyConn{conn}, nil
}

// bodyConn is a connection that writes what is left of a request body in one
// write, straight from its buffer: past the transport's write buffer, the
// transport hands the body to the connection's ReadFrom behind an
// io.LimitedReader, which a TCP connection would copy through a fresh 32 KiB
// buffer, one write each. The body (a *bytes.Reader the transport wrapped in
// io.NopCloser) writes itself, held to the limit.
type bodyConn struct{ net.Conn }

func (c bodyConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if wt, ok := lr.R.(io.WriterTo); ok {
			n, err := wt.WriteTo(&limitWriter{c.Conn, lr.N})
			lr.N -= n
			return n, err
		}
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// limitWriter writes at most n bytes to w: a write past them writes the first
// ones and fails with io.ErrShortWrite.
type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	short := int64(len(p)) > l.n
	if short {
		p = p[:l.n]
	}
	m, err := l.w.Write(p)
	l.n -= int64(m)
	if err == nil && short {
		err = io.ErrShortWrite
	}
	return m, err
}

// close closes the connections no turn took.
func (w *warmDialer) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, cs := range w.pool {
		for _, c := range cs {
			c.Close()
		}
	}
	w.pool = nil
}

func (c *client) probeOne(ctx context.Context, endpoint, modelsURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, modelsURL, nil)
	if err != nil {
		return fmt.Errorf("probe endpoint %s: %w", redact.URL(endpoint), err)
	}
	if auth := c.s.header.Get("Authorization"); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.hc.Do(req)
	if why := clientFault(err); why != "" {
		return fmt.Errorf("a client fault, not the endpoint's, before issuing any turn (GET %s): %w: %s", redact.URL(modelsURL), err, why)
	}
	if err != nil {
		return fmt.Errorf("endpoint %s is not reachable (GET %s before issuing any turn): %w", redact.URL(endpoint), redact.URL(modelsURL), err)
	}
	defer resp.Body.Close()
	// the simulated server says how much faster than modelled it runs
	if v, err := strconv.ParseFloat(resp.Header.Get("X-Sim-Speedup"), 64); err == nil && v > 0 && !math.IsInf(v, 0) {
		c.simSpeedup = v
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		// Every turn would be refused the same way.
		return notice.About(fmt.Errorf("endpoint %s refused GET %s with HTTP %d before any turn was issued (check the API key and the headers): %s",
			redact.URL(endpoint), redact.URL(modelsURL), resp.StatusCode, c.s.scrub.Excerpt(body)), "api-key-env", "header")
	case http.StatusOK:
		// An OpenAI-style list ({"data":[{"id":...}]}): the names served. A server
		// that answers anything else is not asked about its models.
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		// With several endpoints, the first one's list is the one checked.
		if json.Unmarshal(body, &list) == nil && len(list.Data) > 0 && c.served == nil {
			c.served = make([]string, 0, len(list.Data))
			for _, m := range list.Data {
				c.served = append(c.served, m.ID)
			}
		}
	}
	return nil
}

// checkModels refuses a run that sends a model the server does not list as
// served (when it listed its models): each of its turns would be answered 404.
func (c *client) checkModels(sent []string) error {
	if len(c.served) == 0 {
		return nil
	}
	var missing []string
	for _, m := range sent {
		if !slices.Contains(c.served, m) {
			missing = append(missing, strconv.Quote(m))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	msg := fmt.Sprintf("endpoint %s does not serve the model %s the run's requests name (GET %s lists %s)",
		redact.URL(c.s.endpoints[0]), strings.Join(missing, ", "), redact.URL(c.s.modelsURLs[0]), strings.Join(quoteAll(c.served), ", "))
	if c.s.Profile == "" && c.s.Model == "" {
		return notice.About(fmt.Errorf("%s: give a sampling profile (its model and sampling parameters) or a model name it serves", msg), "profile", "model")
	}
	return notice.Errorf("model", "%s: give a model name it serves", msg)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// slotState is one slot's reusable buffers.
type slotState struct {
	id    int
	ctx   context.Context // the slot's child of the work context
	buf   []byte          // the request body being sent: one of bufs
	bufs  [3][]byte       // request bodies (see pipeline)
	held  [3]heldBody     // whose body each of bufs holds
	pipe  pipeline
	build chan buildJob
	built chan buildResult
	// lost tells that the transport may still read buf, the last request's body
	// (its request failed before the transport said it was done with it): the
	// buffer must not be reused.
	lost  bool
	br    *bufio.Reader
	sse   sseReader
	resps [3]response  // response accumulators (see pipeline)
	resp  *response    // the current turn's: one of resps
	raw   bytes.Buffer // non-streamed body
	timer *time.Timer
}

func newSlotState() *slotState {
	st := &slotState{br: bufio.NewReaderSize(nil, 64<<10), timer: time.NewTimer(time.Hour)}
	st.timer.Stop()
	st.sse.br = st.br
	return st
}

func (st *slotState) release() {
	st.timer.Stop()
}

// bodyDone tells when the transport is done with a request body, so that its
// buffer may be reused: a RoundTripper may still read the body after it
// returned. The body an *http.Transport is given is a *bytes.Reader, the one
// kind of body it sends with its headers in one write (any other it flushes the
// headers ahead of, one more write and segment a turn), and it says that it is
// done through httptrace's WroteRequest, called once its write of the request
// ended (written or not). Another RoundTripper is given a body that says so
// when closed (closeBody).
type bodyDone struct {
	once sync.Once
	ch   chan struct{}
}

func (d *bodyDone) signal() { d.once.Do(func() { close(d.ch) }) }

// bodyWait is how long a turn that got its answer waits at most for the
// transport to say it is done with the body: it said so long before, but for a
// server that answered before it read the request.
const bodyWait = time.Second

// wait reports whether the transport is done with the body. answered tells
// that the request got an answer: its body was handed to the connection, and
// the transport says when it is done, which is waited for (bodyWait at most, and
// no longer than the slot's context). A request that failed may never have
// reached a connection: it is done only if the transport already said so.
func (d *bodyDone) wait(ctx context.Context, answered bool) bool {
	select {
	case <-d.ch:
		return true
	default:
	}
	if !answered {
		return false
	}
	t := time.NewTimer(bodyWait)
	defer t.Stop()
	select {
	case <-d.ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// closeBody is a request body for a RoundTripper other than *http.Transport: it
// signals done when closed, as every RoundTripper must close it, errors
// included.
type closeBody struct {
	*bytes.Reader
	done *bodyDone
}

func (b closeBody) Close() error {
	b.done.signal()
	return nil
}

// do sends turn r (its body in st.buf) and reads the response into r. It fills
// the outcome, times, output and usage fields.
func (c *client) do(e *engine, st *slotState, hdr http.Header, r *schemas.TurnRecord) {
	st.resp.reset()
	r.RequestBytes = int64(len(st.buf))
	ctx, cancel := context.WithTimeout(st.ctx, c.s.TurnTimeout)
	defer cancel()
	done := &bodyDone{ch: make(chan struct{})}
	var body io.Reader = bytes.NewReader(st.buf)
	if c.traced {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { done.signal() }})
	} else {
		body = closeBody{body.(*bytes.Reader), done}
	}
	ep := c.route.pick(r.SessionID, func() uint64 { return c.next.Add(1) - 1 })
	chat := c.chats[ep]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, chat, body)
	if err != nil {
		c.fail(e, r, ctx, fmt.Errorf("build request: %w", err))
		return
	}
	req.ContentLength = int64(len(st.buf))
	// No GetBody: a request that failed is never sent again.
	req.GetBody = nil
	req.Header = hdr

	r.InWindow = !e.windowClosed.Load()
	r.IssuedNs = e.now()
	c.route.sent(ep, r.SessionID, r.InWindow)
	resp, err := c.hc.Do(req)
	if err != nil {
		c.fail(e, r, ctx, err)
		st.lost = !done.wait(st.ctx, false)
		return
	}
	r.HeadersNs = e.now()
	r.HTTPStatus = int32(resp.StatusCode)
	err = c.readResponse(e, st, resp, r.Streamed)
	// Drain a little so that the connection can be reused, then close.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	st.lost = !done.wait(st.ctx, true)
	if err != nil {
		c.fail(e, r, ctx, err)
	} else {
		r.Status = schemas.StatusOK
		r.CompletedNs = e.now()
	}
}

// readResponse reads a response into st.resp: as Server-Sent Events when the
// request asked for a streamed answer, else as one chat.completion body (whose
// output has no first-token or chunk times: the reference publishes no
// first-chunk event for a request not streamed).
func (c *client) readResponse(e *engine, st *slotState, resp *http.Response, streamed bool) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, c.s.scrub.ReadExcerpt(resp.Body))
	}
	if !streamed {
		st.raw.Reset()
		limit := int64(st.sse.frameLimit())
		n, err := st.raw.ReadFrom(io.LimitReader(resp.Body, limit+1))
		if err != nil {
			return fmt.Errorf("read response: %w", err)
		}
		if n > limit {
			st.raw = bytes.Buffer{} // give the memory back
			return fmt.Errorf("%w: a response body of more than %d bytes (the output limit)", errOversized, limit)
		}
		err = readCompletion(st.raw.Bytes(), st.resp, e.now())
		if st.raw.Cap() > 1<<20 {
			st.raw = bytes.Buffer{}
		}
		return err
	}
	st.br.Reset(resp.Body)
	err := st.sse.read(st.resp, e.now)
	st.br.Reset(nil)
	return err
}

// fail records a failed turn: a client fault (clientFault) stops the run, and the
// turn is not_issued when no answer came (cancelled when one had begun); cancelled
// when the run cut its in-flight turns, a timeout when the turn's own deadline
// passed, an error otherwise (HTTP status, broken stream).
func (c *client) fail(e *engine, r *schemas.TurnRecord, ctx context.Context, err error) {
	r.CompletedNs = e.now()
	if why := clientFault(err); why != "" {
		e.clientFail(err, why)
		if r.HeadersNs == 0 {
			r.Status, r.Error = schemas.StatusNotIssued, fmt.Sprintf("not issued: a client fault: %v", err)
			r.ScheduledNs, r.DelayNs, r.IssuedNs, r.CompletedNs = 0, 0, 0, 0
		} else {
			r.Status, r.Error = schemas.StatusCancelled, fmt.Sprintf("cancelled: a client fault: %v", err)
		}
		return
	}
	switch {
	case e.workCtx.Err() != nil:
		r.Status = schemas.StatusCancelled
		r.Error = fmt.Sprintf("cancelled: %s: %v", e.cutReason(), err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		r.Status = schemas.StatusTimeout
		r.Error = fmt.Sprintf("turn timeout %s: %v", c.s.TurnTimeout, err)
	default:
		r.Status = schemas.StatusError
		r.Error = err.Error()
	}
}

// clientFault tells, for an error of a request, whether it is the client's own
// fault rather than the endpoint's, and what to do about it ("" when it is not):
// the process or the system out of file descriptors, out of socket buffers or
// kernel memory, or no local address for a new connection (local ports exhausted).
// Such a turn says nothing about the endpoint: the run stops and fails.
func clientFault(err error) string {
	if err == nil {
		return ""
	}
	for _, f := range []struct {
		errno syscall.Errno
		why   string
	}{
		{syscall.EMFILE, "the process ran out of file descriptors (EMFILE): raise its open-file limit (ulimit -n) or lower the concurrency"},
		{syscall.ENFILE, "the system ran out of file descriptors (ENFILE): raise fs.file-max or lower the concurrency"},
		{syscall.ENOBUFS, "the system ran out of socket buffers (ENOBUFS): lower the concurrency or free memory"},
		{syscall.ENOMEM, "the system ran out of memory for a connection (ENOMEM)"},
		{syscall.EADDRNOTAVAIL, "no local address or port for a new connection (EADDRNOTAVAIL): local ports are exhausted (lower the concurrency, widen net.ipv4.ip_local_port_range) or the local address is not this machine's"},
	} {
		if errors.Is(err, f.errno) {
			return f.why
		}
	}
	return ""
}

// output copies the accumulated response into r; streamed tells whether it was
// a streamed response.
func output(rs *response, r *schemas.TurnRecord, streamed bool) {
	r.OutputContent = rs.content.String()
	r.OutputReasoning = rs.reasoning.String()
	r.OutputToolCalls = rs.toolCallsJSON()
	r.TPOTToolCalls = rs.tpotToolCallsJSON()
	r.OutputTruncatedBytes = rs.truncated
	r.Warnings = rs.warnings(streamed, r.Status == schemas.StatusOK)
	r.FinishReason = rs.finish
	r.FirstTokenNs = rs.firstTokenNs
	r.FirstContentBytes = int32(min(rs.firstContentBytes, math.MaxInt32))
	r.FirstReasoningBytes = int32(min(rs.firstReasoningBytes, math.MaxInt32))
	r.Chunks = int32(min(rs.chunks, math.MaxInt32))
	r.ChunkTimesNs = relativeTimes(rs.chunkTimes, rs.firstTokenNs)
	r.ToolCallChunkTimesNs = relativeTimes(rs.toolChunkTimes, rs.firstTokenNs)
	r.UsagePromptTokens = rs.promptTokens
	r.UsageCompletionTokens = rs.completionTokens
	r.UsageCachedTokens = rs.cachedTokens
}

// relativeTimes returns the times ts relative to base, nil when there are none.
func relativeTimes(ts []int64, base int64) []int64 {
	if len(ts) == 0 {
		return nil
	}
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = t - base
	}
	return out
}
