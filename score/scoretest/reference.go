package scoretest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/percentile"
	"github.com/agentrace/agentrace/schemas"
)

// ReferenceOptions shapes a synthetic reference client run folder.
type ReferenceOptions struct {
	RunOptions
	// DatasetPath is what config.yaml names as the performance dataset.
	DatasetPath string
	// TTFT and TPOT model the server: ttft = TTFTBase + TTFTPerSlot x concurrency,
	// tpot = TPOTBase + TPOTPerSlot x concurrency (nanoseconds); zero values take
	// 50 ms + 2 ms x c and 10 ms + 0.2 ms x c.
	TTFTBase, TTFTPerSlot, TPOTBase, TPOTPerSlot int64
}

// timedTurn is one client turn with its simulated times (ns from the run start).
type timedTurn struct {
	rec     schemas.TurnRecord
	uuid    string
	tokens  int
	chunks  []int64
	errType string
}

// ReferenceRun is what WriteReferenceRun wrote, for tests to check against.
type ReferenceRun struct {
	// Records are the turns as a turn log would hold them (times from the run's
	// start).
	Records []schemas.TurnRecord
	// Summary is the published result summary.
	Summary map[string]any
	// WindowStopNs is when performance tracking stopped.
	WindowStopNs int64
}

// WriteReferenceRun writes a reference client run folder for dataset d, as the
// reference's writers lay it out (mlcommons/endpoints at ea332753:
// commands/benchmark/execute.py writes config.yaml, report.txt, events.jsonl,
// sample_idx_map.json and performance/result_summary.json, metrics/report.py
// shapes the summary, the metrics aggregator writes metrics/final_snapshot.json):
// a closed loop of o.Concurrency trajectories over o.Repeats passes, each turn's
// output the dataset's recorded answer with probability o.Fidelity, failures at
// o.FailRate (the rest of the trajectory then skipped, as register_skipped does).
// accuracy/accuracy_results.json is not written (its inline score needs the
// scorer: see the caller). Token counts are the usage-style estimate of
// fillOutput, which the published OSL figures use.
//
// The result summary it writes is an approximation of the reference's (ten
// linear histogram buckets, latency over the turns that completed ok, no
// early-stopping estimates, no ISL): enough for scoring tests, not for an audit.
// A fixture that must read as the reference wrote it replaces it (WriteSummary)
// with a summary folded from the events as the reference's aggregator folds them.
func WriteReferenceRun(dir string, d *datasets.Dataset, o ReferenceOptions) (*ReferenceRun, error) {
	if o.Repeats <= 0 {
		o.Repeats = 1
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	def := func(v *int64, x int64) {
		if *v == 0 {
			*v = x
		}
	}
	def(&o.TTFTBase, 50e6)
	def(&o.TTFTPerSlot, 2e6)
	def(&o.TPOTBase, 10e6)
	def(&o.TPOTPerSlot, 200e3)
	c := int64(o.Concurrency)
	ttft, tpot := o.TTFTBase+o.TTFTPerSlot*c, o.TPOTBase+o.TPOTPerSlot*c
	r := rand.New(rand.NewPCG(o.Seed, 7))

	// Trajectories in start order: pass after pass over the dataset.
	type traj struct{ ci, rep int }
	var trajs []traj
	for rep := 1; rep <= o.Repeats; rep++ {
		for ci := range d.Conversations {
			trajs = append(trajs, traj{ci, rep})
		}
	}
	// Closed loop: each slot runs one trajectory at a time, its turns back to back.
	slots := make([]int64, min(o.Concurrency, len(trajs)))
	next := 0
	var turns []*timedTurn
	stop := int64(-1)
	uuidN := 0
	for next < len(trajs) || stop < 0 {
		// The slot that frees first takes the next trajectory.
		si := 0
		for i := range slots {
			if slots[i] < slots[si] {
				si = i
			}
		}
		if next >= len(trajs) {
			stop = slots[si] // no trajectory left to start: tracking stops
			break
		}
		tr := trajs[next]
		next++
		cv := &d.Conversations[tr.ci]
		msgs := d.Messages(tr.ci)
		now := slots[si] + 1000
		failed := false
		for _, t := range d.ConversationTurns(tr.ci) {
			uuidN++
			tt := &timedTurn{uuid: fmt.Sprintf("%032x", uuidN)}
			rec := &tt.rec
			*rec = schemas.TurnRecord{SessionID: datasets.SessionID(cv.ConversationID, tr.rep), ConversationID: cv.ConversationID,
				Repeat: int32(tr.rep), Turn: t.Turn, ClientIndex: t.ClientIndex, Domain: cv.Domain,
				UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1}
			switch {
			case failed:
				rec.Status, rec.IssuedNs, rec.CompletedNs = schemas.StatusAborted, now, now
				tt.errType = "TurnAbortedByPriorFailure"
			case r.Float64() < o.FailRate:
				rec.Status, rec.Error, failed = schemas.StatusError, "HTTP 500", true
				rec.IssuedNs, rec.CompletedNs = now, now+ttft/2
				tt.errType = "HTTPError"
				now = rec.CompletedNs + 1000
			default:
				rec.Status = schemas.StatusOK
				fillOutput(rec, r, msgs, t.ExpectedTurn, r.Float64() < o.Fidelity)
				tt.tokens = int(rec.UsageCompletionTokens)
				rec.IssuedNs = now
				rec.FirstTokenNs = now + ttft
				rec.CompletedNs = rec.FirstTokenNs + int64(tt.tokens)*tpot
				for k := int64(0); k < int64(tt.tokens); k += 4 {
					tt.chunks = append(tt.chunks, rec.FirstTokenNs+k*tpot)
				}
				now = rec.CompletedNs + 1000
			}
			rec.InWindow = stop < 0 || rec.IssuedNs <= stop
			turns = append(turns, tt)
		}
		slots[si] = now
	}
	for _, tt := range turns {
		tt.rec.InWindow = tt.rec.IssuedNs <= stop
	}
	sort.SliceStable(turns, func(i, j int) bool { return turns[i].rec.IssuedNs < turns[j].rec.IssuedNs })

	if err := os.MkdirAll(filepath.Join(dir, "performance"), 0o755); err != nil {
		return nil, err
	}
	os.MkdirAll(filepath.Join(dir, "metrics"), 0o755)
	out := &ReferenceRun{WindowStopNs: stop}
	for _, tt := range turns {
		out.Records = append(out.Records, tt.rec)
	}
	if err := writeEvents(filepath.Join(dir, "events.jsonl"), turns, stop); err != nil {
		return nil, err
	}
	idx := map[string]int{}
	for i, tt := range turns {
		idx[tt.uuid] = i
	}
	if err := writeJSON(filepath.Join(dir, "sample_idx_map.json"), map[string]any{"performance": idx}); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`name: "agentrace-synthetic-reference-run"
version: "1.0"
type: "online"

model_params:
  name: %q
  temperature: 1.0
  max_new_tokens: 8192

datasets:
  - name: agentic_combined
    type: performance
    path: %q
    accuracy_config:
      eval_method: agentic_inference_inline
    agentic_inference:
      enable_salt: true
      inject_tool_delay: true
      num_trajectories_to_issue: %d
      stop_issuing_on_first_user_complete: false

settings:
  runtime:
    min_duration_ms: 0
  load_pattern:
    type: agentic_inference
    target_concurrency: %d

endpoint_config:
  endpoints:
    - "http://127.0.0.1:8000"
  api_type: openai

report_dir: results/c%d
`, o.Model, o.DatasetPath, len(trajs), o.Concurrency, o.Concurrency)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	out.Summary = summary(turns, stop, o)
	b, err := json.Marshal(out.Summary)
	if err != nil {
		return nil, err
	}
	if err := WriteSummary(dir, b, o.Concurrency, stop); err != nil {
		return nil, err
	}
	return out, nil
}

