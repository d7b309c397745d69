package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/percentile"
	"github.com/agentrace/agentrace/internal/progress"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// RunRunning is the manifest state of a run that has not ended (or was killed).
const RunRunning = schemas.RunRunning

// abortedPrefix starts the error text of turns aborted after a failure.
const abortedPrefix = "aborted: "

// Summary is what a run did, for the closing lines.
type Summary struct {
	RunDir string
	State  string
	Counts map[string]int // turn rows by status
	// Trajectories counts the finished trajectories: every client turn ok.
	Trajectories int
	Failed       int // trajectories with a failed turn (error, timeout)
	Cut          int // trajectories cut short by a stop (interrupt, window end, max duration, log failure)
	Started      int // trajectories started
	Budget       int
	Turns        int           // turns issued: ok, error, timeout, cancelled
	Elapsed      time.Duration // from the start to the last slot's end (log closing excluded)
	WindowEnd    time.Duration // 0 when the window never ended
	// StopCause is the manifest's stop_cause ("" when issuing never stopped
	// early), Stopped when it stopped; MaxDuration the run's cap (0: none).
	StopCause   string
	Stopped     time.Duration
	MaxDuration time.Duration
	// Warnings counts the turns with each kind of stream warning, and
	// output_truncated those whose output was cut at MaxOutputBytes.
	Warnings       map[string]int
	MaxOutputBytes int64
	Unlogged       int    // rows lost after a turn-log failure
	Error          string // a failed run's error
	OutputTokens   int64  // server usage, else output-bearing chunks
	// UsageCounted and ChunkCounted are the completed turns counted in
	// OutputTokens by the server's usage and, without it, by their chunks.
	UsageCounted, ChunkCounted int64
	// SimSpeedup is the simulated server's speed-up (its X-Sim-Speedup header),
	// 0 against any other server.
	SimSpeedup float64
	// Client lag (issued minus scheduled) over issued turns, "lower" percentiles.
	LagP50, LagP99, LagMax time.Duration
	Official               bool
	NonOfficial            []string
	// Dropped tells that the run replaced an earlier run at RunDir and did not
	// complete: the earlier run was kept, whole, and this one was dropped.
	Dropped bool
}

// TurnsPerSecond is the issued turns over the elapsed time.
func (s *Summary) TurnsPerSecond() float64 { return float64(s.Turns) / s.Elapsed.Seconds() }

// TokensPerSecond is the output tokens over the elapsed time.
func (s *Summary) TokensPerSecond() float64 { return float64(s.OutputTokens) / s.Elapsed.Seconds() }

// outputRate says the output rate over the whole run and what it counts: the
// server's usage, or, for turns whose answer carried none, their chunks (which
// may carry several tokens each).
func (s *Summary) outputRate() string {
	const window = "report's system_tps counts the window only"
	switch {
	case s.ChunkCounted == 0:
		return fmt.Sprintf("%.0f output tokens/s over the whole run (server usage; %s)", s.TokensPerSecond(), window)
	case s.UsageCounted == 0:
		return fmt.Sprintf("%.0f output chunks/s over the whole run (the server reported no token usage, and a chunk may carry several tokens; %s)", s.TokensPerSecond(), window)
	default:
		return fmt.Sprintf("%.0f output tokens/s over the whole run (server usage; chunks for %s without it, and a chunk may carry several tokens; %s)",
			s.TokensPerSecond(), english.Count(int(s.ChunkCounted), "turn", "turns"), window)
	}
}

// Official tells whether the run can stand as an official result: official
// settings, and a performance window that closed.
func (s *Summary) official() bool {
	return s.Official && s.WindowEnd > 0 && s.State == schemas.RunComplete
}

// String is the closing summary, a few lines.
func (s *Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "replay %s in %s: %d/%d trajectories finished", s.State, s.Elapsed.Round(time.Millisecond), s.Trajectories, s.Budget)
	if s.Failed > 0 {
		fmt.Fprintf(&b, ", %d failed", s.Failed)
	}
	if s.Cut > 0 {
		fmt.Fprintf(&b, ", %d cut short", s.Cut)
	}
	fmt.Fprintf(&b, " (%d started); %s issued (ok, error, timeout, cancelled); rows:%s\n", s.Started, english.Count(s.Turns, "turn", "turns"), countsString(s.Counts))
	if s.StopCause != "" {
		fmt.Fprintf(&b, "  issuing stopped at %s: %s\n", s.Stopped.Round(time.Millisecond), stopText(s.StopCause, s.MaxDuration))
	}
	if s.Error != "" {
		fmt.Fprintf(&b, "  FAILED: %s", s.Error)
		if s.Unlogged > 0 {
			fmt.Fprintf(&b, " (%d rows after the failure not logged)", s.Unlogged)
		}
		b.WriteString("\n")
	}
	if w := warningsString(s.Warnings, s.MaxOutputBytes); w != "" {
		fmt.Fprintf(&b, "  %s\n", w)
	}
	win := "never reached"
	if s.WindowEnd > 0 {
		win = s.WindowEnd.Round(time.Millisecond).String()
	}
	var off string
	switch {
	case s.official():
		off = "official settings"
	case s.WindowEnd == 0 && !s.Official:
		off = fmt.Sprintf("not official: the performance window never closed, and %s (the manifest's non_official): %s",
			english.Count(len(s.NonOfficial), "setting is", "settings are")+" unofficial", strings.Join(s.NonOfficial, "; "))
	case s.WindowEnd == 0:
		off = "not official: the performance window never closed"
	case s.State != schemas.RunComplete:
		off = "not official: the run is " + s.State
	default:
		off = fmt.Sprintf("not official: %s (the manifest's non_official): %s",
			english.Count(len(s.NonOfficial), "setting is", "settings are")+" unofficial", strings.Join(s.NonOfficial, "; "))
	}
	fmt.Fprintf(&b, "  %.1f turns/s, %s; window end %s; client lag p50 %s p99 %s max %s; %s\n",
		s.TurnsPerSecond(), s.outputRate(), win, s.LagP50, s.LagP99, s.LagMax, off)
	if sp := s.SimSpeedup; sp > 0 && sp != 1 {
		fmt.Fprintf(&b, "  the simulated server ran %gx faster than the hardware it models: these times are %g times shorter and these rates %g times higher than the modelled ones (agentrace report shows both)\n", sp, sp, sp)
	}
	if s.Dropped {
		fmt.Fprintf(&b, "  the earlier run at %s is kept as it was: this %s run replaced nothing and was dropped", s.RunDir, s.State)
	} else {
		fmt.Fprintf(&b, "  log %s", filepath.Join(s.RunDir, schemas.TurnLogFile))
	}
	return b.String()
}

