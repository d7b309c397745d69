package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/tokens"
)

// TokenCounter counts output tokens the way rules §2.8 does, with the model's
// reference tokenizer. *tokens.Tokenizer satisfies it.
type TokenCounter interface {
	Name() string
	CountOSL(r schemas.Response) (int, error)
	// CountTPOTSuffix counts what the reference's TPOT counts after the first
	// chunk (tokens.TPOTSuffix builds it): as a message when asMessage, else as
	// plain text.
	CountTPOTSuffix(suffix schemas.Response, asMessage bool) (int, error)
}

// ISLCounter returns the input tokens of a turn by the reference tokenizer; ok is
// false when it cannot tell (the fold then falls back to server usage).
type ISLCounter func(rec *schemas.TurnRecord) (n int, ok bool, err error)

// Num is a metric value; NaN (no samples) is written to JSON as null.
type Num float64

// MarshalJSON writes null for NaN and infinities.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON reads null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// Valid tells whether the value is a finite number.
func (n Num) Valid() bool { return !math.IsNaN(float64(n)) && !math.IsInf(float64(n), 0) }

// TokenTimes are the TTFT and TPOT percentiles (ms) of a set of window turns,
// and the tps_per_user they give, 1000 / the TPOT P90: a point's and each of its
// domains' (in JSON, their fields in this order).
type TokenTimes struct {
	TPSPerUser Num `json:"tps_per_user"`
	TTFTP50Ms  Num `json:"ttft_p50_ms"`
	TTFTP90Ms  Num `json:"ttft_p90_ms"`
	TTFTP99Ms  Num `json:"ttft_p99_ms"`
	TPOTP50Ms  Num `json:"tpot_p50_ms"`
	TPOTP90Ms  Num `json:"tpot_p90_ms"`
	TPOTP99Ms  Num `json:"tpot_p99_ms"`
}

// set takes the figures from the turns' TTFT and TPOT samples.
func (t *TokenTimes) set(ttft, tpot *Series) {
	t.TTFTP50Ms, t.TTFTP90Ms, t.TTFTP99Ms = Num(ttft.P(50)), Num(ttft.P(90)), Num(ttft.P(99))
	t.TPOTP50Ms, t.TPOTP90Ms, t.TPOTP99Ms = Num(tpot.P(50)), Num(tpot.P(90)), Num(tpot.P(99))
	t.TPSPerUser = div(1000, float64(t.TPOTP90Ms))
}

// DomainMetrics are a point's window metrics over one domain's turns.
type DomainMetrics struct {
	Issued                   int   `json:"n_samples_issued"`
	Completed                int   `json:"n_samples_completed"`
	Failed                   int   `json:"n_samples_failed"`
	OutputTokensPerTurnTotal int64 `json:"output_tokens_per_turn_total"`
	E2EAvgInteractivity      Num   `json:"e2e_avg_interactivity"`
	TokenTimes
	LatencyP50Ms Num `json:"latency_p50_ms"`
	LatencyP90Ms Num `json:"latency_p90_ms"`
	LatencyP99Ms Num `json:"latency_p99_ms"`

	ttft, tpot, lat Series
	outTokens       float64
	outTurns        int // completed window turns with a token count
	turnTimeNs      int64
}

// SLOView is the share of a point's completed window turns that met service
// levels: a first token within TTFTMs, and a decode speed (1000 / the turn's TPOT
// ms) of at least TPSPerUser tokens/s. A turn without a TPOT sample (not
// streamed, or one output chunk) does not meet the speed level.
type SLOView struct {
	TTFTMs     float64 `json:"ttft_ms,omitempty"`
	TPSPerUser float64 `json:"tps_per_user,omitempty"`
	Turns      int     `json:"turns"`
	TTFTMet    Num     `json:"ttft_met_share"`
	SpeedMet   Num     `json:"speed_met_share"`
	BothMet    Num     `json:"both_met_share"`
}

// RowValues are per-row values of a turn log, in log order; NaN where a row has
// none.
type RowValues struct {
	OSL, ISL, TPOTMs []float64
}

