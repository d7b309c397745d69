package metrics

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/agentrace/agentrace/schemas"
)

// How a turn of the turn log maps to the events the reference client publishes
// for it (mlcommons/endpoints at ea332753: load_generator/session.py,
// agentic_inference_strategy.py) and so to what its metrics aggregator counts
// (async_utils/services/metrics_aggregator/aggregator.py, metrics_table.py):
//
//   - a turn sent (ok, error, timeout, cancelled) publishes ISSUED; a turn skipped
//     after an earlier failure of its trajectory (aborted) is published ISSUED too,
//     by register_skipped, with no prompt; a turn never sent because issuing stopped
//     (not_issued) publishes nothing;
//   - a failed turn (error, timeout, aborted) publishes ERROR then COMPLETE without
//     output; an ok turn COMPLETE with its output; a cancelled turn (cut in flight)
//     no COMPLETE;
//   - the aggregator tracks a sample issued while performance tracking is on (the
//     turn log's in_window) and counts, for tracked samples only: issued (ISSUED),
//     completed (every COMPLETE, failed ones included), failed (ERROR); the latency
//     of every COMPLETE (complete - issued; a skipped turn's is the instant between
//     its two events, 0 here); TTFT of the first chunk; ISL of every ISSUED with a
//     prompt; OSL and TPOT of every COMPLETE with a non-empty output; the finish
//     reason of every COMPLETE that carries one. The window's duration runs from the
//     start of tracking to the last COMPLETE of a tracked sample.
//
// So n_samples_issued counts the turns sent or skipped in the window (not the
// turns sent alone, as agentrace's "issued" does), n_samples_completed counts
// failed turns too, and completed + failed exceeds issued when a turn failed.

// refEvents is what the reference would have published for one turn.
type refEvents struct {
	// tracked: issued (ISSUED published) while performance tracking was on.
	tracked bool
	// sent: the request was sent (the ISSUED event carries a prompt).
	sent bool
	// completed: a COMPLETE event; failed: an ERROR event before it.
	completed, failed bool
	// firstToken: a first-chunk event.
	firstToken bool
}

func refEventsOf(rec *schemas.TurnRecord) refEvents {
	var e refEvents
	switch rec.Status {
	case schemas.StatusNotIssued:
		return e
	case schemas.StatusAborted:
		e.completed, e.failed = true, true
	case schemas.StatusOK, schemas.StatusError, schemas.StatusTimeout:
		e.sent = true
		// A sample still in flight when an event log ended has no COMPLETE.
		e.completed = rec.CompletedNs > 0
		e.failed = e.completed && rec.Status != schemas.StatusOK
	case schemas.StatusCancelled:
		e.sent = true
	default:
		e.sent = rec.IssuedNs > 0
	}
	e.tracked = rec.InWindow
	e.firstToken = e.sent && rec.FirstTokenNs > 0 && rec.IssuedNs > 0
	return e
}

// finishReasonKeys are the finish reasons the reference counts by name, in its
// order; any other is counted as "other".
var finishReasonKeys = []string{"stop", "length", "tool_calls", "content_filter", "function_call", "other"}

func finishReasonKey(r string) string {
	for _, k := range finishReasonKeys[:5] {
		if r == k {
			return k
		}
	}
	return "other"
}

// refFold holds the reference-semantics counts and series of a run.
type refFold struct {
	issued, completed, failed int
	endNs                     int64
	ttft, tpot, lat           refSeries
	osl, isl, oslAll          refSeries
	// full counts the turns of the full-run OSL block that oslAll does not hold.
	full   FullRunCounts
	finish map[string]int
	// outTokens and okTurnNs sum the OSL and latency of the tracked turns that
	// completed ok (the agentic inputs of e2e_avg_interactivity).
	outTokens float64
	okTurnNs  int64
	blocks    struct{ ttft, tpot, lat, osl, isl, oslAll *StatBlock }
}

func (f *refFold) init() {
	f.tpot.float = true
	f.finish = map[string]int{}
}

