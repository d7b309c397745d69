package replay

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/runlog"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/progress"
	"github.com/agentrace/agentrace/schemas"
)

// RunRunning is the manifest state of a run that has not ended (or was killed).
const RunRunning = schemas.RunRunning

// Error texts of turns that were never sent.
const (
	abortedPrefix      = "aborted: "
	notIssuedInterrupt = "not issued: the run was interrupted"
	notIssuedWindow    = "not issued: issuing stopped at the window end"
)

// Summary is what a run did, for the closing lines.
type Summary struct {
	RunDir       string
	State        string
	Counts       map[string]int // turn rows by status
	Trajectories int            // finished (all turns logged)
	Started      int            // trajectories started
	Budget       int
	Turns        int           // turns issued
	Elapsed      time.Duration // from the start to the last slot's end (log closing excluded)
	WindowEnd    time.Duration // 0 when the window never ended
	OutputTokens int64         // server usage, else output-bearing chunks
	// Client lag (issued minus scheduled) over issued turns, "lower" percentiles.
	LagP50, LagP99, LagMax time.Duration
	Official               bool
	NonOfficial            []string
}

// TurnsPerSecond is the issued turns over the elapsed time.
func (s *Summary) TurnsPerSecond() float64 { return float64(s.Turns) / s.Elapsed.Seconds() }

// TokensPerSecond is the output tokens over the elapsed time.
func (s *Summary) TokensPerSecond() float64 { return float64(s.OutputTokens) / s.Elapsed.Seconds() }

// String is the closing summary, a few lines.
func (s *Summary) String() string {
	keys := make([]string, 0, len(s.Counts))
	for k := range s.Counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	counts := ""
	for _, k := range keys {
		counts += fmt.Sprintf(" %s=%d", k, s.Counts[k])
	}
	win := "never reached"
	if s.WindowEnd > 0 {
		win = s.WindowEnd.Round(time.Millisecond).String()
	}
	off := "official settings"
	if !s.Official {
		off = fmt.Sprintf("unofficial (%d reasons in the manifest)", len(s.NonOfficial))
	}
	return fmt.Sprintf("replay %s in %s: %d/%d trajectories finished (%d started), %d turns issued, rows:%s\n"+
		"  %.1f turns/s, %.0f output tokens/s; window end %s; client lag p50 %s p99 %s max %s; %s\n"+
		"  log %s",
		s.State, s.Elapsed.Round(time.Millisecond), s.Trajectories, s.Budget, s.Started, s.Turns, counts,
		s.TurnsPerSecond(), s.TokensPerSecond(), win, s.LagP50, s.LagP99, s.LagMax, off,
		filepath.Join(s.RunDir, schemas.TurnLogFile))
}

// engine is one run in progress.
type engine struct {
	s      *settings
	d      *datasets.Dataset
	client *client
	start  time.Time

	// issueCtx ends when no new turn may start (interrupt, or the window end with
	// StopIssuingAtWindowEnd); workCtx ends when in-flight turns must be cancelled
	// (a grace period after an interrupt).
	issueCtx    context.Context
	stopIssuing context.CancelCauseFunc
	workCtx     context.Context
	cancelWork  context.CancelFunc
	interrupted atomic.Bool

	mu           sync.Mutex
	next         int // next trajectory to start
	windowClosed atomic.Bool
	windowEndNs  atomic.Int64

	log *logQueue

	// live counters
	trajDone, turnsDone, inFlight, errors atomic.Int64
	outTokens                             atomic.Int64
}

// now is the run clock: monotonic nanoseconds since the start. The clock starts a
// microsecond before the run so that no event happens at 0, which in the turn log
// means "did not happen".
func (e *engine) now() int64 { return int64(time.Since(e.start)) }