// TurnSample is one completed turn, kept for the plots.
type TurnSample struct {
	// InWindow is false for a turn issued after the window closed (kept for the
	// full-run OSL histogram only).
	InWindow    bool
	Domain      string
	ClientIndex int
	ISL         float64 // NaN when unknown
	OSL         float64 // NaN when unknown
	TTFTMs      float64 // NaN when no first token
	TPOTMs      float64 // NaN when no TPOT sample
	// IssuedNs and CompletedNs are the turn's times on the run clock.
	IssuedNs, CompletedNs int64
}

// histogramBins is the number of buckets of every summary histogram.
const histogramBins = 20

type trajectory struct {
	startNs, lastDoneNs, delayNs int64
	tokens                       float64
	ok, tracked                  bool
	seen                         bool
}

// Accumulator folds a run's turn log into a Point, one record at a time (Add), and
// computes the metrics in Close. It keeps the per-turn samples that percentiles
// need and nothing else.
type Accumulator struct {
	m   schemas.RunManifest
	tok TokenCounter
	isl ISLCounter
	err error

	p Point
	// ref folds the same records as the reference client's metrics aggregator
	// would have folded their events: result_summary.json (summary.go).
	ref         refFold
	cur         curTurn
	windowStart int64
	// rows are the per-row values of the records folded since DropRows.
	rows RowValues

	ttft, tpot, itl, lat, lag   Series
	islS, oslS, oslAll, rate    Series
	outTokens                   float64
	turnTimeNs                  int64
	cached, prompt              int64
	windowEnd                   int64
	trajs                       map[int32]*trajectory
	tokenSourceUsage, islTokens bool
	tokErr, islErr              error
	tokFailures, islFailures    int
	islUsage                    bool
}

// NewAccumulator starts a fold for the run described by m. tok and isl may be nil:
// the counts then come from the server's usage and the point is unofficial.
func NewAccumulator(m schemas.RunManifest, tok TokenCounter, isl ISLCounter) *Accumulator {
	a := &Accumulator{m: m, tok: tok, isl: isl, trajs: map[int32]*trajectory{}}
	a.ref.init()
	a.p = Point{
		Counts:       map[string]int{},
		WindowCounts: map[string]int{},
		Domains:      map[string]*DomainMetrics{},
		ErrorKinds:   map[string]int{},
	}
	return a
}

func response(rec *schemas.TurnRecord) (schemas.Response, error) {
	r := schemas.Response{Content: rec.OutputContent, Reasoning: rec.OutputReasoning}
	if rec.OutputToolCalls != "" {
		if err := json.Unmarshal([]byte(rec.OutputToolCalls), &r.ToolCalls); err != nil {
			return r, fmt.Errorf("tool calls of session %q turn %d: %w", rec.SessionID, rec.Turn, err)
		}
	}
	return r, nil
}

// osl returns the output tokens of a completed turn and whether it has a count.
func (a *Accumulator) osl(rec *schemas.TurnRecord, r schemas.Response) (float64, bool, error) {
	if a.tok != nil {
		n, err := a.tok.CountOSL(r)
		if err == nil {
			return float64(n), true, nil
		}
		// Not fatal: the turn falls back to server usage and the point says so.
		a.tokFailures++
		if a.tokErr == nil {
			a.tokErr = fmt.Errorf("count output tokens of session %q turn %d: %w", rec.SessionID, rec.Turn, err)
		}
	}
	if rec.UsageCompletionTokens >= 0 {
		a.tokenSourceUsage = true
		return float64(rec.UsageCompletionTokens), true, nil
	}
	return 0, false, nil
}

// tpotTokens returns the tokens after the first chunk, as the reference's TPOT
// counts them: the first reasoning chunk dropped when there is reasoning, else
// the first content chunk, and for an answer of tool calls alone its first
// tool-call chunk (the row's tpot_tool_calls).
func (a *Accumulator) tpotTokens(rec *schemas.TurnRecord, r schemas.Response, osl float64, haveOSL bool) (float64, bool, error) {
	if a.tok != nil {
		var after []schemas.ToolCall
		var err error
		if rec.TPOTToolCalls != "" {
			err = json.Unmarshal([]byte(rec.TPOTToolCalls), &after)
		}
		n := 0
		if err == nil {
			n, err = a.tok.CountTPOTSuffix(tokens.TPOTSuffix(r, int(rec.FirstContentBytes), int(rec.FirstReasoningBytes), after, rec.TPOTToolCalls != ""))
		}
		if err == nil {
			return float64(n), true, nil
		}
		a.tokFailures++
		if a.tokErr == nil {
			a.tokErr = fmt.Errorf("count TPOT tokens of session %q turn %d: %w", rec.SessionID, rec.Turn, err)
		}
	}
	// Server usage: the first output-bearing chunk is taken to carry one token.
	if !haveOSL {
		return 0, false, nil
	}
	return osl - 1, true, nil
}