// close computes the blocks; without streaming the reference records no TTFT or
// TPOT series (they are {}).
func (f *refFold) close(stream bool) {
	f.blocks.ttft = f.ttft.block(true)
	f.blocks.tpot = f.tpot.block(true)
	f.blocks.lat = f.lat.block(true)
	f.blocks.osl = f.osl.block(false)
	f.blocks.isl = f.isl.block(false)
	f.blocks.oslAll = f.oslAll.block(false)
	if !stream {
		f.blocks.ttft, f.blocks.tpot = nil, nil
	}
}

// addRef folds a record as the reference's aggregator would fold its events,
// reusing what addPoint counted of it (a.cur).
func (a *Accumulator) addRef(rec *schemas.TurnRecord) error {
	f := &a.ref
	ev := refEventsOf(rec)
	ok := rec.Status == schemas.StatusOK
	// OSL of a completed non-empty output (the reference counts none for an empty
	// one), in or out of the window: the full-run block.
	haveOSL := ok && ev.completed && a.cur.haveResp && a.cur.haveOSL && !emptyResponse(a.cur.resp)
	switch {
	case haveOSL:
		f.oslAll.addInt(int64(a.cur.osl))
	case !ev.sent && !ev.completed:
		// Never issued: no sample, nothing to count.
	case !ev.completed:
		f.full.Missing++
	case !ok || !a.cur.haveResp || emptyResponse(a.cur.resp):
		f.full.Empty++
	default:
		f.full.Errors++
	}
	if !ev.tracked {
		return nil
	}
	f.issued++
	if ev.sent {
		isl, have := a.cur.isl, a.cur.haveISL
		if !a.cur.triedISL {
			var err error
			if isl, have, err = a.inputTokens(rec); err != nil {
				return err
			}
		}
		if have {
			f.isl.addInt(int64(isl))
		}
	}
	if ev.firstToken && a.m.Config.Stream {
		f.ttft.addInt(rec.FirstTokenNs - rec.IssuedNs)
	}
	if !ev.completed {
		return nil
	}
	f.completed++
	if ev.failed {
		f.failed++
	}
	lat := int64(0)
	if rec.IssuedNs > 0 && rec.CompletedNs > 0 {
		lat = rec.CompletedNs - rec.IssuedNs
		f.endNs = max(f.endNs, rec.CompletedNs)
	}
	f.lat.addInt(lat)
	if rec.FinishReason != "" {
		f.finish[finishReasonKey(rec.FinishReason)]++
	}
	if !ok {
		return nil
	}
	f.okTurnNs += lat
	if haveOSL {
		f.osl.addInt(int64(a.cur.osl))
		f.outTokens += a.cur.osl
		if ev.firstToken && a.cur.haveTPOT && a.cur.tpotTokens > 0 {
			f.tpot.addFloat(float64(rec.CompletedNs-rec.FirstTokenNs) / a.cur.tpotTokens)
		}
	}
	return nil
}

// FullRunCounts are the counters of the full-run OSL block
// (output_sequence_lengths_full_run), as the reference client counts the turns of
// the performance phase, in the window or after it (mlcommons/endpoints main line,
// metrics/full_run_osl.py compute_full_run_osl): Counted, the turns whose output
// tokens are in the block; Empty, those completed with nothing to count (an empty
// output, or a failed or skipped turn, whose COMPLETE carries no output);
// Errors, those with an output whose tokens could not be counted; Undecodable,
// lines of the event log that could not be decoded (never, from a turn log);
// Missing, those issued that never completed (cut in flight). Partial says that
// the block covers a subset of the turns (an error, an undecodable line or a
// missing turn): its mean must not feed the OSL gate.
type FullRunCounts struct {
	Counted, Empty, Errors, Undecodable, Missing int
}

// Partial tells whether the block's mean is over a subset of the turns.
func (c FullRunCounts) Partial() bool { return c.Errors+c.Undecodable+c.Missing > 0 }