// Run replays the dataset against the endpoint as Options say and writes the run
// directory: turns.arrows and manifest.json. It returns once every started
// trajectory has all its turns logged, or after an interrupt (ctx cancelled) has
// stopped issuing and the in-flight turns have ended or been cancelled a grace
// period later; the manifest's state tells which. Errors before the first turn
// (bad options, unreachable endpoint) return without issuing anything.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	d := opts.Data
	if d == nil {
		var err error
		if d, err = datasets.Open(opts.Dataset); err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
	}
	s, err := opts.resolve(d)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if opts.Out == "" {
		return nil, errors.New("replay: no run directory (--out)")
	}
	// The run folder may not be, contain or sit inside the dataset, and replaces
	// only an earlier run, with Overwrite (internal/outguard); checked before the
	// probe, taken after it, so a run that cannot start leaves it as it was.
	out := outguard.Output{Path: opts.Out, Kind: outguard.Run, Overwrite: opts.Overwrite}
	if err := out.Check(opts.Dataset); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	c := newClient(s)
	defer c.close()
	if err := c.probe(ctx); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	claim, err := outguard.Begin(out, opts.Dataset)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer claim.Finish()

	e := &engine{s: s, d: d, client: c, log: newLogQueue(s.Concurrency)}
	wall := time.Now()
	e.start = wall.Add(-time.Microsecond)
	m := schemas.RunManifest{
		SchemaVersion:       schemas.Version,
		ToolVersion:         schemas.ToolVersion,
		Config:              s.config(len(d.Conversations)),
		DatasetHash:         d.Manifest.ContentHash,
		DatasetSize:         len(d.Conversations),
		StartedAt:           wall.UTC().Format(time.RFC3339Nano),
		StartedUnixNs:       wall.UnixNano(),
		State:               RunRunning,
		EndpointDescription: s.EndpointDescription,
	}
	m.SimSpeedup = c.simSpeedup
	if err := runlog.WriteManifest(opts.Out, m); err != nil {
		claim.Abandon()
		return nil, fmt.Errorf("replay: %w", err)
	}
	lf, err := runlog.Create(filepath.Join(opts.Out, schemas.TurnLogFile), nil)
	if err != nil {
		claim.Abandon()
		return nil, fmt.Errorf("replay: %w", err)
	}

	var issueCancel context.CancelCauseFunc
	e.issueCtx, issueCancel = context.WithCancelCause(context.Background())
	e.stopIssuing = issueCancel
	e.workCtx, e.cancelWork = context.WithCancel(context.Background())
	defer e.cancelWork()
	finished := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() { e.watchInterrupt(ctx, finished) })

	var line *progress.Line
	if s.Progress != nil {
		line = progress.New(s.Progress, s.ProgressTTY, s.ProgressEvery, e.statusFunc()).Start()
	}

	logDone := make(chan logResult, 1)
	go func() { logDone <- e.writeLog(lf) }()

	var slots sync.WaitGroup
	for i := 0; i < s.Concurrency; i++ {
		slots.Go(func() { e.slot(i) })
	}
	slots.Wait()
	elapsed := time.Duration(e.now())
	close(finished)
	watch.Wait()
	e.log.close()
	lr := <-logDone
	if line != nil {
		line.Stop()
	}

	m.EndedNs = int64(elapsed)
	m.WindowEndNs = e.windowEndNs.Load()
	m.LastTrackedDoneNs = lr.lastTrackedDone
	m.Counts = lr.counts
	m.State = schemas.RunComplete
	if e.interrupted.Load() {
		m.State = schemas.RunInterrupted
	}
	if err := runlog.WriteManifest(opts.Out, m); err != nil && lr.err == nil {
		lr.err = fmt.Errorf("replay: %w", err)
	}
	writeTurnTable(opts.Out, &m, d, s.Progress)
	e.mu.Lock()
	started := e.next
	e.mu.Unlock()
	sum := &Summary{
		RunDir: opts.Out, State: m.State, Counts: lr.counts, Trajectories: int(e.trajDone.Load()),
		Started: started, Budget: s.budget, Turns: lr.issued, Elapsed: elapsed,
		WindowEnd: time.Duration(m.WindowEndNs), OutputTokens: e.outTokens.Load(),
		Official: m.Config.Official, NonOfficial: m.Config.NonOfficial,
	}
	sum.LagP50, sum.LagP99, sum.LagMax = lagStats(lr.lags)
	if lr.err != nil {
		return sum, lr.err
	}
	return sum, nil
}

// watchInterrupt turns the first interrupt into a graceful stop: no new turns,
// then in-flight turns are cancelled after the grace period.
func (e *engine) watchInterrupt(ctx context.Context, finished <-chan struct{}) {
	select {
	case <-finished:
		return
	case <-ctx.Done():
	}
	e.interrupted.Store(true)
	e.stopIssuing(errInterrupted)
	t := time.NewTimer(e.s.Grace)
	defer t.Stop()
	select {
	case <-finished:
	case <-t.C:
		e.cancelWork()
	}
}

var (
	errInterrupted = errors.New("interrupted")
	errWindowEnd   = errors.New("window end")
)

// take returns the next trajectory to start, or false when none is left or
// issuing has stopped. finishedOne tells that the caller's slot has just finished
// a trajectory: if none is left, the performance window ends now.
func (e *engine) take(finishedOne bool) (int, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.next >= e.s.budget {
		if finishedOne && !e.windowClosed.Load() {
			e.windowEndNs.Store(e.now())
			e.windowClosed.Store(true)
			if e.s.StopIssuingAtWindowEnd {
				e.stopIssuing(errWindowEnd)
			}
		}
		return 0, false
	}
	if e.issueCtx.Err() != nil {
		return 0, false
	}
	k := e.next
	e.next++
	return k, true
}