func countsString(c map[string]int) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, c[k])
	}
	return b.String()
}

// warningsString sums up the stream warnings of a run, "" when none.
func warningsString(w map[string]int, maxOut int64) string {
	var parts []string
	for _, k := range []string{"malformed_frame", "error_frame", "oversized_frame", "no_done"} {
		if n := w[k]; n > 0 {
			name := k
			if k == "no_done" {
				name = "no [DONE]"
			}
			parts = append(parts, name+" in "+english.Count(n, "turn", "turns"))
		}
	}
	var out string
	if len(parts) > 0 {
		out = "stream warnings (tolerated as the reference client does; a strict stream fails them): " + strings.Join(parts, ", ")
	}
	if n := w["output_truncated"]; n > 0 {
		if out != "" {
			out += "; "
		}
		out += fmt.Sprintf("output truncated at the output limit of %d bytes in %s (column output_truncated_bytes)", maxOut, english.Count(n, "turn", "turns"))
	}
	return out
}

// stopText says why issuing stopped.
func stopText(cause string, maxDuration time.Duration) string {
	switch cause {
	case schemas.StopInterrupt:
		return "interrupted"
	case schemas.StopWindowEnd:
		return "the performance window ended (issuing stops there)"
	case schemas.StopMaxDuration:
		return fmt.Sprintf("the run reached its max duration, %s; the turns in flight were cancelled", maxDuration)
	case schemas.StopLogFailure:
		return "the turn log could not be written; the turns in flight were cancelled"
	case schemas.StopClientFault:
		return "a client fault (not the endpoint's); the turns in flight were cancelled"
	case schemas.StopRefused:
		return "the server refused the first failing turn in a way it refuses every turn; the turns in flight were cancelled"
	case schemas.StopEndpointLost:
		return "the endpoint stopped answering; no further turn was issued"
	}
	return cause
}

// engine is one run in progress.
type engine struct {
	s      *settings
	d      *datasets.Dataset
	client *client
	start  time.Time

	// issueCtx ends when no new turn may start (interrupt, the window end with
	// StopIssuingAtWindowEnd, the max duration, a turn-log failure); workCtx ends
	// when in-flight turns must be cancelled (the end of the grace after an
	// interrupt, a second interrupt, the max duration, a turn-log failure). Both
	// end through stop and cut, which record why.
	issueCtx    context.Context
	stopIssuing context.CancelFunc
	workCtx     context.Context
	cancelWork  context.CancelFunc
	interrupted atomic.Bool

	// kernelSleeps holds a token for each slot sleeping the end of a delay in
	// the kernel (sleepUntil): each holds an OS thread while it sleeps.
	kernelSleeps chan struct{}

	stopMu    sync.Mutex
	stopCause string // schemas.Stop*
	stoppedNs int64
	cutWhy    string // why in-flight turns were cancelled
	clientErr error  // the first client fault (clientFail)
	logFailed chan struct{}
	logFail   sync.Once

	mu           sync.Mutex
	next         int                  // next trajectory to start
	order        *datasets.StartOrder // the conversation each trajectory replays
	windowClosed atomic.Bool
	windowEndNs  atomic.Int64

	log  *logQueue
	line *progress.Line
	// closing is set before the status line's last print, which gives the
	// whole run's output rate rather than the rate since the line before.
	closing atomic.Bool
	// graceEnd is when the interrupt's grace ends (Unix ns), 0 before one.
	graceEnd atomic.Int64

	// live counters
	trajDone, trajFailed, trajCut, turnsDone, inFlight, errors atomic.Int64
	outTokens                                                  atomic.Int64
	usageCounted, chunkCounted                                 atomic.Int64
	okTurns                                                    atomic.Int64
	// turnsSettled counts the turns answered, failed or not sent (a trajectory
	// aborted or cut); of turnsTotal, the budget's client turns, for the ETA.
	turnsSettled atomic.Int64
	turnsTotal   int64

	// refused is the run's error when the server refused its first failing turn
	// the way it would refuse every turn (refuse), "" otherwise.
	refusedMu sync.Mutex
	refused   string

	// unanswered counts the turns in a row, in completion order, that got no
	// response at all (answered), since the last turn answered ok; first is the
	// first of them. lost is the run's error once the endpoint is taken for lost.
	// An ok turn reads unanswered alone, without the lock, while it is 0.
	lostMu     sync.Mutex
	unanswered atomic.Int64
	first      *unansweredTurn
	lost       string
}

// unansweredTurn is a turn that got no response, as the lost endpoint's error
// names it.
type unansweredTurn struct {
	conversation string
	turn         int32
	at           int64
	err          string
}

// LostAfter is the number of turns in a row, with no turn answered ok between
// them, that must get no response at all (a connection refused, reset or
// unreachable: error_kind connection) before replay takes the endpoint for lost
// and stops the run, failed: the run's concurrency, at least 2 and at most 8.
// One such turn among answered ones is a fault of that turn; a whole round of
// slots failing to connect is a server that is gone.
func LostAfter(slots int) int { return min(max(slots, 2), 8) }

