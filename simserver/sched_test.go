package simserver

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func tinyHardware(t *testing.T) Hardware {
	t.Helper()
	p, err := LookupHardware("tiny")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startEngine starts an engine of hardware p at speedup, closed when the test
// (or its synctest bubble) ends.
func startEngine(t *testing.T, p Hardware, speedup float64) *engine {
	e := newEngine(p, speedup, newMetrics(p, speedup), 1)
	t.Cleanup(e.close)
	return e
}

// submitTogether enqueues seqs in one go, so that the scheduler sees them all at
// its next step.
func submitTogether(e *engine, seqs ...*seq) {
	e.mu.Lock()
	for _, s := range seqs {
		s.arrival = time.Now()
		e.waiting = append(e.waiting, s)
	}
	e.mu.Unlock()
	e.wake <- struct{}{}
}

// tokenTimes waits for all of s's tokens and returns when each arrived, in
// seconds since start.
func tokenTimes(s *seq, start time.Time) []float64 {
	var ts []float64
	for len(ts) < s.target {
		<-s.notify
		for n := int(s.emitted.Load()); len(ts) < n; {
			ts = append(ts, time.Since(start).Seconds())
		}
	}
	return ts
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestStepTimes checks the step budget and the cost model on exact modelled
// times: prefill is chunked by the 64-token budget, a decode token rides along
// with another sequence's prefill chunk, and the speedup divides every duration.
func TestStepTimes(t *testing.T) {
	for _, speedup := range []float64{1, 10} {
		synctest.Test(t, func(t *testing.T) {
			e := startEngine(t, tinyHardware(t), speedup) // budget 64; step 1 ms + 10 µs a token + 100 µs a sequence
			start := time.Now()
			a := newSeq(10, 5, nil)
			b := newSeq(300, 2, nil)
			submitTogether(e, a, b)
			var ta, tb []float64
			var wg sync.WaitGroup
			wg.Go(func() { ta = tokenTimes(a, start) })
			wg.Go(func() { tb = tokenTimes(b, start) })
			wg.Wait()
			// Step 1: a's 10 + b's 54 prompt tokens. Steps 2-4: a decodes, b
			// prefills 63. Step 5: a decodes its last, b's last 57. Step 6: b decodes.
			step1 := 1e-3 + 64*10e-6 + 2*100e-6
			mixed := 1e-3 + 64*10e-6 + 2*100e-6
			last := 1e-3 + 58*10e-6 + 2*100e-6
			wantA := []float64{step1, step1 + mixed, step1 + 2*mixed, step1 + 3*mixed, step1 + 3*mixed + last}
			wantB := []float64{wantA[4], wantA[4] + 1e-3 + 10e-6 + 100e-6}
			for i := range wantA {
				if !near(ta[i], wantA[i]/speedup) {
					t.Errorf("speedup %g: a's token %d at %.6f s, want %.6f", speedup, i, ta[i], wantA[i]/speedup)
				}
			}
			for i := range wantB {
				if !near(tb[i], wantB[i]/speedup) {
					t.Errorf("speedup %g: b's token %d at %.6f s, want %.6f", speedup, i, tb[i], wantB[i]/speedup)
				}
			}
			if st := e.snapshot(); st.Steps != 6 || st.GeneratedTokens != 7 {
				t.Errorf("%d steps, %d tokens; want 6 and 7", st.Steps, st.GeneratedTokens)
			}
		})
	}
}

// TestPreemption fills the 64-block pool with four sequences that each grow to
// 38 blocks: the scheduler preempts and recomputes instead of failing, and every
// sequence gets all its tokens.
func TestPreemption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startEngine(t, tinyHardware(t), 1)
		var seqs []*seq
		for i := range 4 {
			toks := make([]uint64, 600)
			for j := range toks {
				toks[j] = uint64(i*1000 + j)
			}
			seqs = append(seqs, newSeq(300, 300, blockHashes(nil, 0, toks, 16)))
		}
		submitTogether(e, seqs...)
		var wg sync.WaitGroup
		for _, s := range seqs {
			wg.Go(func() { tokenTimes(s, time.Now()) })
		}
		wg.Wait()
		st := e.snapshot()
		if st.Preemptions == 0 {
			t.Error("no preemption although the sequences need 152 blocks of 64")
		}
		for i, s := range seqs {
			if got := int(s.emitted.Load()); got != 300 || s.state.Load() != seqDone {
				t.Errorf("sequence %d: %d tokens, state %d", i, got, s.state.Load())
			}
		}
		if st.GeneratedTokens != 4*300 {
			t.Errorf("%d tokens generated, want 1200 (recomputation must not emit again)", st.GeneratedTokens)
		}
		synctest.Wait()
		e.mu.Lock()
		if e.pool.inUse != 0 {
			t.Errorf("%d blocks still in use", e.pool.inUse)
		}
		e.mu.Unlock()
		t.Logf("%d preemptions, %d steps, %.3f modelled s", st.Preemptions, st.Steps, st.ModelledSeconds)
	})
}

// TestQueueLimit fills the running batch (4) and the waiting queue (8): the next
// request is answered 429 in OpenAI's error format, and the others complete.
func TestQueueLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := tinyConfig(t)
		cfg.Speedup = 1
		s := newServer(t, cfg)
		h := s.Handler()
		body := `{"max_completion_tokens":300,"messages":[{"role":"user","content":"hello"}]}`
		var wg sync.WaitGroup
		codes := make([]int, 12)
		for i := range codes {
			wg.Go(func() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body)))
				codes[i] = w.Code
			})
			// Admission happens at step boundaries: let a step pass, so that the
			// first four are running and the rest wait.
			time.Sleep(2 * time.Millisecond)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body)))
		var e struct {
			Error struct{ Message, Type string }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != 429 || !strings.Contains(e.Error.Message, "waiting") {
			t.Errorf("13th request: %d %s (%v), want 429 with an OpenAI error", w.Code, w.Body.Bytes(), err)
		}
		wg.Wait()
		for i, c := range codes {
			if c != 200 {
				t.Errorf("request %d: status %d", i, c)
			}
		}
		if st := s.Stats(); st.Rejected != 1 || st.Finished != 12 {
			t.Errorf("rejected %d, finished %d; want 1 and 12", st.Rejected, st.Finished)
		}
	})
}

// TestCancelFreesBlocks checks that a client going away frees its KV.
func TestCancelFreesBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := startEngine(t, tinyHardware(t), 1)
		s := newSeq(100, 500, nil)
		submitTogether(e, s)
		for s.emitted.Load() < 3 {
			<-s.notify
		}
		e.cancel(s)
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.pool.inUse != 0 || len(e.running) != 0 {
			t.Errorf("after cancel: %d blocks in use, %d running", e.pool.inUse, len(e.running))
		}
	})
}

// TestClosedServer checks that Close fails requests in flight instead of
// leaving them hanging.
func TestClosedServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := tinyConfig(t)
		cfg.Speedup = 1
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		h := s.Handler()
		done := make(chan int)
		go func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/chat/completions",
				bytes.NewReader([]byte(`{"max_completion_tokens":500,"messages":[{"role":"user","content":"x"}]}`))))
			done <- w.Code
		}()
		time.Sleep(2 * time.Millisecond)
		s.Close()
		if code := <-done; code != 503 {
			t.Errorf("request in flight at Close: status %d, want 503", code)
		}
	})
}
