package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// script is how the in-memory endpoint answers one turn: after wait, a stream of
// chunks gap apart; stall blocks until the request is cancelled.
type script struct {
	wait   time.Duration
	chunks int
	gap    time.Duration
	stall  bool
}

// memTransport is an in-process endpoint for synctest bubbles: no sockets, so
// fake time advances whenever every goroutine waits.
type memTransport struct {
	answer func(session string, msgs int) script

	mu     sync.Mutex
	issued []memReq
}

type memReq struct {
	session string
	msgs    int
	at      time.Time
}

func (m *memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	resp := &http.Response{StatusCode: 200, Header: http.Header{}, Request: req, ProtoMajor: 1, ProtoMinor: 1}
	if req.Method == http.MethodGet {
		resp.Body = io.NopCloser(strings.NewReader(`{"data":[]}`))
		return resp, nil
	}
	session := req.Header.Get("X-Session-ID")
	msgs := bytes.Count(body, []byte(`{"role":`))
	m.mu.Lock()
	m.issued = append(m.issued, memReq{session, msgs, time.Now()})
	m.mu.Unlock()
	sc := m.answer(session, msgs)
	ctx := req.Context()
	sleep := func(d time.Duration) error {
		if d <= 0 {
			return ctx.Err()
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := sleep(sc.wait); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < sc.chunks; i++ {
			if i > 0 {
				if err := sleep(sc.gap); err != nil {
					pw.CloseWithError(err)
					return
				}
			}
			if _, err := fmt.Fprintf(pw, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d\"}}]}\n\n", i); err != nil {
				return
			}
		}
		if sc.stall {
			<-ctx.Done()
			pw.CloseWithError(ctx.Err())
			return
		}
		io.WriteString(pw, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		pw.Close()
	}()
	resp.Body = pr
	return resp, nil
}

func (m *memTransport) requests() []memReq {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]memReq(nil), m.issued...)
}

func memOptions(d *datasets.Dataset, dir string, tr http.RoundTripper) Options {
	return Options{Data: d, Dataset: "mem", Endpoint: "http://sim.invalid", Out: dir, Concurrency: 1, transport: tr}
}

// TestDelaysHonoured: each delay (scaled) is slept after the previous turn
// completes (or the trajectory starts), before the turn, and is not part of its
// latency.
func TestDelaysHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := makeDataset(t, chat("a", 3, 1.5, 0.25, 2))
		tr := &memTransport{answer: func(string, int) script {
			return script{wait: 100 * time.Millisecond, chunks: 3, gap: 10 * time.Millisecond}
		}}
		dir := t.TempDir()
		o := memOptions(d, dir, tr)
		o.DelayScale = 2
		start := time.Now()
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		recs := readLog(t, dir)
		wantDelays := []time.Duration{3 * time.Second, 500 * time.Millisecond, 4 * time.Second}
		base := int64(time.Microsecond) // the run clock starts 1 µs before the first trajectory
		for i, r := range recs {
			if time.Duration(r.DelayNs) != wantDelays[i] {
				t.Fatalf("turn %d delay %v, want %v", r.Turn, time.Duration(r.DelayNs), wantDelays[i])
			}
			if r.ScheduledNs != base+r.DelayNs || r.IssuedNs != r.ScheduledNs {
				t.Fatalf("turn %d: scheduled %d issued %d, want both %d", r.Turn, r.ScheduledNs, r.IssuedNs, base+r.DelayNs)
			}
			// The latency excludes the delay: 100 ms to headers, 20 ms of chunks.
			if r.FirstTokenNs-r.IssuedNs != int64(100*time.Millisecond) || r.CompletedNs-r.IssuedNs != int64(120*time.Millisecond) {
				t.Fatalf("turn %d latency: first token %v, complete %v", r.Turn, time.Duration(r.FirstTokenNs-r.IssuedNs), time.Duration(r.CompletedNs-r.IssuedNs))
			}
			if fmt.Sprint(r.ChunkTimesNs) != fmt.Sprint([]int64{0, 1e7, 2e7}) {
				t.Fatalf("chunk times %v", r.ChunkTimesNs)
			}
			base = r.CompletedNs
		}
		// On the wire: the gap between a completion and the next request is the delay.
		reqs := tr.requests()
		if got := reqs[0].at.Sub(start); got != 3*time.Second {
			t.Fatalf("first request after %v, want 3s", got)
		}
		if got := reqs[1].at.Sub(reqs[0].at); got != 120*time.Millisecond+500*time.Millisecond {
			t.Fatalf("second request %v after the first", got)
		}
	})
}