// Add folds one turn record in. Errors (a tokenizer failure, malformed tool calls)
// are kept and returned by Close.
func (a *Accumulator) Add(rec *schemas.TurnRecord) {
	if a.err != nil {
		return
	}
	if err := a.add(rec); err != nil {
		a.err = err
	}
}

func (a *Accumulator) add(rec *schemas.TurnRecord) error {
	a.cur = curTurn{}
	if err := a.addPoint(rec); err != nil {
		return err
	}
	return a.addRef(rec)
}

// curTurn is what addPoint counted of the record being folded, for addRef.
type curTurn struct {
	resp              schemas.Response
	haveResp          bool
	osl               float64
	haveOSL           bool
	tpotTokens        float64
	haveTPOT          bool
	isl               float64
	haveISL, triedISL bool
}

func (a *Accumulator) addPoint(rec *schemas.TurnRecord) error {
	// one row of per-row values per record, filled as the metrics count them
	row := len(a.rows.OSL)
	a.rows.OSL = append(a.rows.OSL, math.NaN())
	a.rows.ISL = append(a.rows.ISL, math.NaN())
	a.rows.TPOTMs = append(a.rows.TPOTMs, math.NaN())
	if k := runlog.ErrorKind(rec.Status, rec.HTTPStatus, rec.Error); k != "" {
		a.p.ErrorKinds[k]++
	}
	a.p.Counts[rec.Status]++
	issued := runlog.Issued(rec.Status, rec.IssuedNs)
	tracked := issued && rec.InWindow
	ok := rec.Status == schemas.StatusOK

	t := a.trajs[rec.Trajectory]
	if t == nil {
		t = &trajectory{ok: true, tracked: true, startNs: math.MaxInt64}
		a.trajs[rec.Trajectory] = t
	}
	t.seen = true
	t.ok = t.ok && ok
	t.tracked = t.tracked && tracked
	t.delayNs += rec.DelayNs
	if schemas.Issued(rec.Status) { // never-sent rows have no schedule
		t.startNs = min(t.startNs, rec.ScheduledNs-rec.DelayNs)
	}
	t.lastDoneNs = max(t.lastDoneNs, rec.CompletedNs)

	if !issued {
		a.p.TurnsNotIssued++
		return nil
	}
	var (
		r       schemas.Response
		osl     float64
		haveOSL bool
	)
	if ok {
		var err error
		if r, err = response(rec); err != nil {
			return err
		}
		if osl, haveOSL, err = a.osl(rec, r); err != nil {
			return err
		}
		a.cur.resp, a.cur.haveResp, a.cur.osl, a.cur.haveOSL = r, true, osl, haveOSL
		if haveOSL {
			a.oslAll.Add(osl)
			t.tokens += osl
			a.rows.OSL[row] = osl
		}
	}
	// The input tokens of every issued turn, in the window or not (turns.parquet's
	// isl, like osl, is there for every turn; in_window says which the metrics count).
	isl, haveISL, err := a.inputTokens(rec)
	if err != nil {
		return err
	}
	a.cur.isl, a.cur.haveISL, a.cur.triedISL = isl, haveISL, true
	islValue := math.NaN()
	if haveISL {
		islValue = isl
		a.rows.ISL[row] = isl
	}
	a.p.Flight = append(a.p.Flight, [2]int64{rec.IssuedNs, max(rec.CompletedNs, rec.IssuedNs)})
	if !tracked {
		a.p.TurnsExcludedByWindow++
		if ok && haveOSL {
			a.p.Samples = append(a.p.Samples, TurnSample{Domain: rec.Domain, ClientIndex: int(rec.ClientIndex),
				ISL: islValue, OSL: osl, TTFTMs: math.NaN(), TPOTMs: math.NaN(), IssuedNs: rec.IssuedNs, CompletedNs: rec.CompletedNs})
		}
		return nil
	}
	a.p.WindowCounts[rec.Status]++
	a.p.Issued++
	dm := a.p.Domains[rec.Domain]
	if dm == nil {
		dm = &DomainMetrics{}
		a.p.Domains[rec.Domain] = dm
	}
	dm.Issued++
	if rec.CompletedNs > 0 {
		a.windowEnd = max(a.windowEnd, rec.CompletedNs)
	}
	a.lag.Add(float64(rec.IssuedNs-rec.ScheduledNs) / 1e6)
	if !ok {
		a.p.Failed++
		dm.Failed++
		return nil
	}
	a.p.Completed++
	dm.Completed++

	s := TurnSample{InWindow: true, Domain: rec.Domain, ClientIndex: int(rec.ClientIndex), ISL: math.NaN(), OSL: math.NaN(), TTFTMs: math.NaN(),
		TPOTMs: math.NaN(), IssuedNs: rec.IssuedNs, CompletedNs: rec.CompletedNs}
	latNs := rec.CompletedNs - rec.IssuedNs
	a.lat.Add(float64(latNs) / 1e6)
	dm.lat.Add(float64(latNs) / 1e6)
	a.turnTimeNs += latNs
	dm.turnTimeNs += latNs
	if haveOSL {
		a.outTokens += osl
		dm.outTokens += osl
		dm.outTurns++
		a.oslS.Add(osl)
		s.OSL = osl
	} else {
		a.p.MissingOSL++
	}
	if rec.FirstTokenNs > 0 {
		ttft := float64(rec.FirstTokenNs-rec.IssuedNs) / 1e6
		a.ttft.Add(ttft)
		dm.ttft.Add(ttft)
		s.TTFTMs = ttft
		if a.m.Config.Stream {
			n, have, err := a.tpotTokens(rec, r, osl, haveOSL)
			if err != nil {
				return err
			}
			a.cur.tpotTokens, a.cur.haveTPOT = n, have
			if have && n > 0 {
				v := float64(rec.CompletedNs-rec.FirstTokenNs) / 1e6 / n
				if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
					a.tpot.Add(v)
					dm.tpot.Add(v)
					s.TPOTMs = v
					a.rows.TPOTMs[row] = v
				}
			}
		}
		prev := int64(0)
		for i, ct := range rec.ChunkTimesNs {
			if i == 0 && ct == 0 {
				continue
			}
			a.itl.Add(float64(ct-prev) / 1e6)
			prev = ct
		}
	}
	if haveISL {
		a.islS.Add(isl)
		s.ISL = isl
	}
	if rec.UsageCachedTokens >= 0 && rec.UsagePromptTokens > 0 {
		a.cached += int64(rec.UsageCachedTokens)
		a.prompt += int64(rec.UsagePromptTokens)
		a.p.PrefixCacheTurns++
	}
	a.p.Samples = append(a.p.Samples, s)
	return nil
}