// answered notes turn r's outcome for the lost-endpoint rule (LostAfter): an ok
// turn resets the count, a turn that got no response adds to it, any other
// outcome (an HTTP error, a stream cut mid-answer) leaves it as it is.
func (e *engine) answered(r *schemas.TurnRecord) {
	switch {
	case r.Status == schemas.StatusOK:
		if e.unanswered.Load() != 0 {
			e.lostMu.Lock()
			e.unanswered.Store(0)
			e.first = nil
			e.lostMu.Unlock()
		}
		return
	case r.Status != schemas.StatusError || r.HTTPStatus != 0 || runlog.ErrorKind(r.Status, r.HTTPStatus, r.Error) != runlog.ErrConnection:
		return
	}
	e.lostMu.Lock()
	n := e.unanswered.Add(1)
	if e.first == nil {
		e.first = &unansweredTurn{conversation: r.ConversationID, turn: r.Turn, at: r.IssuedNs, err: r.Error}
	}
	lose := e.lost == "" && n >= int64(LostAfter(e.s.slots))
	if lose {
		f := e.first
		e.lost = e.s.scrub.Text(fmt.Sprintf("the endpoint stopped answering at %s into the run: %d turns in a row got no response (the first, conversation %q turn %d: %s); the run is not whole",
			time.Duration(f.at).Round(time.Millisecond), n, f.conversation, f.turn, f.err))
	}
	e.lostMu.Unlock()
	if lose {
		e.stop(schemas.StopEndpointLost)
	}
}

// lostErr is the run's error when its endpoint was lost, "" otherwise.
func (e *engine) lostErr() string {
	e.lostMu.Lock()
	defer e.lostMu.Unlock()
	return e.lost
}

// refusingStatus tells whether an HTTP status on a run's first failing turn,
// before any turn succeeded, means every turn would fail the same way: no key or
// a wrong one (401, 403), a model or route the server does not have (404).
func refusingStatus(code int32) bool {
	return code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusNotFound
}

// refuse stops the run at once after turn r failed with a refusing status while
// no turn had succeeded: the server's message becomes the run's error.
func (e *engine) refuse(r *schemas.TurnRecord) {
	e.refusedMu.Lock()
	first := e.refused == ""
	if first {
		e.refused = e.s.scrub.Text(fmt.Sprintf("the server refused the run's first failing turn (conversation %q turn %d) with HTTP %d, which every turn would get; stopped at once: %s",
			r.ConversationID, r.Turn, r.HTTPStatus, r.Error))
	}
	e.refusedMu.Unlock()
	if first {
		e.stop(schemas.StopRefused)
		e.cut("the server refused the run's first failing turn")
	}
}

func (e *engine) refusedErr() string {
	e.refusedMu.Lock()
	defer e.refusedMu.Unlock()
	return e.refused
}

// stop ends issuing for cause (a schemas.Stop* value); the first cause is kept.
func (e *engine) stop(cause string) {
	e.stopMu.Lock()
	if e.stopCause == "" {
		e.stopCause, e.stoppedNs = cause, e.now()
	}
	e.stopMu.Unlock()
	e.stopIssuing()
}

// cut cancels the turns in flight, saying why; issuing must have stopped.
func (e *engine) cut(why string) {
	e.stopMu.Lock()
	if e.cutWhy == "" {
		e.cutWhy = why
	}
	e.stopMu.Unlock()
	e.cancelWork()
}

// clientFail stops the run for a fault of the client's own (clientFault): no new
// turn is issued, the turns in flight are cancelled, and the run ends failed with
// the first fault as its error.
func (e *engine) clientFail(err error, why string) {
	e.stopMu.Lock()
	if e.clientErr == nil {
		e.clientErr = fmt.Errorf("replay: a client fault, not the endpoint's: %w: %s", err, why)
	}
	e.stopMu.Unlock()
	e.stop(schemas.StopClientFault)
	e.cut("a client fault")
}

// clientError returns the first client fault, nil when none.
func (e *engine) clientError() error {
	e.stopMu.Lock()
	defer e.stopMu.Unlock()
	return e.clientErr
}

// cutReason says why in-flight turns were cancelled.
func (e *engine) cutReason() string {
	e.stopMu.Lock()
	defer e.stopMu.Unlock()
	return e.cutWhy
}