func TestNoDelays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := makeDataset(t, chat("a", 3, 5))
		tr := &memTransport{answer: func(string, int) script { return script{wait: time.Second, chunks: 1} }}
		o := memOptions(d, t.TempDir(), tr)
		o.NoDelays = true
		start := time.Now()
		if _, err := Run(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Fatalf("run took %v without delays, want 3s", got)
		}
	})
}

// TestTurnTimeout: a stalled turn fails exactly at the timeout, and the rest of
// its trajectory is aborted without being sent.
func TestTurnTimeout(t *testing.T) {
	for _, stallAfterHeaders := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			d := makeDataset(t, chat("a", 3))
			tr := &memTransport{answer: func(_ string, msgs int) script {
				if msgs == 4 { // system + 3 history messages: turn 3
					if stallAfterHeaders {
						return script{chunks: 2, gap: time.Second, stall: true}
					}
					return script{wait: time.Hour}
				}
				return script{wait: 10 * time.Millisecond, chunks: 1}
			}}
			dir := t.TempDir()
			o := memOptions(d, dir, tr)
			o.TurnTimeout = 5 * time.Second
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			recs := readLog(t, dir)
			if recs[1].Status != schemas.StatusTimeout || recs[1].CompletedNs-recs[1].IssuedNs != int64(5*time.Second) {
				t.Fatalf("timed-out turn: %+v", recs[1])
			}
			if stallAfterHeaders && recs[1].OutputContent != "t0t1" {
				t.Fatalf("partial output %q", recs[1].OutputContent)
			}
			if recs[2].Status != schemas.StatusAborted || len(tr.requests()) != 2 {
				t.Fatalf("after the timeout: %+v, %d requests", recs[2], len(tr.requests()))
			}
		})
	}
}

// TestWindow: the performance window ends when a slot finishes a trajectory and
// none is left to start; turns issued before are in the window. With
// StopIssuingAtWindowEnd nothing is issued after it.
func TestWindow(t *testing.T) {
	for _, stop := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			// Slot A: a (1 turn, 1.5 s), then c (1 turn, 1.5 s): the window ends at 3 s.
			// Slot B: b, 5 turns of 0.8 s: issued at 0, 0.8, 1.6, 2.4 (in), 3.2 (out).
			d := makeDataset(t, chat("a", 1), chat("b", 5), chat("c", 1))
			tr := &memTransport{answer: func(s string, _ int) script {
				if s == "b" {
					return script{wait: 800 * time.Millisecond, chunks: 1}
				}
				return script{wait: 1500 * time.Millisecond, chunks: 1}
			}}
			dir := t.TempDir()
			o := memOptions(d, dir, tr)
			o.Concurrency = 2
			o.StopIssuingAtWindowEnd = stop
			o.Profile = "qwen3.6-35b-a3b" // a sampling profile: one of the official settings
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			m, err := runlog.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			us := int64(time.Microsecond)
			if m.WindowEndNs != us+int64(3*time.Second) {
				t.Fatalf("window end %v, want 3s", time.Duration(m.WindowEndNs-us))
			}
			rows := byKey(t, readLog(t, dir))
			for turn := 1; turn <= 9; turn += 2 {
				r := rows[fmt.Sprintf("b#%d", turn)]
				wantIn := turn < 9
				if r.InWindow != wantIn {
					t.Fatalf("b turn %d in window %v, want %v", turn, r.InWindow, wantIn)
				}
				if turn == 9 {
					if stop && (r.Status != schemas.StatusNotIssued || r.Error != notIssuedWindow) {
						t.Fatalf("stop issuing: last turn %+v", r)
					}
					if !stop && r.Status != schemas.StatusOK {
						t.Fatalf("last turn %+v", r)
					}
				}
			}
			if m.LastTrackedDoneNs != us+int64(3200*time.Millisecond) {
				t.Fatalf("last tracked completion %v", time.Duration(m.LastTrackedDoneNs-us))
			}
			if got := m.Config.Official; got == stop {
				t.Fatalf("official %v with stop-issuing %v: %v", got, stop, m.Config.NonOfficial)
			}
		})
	}
}