func (a *Accumulator) inputTokens(rec *schemas.TurnRecord) (float64, bool, error) {
	if a.isl != nil {
		n, ok, err := a.isl(rec)
		if err != nil {
			// Not fatal: the turn falls back to server usage and the point says so.
			a.islFailures++
			if a.islErr == nil {
				a.islErr = fmt.Errorf("count input tokens of session %q turn %d: %w", rec.SessionID, rec.Turn, err)
			}
		} else if ok {
			a.islTokens = true
			return float64(n), true, nil
		}
	}
	if rec.UsagePromptTokens >= 0 {
		a.islUsage = true
		return float64(rec.UsagePromptTokens), true, nil
	}
	return 0, false, nil
}

// Rows are the per-row values of the records folded since the last DropRows
// (since the start: every record's), one row per record, for the report's
// turns.parquet: OSL, ISL and TPOT as the metrics counted them. They are valid
// until the next Add or DropRows.
func (a *Accumulator) Rows() RowValues { return a.rows }

// DropRows forgets the per-row values taken so far (Rows), so that a fold of a
// long log keeps those of one batch at a time.
func (a *Accumulator) DropRows() {
	a.rows = RowValues{OSL: a.rows.OSL[:0], ISL: a.rows.ISL[:0], TPOTMs: a.rows.TPOTMs[:0]}
}