// slot runs trajectories one after another until none is left.
func (e *engine) slot(id int) {
	st := newSlotState()
	st.id = id
	st.pipe.finResp = -1
	st.build, st.built = make(chan buildJob, 1), make(chan buildResult, 1)
	go e.builder(st, st.build, st.built)
	defer close(st.build)
	// Each slot's turns derive from its own context, so that starting and ending a
	// turn's timeout never contends on a context all slots share.
	var cancel context.CancelFunc
	st.ctx, cancel = context.WithCancel(e.workCtx)
	defer cancel()
	defer st.release()
	finishedOne := false
	for {
		k, ok := e.take(finishedOne)
		if !ok {
			return
		}
		e.trajectory(st, k)
		e.trajDone.Add(1)
		finishedOne = true
	}
}

// trajectory runs trajectory k: conversation k mod n as instance k div n + 1,
// one turn at a time, each after its delay; the first failure aborts the rest.
func (e *engine) trajectory(st *slotState, k int) {
	n := len(e.d.Conversations)
	ci, repeat := k%n, k/n+1
	conv := &e.d.Conversations[ci]
	turns := e.d.ConversationTurns(ci)
	sid := datasets.SessionID(conv.ConversationID, repeat)
	bo := e.s.bodyOptions(repeat)
	hdr := e.s.header.Clone()
	for _, h := range e.s.routing {
		hdr[h] = []string{sid}
	}
	base := e.now()
	abort := ""
	p := &st.pipe
	for i := range turns {
		t := &turns[i]
		// While the previous turn was in flight, the slot's builder finished the
		// row before it and built this turn's body; if it has not finished yet,
		// the slot does not wait for it.
		body, r := p.collect(st, i, false)
		if r == nil {
			r = new(schemas.TurnRecord)
		}
		*r = schemas.TurnRecord{
			SessionID: sid, ConversationID: conv.ConversationID, Repeat: int32(repeat),
			Trajectory: int32(k), Turn: t.Turn, ClientIndex: t.ClientIndex, Domain: conv.Domain,
			UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1,
		}
		if abort == "" && e.issueCtx.Err() != nil {
			abort = e.stopReason()
		}
		if abort == "" {
			if body < 0 {
				body = p.freeBuf(-1)
				st.bufs[body] = e.d.AppendBody(st.bufs[body][:0], t, bo)
			}
			var delay time.Duration
			if !e.s.NoDelays && t.DelaySeconds > 0 {
				delay = time.Duration(t.DelaySeconds * e.s.delayScale * float64(time.Second))
			}
			r.DelayNs = int64(delay)
			r.ScheduledNs = base + int64(delay)
			// Hand the builder the previous row and the next body; if it is still busy,
			// finish the previous row here.
			if !p.out && (p.fin != nil || i+1 < len(turns)) {
				job := buildJob{fin: p.fin, resp: p.finResp, t: -1}
				if i+1 < len(turns) {
					job.t = i + 1
					job.turn, job.o = &turns[i+1], bo
					job.buf = p.freeBuf(body)
					job.dst = st.bufs[job.buf][:0]
				}
				p.job = job
				p.out = true
				p.fin, p.finResp = nil, -1
				st.build <- job
			} else if p.fin != nil {
				e.finish(st.id, &st.resps[p.finResp], p.fin)
				p.respBusy[p.finResp] = false
				p.fin, p.finResp = nil, -1
			}
			if !st.sleepUntil(e, r.ScheduledNs) {
				abort = e.stopReason()
				r.DelayNs, r.ScheduledNs = 0, 0
			}
		}
		if abort != "" {
			if body >= 0 {
				p.bufBusy[body] = false
			}
			p.drain(e, st)
			r.Status, r.Error, r.InWindow = schemas.StatusAborted, abort, !e.windowClosed.Load()
			e.log.push(st.id, r)
			continue
		}
		cur := p.freeResp()
		st.buf, st.resp = st.bufs[body], &st.resps[cur]
		e.inFlight.Add(1)
		e.client.do(e, st, hdr, r)
		e.inFlight.Add(-1)
		p.bufBusy[body] = false
		p.fin, p.finResp = r, cur
		base = r.CompletedNs
		if r.Status != schemas.StatusOK {
			e.errors.Add(1)
			abort = fmt.Sprintf("%sturn %d failed (%s)", abortedPrefix, t.Turn, r.Status)
			if e.workCtx.Err() != nil {
				abort = notIssuedInterrupt // the failure is the interrupt's cancellation
			}
		}
	}
	p.drain(e, st)
}