// emptyResponse tells that a response has nothing to count: the reference then
// records no OSL sample (its OslTrigger skips an output without reasoning, tool
// calls or text).
func emptyResponse(r schemas.Response) bool {
	return r.Content == "" && r.Reasoning == "" && len(r.ToolCalls) == 0
}

// ResultSummary is result_summary.json: the reference client's performance summary
// (metrics/report.py Report, mlcommons/endpoints at ea332753) in its field names,
// order, units (times in ns) and number format, counted as the reference counts
// (see refEvents), followed by the agentic fields the submission checker reads
// (output_tokens_per_turn_total, e2e_turn_time_seconds_total,
// e2e_avg_interactivity, system_tps, tps_per_user, and
// output_sequence_lengths_full_run.output_sequence_lengths, the OSL block over
// every completed turn of the run) and agentrace's own notes on how the numbers
// were counted.
type ResultSummary struct {
	Version           string
	NSamplesIssued    int
	NSamplesCompleted int
	NSamplesFailed    int
	// DurationNs is the performance window's length; 0 is written null.
	DurationNs int64
	State      string
	Complete   bool
	TTFT       *StatBlock
	TPOT       *StatBlock
	Latency    *StatBlock
	OSL        *StatBlock
	ISL        *StatBlock
	// QPS and TPS are NaN (null) without a duration; TPS also without OSL.
	QPS, TPS           Num
	FinishReasonCounts map[string]int
	// Concurrency is run_config.load_pattern.target_concurrency.
	Concurrency int
	// Seeds are run_config's seeds, as the run's manifest records them (nil:
	// null, for manifests that do not).
	Seeds *schemas.RunSeeds

	OutputTokensPerTurnTotal int64
	E2ETurnTimeSecondsTotal  Num
	E2EAvgInteractivity      Num
	SystemTPS                Num
	TPSPerUser               Num
	OSLFullRun               *StatBlock
	// FullRun are the full-run block's counters.
	FullRun FullRunCounts
	// GitSHA is the revision of the agentrace that wrote the summary (its build's
	// vcs.revision), "" when unknown (written null).
	GitSHA string

	// Agentrace's notes.
	TokenSource string
	ISLSource   string
	Unofficial  bool
	// Tokenizer is the tokenizer the counts were made with, nil for none.
	Tokenizer *schemas.TokenizerUse
	Statuses  map[string]int
}

// Counting says, in result_summary.json, which turns its counts include.
const Counting = "as the reference client counts: n_samples_issued = turns issued in the performance window, " +
	"sent or skipped after an earlier failure of their trajectory (aborted); n_samples_completed = those that " +
	"completed, failed ones included; n_samples_failed = those that failed (error, timeout, aborted); " +
	"turns never sent because issuing stopped (not_issued) count nowhere, turns cut in flight (cancelled) " +
	"are issued and not completed"