// stopped returns the stop cause and when issuing stopped.
func (e *engine) stopped() (string, int64) {
	e.stopMu.Lock()
	defer e.stopMu.Unlock()
	return e.stopCause, e.stoppedNs
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
//
// The run's secrets (Options.scrubber) are masked in everything it writes or
// says: turn log, manifest, progress lines, summary and errors.
func Run(ctx context.Context, opts Options) (_ *Summary, err error) {
	sc := opts.scrubber()
	defer func() { err = sc.Error(err) }()
	opts.Progress = sc.Writer(opts.Progress)
	d := opts.Data
	if d == nil {
		var err error
		if d, err = datasets.Open(ctx, opts.Dataset); err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
	}
	s, err := opts.resolve(d)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	s.scrub = sc
	if opts.Out == "" {
		return nil, fmt.Errorf("replay: %w", notice.Errorf("out", "no run directory"))
	}
	// The run folder is claimed for the run's life (internal/outguard): it may
	// not be, contain or sit inside the dataset, a second run into it is refused
	// while this one runs, and it replaces only an earlier run, with Overwrite.
	// With nothing to keep there the run is written in place (readable while it
	// runs; an interrupted run stays, as it is a run). Over an earlier run it is
	// written beside and put in place only when complete: interrupted or failed,
	// it is dropped and the earlier run stays whole. A run that cannot start
	// (the probe fails) leaves the folder as it was.
	claim, err := outguard.Take(outguard.Output{Path: opts.Out, Kind: outguard.Run, Overwrite: opts.Overwrite, Live: true}, opts.inputs()...)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer claim.Release()
	dir := claim.Dir()
	c := newClient(s)
	defer c.close()
	if err := c.probe(ctx); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if err := c.checkModels(d.Models(s.bodyOptions(1))); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}

	e := &engine{s: s, d: d, client: c, log: newLogQueue(s.slots), logFailed: make(chan struct{}), kernelSleeps: make(chan struct{}, kernelSleepers),
		order: datasets.NewStartOrder(len(d.Conversations), s.orderSeed), turnsTotal: budgetTurns(d, s.budget, s.orderSeed)}
	if w, ok := longestDelay(d, s); ok {
		e.say(w)
	}
	if s.slots < s.Concurrency {
		e.say(notice.Event{Kind: notice.Note, Option: "concurrency", Text: fmt.Sprintf("concurrency %d is above the budget of %d trajectories: at most %d are active at once (the manifest records concurrency %d)",
			s.Concurrency, s.budget, s.slots, s.Concurrency)})
	}
	for _, n := range s.headerNotes() {
		e.say(n)
	}
	wall := time.Now()
	e.start = wall.Add(-time.Microsecond)
	m := schemas.RunManifest{
		SchemaVersion:       schemas.Version,
		ToolVersion:         schemas.ToolVersion,
		TurnLogVersion:      schemas.TurnLogVersion,
		Config:              s.config(d),
		DatasetHash:         d.Manifest.ContentHash,
		DatasetSize:         len(d.Conversations),
		StartedAt:           wall.UTC().Format(time.RFC3339Nano),
		StartedUnixNs:       wall.UnixNano(),
		State:               RunRunning,
		EndpointDescription: sc.Text(s.EndpointDescription),
	}
	m.SimSpeedup = c.simSpeedup
	if err := runlog.WriteManifest(dir, m); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if err := writeRefConfig(dir, s); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	lf, err := runlog.CreateWrapped(filepath.Join(dir, schemas.TurnLogFile), nil, s.wrapLog)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	scr, err := e.startScraper(ctx, dir)
	if err != nil {
		if aerr := lf.Abort(); aerr != nil {
			err = fmt.Errorf("%w (and ending the turn log: %v)", err, aerr)
		}
		return nil, fmt.Errorf("replay: %w", err)
	}

	// Both contexts carry the caller's values but not its end: an interrupt
	// (ctx done) stops issuing and cancels the turns in flight a grace later,
	// through watch, which records why.
	base := context.WithoutCancel(ctx)
	e.issueCtx, e.stopIssuing = context.WithCancel(base)
	e.workCtx, e.cancelWork = context.WithCancel(base)
	defer e.cancelWork()
	finished := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() { e.watch(ctx, finished) })

	if s.Progress != nil {
		e.line = progress.New(s.Progress, s.ProgressTTY, s.ProgressEvery, e.statusFunc()).Start()
	}

	logDone := make(chan logResult, 1)
	go func() { logDone <- e.writeLog(lf) }()

	var slots sync.WaitGroup
	for i := 0; i < s.slots; i++ {
		slots.Go(func() { e.slot(i) })
	}
	slots.Wait()
	elapsed := time.Duration(e.now())
	close(finished)
	watch.Wait()
	e.log.close()
	lr := <-logDone
	if scr != nil {
		m.ServerMetrics = scr.Stop(!e.interrupted.Load())
	}
	m.Routing = c.route.record()
	if e.line != nil {
		e.closing.Store(true)
		e.line.Stop()
	}

	e.mu.Lock()
	started := e.next
	e.mu.Unlock()
	m.EndedNs = int64(elapsed)
	m.WindowEndNs = e.windowEndNs.Load()
	m.LastTrackedDoneNs = lr.lastTrackedDone
	m.Counts = lr.counts
	m.StopCause, m.StoppedNs = e.stopped()
	m.Trajectories = &schemas.TrajectoryCounts{
		Started: started, Finished: int(e.trajDone.Load()), Failed: int(e.trajFailed.Load()), Cut: int(e.trajCut.Load()),
	}
	if len(lr.warnings) > 0 {
		m.StreamWarnings = lr.warnings
	}
	m.State = schemas.RunComplete
	if e.interrupted.Load() {
		m.State = schemas.RunInterrupted
	}
	if cerr := e.clientError(); cerr != nil && lr.err == nil {
		lr.err = cerr
	}
	var runErr error // the run went through but is not whole
	switch ok := lr.counts[schemas.StatusOK]; {
	case lr.err != nil:
	case e.refusedErr() != "":
		runErr = errors.New(e.refusedErr())
	case e.lostErr() != "":
		runErr = errors.New(e.lostErr())
	case ok == 0 && lr.issued > 0 && m.State == schemas.RunComplete:
		runErr = fmt.Errorf("every one of the %d turns issued failed (see the error column of %s)", lr.issued, filepath.Join(opts.Out, schemas.TurnLogFile))
	}
	if runErr != nil {
		m.State, m.Error = schemas.RunFailed, sc.Text(runErr.Error())
	}
	if lr.err != nil {
		m.State, m.Error = schemas.RunFailed, sc.Text(lr.err.Error())
		if len(lr.unlogged) > 0 {
			m.Unlogged = lr.unlogged
		}
	}
	if err := runlog.WriteManifest(dir, m); err != nil && lr.err == nil {
		lr.err = fmt.Errorf("replay: %w", err)
	}
	writeTurnTable(context.WithoutCancel(ctx), dir, &m, d, e.say)
	dropped := false
	if claim.InPlace() || m.State == schemas.RunComplete && lr.err == nil {
		if err := claim.Commit(); err != nil && lr.err == nil {
			lr.err = fmt.Errorf("replay: %w", err)
		}
	} else {
		dropped = true // Release drops it; the earlier run stays
	}
	sum := &Summary{
		RunDir: opts.Out, State: m.State, Counts: lr.counts, Trajectories: m.Trajectories.Finished,
		Failed: m.Trajectories.Failed, Cut: m.Trajectories.Cut,
		Started: started, Budget: s.budget, Turns: lr.issued, Elapsed: elapsed,
		WindowEnd: time.Duration(m.WindowEndNs), StopCause: m.StopCause, Stopped: time.Duration(m.StoppedNs),
		MaxDuration: s.MaxDuration, Warnings: lr.warnings, MaxOutputBytes: s.maxOutput, Error: m.Error,
		OutputTokens: e.outTokens.Load(), UsageCounted: e.usageCounted.Load(), ChunkCounted: e.chunkCounted.Load(), Official: m.Config.Official, NonOfficial: m.Config.NonOfficial,
		Dropped: dropped, SimSpeedup: m.SimSpeedup,
	}
	for _, n := range lr.unlogged {
		sum.Unlogged += n
	}
	sum.LagP50, sum.LagP99, sum.LagMax = lagStats(lr.lags)
	switch {
	case lr.err != nil:
		return sum, Incomplete(lr.err)
	case runErr != nil:
		return sum, Incomplete(fmt.Errorf("replay: %w", runErr))
	}
	return sum, nil
}