// pipeline is a slot's bookkeeping of what its builder holds: three body buffers
// and three response accumulators, so that the builder can finish one row and
// build one body while a turn is in flight, and the slot never waits for it.
type pipeline struct {
	bufBusy  [3]bool
	respBusy [3]bool
	out      bool     // a job is with the builder
	job      buildJob // that job
	fin      *schemas.TurnRecord
	finResp  int // fin's response accumulator
}

// collect takes the builder's result when it is there (or, with wait, waits for
// it). It returns turn i's prebuilt body buffer (-1 if none) and a fresh row (nil
// if none).
func (p *pipeline) collect(st *slotState, i int, wait bool) (body int, rec *schemas.TurnRecord) {
	body = -1
	if !p.out {
		return body, nil
	}
	var res buildResult
	if wait {
		res = <-st.built
	} else {
		select {
		case res = <-st.built:
		default:
			return body, nil
		}
	}
	p.out = false
	if p.job.fin != nil {
		p.respBusy[p.job.resp] = false
	}
	if p.job.t >= 0 {
		st.bufs[p.job.buf] = res.body
		if p.job.t == i {
			body = p.job.buf
		} else {
			p.bufBusy[p.job.buf] = false
		}
	}
	return body, res.rec
}

// drain waits for the builder and finishes the last row: the end of a
// trajectory, or of its issued turns.
func (p *pipeline) drain(e *engine, st *slotState) {
	if p.out {
		p.collect(st, -1, true)
	}
	if p.fin != nil {
		e.finish(st.id, &st.resps[p.finResp], p.fin)
		p.respBusy[p.finResp] = false
		p.fin, p.finResp = nil, -1
	}
}

// freeBuf marks a free body buffer other than not busy and returns it.
func (p *pipeline) freeBuf(not int) int {
	for i, busy := range p.bufBusy {
		if !busy && i != not {
			p.bufBusy[i] = true
			return i
		}
	}
	panic("replay: no free body buffer") // three suffice: one in flight, one with the builder
}

// freeResp marks a free response accumulator busy and returns it.
func (p *pipeline) freeResp() int {
	for i, busy := range p.respBusy {
		if !busy {
			p.respBusy[i] = true
			return i
		}
	}
	panic("replay: no free response accumulator") // three suffice: current, builder's, pending
}

// finish copies a completed turn's output into its row, counts it and logs it.
func (e *engine) finish(slot int, rs *response, r *schemas.TurnRecord) {
	output(rs, r)
	e.turnsDone.Add(1)
	if r.UsageCompletionTokens >= 0 {
		e.outTokens.Add(int64(r.UsageCompletionTokens))
	} else {
		e.outTokens.Add(int64(r.Chunks))
	}
	e.log.push(slot, r)
}

// stopReason is the error text of turns not issued because issuing stopped.
func (e *engine) stopReason() string {
	if errors.Is(context.Cause(e.issueCtx), errWindowEnd) {
		return notIssuedWindow
	}
	return notIssuedInterrupt
}

// buildJob asks a slot's builder to finish the row fin (its output in
// resps[resp]), and to build the body of client turn t (index in the
// trajectory; -1 for none) into dst, which is bufs[buf].
type buildJob struct {
	fin  *schemas.TurnRecord
	resp int
	t    int
	turn *schemas.Turn
	o    datasets.BodyOptions
	buf  int
	dst  []byte
}

// buildResult is a built body (nil when none was asked for) and a fresh row.
type buildResult struct {
	body []byte
	rec  *schemas.TurnRecord
}

// builder runs a slot's jobs, one at a time, until build closes.
func (e *engine) builder(st *slotState, build <-chan buildJob, built chan<- buildResult) {
	for j := range build {
		if j.fin != nil {
			e.finish(st.id, &st.resps[j.resp], j.fin)
		}
		res := buildResult{rec: new(schemas.TurnRecord)}
		if j.t >= 0 {
			res.body = e.d.AppendBody(j.dst, j.turn, j.o)
		}
		built <- res
	}
}

// sleepUntil waits until run time at (ns), or returns false when issuing stops
// first.
func (st *slotState) sleepUntil(e *engine, at int64) bool {
	if e.issueCtx.Err() != nil {
		return false
	}
	d := time.Duration(at - e.now())
	if d <= 0 {
		return true
	}
	st.timer.Reset(d)
	select {
	case <-st.timer.C:
		return true
	case <-e.issueCtx.Done():
		st.timer.Stop()
		return false
	}
}