func (a *Accumulator) summary() *ResultSummary {
	p := &a.p
	f := &a.ref
	dur := f.endNs - a.windowStart
	durS := float64(dur) / 1e9
	rs := &ResultSummary{
		Version:                  schemas.ToolVersion,
		NSamplesIssued:           f.issued,
		NSamplesCompleted:        f.completed,
		NSamplesFailed:           f.failed,
		DurationNs:               max(dur, 0),
		State:                    a.m.State,
		Complete:                 a.m.State == schemas.RunComplete,
		TTFT:                     f.blocks.ttft,
		TPOT:                     f.blocks.tpot,
		Latency:                  f.blocks.lat,
		OSL:                      f.blocks.osl,
		ISL:                      f.blocks.isl,
		QPS:                      Num(math.NaN()),
		TPS:                      Num(math.NaN()),
		SystemTPS:                Num(math.NaN()),
		FinishReasonCounts:       f.finish,
		Concurrency:              a.m.Config.Concurrency,
		Seeds:                    a.m.Config.Seeds,
		OutputTokensPerTurnTotal: int64(f.outTokens),
		E2ETurnTimeSecondsTotal:  Num(float64(f.okTurnNs) / 1e9),
		E2EAvgInteractivity:      div(f.outTokens, float64(f.okTurnNs)/1e9),
		TPSPerUser:               Num(math.NaN()),
		OSLFullRun:               f.blocks.oslAll,
		FullRun:                  f.full,
		GitSHA:                   schemas.GitSHA(),
		TokenSource:              p.TokenSource,
		ISLSource:                p.ISLSource,
		Unofficial:               p.Unofficial,
		Statuses:                 p.Counts,
	}
	if rs.State == "" {
		rs.State = "interrupted"
	}
	if durS > 0 {
		rs.QPS = Num(float64(f.completed) / durS)
		if f.blocks.osl != nil {
			rs.TPS = Num(f.blocks.osl.Total / durS)
		}
		// As the checker derives it: output_sequence_lengths.total / duration.
		total := 0.0
		if f.blocks.osl != nil {
			total = f.blocks.osl.Total
		}
		rs.SystemTPS = Num(total / durS)
	}
	if f.blocks.tpot != nil && f.blocks.tpot.Count > 0 {
		rs.TPSPerUser = div(1000, f.blocks.tpot.Percentile(90)/1e6)
	}
	return rs
}

// JSONObject writes a JSON object with keys in the order they are added, as the
// reference's files are: the result summary, and accuracy_results.json beside it.
type JSONObject struct {
	buf bytes.Buffer
	n   int
}

func (o *JSONObject) key(k string) {
	if o.n == 0 {
		o.buf.WriteByte('{')
	} else {
		o.buf.WriteByte(',')
	}
	o.n++
	o.buf.WriteString(strconv.Quote(k))
	o.buf.WriteByte(':')
}

// Raw adds a key with an already encoded value.
func (o *JSONObject) Raw(k string, v []byte) { o.key(k); o.buf.Write(v) }

// Val adds a key with v as encoding/json writes it.
func (o *JSONObject) Val(k string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	o.Raw(k, b)
	return nil
}

// Num adds a key with a number as msgspec writes it, null when not finite.
func (o *JSONObject) Num(k string, v Num) {
	if !v.Valid() {
		o.Raw(k, []byte("null"))
		return
	}
	o.Raw(k, jsonNum(nil, float64(v)))
}

// Bytes closes the object and returns it.
func (o *JSONObject) Bytes() []byte {
	if o.n == 0 {
		return []byte("{}")
	}
	o.buf.WriteByte('}')
	return o.buf.Bytes()
}