// incomplete is the error of a run that started but is not whole (its manifest
// says failed): the message is the cause's.
type incomplete struct{ err error }

func (e incomplete) Error() string { return e.err.Error() }
func (e incomplete) Unwrap() error { return e.err }

// Incomplete marks err as the error of a run that started but is not whole.
func Incomplete(err error) error { return incomplete{err} }

// IsIncomplete tells whether err is (or wraps) the error of a run that started
// but is not whole, as against one refused before anything was sent.
func IsIncomplete(err error) bool {
	var ie incomplete
	return errors.As(err, &ie)
}

// longestDelay warns when a delay of the dataset, as scaled, is longer than an
// hour: a trajectory would sleep that long before its next turn (nothing but
// an interrupt or the max duration ends the wait).
func longestDelay(d *datasets.Dataset, s *settings) (notice.Event, bool) {
	if s.NoDelays {
		return notice.Event{}, false
	}
	var worst *schemas.Turn
	for i := range d.Turns {
		if t := &d.Turns[i]; worst == nil || t.DelaySeconds > worst.DelaySeconds {
			worst = t
		}
	}
	if worst == nil || worst.DelaySeconds*s.delayScale <= 3600 {
		return notice.Event{}, false
	}
	cap := "nothing but Ctrl-C ends it, as no max duration is set"
	if s.MaxDuration > 0 {
		cap = fmt.Sprintf("the max duration, %s, ends the run", s.MaxDuration)
	}
	return notice.Event{Kind: notice.Warning, Option: "max-duration", Text: fmt.Sprintf("conversation %q turn %d sleeps delay_seconds %g (x %g) before it is sent; %s",
		worst.ConversationID, worst.Turn, worst.DelaySeconds, s.delayScale, cap)}, true
}

// watch turns outside events into stops. The first interrupt (ctx cancelled)
// stops issuing, says so, and lets the turns in flight finish for the grace
// period before cutting them; a second interrupt (Force) cuts them at once. The
// max duration stops issuing and cuts the turns in flight, as the reference's
// max_duration_ms ends its performance phase; so does a turn-log failure.
func (e *engine) watch(ctx context.Context, finished <-chan struct{}) {
	var maxDur <-chan time.Time
	if d := e.s.MaxDuration; d > 0 {
		// The run clock starts a microsecond before the run: the cap is d after the run's start.
		t := time.NewTimer(d + time.Microsecond - time.Duration(e.now()))
		defer t.Stop()
		maxDur = t.C
	}
	interrupt, force := ctx.Done(), e.s.Force
	var grace <-chan time.Time
	var graceEnd time.Time
	for {
		select {
		case <-finished:
			return
		case <-interrupt:
			interrupt = nil
			e.interrupted.Store(true)
			e.stop(schemas.StopInterrupt)
			t := time.NewTimer(e.s.Grace)
			defer t.Stop()
			grace, graceEnd = t.C, time.Now().Add(e.s.Grace)
			e.graceEnd.Store(graceEnd.UnixNano())
			n := e.inFlight.Load()
			e.say(notice.Event{Kind: notice.Note, Option: "grace", Text: fmt.Sprintf("interrupt: no new turns are issued; %s in flight %s up to %s, the grace period, to finish, then %s cancelled. "+
				"Press Ctrl-C again to cancel %s now: the log and manifest are still written.", inFlightTurns(n), verb(n, "gets", "get"), e.s.Grace, verb(n, "is", "are"), verb(n, "it", "them"))})
		case <-force:
			force = nil
			e.interrupted.Store(true)
			e.stop(schemas.StopInterrupt)
			e.cut("a second interrupt")
			e.say(notice.Event{Kind: notice.Note, Text: fmt.Sprintf("second interrupt: cancelling %s in flight; writing the log and manifest", inFlightTurns(e.inFlight.Load()))})
		case <-grace:
			grace = nil
			e.cut(fmt.Sprintf("the %s grace after the interrupt ended", e.s.Grace))
		case <-maxDur:
			maxDur = nil
			e.stop(schemas.StopMaxDuration)
			e.cut(fmt.Sprintf("the max duration, %s, was reached", e.s.MaxDuration))
			e.say(notice.Event{Kind: notice.Note, Option: "max-duration", Text: fmt.Sprintf("the max duration, %s, was reached: no new turns; %s in flight cancelled", e.s.MaxDuration, inFlightTurns(e.inFlight.Load()))})
		case <-e.logFailed:
			e.logFailed = nil
			e.stop(schemas.StopLogFailure)
			e.cut("the turn log could not be written")
		}
	}
}

// say hands an event of the run to the caller's sink, its secrets masked, while
// the live status line (if any) is held off the terminal.
func (e *engine) say(ev notice.Event) {
	if e.s.Events == nil {
		return
	}
	ev.Text = e.s.scrub.Text(ev.Text)
	if e.line != nil {
		e.line.Over(func() { e.s.Events(ev) })
		return
	}
	e.s.Events(ev)
}

// inFlightTurns counts turns for the interrupt's notes: "1 turn", "3 turns".
func inFlightTurns(n int64) string { return english.Count(int(n), "turn", "turns") }