type logResult struct {
	counts          map[string]int
	issued          int
	lags            []int64
	lastTrackedDone int64
	err             error
}

// logQueue hands finished rows to the log goroutine without making slots wait
// on each other: each slot appends to its own shard, under a mutex that only the
// log goroutine, twice a second, also takes. (A mutex all slots shared would park
// them behind each other, and a parked goroutine waits behind every runnable one:
// that showed as client lag.)
type logQueue struct {
	shards []logShard
	closed atomic.Bool
	wake   chan struct{} // cap 1: a full shard or the close
}

type logShard struct {
	mu   sync.Mutex
	recs []*schemas.TurnRecord
	_    [40]byte // keep shards on separate cache lines
}

// logHighWater is the shard length at which a push wakes the log goroutine
// before its next tick.
const logHighWater = 1024

func newLogQueue(slots int) *logQueue {
	return &logQueue{shards: make([]logShard, slots), wake: make(chan struct{}, 1)}
}

func (q *logQueue) push(slot int, r *schemas.TurnRecord) {
	sh := &q.shards[slot]
	sh.mu.Lock()
	sh.recs = append(sh.recs, r)
	n := len(sh.recs)
	sh.mu.Unlock()
	if n == logHighWater {
		q.signal()
	}
}

func (q *logQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *logQueue) close() {
	q.closed.Store(true)
	q.signal()
}

// take moves every queued row to dst, in slot order.
func (q *logQueue) take(dst []*schemas.TurnRecord) ([]*schemas.TurnRecord, bool) {
	closed := q.closed.Load()
	for i := range q.shards {
		sh := &q.shards[i]
		sh.mu.Lock()
		dst = append(dst, sh.recs...)
		clear(sh.recs)
		sh.recs = sh.recs[:0]
		sh.mu.Unlock()
	}
	return dst, closed
}

// logEvery is how often the log goroutine writes the queued rows and flushes
// them to disk as one batch: a crash loses at most this much (and always less
// than a second).
const logEvery = 500 * time.Millisecond

// writeLog is the single owner of the turn-log writer: every logEvery it writes
// the queued rows as a batch and flushes it; it closes the log once the queue is
// closed and drained.
func (e *engine) writeLog(lf *runlog.File) logResult {
	res := logResult{counts: map[string]int{}}
	tick := time.NewTicker(logEvery)
	defer tick.Stop()
	fail := func(err error) {
		if res.err == nil {
			res.err = fmt.Errorf("replay: %w", err)
		}
	}
	var spare []*schemas.TurnRecord
	for {
		select {
		case <-tick.C:
		case <-e.log.wake:
		}
		recs, closed := e.log.take(spare[:0])
		for i, r := range recs {
			res.counts[r.Status]++
			if r.IssuedNs != 0 {
				res.issued++
				res.lags = append(res.lags, r.IssuedNs-r.ScheduledNs)
				if r.InWindow && r.CompletedNs > res.lastTrackedDone {
					res.lastTrackedDone = r.CompletedNs
				}
			}
			if res.err == nil {
				if err := lf.Write(r); err != nil {
					fail(err)
				}
			}
			recs[i] = nil
		}
		spare = recs
		if closed {
			if err := lf.Close(); err != nil {
				fail(err)
			}
			return res
		}
		if res.err == nil && lf.Buffered() > 0 {
			if err := lf.Flush(); err != nil {
				fail(err)
			}
		}
	}
}

// lagStats returns the "lower" p50 and p99 and the maximum of lags.
func lagStats(lags []int64) (p50, p99, max time.Duration) {
	if len(lags) == 0 {
		return 0, 0, 0
	}
	s := append([]int64(nil), lags...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	pick := func(p float64) time.Duration { return time.Duration(s[int(p/100*float64(len(s)-1))]) }
	return pick(50), pick(99), time.Duration(s[len(s)-1])
}

// statusFunc returns the live status line's callback.
func (e *engine) statusFunc() func() string {
	var lastTok int64
	var lastAt int64
	return func() string {
		now := e.now()
		tok := e.outTokens.Load()
		rate := 0.0
		if dt := now - lastAt; dt > 0 {
			rate = float64(tok-lastTok) / (float64(dt) / 1e9)
		}
		lastTok, lastAt = tok, now
		return fmt.Sprintf("replay %s: trajectories %d/%d, turns %d, in flight %d, %.0f output tok/s, errors %d",
			time.Duration(now).Round(time.Second), e.trajDone.Load(), e.s.budget, e.turnsDone.Load(),
			e.inFlight.Load(), rate, e.errors.Load())
	}
}