// MarshalJSON writes the summary in the reference's key order.
func (rs *ResultSummary) MarshalJSON() ([]byte, error) {
	var o JSONObject
	if err := o.Val("version", rs.Version); err != nil {
		return nil, err
	}
	if rs.GitSHA == "" {
		o.Raw("git_sha", []byte("null"))
	} else if err := o.Val("git_sha", rs.GitSHA); err != nil {
		return nil, err
	}
	o.Raw("test_started_at", []byte("0"))
	o.Raw("n_samples_issued", strconv.AppendInt(nil, int64(rs.NSamplesIssued), 10))
	o.Raw("n_samples_completed", strconv.AppendInt(nil, int64(rs.NSamplesCompleted), 10))
	o.Raw("n_samples_failed", strconv.AppendInt(nil, int64(rs.NSamplesFailed), 10))
	if rs.DurationNs > 0 {
		o.Raw("duration_ns", strconv.AppendInt(nil, rs.DurationNs, 10))
	} else {
		o.Raw("duration_ns", []byte("null"))
	}
	if err := o.Val("state", rs.State); err != nil {
		return nil, err
	}
	o.Raw("complete", strconv.AppendBool(nil, rs.Complete))
	for _, b := range []struct {
		k string
		v *StatBlock
	}{{"ttft", rs.TTFT}, {"tpot", rs.TPOT}, {"latency", rs.Latency}, {"output_sequence_lengths", rs.OSL}, {"input_sequence_lengths", rs.ISL}} {
		j, err := b.v.MarshalJSON()
		if err != nil {
			return nil, err
		}
		o.Raw(b.k, j)
	}
	o.Raw("legacy_loadgen_window_duration_ns", []byte("null"))
	o.Num("qps", rs.QPS)
	o.Num("tps", rs.TPS)
	var fr JSONObject
	for _, k := range finishReasonKeys {
		fr.Raw(k, strconv.AppendInt(nil, int64(rs.FinishReasonCounts[k]), 10))
	}
	o.Raw("finish_reason_counts", fr.Bytes())
	// run_config: the reference's keys; agentrace has no warmup and draws no random
	// numbers to schedule or load: its seeds are recorded as the reference records
	// them (null when the manifest has none).
	var lp, wu, rc JSONObject
	_ = lp.Val("type", "agentic_inference")
	lp.Raw("target_qps", []byte("null"))
	lp.Raw("target_concurrency", strconv.AppendInt(nil, int64(rs.Concurrency), 10))
	wu.Raw("enabled", []byte("false"))
	wu.Raw("n_requests", []byte("null"))
	wu.Raw("salt", []byte("false"))
	wu.Raw("drain", []byte("false"))
	seed := func(v func(*schemas.RunSeeds) json.Number) []byte {
		if rs.Seeds == nil || v(rs.Seeds) == "" {
			return []byte("null")
		}
		return []byte(v(rs.Seeds))
	}
	wu.Raw("warmup_random_seed", seed(func(s *schemas.RunSeeds) json.Number { return s.Warmup }))
	rc.Raw("load_pattern", lp.Bytes())
	rc.Raw("warmup", wu.Bytes())
	rc.Raw("scheduler_random_seed", seed(func(s *schemas.RunSeeds) json.Number { return s.Scheduler }))
	rc.Raw("dataloader_random_seed", seed(func(s *schemas.RunSeeds) json.Number { return s.Dataloader }))
	o.Raw("run_config", rc.Bytes())

	o.Raw("output_tokens_per_turn_total", strconv.AppendInt(nil, rs.OutputTokensPerTurnTotal, 10))
	o.Num("e2e_turn_time_seconds_total", rs.E2ETurnTimeSecondsTotal)
	o.Num("e2e_avg_interactivity", rs.E2EAvgInteractivity)
	o.Num("system_tps", rs.SystemTPS)
	o.Num("tps_per_user", rs.TPSPerUser)
	full, err := rs.OSLFullRun.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var fo JSONObject
	fo.Raw("output_sequence_lengths", full)
	c := rs.FullRun
	if rs.OSLFullRun != nil {
		c.Counted = rs.OSLFullRun.Count
	}
	for _, n := range []struct {
		k string
		v int
	}{{"n_turns_counted", c.Counted}, {"n_empty", c.Empty}, {"n_errors", c.Errors}, {"n_undecodable", c.Undecodable}, {"n_missing", c.Missing}} {
		fo.Raw(n.k, strconv.AppendInt(nil, int64(n.v), 10))
	}
	fo.Raw("partial", strconv.AppendBool(nil, c.Partial()))
	o.Raw("output_sequence_lengths_full_run", fo.Bytes())

	var ag JSONObject
	_ = ag.Val("tool_version", schemas.ToolVersion)
	_ = ag.Val("counting", Counting)
	_ = ag.Val("token_source", rs.TokenSource)
	_ = ag.Val("isl_source", rs.ISLSource)
	ag.Raw("unofficial", strconv.AppendBool(nil, rs.Unofficial))
	if rs.Tokenizer != nil {
		if err := ag.Val("tokenizer", rs.Tokenizer); err != nil {
			return nil, err
		}
	}
	if err := ag.Val("turns_by_status", rs.Statuses); err != nil {
		return nil, err
	}
	o.Raw("agentrace", ag.Bytes())
	return o.Bytes(), nil
}