// verb is one when n is 1, else many.
func verb(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// take returns the next trajectory to start and the conversation it replays
// (datasets.StartOrder), or false when none is left or issuing has stopped.
// finishedOne tells that the caller's slot has just finished a trajectory: if
// none is left, the performance window ends now.
func (e *engine) take(finishedOne bool) (k, conv int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.next >= e.s.budget {
		if finishedOne && !e.windowClosed.Load() {
			e.windowEndNs.Store(e.now())
			e.windowClosed.Store(true)
			if e.s.StopIssuingAtWindowEnd {
				e.stop(schemas.StopWindowEnd)
			}
		}
		return 0, 0, false
	}
	if e.issueCtx.Err() != nil {
		return 0, 0, false
	}
	k = e.next
	e.next++
	return k, e.order.Next(), true
}

// slot runs trajectories one after another until none is left.
func (e *engine) slot(id int) {
	st := newSlotState()
	st.id = id
	st.sse.strict = e.s.StrictStream
	st.sse.maxFrame = int(2*e.s.maxOutput + 1<<20)
	for i := range st.resps {
		st.resps[i].maxBytes = e.s.maxOutput
		st.resps[i].scrub = e.s.scrub
	}
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
		k, ci, ok := e.take(finishedOne)
		if !ok {
			return
		}
		switch e.trajectory(st, k, ci) {
		case trajFinished:
			e.trajDone.Add(1)
		case trajFailed:
			e.trajFailed.Add(1)
		default:
			e.trajCut.Add(1)
		}
		finishedOne = true
	}
}

// Outcomes of a trajectory.
const (
	trajFinished = iota // every client turn ok
	trajFailed          // a turn failed (error, timeout)
	trajCut             // cut short by a stop: a turn cancelled or not issued
)

// trajectory runs trajectory k: conversation ci (its draw from the start
// order) as instance k div n + 1, one turn at a time, each after its delay.
// After a failure the rest is aborted (logged, not sent) when issuing is still
// open, as the reference registers them as skipped; once issuing has stopped,
// turns are not issued.
func (e *engine) trajectory(st *slotState, k, ci int) (outcome int) {
	repeat := k/len(e.d.Conversations) + 1
	conv := &e.d.Conversations[ci]
	turns := e.d.ConversationTurns(ci)
	sid := datasets.SessionID(conv.ConversationID, repeat)
	bo := e.s.bodyOptions(repeat)
	// Each turn is sent streamed or not as its body's stream value says (the
	// reference decides per request), with the Accept header to match: one header
	// set for each, so that a request never shares a map another one changes.
	var hdrs [2]http.Header // [0]: not streamed, [1]: streamed
	for i := range hdrs {
		hdrs[i] = e.s.header.Clone()
		for _, h := range e.s.routing {
			hdrs[i][h] = []string{sid}
		}
	}
	hdrs[0].Set("Accept", "application/json")
	hdrs[1].Set("Accept", "text/event-stream")
	base := e.now()
	abort, abortStatus := "", ""
	p := &st.pipe
	room := 0 // the trajectory's longest body (bodyRoom), once its first is built
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
			abort, abortStatus = e.stopReason(), schemas.StatusNotIssued
		}
		if abort == "" {
			if body < 0 {
				body = p.freeBuf(-1)
				st.bufs[body] = nextBody(e.d, st.bufs[body], st.held[body].turnOf(k), t, bo, room)
				st.held[body] = heldBody{k: k, turn: t}
				if i == 0 {
					room = bodyRoom(st.bufs[body], t, &turns[len(turns)-1])
				}
			}
			var delay time.Duration
			if !e.s.NoDelays && t.DelaySeconds > 0 {
				delay = delayDuration(t.DelaySeconds * e.s.delayScale)
			}
			r.DelayNs = int64(delay)
			r.ScheduledNs = base + min(int64(delay), math.MaxInt64-base)
			// Hand the builder the previous row and the next body; if it is still busy,
			// finish the previous row here.
			if !p.out && (p.fin != nil || i+1 < len(turns)) {
				job := buildJob{fin: p.fin, resp: p.finResp, t: -1}
				if i+1 < len(turns) {
					job.t = i + 1
					job.turn, job.o = &turns[i+1], bo
					job.buf = p.freeBuf(body)
					job.dst, job.prev, job.k, job.room = st.bufs[job.buf], st.held[job.buf].turnOf(k), k, room
					st.held[job.buf] = heldBody{} // being built
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
				abort, abortStatus = e.stopReason(), schemas.StatusNotIssued
				r.DelayNs, r.ScheduledNs = 0, 0
			}
		}
		if abort != "" {
			if body >= 0 {
				p.bufBusy[body] = false
			}
			p.drain(e, st)
			r.Status, r.Error, r.InWindow = abortStatus, abort, !e.windowClosed.Load()
			if abortStatus == schemas.StatusNotIssued && outcome == trajFinished {
				outcome = trajCut
			}
			e.log.push(st.id, r)
			e.turnsSettled.Add(1)
			continue
		}
		cur := p.freeResp()
		st.buf, st.resp = st.bufs[body], &st.resps[cur]
		r.Streamed = e.d.Streams(t, bo)
		hdr := hdrs[0]
		if r.Streamed {
			hdr = hdrs[1]
		}
		e.inFlight.Add(1)
		e.client.do(e, st, hdr, r)
		e.inFlight.Add(-1)
		e.turnsSettled.Add(1)
		p.bufBusy[body] = false
		if st.lost {
			st.bufs[body], st.held[body], st.lost = nil, heldBody{}, false
		}
		p.fin, p.finResp = r, cur
		base = r.CompletedNs
		e.answered(r)
		if r.Status == schemas.StatusOK {
			e.okTurns.Add(1)
		} else if r.Status != schemas.StatusCancelled && e.okTurns.Load() == 0 && refusingStatus(r.HTTPStatus) {
			e.refuse(r)
		}
		if r.Status != schemas.StatusOK {
			if r.Status == schemas.StatusCancelled || r.Status == schemas.StatusNotIssued {
				outcome = trajCut
			} else {
				e.errors.Add(1)
				outcome = trajFailed
			}
			// Decided once, at the failure: the reference registers the rest as
			// skipped unless issuing has stopped, and then publishes nothing.
			if e.issueCtx.Err() != nil {
				abort, abortStatus = e.stopReason(), schemas.StatusNotIssued
			} else {
				abort, abortStatus = fmt.Sprintf("%sturn %d failed (%s)", abortedPrefix, t.Turn, r.Status), schemas.StatusAborted
			}
		}
	}
	p.drain(e, st)
	return outcome
}