// SetWindowStart sets when performance tracking started on the records' clock
// (runread.TurnScan.WindowStartNs); the default is 0, a turn log's.
func (a *Accumulator) SetWindowStart(ns int64) { a.windowStart = ns }

// Close computes the point's metrics. The Accumulator must not be used after.
func (a *Accumulator) Close() (*Point, error) {
	if a.err != nil {
		return nil, a.err
	}
	p := &a.p
	// The run clock starts when the run starts tracking (an event log's clock just
	// before it: SetWindowStart).
	p.WindowStartNs = a.windowStart
	p.WindowEndNs = max(a.windowEnd, a.windowStart)
	durS := float64(p.WindowEndNs-p.WindowStartNs) / 1e9
	p.WindowDurationS = Num(durS)
	if durS <= 0 {
		p.WindowDurationS = Num(math.NaN())
	}

	p.OutputTokensPerTurnTotal = int64(a.outTokens)
	p.E2ETurnTimeSecondsTotal = Num(float64(a.turnTimeNs) / 1e9)
	p.SystemTPS = Num(a.outTokens / float64(p.WindowDurationS))
	p.E2EAvgInteractivity = div(a.outTokens, float64(a.turnTimeNs)/1e9)
	if a.oslS.Len() == 0 && p.MissingOSL > 0 {
		// Turns completed and none had a token count (reference events carry no
		// usage, and no tokenizer was given): the output rates were not evaluated,
		// and are null, not a measured 0.
		p.SystemTPS, p.E2EAvgInteractivity = Num(math.NaN()), Num(math.NaN())
	}

	p.TokenTimes.set(&a.ttft, &a.tpot)
	p.ITLP50Ms, p.ITLP90Ms, p.ITLP99Ms = Num(a.itl.P(50)), Num(a.itl.P(90)), Num(a.itl.P(99))
	if n, burst := coalesced(a.itl.Sorted()); burst > 0 {
		p.ITLP50Ms, p.ITLP90Ms, p.ITLP99Ms = Num(math.NaN()), Num(math.NaN()), Num(math.NaN())
		p.ITLNote = fmt.Sprintf("not shown: %d of %d chunk gaps are under %g µs, chunks the server wrote together (ITL would time the client's parsing)",
			burst, n, CoalescedGapMs*1000)
	}
	p.LatencyP50Ms, p.LatencyP90Ms, p.LatencyP99Ms = Num(a.lat.P(50)), Num(a.lat.P(90)), Num(a.lat.P(99))
	p.TurnsPerS = div(float64(p.Completed), float64(p.WindowDurationS))
	for _, d := range p.Domains {
		d.OutputTokensPerTurnTotal = int64(d.outTokens)
		d.E2EAvgInteractivity = div(d.outTokens, float64(d.turnTimeNs)/1e9)
		if d.outTurns == 0 && d.Completed > 0 {
			d.E2EAvgInteractivity = Num(math.NaN()) // no token counted: not evaluated
		}
		d.TokenTimes.set(&d.ttft, &d.tpot)
		d.LatencyP50Ms, d.LatencyP90Ms, d.LatencyP99Ms = Num(d.lat.P(50)), Num(d.lat.P(90)), Num(d.lat.P(99))
	}
	p.ClientLagP99Ms = Num(a.lag.P(99))
	if p.Completed < MinWindowTurns || 4*p.Issued < p.Issued+p.TurnsExcludedByWindow {
		p.WindowNote = fmt.Sprintf("short window: %d turns completed in %.2f s, %d of %d issued turns; its throughput is noise (want >= %d turns and a quarter of the run)",
			p.Completed, durS, p.Issued, p.Issued+p.TurnsExcludedByWindow, MinWindowTurns)
	}
	p.ISL = a.islS.Stats(histogramBins)
	p.OSL = a.oslS.Stats(histogramBins)
	p.OSLFullRun = a.oslAll.Stats(histogramBins)
	p.PrefixCacheHitRatio = Num(math.NaN())
	if a.prompt > 0 {
		p.PrefixCacheHitRatio = Num(float64(a.cached) / float64(a.prompt))
	}

	for _, t := range a.trajs {
		active := float64(t.lastDoneNs-t.startNs-t.delayNs) / 1e9
		if t.seen && t.ok && t.tracked && t.startNs != math.MaxInt64 && active > 0 {
			a.rate.Add(t.tokens / active)
		}
	}
	p.ProgressRate = a.rate.Stats(histogramBins)

	switch {
	case a.tok != nil && a.tokenSourceUsage:
		p.TokenSource = "tokenizer:" + a.tok.Name() + "+server_usage"
	case a.tok != nil:
		p.TokenSource = "tokenizer:" + a.tok.Name()
	case a.tokenSourceUsage:
		p.TokenSource = "server_usage"
	default:
		p.TokenSource = "none"
	}
	switch {
	case a.islTokens && !a.islUsage:
		p.ISLSource = "tokenizer"
	case a.islTokens:
		p.ISLSource = "tokenizer+server_usage"
	case a.islUsage:
		p.ISLSource = "server_usage"
	default:
		p.ISLSource = "none"
	}
	p.Unofficial = a.tok == nil || a.tokenSourceUsage || p.ISLSource != "tokenizer"
	if a.tokErr != nil {
		p.TokenNote = fmt.Sprintf("the reference tokenizer failed on %d counts, which used server usage instead; first: %v", a.tokFailures, a.tokErr)
	}
	if a.islErr != nil {
		note := fmt.Sprintf("reference ISL failed on %d turns, which used server usage instead; first: %v", a.islFailures, a.islErr)
		if p.ISLNote != "" {
			note = p.ISLNote + "; " + note
		}
		p.ISLNote = note
	}
	a.ref.close(a.m.Config.Stream)
	p.Summary = a.summary()
	return p, nil
}