// WriteSummary writes a run folder's published summary files from a
// result_summary.json: performance/result_summary.json (indented by 2, its key
// order kept), the tracked counters of metrics/final_snapshot.json and
// metrics/.ready, and report.txt's summary lines. A fixture builder calls it
// again to replace the approximate summary WriteReferenceRun writes with one
// counted as the reference counts (agentrace's report folds the events so: see
// score/fixture_test.go).
func WriteSummary(dir string, summaryJSON []byte, concurrency int, stopNs int64) error {
	var sm struct {
		Issued    int64    `json:"n_samples_issued"`
		Completed int64    `json:"n_samples_completed"`
		Failed    int64    `json:"n_samples_failed"`
		Duration  *int64   `json:"duration_ns"`
		QPS       *float64 `json:"qps"`
		TPS       *float64 `json:"tps"`
	}
	if err := json.Unmarshal(summaryJSON, &sm); err != nil {
		return fmt.Errorf("result summary: %w", err)
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, summaryJSON, "", "  "); err != nil {
		return fmt.Errorf("result summary: %w", err)
	}
	ind.WriteByte('\n')
	for _, d := range []string{"performance", "metrics"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "performance", "result_summary.json"), ind.Bytes(), 0o644); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "metrics", "final_snapshot.json"), map[string]any{
		"state": "complete", "n_pending_tasks": 0, "timestamp_ns": stopNs,
		"metrics": []map[string]any{
			{"type": "counter", "name": "tracked_samples_issued", "value": sm.Issued},
			{"type": "counter", "name": "tracked_samples_completed", "value": sm.Completed},
			{"type": "counter", "name": "tracked_samples_failed", "value": sm.Failed},
			{"type": "counter", "name": "tracked_duration_ns", "value": sm.Duration},
		}}); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "metrics", ".ready"), nil, 0o644); err != nil {
		return err
	}
	num := func(v *float64) string {
		if v == nil {
			return "None"
		}
		return strconv.FormatFloat(*v, 'f', 4, 64)
	}
	dur := "None"
	if sm.Duration != nil {
		dur = strconv.FormatInt(*sm.Duration, 10)
	}
	rep := fmt.Sprintf("----------------- Summary -----------------\nConcurrency: %d\nSamples issued: %d\nSamples completed: %d\nSamples failed: %d\nDuration (ns): %s\nQPS: %s\nTPS: %s\n",
		concurrency, sm.Issued, sm.Completed, sm.Failed, dur, num(sm.QPS), num(sm.TPS))
	return os.WriteFile(filepath.Join(dir, "report.txt"), []byte(rep), 0o644)
}