// nextBody is d.AppendNextBody(dst, prev, t, o), with dst grown first when the
// body will not fit: to twice its capacity, at most room (the trajectory's
// longest body, 0 when not known yet) and at least what the body needs. A body
// buffer then grows in a few doublings up to its trajectory's longest body,
// rather than in append's smaller steps for large slices, a copy each. What a
// turn adds to prev's messages array is the difference of their HistoryBytes.
func nextBody(d *datasets.Dataset, dst []byte, prev, t *schemas.Turn, o datasets.BodyOptions, room int) []byte {
	if prev != nil && room > 0 {
		need := len(dst) + 256 + int(max(t.HistoryBytes-prev.HistoryBytes, 0))
		if need > cap(dst) {
			grown := make([]byte, len(dst), max(min(2*cap(dst), room), need))
			copy(grown, dst)
			dst = grown
		}
	}
	return d.AppendNextBody(dst, prev, t, o)
}

// bodyRoom estimates the longest body of a trajectory, its last turn's, from
// its first body: that body, what the last turn's messages array holds more
// (the difference of their HistoryBytes) and some slack.
func bodyRoom(first []byte, firstTurn, last *schemas.Turn) int {
	return len(first) + 1<<10 + int(max(last.HistoryBytes-firstTurn.HistoryBytes, 0))
}

// delayDuration converts a delay in seconds to a Duration, saturating at the
// largest one (about 292 years) instead of overflowing.
func delayDuration(sec float64) time.Duration {
	if ns := sec * float64(time.Second); ns < float64(math.MaxInt64) {
		return time.Duration(ns)
	}
	return math.MaxInt64
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
		st.bufs[p.job.buf], st.held[p.job.buf] = res.body, heldBody{k: p.job.k, turn: p.job.turn}
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
	output(rs, r, r.Streamed)
	e.turnsDone.Add(1)
	if r.UsageCompletionTokens >= 0 {
		e.outTokens.Add(int64(r.UsageCompletionTokens))
		e.usageCounted.Add(1)
	} else {
		e.outTokens.Add(int64(r.Chunks))
		e.chunkCounted.Add(1)
	}
	e.log.push(slot, r)
}

// stopReason is the error text of turns not issued because issuing stopped.
func (e *engine) stopReason() string {
	cause, _ := e.stopped()
	switch cause {
	case schemas.StopWindowEnd:
		return notIssuedWindow
	case schemas.StopMaxDuration:
		return fmt.Sprintf("not issued: the run reached its max duration, %s", e.s.MaxDuration)
	case schemas.StopLogFailure:
		return notIssuedLog
	case schemas.StopClientFault:
		return notIssuedClient
	case schemas.StopRefused:
		return notIssuedRefused
	case schemas.StopEndpointLost:
		return notIssuedLost
	}
	return notIssuedInterrupt
}

// Error texts of turns not issued because issuing stopped.
const (
	notIssuedInterrupt = "not issued: the run was interrupted"
	notIssuedWindow    = "not issued: issuing stopped at the window end"
	notIssuedLog       = "not issued: the turn log could not be written"
	notIssuedClient    = "not issued: the run stopped at a client fault"
	notIssuedRefused   = "not issued: the server refused the run's first failing turn"
	notIssuedLost      = "not issued: the endpoint stopped answering"
)

// buildJob asks a slot's builder to finish the row fin (its output in
// resps[resp]), and to build the body of client turn t (index in trajectory k;
// -1 for none) into dst, which is bufs[buf] and holds the body of prev (nil:
// none of k's).
type buildJob struct {
	fin  *schemas.TurnRecord
	resp int
	t    int
	turn *schemas.Turn
	o    datasets.BodyOptions
	buf  int
	dst  []byte
	prev *schemas.Turn
	k    int
	room int // the trajectory's longest body (bodyRoom)
}

// heldBody names the body a buffer holds: client turn turn of trajectory k (turn
// nil: none), so that the next body of k is built on from it
// (datasets.AppendNextBody).
type heldBody struct {
	k    int
	turn *schemas.Turn
}

// turnOf returns the turn whose body the buffer holds when it is trajectory k's.
func (h heldBody) turnOf(k int) *schemas.Turn {
	if h.turn == nil || h.k != k {
		return nil
	}
	return h.turn
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
			res.body = nextBody(e.d, j.dst, j.prev, j.turn, j.o, j.room)
		}
		built <- res
	}
}

// issueMargin is how long before a turn's due time its slot's Go timer fires.
// Go's netpoller sleeps in whole milliseconds (a wait under one is one), so a
// timer on a quiet process wakes up to a millisecond late; the slot wakes this
// much early and sleeps the rest in the kernel (preciseSleep), to within its
// timer slack (50 µs by default).
const issueMargin = time.Millisecond

// kernelSleepers is how many slots at most sleep the end of a delay in the
// kernel at once (each holds an OS thread, which Go keeps for the life of the
// process); the others end it on Go's timer.
const kernelSleepers = 16

// sleepUntil waits until run time at (ns), or returns false when issuing stops
// first. It never returns true before at.
func (st *slotState) sleepUntil(e *engine, at int64) bool {
	if e.issueCtx.Err() != nil {
		return false
	}
	wait := func(d time.Duration) bool {
		st.timer.Reset(d)
		select {
		case <-st.timer.C:
			return true
		case <-e.issueCtx.Done():
			st.timer.Stop()
			return false
		}
	}
	if d := time.Duration(at-e.now()) - issueMargin; d > 0 && !wait(d) {
		return false
	}
	if e.now() >= at {
		return e.issueCtx.Err() == nil
	}
	select {
	case e.kernelSleeps <- struct{}{}:
		defer func() { <-e.kernelSleeps }()
	default:
		if d := time.Duration(at - e.now()); d > 0 && !wait(d) {
			return false
		}
	}
	for {
		now := e.now()
		d := time.Duration(at - now)
		if d <= 0 {
			break
		}
		preciseSleep(d)
		if e.now() == now {
			// The clock did not move while the thread slept: it is a test's fake
			// clock (testing/synctest), which moves only while every goroutine
			// waits on Go's timers.
			time.Sleep(d)
		}
	}
	return e.issueCtx.Err() == nil
}