// CoalescedGapMs is the chunk gap under which two chunks arrived together: no
// server computes a token in 10 µs, so such gaps are the client parsing a burst.
const CoalescedGapMs = 0.01

// MinWindowTurns is the fewest completed turns a performance window must hold
// for its throughput to be more than noise.
const MinWindowTurns = 200

// coalesced counts the gaps (sorted) and those under CoalescedGapMs, the second
// 0 unless they are most of the gaps.
func coalesced(gaps []float64) (n, burst int) {
	n = len(gaps)
	for _, g := range gaps {
		if g >= CoalescedGapMs {
			break
		}
		burst++
	}
	if 2*burst <= n {
		burst = 0
	}
	return n, burst
}

func div(a, b float64) Num {
	if b == 0 || math.IsNaN(b) {
		return Num(math.NaN())
	}
	return Num(a / b)
}

// ApplySLO sets p.SLO: the share of the point's completed window turns whose TTFT
// is at most ttftMs and whose decode speed (1000 / TPOT ms) is at least
// tpsPerUser; a threshold of 0 is not applied (and always met).
func (p *Point) ApplySLO(ttftMs, tpsPerUser float64) {
	if ttftMs <= 0 && tpsPerUser <= 0 {
		p.SLO = nil
		return
	}
	v := &SLOView{TTFTMs: ttftMs, TPSPerUser: tpsPerUser}
	var ttftOK, speedOK, both int
	for _, s := range p.Samples {
		if !s.InWindow {
			continue
		}
		v.Turns++
		t := ttftMs <= 0 || (!math.IsNaN(s.TTFTMs) && s.TTFTMs <= ttftMs)
		sp := tpsPerUser <= 0 || (!math.IsNaN(s.TPOTMs) && 1000/s.TPOTMs >= tpsPerUser)
		if t {
			ttftOK++
		}
		if sp {
			speedOK++
		}
		if t && sp {
			both++
		}
	}
	n := float64(v.Turns)
	v.TTFTMet, v.SpeedMet, v.BothMet = div(float64(ttftOK), n), div(float64(speedOK), n), div(float64(both), n)
	p.SLO = v
}

// FoldRun folds a run's records into a Point.
func FoldRun(m schemas.RunManifest, recs []schemas.TurnRecord, tok TokenCounter, isl ISLCounter) (*Point, error) {
	a := NewAccumulator(m, tok, isl)
	for i := range recs {
		a.Add(&recs[i])
	}
	return a.Close()
}