// writeEvents writes the event log: session events, and per sample its issued,
// recv and complete events (an error event before a failed complete), in time
// order.
func writeEvents(path string, turns []*timedTurn, stop int64) error {
	type ev struct {
		ts   int64
		line []byte
	}
	var evs []ev
	add := func(ts int64, typ, uuid, conv string, turn any, data any, extra map[string]any) {
		m := map[string]any{"event_type": typ, "timestamp_ns": ts, "sample_uuid": uuid, "conversation_id": conv, "turn": turn, "data": data}
		for k, v := range extra {
			m[k] = v
		}
		b := orderedEvent(m)
		evs = append(evs, ev{ts, b})
	}
	base := int64(1_000_000_000)
	add(base, "session.started", "", "", nil, nil, nil)
	add(base, "session.start_performance_tracking", "", "", nil, nil, nil)
	for _, tt := range turns {
		r := &tt.rec
		prompt := []any{"PromptData", nil, nil, []any{map[string]any{"role": "user", "content": "..."}}, nil, nil, nil, nil}
		if tt.errType == "TurnAbortedByPriorFailure" {
			prompt = []any{"PromptData", nil, nil, nil, nil, nil, nil, nil}
		}
		add(base+r.IssuedNs, "sample.issued", tt.uuid, r.SessionID, r.Turn, prompt, nil)
		for i, ct := range tt.chunks {
			typ := "sample.recv_non_first"
			if i == 0 {
				typ = "sample.recv_first"
			}
			add(base+ct, typ, tt.uuid, r.SessionID, r.Turn, nil, nil)
		}
		if r.Status != schemas.StatusOK {
			add(base+r.CompletedNs, "error.generic", tt.uuid, r.SessionID, r.Turn, []any{"ErrorData", tt.errType, r.Error}, nil)
			add(base+r.CompletedNs, "sample.complete", tt.uuid, r.SessionID, r.Turn, nil, nil)
			continue
		}
		// Output and reasoning as streamed chunks; tool calls as streamed deltas.
		var calls []any
		if r.OutputToolCalls != "" {
			var tc []schemas.ToolCall
			json.Unmarshal([]byte(r.OutputToolCalls), &tc)
			for _, c := range tc {
				args := c.Function.Arguments
				half := len(args) / 2
				calls = append(calls,
					[]any{map[string]any{"index": c.Index, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Function.Name, "arguments": args[:half]}}},
					[]any{map[string]any{"index": c.Index, "function": map[string]any{"arguments": args[half:]}}})
			}
		}
		var reasoning any
		if r.OutputReasoning != "" {
			reasoning = splitChunks(r.OutputReasoning)
		}
		data := []any{"TextModelOutput", splitChunks(r.OutputContent), reasoning, calls}
		if calls == nil {
			data = data[:3]
		}
		fr := "stop"
		if calls != nil {
			fr = "tool_calls"
		}
		add(base+r.CompletedNs, "sample.complete", tt.uuid, r.SessionID, r.Turn, data, map[string]any{"finish_reason": fr})
	}
	add(base+stop, "session.stop_performance_tracking", "", "", nil, nil, nil)
	last := stop
	for _, tt := range turns {
		last = max(last, tt.rec.CompletedNs)
	}
	add(base+last+1, "session.ended", "", "", nil, nil, nil)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].ts < evs[j].ts })
	var b bytes.Buffer
	for _, e := range evs {
		b.Write(e.line)
		b.WriteByte('\n')
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// splitChunks splits text in two streamed chunks (one when short).
func splitChunks(s string) []string {
	if len(s) < 8 {
		return []string{s}
	}
	h := len(s) / 2
	for h < len(s) && (s[h]&0xC0) == 0x80 {
		h++
	}
	return []string{s[:h], s[h:]}
}

// orderedEvent writes an event with the reference's key order.
func orderedEvent(m map[string]any) []byte {
	keys := []string{"event_type", "timestamp_ns", "sample_uuid", "conversation_id", "turn", "data", "finish_reason"}
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			continue
		}
		if !first {
			b.WriteString(", ")
		}
		first = false
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(v)
		b.Write(kb)
		b.WriteString(": ")
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// lower is the rules' "lower" percentile of sorted values.
func lower(sorted []float64, p float64) float64 {
	v, _ := percentile.Lower(sorted, p)
	return v
}

// statBlock is a reference stat block of values.
func statBlock(vals []float64) map[string]any {
	if len(vals) == 0 {
		return map[string]any{}
	}
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	var sum, sq float64
	for _, v := range s {
		sum += v
		sq += v * v
	}
	n := float64(len(s))
	std := 0.0
	if len(s) > 1 {
		std = math.Sqrt(math.Max(0, (sq-sum*sum/n)/(n-1)))
	}
	pct := map[string]float64{}
	for _, p := range []float64{50, 90, 95, 99, 99.9} {
		pct[strconv.FormatFloat(p, 'f', 1, 64)] = lower(s, p)
	}
	// Ten equal-width buckets.
	lo, hi := s[0], s[len(s)-1]
	w := (hi - lo) / 10
	buckets, counts := [][2]float64{}, []int{}
	for i := 0; i < 10; i++ {
		a, b := lo+float64(i)*w, lo+float64(i+1)*w
		if i == 9 {
			b = hi
		}
		buckets = append(buckets, [2]float64{a, b})
		cnt := 0
		for _, v := range s {
			if (v >= a && v < b) || (i == 9 && v == hi) {
				cnt++
			}
		}
		counts = append(counts, cnt)
	}
	return map[string]any{"total": sum, "min": s[0], "max": s[len(s)-1], "median": pct["50.0"], "avg": sum / n,
		"std_dev": std, "percentiles": pct, "histogram": map[string]any{"buckets": buckets, "counts": counts}}
}

// summary builds the published result summary from the simulated turns: counts
// and series over the tracked turns (issued before tracking stopped), OSL full
// run over every completed turn, in the reference's field names (times in ns).
func summary(turns []*timedTurn, stop int64, o ReferenceOptions) map[string]any {
	var issued, completed, failed int
	var ttft, tpot, lat, osl, oslAll []float64
	var end int64
	finish := map[string]int{"stop": 0, "length": 0, "tool_calls": 0, "content_filter": 0, "function_call": 0, "other": 0}
	var outTok, turnNs float64
	for _, tt := range turns {
		r := &tt.rec
		if r.Status == schemas.StatusOK {
			oslAll = append(oslAll, float64(tt.tokens))
		}
		if !r.InWindow {
			continue
		}
		// As the reference client counts (testdata/refruns/c004-faults): every
		// tracked turn is completed, failed and skipped ones included, and the failed
		// ones are counted again as failed.
		issued++
		completed++
		end = max(end, r.CompletedNs)
		if r.Status != schemas.StatusOK {
			failed++
			continue
		}
		ttft = append(ttft, float64(r.FirstTokenNs-r.IssuedNs))
		if tt.tokens > 1 {
			tpot = append(tpot, float64(r.CompletedNs-r.FirstTokenNs)/float64(tt.tokens-1))
		}
		lat = append(lat, float64(r.CompletedNs-r.IssuedNs))
		osl = append(osl, float64(tt.tokens))
		outTok += float64(tt.tokens)
		turnNs += float64(r.CompletedNs - r.IssuedNs)
		if r.OutputToolCalls != "" {
			finish["tool_calls"]++
		} else {
			finish["stop"]++
		}
	}
	durS := float64(end) / 1e9
	return map[string]any{
		"version": "synthetic", "git_sha": nil, "test_started_at": 0,
		"n_samples_issued": issued, "n_samples_completed": completed, "n_samples_failed": failed,
		"duration_ns": end, "state": "complete", "complete": true,
		"ttft": statBlock(ttft), "tpot": statBlock(tpot), "latency": statBlock(lat),
		"output_sequence_lengths": statBlock(osl), "input_sequence_lengths": map[string]any{},
		"legacy_loadgen_window_duration_ns": nil,
		"qps":                               float64(completed) / durS, "tps": outTok / durS,
		"finish_reason_counts":             finish,
		"run_config":                       map[string]any{"load_pattern": map[string]any{"type": "agentic_inference", "target_concurrency": o.Concurrency}},
		"e2e_avg_interactivity":            outTok / (turnNs / 1e9),
		"output_sequence_lengths_full_run": map[string]any{"output_sequence_lengths": statBlock(oslAll)},
	}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteJSON writes v as indented JSON (for fixture builders).
func WriteJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeJSON(path, v)
}

// EventsAsArray turns an events.jsonl into the submission tools' detail log: the
// events as one JSON array, indented by 2 (as json.dumps(events, indent=2)).
func EventsAsArray(jsonl []byte) ([]byte, error) {
	var evs []json.RawMessage
	for _, l := range strings.Split(strings.TrimSpace(string(jsonl)), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		evs = append(evs, json.RawMessage(l))
	}
	return json.MarshalIndent(evs, "", "  ")
}