// TestInterrupt: an interrupt stops issuing at once, waits for in-flight turns up
// to the grace period, then cancels them; every client turn of a started
// trajectory still has its row and the manifest says interrupted.
func TestInterrupt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inflight  time.Duration // how long the turn in flight at the interrupt takes
		wantState string
		wantEnd   time.Duration
	}{
		{"in-flight turns finish within the grace", 2 * time.Second, schemas.StatusOK, 3 * time.Second},
		{"in-flight turns cancelled after the grace", time.Hour, schemas.StatusCancelled, 6500 * time.Millisecond},
	} {
		synctest.Test(t, func(t *testing.T) {
			d := makeDataset(t, chat("a", 4), chat("b", 4), chat("c", 4))
			tr := &memTransport{answer: func(s string, msgs int) script {
				if msgs == 4 { // turn 3 of a and b, issued at 1 s
					return script{wait: tc.inflight, chunks: 1}
				}
				return script{wait: time.Second, chunks: 1}
			}}
			dir := t.TempDir()
			o := memOptions(d, dir, tr)
			o.Concurrency = 2
			o.Grace = 5 * time.Second
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(1500*time.Millisecond, cancel)
			start := time.Now()
			sum, err := Run(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if got := time.Since(start); got != tc.wantEnd {
				t.Fatalf("run ended after %v, want %v", got, tc.wantEnd)
			}
			if sum.State != schemas.RunInterrupted {
				t.Fatalf("state %s", sum.State)
			}
			m, err := runlog.ReadManifest(dir)
			if err != nil || m.State != schemas.RunInterrupted {
				t.Fatalf("manifest state %q (%v)", m.State, err)
			}
			recs := readLog(t, dir) // closed properly: no truncation error
			if len(recs) != 8 {
				t.Fatalf("%d rows, want 8 (two started trajectories of 4 turns)", len(recs))
			}
			for _, q := range tr.requests() {
				if q.at.Sub(start) > 1500*time.Millisecond {
					t.Fatalf("request issued at %v, after the interrupt", q.at.Sub(start))
				}
			}
			rows := byKey(t, recs)
			for _, s := range []string{"a", "b"} {
				if r := rows[s+"#3"]; r.Status != tc.wantState {
					t.Fatalf("%s turn 3 in flight at the interrupt: %+v", s, r)
				}
				for _, turn := range []int{5, 7} {
					if r := rows[fmt.Sprintf("%s#%d", s, turn)]; r.Status != schemas.StatusNotIssued || r.Error != notIssuedInterrupt {
						t.Fatalf("%s turn %d: %+v", s, turn, r)
					}
				}
			}
		})
	}
}

// TestLogFlushedDuringDelay: a finished turn's row is on disk within a second,
// even while the trajectory sleeps a long delay before its next turn, so a crash
// loses at most that much.
func TestLogFlushedDuringDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := makeDataset(t, chat("a", 2, 0, 30))
		tr := &memTransport{answer: func(string, int) script { return script{wait: 100 * time.Millisecond, chunks: 1} }}
		dir := t.TempDir()
		done := make(chan error)
		go func() {
			_, err := Run(context.Background(), memOptions(d, dir, tr))
			done <- err
		}()
		time.Sleep(1100 * time.Millisecond) // turn 1 completed at 0.1 s; turn 2 is due at 30.1 s
		synctest.Wait()
		recs, err := runlog.ReadFile(context.Background(), dir+"/"+schemas.TurnLogFile)
		if !errors.Is(err, runlog.ErrTruncated) || len(recs) != 1 || recs[0].Turn != 1 || recs[0].Status != schemas.StatusOK {
			t.Fatalf("during the delay: %d rows on disk (%v), want turn 1", len(recs), err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestSleepUntilNeverEarly holds sleepUntil on the real clock: it wakes on Go's
// timer a margin early and sleeps the rest in the kernel (or, when too many slots
// do, on Go's timer), and still never returns before the due time, nor true
// after a stop.
func TestSleepUntilNeverEarly(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	e := &engine{start: time.Now(), issueCtx: ctx, kernelSleeps: make(chan struct{}, kernelSleepers)}
	st := newSlotState()
	defer st.release()
	// Then with every kernel sleeper taken: the slot ends the wait on Go's timer.
	for full := range 2 {
		if full == 1 {
			for range kernelSleepers {
				e.kernelSleeps <- struct{}{}
			}
		}
		for _, d := range []time.Duration{0, 50 * time.Microsecond, 700 * time.Microsecond, issueMargin, 1300 * time.Microsecond, 2500 * time.Microsecond} {
			for range 5 {
				at := e.now() + int64(d)
				if !st.sleepUntil(e, at) {
					t.Fatalf("sleep %v: stopped without a stop", d)
				}
				if now := e.now(); now < at {
					t.Fatalf("sleep %v (kernel sleepers full: %v): returned %v early", d, full == 1, time.Duration(at-now))
				}
			}
		}
	}
	stop()
	if st.sleepUntil(e, e.now()+int64(time.Hour)) {
		t.Fatal("sleepUntil returned true after the stop")
	}
	ctx, stop = context.WithCancel(context.Background())
	e.issueCtx = ctx
	time.AfterFunc(10*time.Millisecond, stop)
	if st.sleepUntil(e, e.now()+int64(time.Hour)) {
		t.Fatal("sleepUntil returned true when issuing stopped during the wait")
	}
}