type logResult struct {
	counts   map[string]int // rows on disk, by status
	unlogged map[string]int // rows lost after a log failure, by status
	warnings map[string]int // turns with each kind of stream warning (and output_truncated)
	issued   int
	lags     []int64
	// lastTrackedDone is the last completion of an issued turn in the window.
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
// closed and drained. A row counts as logged once a flush holding it succeeded.
// When a write fails (a full disk), it stops the run at once (no new turn, the
// turns in flight cancelled), cuts the log back to its flushed rows, and counts
// every later row as unlogged.
func (e *engine) writeLog(lf *runlog.File) logResult {
	res := logResult{counts: map[string]int{}, unlogged: map[string]int{}, warnings: map[string]int{}}
	pending := map[string]int{}
	tick := time.NewTicker(logEvery)
	defer tick.Stop()
	fail := func(err error) {
		res.err = fmt.Errorf("replay: turn log %s: %w", filepath.Join(e.s.Out, schemas.TurnLogFile), err)
		for k, v := range pending {
			res.unlogged[k] += v
		}
		clear(pending)
		if aerr := lf.Abort(); aerr != nil {
			res.err = fmt.Errorf("%w (and ending it: %v)", res.err, aerr)
		}
		e.logFail.Do(func() { close(e.logFailed) })
	}
	commit := func() {
		for k, v := range pending {
			res.counts[k] += v
		}
		clear(pending)
	}
	var spare []*schemas.TurnRecord
	for {
		select {
		case <-tick.C:
		case <-e.log.wake:
		}
		recs, closed := e.log.take(spare[:0])
		for i, r := range recs {
			if schemas.Issued(r.Status) {
				res.issued++
				res.lags = append(res.lags, r.IssuedNs-r.ScheduledNs)
				if r.InWindow && r.CompletedNs > res.lastTrackedDone {
					res.lastTrackedDone = r.CompletedNs
				}
			}
			for _, k := range schemas.WarningKinds(r.Warnings) {
				res.warnings[k]++
			}
			if r.OutputTruncatedBytes > 0 {
				res.warnings["output_truncated"]++
			}
			if res.err != nil {
				res.unlogged[r.Status]++
			} else if err := lf.Write(e.s.scrubRow(r)); err != nil {
				pending[r.Status]++
				fail(err)
			} else {
				pending[r.Status]++
			}
			recs[i] = nil
		}
		spare = recs
		if closed {
			if res.err == nil {
				if err := lf.Close(); err != nil {
					fail(err)
				} else {
					commit()
				}
			}
			return res
		}
		if res.err == nil && lf.Buffered() > 0 {
			if err := lf.Flush(); err != nil {
				fail(err)
			} else {
				commit()
			}
		}
	}
}

// scrubRow masks the run's secrets in a row's text columns before it is logged:
// the error and warnings (a server's error body or error frame), and the output
// (a server that echoes a secret in a completion).
func (s *settings) scrubRow(r *schemas.TurnRecord) *schemas.TurnRecord {
	sc := s.scrub
	r.Error = sc.Text(r.Error)
	r.Warnings = sc.Text(r.Warnings)
	r.FinishReason = sc.Secrets(r.FinishReason)
	r.OutputContent = sc.Secrets(r.OutputContent)
	r.OutputReasoning = sc.Secrets(r.OutputReasoning)
	r.OutputToolCalls = sc.Secrets(r.OutputToolCalls)
	r.TPOTToolCalls = sc.Secrets(r.TPOTToolCalls)
	return r
}

// lagStats returns the "lower" p50 and p99 and the maximum of lags.
func lagStats(lags []int64) (p50, p99, max time.Duration) {
	if len(lags) == 0 {
		return 0, 0, 0
	}
	s := append([]int64(nil), lags...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	pick := func(p float64) time.Duration { v, _ := percentile.Lower(s, p); return time.Duration(v) }
	return pick(50), pick(99), time.Duration(s[len(s)-1])
}

// budgetTurns is the number of client turns in a budget of trajectories: whole
// passes over the dataset, then the conversations the start order draws first
// in the last pass.
func budgetTurns(d *datasets.Dataset, budget int, seed *big.Int) int64 {
	n := len(d.Conversations)
	if n == 0 {
		return 0
	}
	total := int64(budget/n) * int64(len(d.Turns))
	if budget%n == 0 {
		return total
	}
	o := datasets.NewStartOrder(n, seed)
	for range budget / n * n {
		o.Next()
	}
	for range budget % n {
		total += int64(len(d.ConversationTurns(o.Next())))
	}
	return total
}

// statusFunc returns the live status line's callback.
func (e *engine) statusFunc() func() string {
	var lastTok int64
	var lastAt int64
	return func() string {
		now := e.now()
		tok := e.outTokens.Load()
		rate, over := 0.0, ""
		if e.closing.Load() {
			// The last line may come a moment after the one before: the run's
			// average, not the rate of that moment.
			lastTok, lastAt, over = 0, 0, " over the run"
		}
		if dt := now - lastAt; dt > 0 {
			rate = float64(tok-lastTok) / (float64(dt) / 1e9)
		}
		lastTok, lastAt = tok, now
		unit := "output tok/s"
		if e.usageCounted.Load() == 0 && e.chunkCounted.Load() > 0 {
			unit = "output chunks/s" // no usage: a chunk may carry several tokens
		}
		line := fmt.Sprintf("replay %s: trajectories %d/%d finished, turns %d/%d, in flight %d, %.0f %s%s, errors %d",
			time.Duration(now).Round(time.Second), e.trajDone.Load(), e.s.budget, e.turnsDone.Load(), e.turnsTotal,
			e.inFlight.Load(), rate, unit, over, e.errors.Load())
		if g := e.graceEnd.Load(); g != 0 && e.workCtx.Err() == nil {
			left := max(time.Until(time.Unix(0, g)), 0)
			return line + fmt.Sprintf("; stopping: grace %s left (Ctrl-C again cancels now)", left.Round(time.Second))
		}
		if e.issueCtx.Err() == nil {
			if eta := progress.ETA(e.turnsSettled.Load(), e.turnsTotal, time.Duration(now)); eta != "" {
				line += "; " + eta
			}
		}
		return line
	}
}
