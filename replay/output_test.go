package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// heapPeak samples the heap in use every 10 ms until stop is called, and
// returns the peak above what was in use at the start.
func heapPeak() (stop func() uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base && ms.HeapInuse-base > peak.Load() {
				peak.Store(ms.HeapInuse - base)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// streamBytes streams about n bytes of content as SSE frames of 64 KiB each
// (n < 0: until the request ends), then a finish reason and [DONE].
func streamBytes(w http.ResponseWriter, r *http.Request, n int64) {
	w.Header().Set("Content-Type", "text/event-stream")
	piece := strings.Repeat("abcdefgh", 8<<10)
	frame := []byte(`data: {"choices":[{"index":0,"delta":{"content":"` + piece + `"}}]}` + "\n\n")
	for sent := int64(0); n < 0 || sent < n; sent += int64(len(piece)) {
		if _, err := w.Write(frame); err != nil || r.Context().Err() != nil {
			return
		}
	}
	io.WriteString(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
}

// hugeAnswerBytes is the size of TestHugeAnswer's answer: 256 MiB, or
// AGENTRACE_HUGE_ANSWER_BYTES (make chaos runs it with 2 GiB).
func hugeAnswerBytes(t *testing.T) int64 {
	if s := os.Getenv("AGENTRACE_HUGE_ANSWER_BYTES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("AGENTRACE_HUGE_ANSWER_BYTES=%q: %v", s, err)
		}
		return n
	}
	return 256 << 20
}

// TestHugeAnswer: one streamed answer far larger than
// --max-output-bytes keeps exactly the cap (cut on a rune boundary), counts the
// rest in output_truncated_bytes, never holds more than a few caps in memory,
// and the turn log and manifest stay whole and agree.
func TestHugeAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("streams hundreds of MB")
	}
	size := hugeAnswerBytes(t)
	const limit = 1 << 20
	d := makeDataset(t, chat("big", 2), chat("small", 2))
	f := newFake(t)
	f.fault = func(w http.ResponseWriter, r *http.Request, s seen) bool {
		if s.session == "big" && s.msgs == 2 {
			streamBytes(w, r, size)
			return true
		}
		return false
	}
	dir := t.TempDir()
	peak := heapPeak()
	start := time.Now()
	sum, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 2, MaxOutputBytes: limit})
	took := time.Since(start)
	grew := peak()
	if err != nil {
		t.Fatal(err)
	}
	recs, rerr := runlog.ReadFile(context.Background(), dir+"/"+schemas.TurnLogFile)
	if rerr != nil || len(recs) != 4 {
		t.Fatalf("log: %d rows, %v", len(recs), rerr)
	}
	rows := byKey(t, recs)
	big := rows["big#1"]
	if big.Status != schemas.StatusOK || len(big.OutputContent) != limit || big.OutputTruncatedBytes != size-limit || big.FinishReason != "length" {
		t.Fatalf("huge turn: status %s, kept %d, truncated %d of %d, finish %q", big.Status, len(big.OutputContent), big.OutputTruncatedBytes, size, big.FinishReason)
	}
	if int64(big.Chunks) != size/(64<<10) || len(big.ChunkTimesNs) > limit/4 {
		t.Fatalf("chunks %d, %d chunk times", big.Chunks, len(big.ChunkTimesNs))
	}
	for _, k := range []string{"big#3", "small#1", "small#3"} {
		if r := rows[k]; r.Status != schemas.StatusOK || r.OutputTruncatedBytes != 0 {
			t.Fatalf("%s: %+v", k, r)
		}
	}
	m, _ := runlog.ReadManifest(dir)
	if m.StreamWarnings["output_truncated"] != 1 || m.Config.MaxOutputBytes != limit {
		t.Fatalf("manifest: %v, max output %d", m.StreamWarnings, m.Config.MaxOutputBytes)
	}
	if err := runlog.CheckAgreement(m, map[string]int{"ok": 4}, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum.String(), "output truncated at the output limit of 1048576 bytes in 1 turn (") {
		t.Fatalf("summary:\n%s", sum)
	}
	// Kept: 1 MiB of output, 256 Ki chunk times at most (2 MiB), a frame
	// buffer, the HTTP buffers, and at the end the analysis table's Parquet
	// writer; the server streams from one prebuilt frame.
	const bound = 64 << 20
	t.Logf("%d MiB answer in %v: heap grew by at most %.1f MiB (bound %d MiB); process peak RSS %.0f MiB",
		size>>20, took.Round(time.Millisecond), float64(grew)/(1<<20), bound>>20, float64(testenv.PeakRSS("/proc/self/status"))/(1<<20))
	if grew > bound {
		t.Fatalf("heap grew by %d MiB for a %d MiB answer with a 1 MiB cap", grew>>20, size>>20)
	}
}

// TestEndlessStreamTimeout: a stream that never ends times
// out at the turn timeout with its output capped, not hundreds of MB kept.
func TestEndlessStreamTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("streams for two seconds")
	}
	const limit = 1 << 20
	d := makeDataset(t, chat("a", 2))
	f := newFake(t)
	f.fault = func(w http.ResponseWriter, r *http.Request, s seen) bool {
		streamBytes(w, r, -1)
		return true
	}
	dir := t.TempDir()
	peak := heapPeak()
	_, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 1, MaxOutputBytes: limit, TurnTimeout: 2 * time.Second})
	grew := peak()
	if err != nil && !IsIncomplete(err) { // its one turn times out: a run not whole
		t.Fatal(err)
	}
	rows := byKey(t, readLog(t, dir))
	r := rows["a#1"]
	if r.Status != schemas.StatusTimeout || len(r.OutputContent) != limit || r.OutputTruncatedBytes <= 0 {
		t.Fatalf("endless turn: status %s, kept %d, truncated %d", r.Status, len(r.OutputContent), r.OutputTruncatedBytes)
	}
	if rows["a#3"].Status != schemas.StatusAborted {
		t.Fatalf("after the timeout: %+v", rows["a#3"])
	}
	t.Logf("endless stream: %d MiB received in 2 s, %d KiB kept; heap grew by at most %.1f MiB",
		(r.OutputTruncatedBytes+limit)>>20, len(r.OutputContent)>>10, float64(grew)/(1<<20))
	if grew > 64<<20 {
		t.Fatalf("heap grew by %d MiB", grew>>20)
	}
}

// TestOversizedFrame: one SSE frame larger than the frame limit (2 ×
// --max-output-bytes + 1 MiB) is never held: it is skipped with a warning and
// counted as truncated, and the frames after it are read (with --strict-stream
// the turn fails). A non-streamed body over the limit fails the turn.
func TestOversizedFrame(t *testing.T) {
	const limit = 64 << 10
	huge := `data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 2<<20) + `"}}]}` + "\n\n"
	for _, tc := range []struct {
		name           string
		strict, noStr  bool
		status, errHas string
	}{
		{"tolerated", false, false, schemas.StatusOK, ""},
		{"strict", true, false, schemas.StatusError, "frame too large"},
		{"non-streamed", false, true, schemas.StatusError, "a response body of more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := makeDataset(t, chat("a", 1))
			f := newFake(t)
			f.fault = func(w http.ResponseWriter, r *http.Request, s seen) bool {
				if tc.noStr {
					fmt.Fprintf(w, `{"choices":[{"index":0,"message":{"content":%q},"finish_reason":"stop"}]}`, strings.Repeat("y", 2<<20))
					return true
				}
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"a"}}]}`+"\n\n"+huge+
					`data: {"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
				return true
			}
			dir := t.TempDir()
			if _, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 1,
				MaxOutputBytes: limit, StrictStream: tc.strict, NoStream: tc.noStr}); err != nil && !IsIncomplete(err) {
				t.Fatal(err) // a run whose one turn fails is not whole, and still logged
			}
			r := readLog(t, dir)[0]
			if r.Status != tc.status || !strings.Contains(r.Error, tc.errHas) {
				t.Fatalf("status %s error %q", r.Status, r.Error)
			}
			if tc.status == schemas.StatusOK {
				if r.OutputContent != "ab" || r.Warnings != "oversized_frame x1" || r.OutputTruncatedBytes < 2<<20 {
					t.Fatalf("content %q warnings %q truncated %d", r.OutputContent, r.Warnings, r.OutputTruncatedBytes)
				}
			}
		})
	}
}

// TestOutputCapUTF8: the cap cuts content on a rune boundary, and tool-call
// arguments count against the same cap.
func TestOutputCapUTF8(t *testing.T) {
	var r response
	r.maxBytes = 1030
	r.reset()
	r.addText(strings.Repeat("é", 514), "", "") // 1028 bytes
	r.addText("€€", "", "")                     // 6 bytes: 2 fit, not a whole rune
	if r.content.Len() != 1028 || r.truncated != 6 || r.kept != 1028 {
		t.Fatalf("kept %d, truncated %d", r.content.Len(), r.truncated)
	}
	var ds []toolCallDelta
	if err := json.Unmarshal([]byte(`[{"index":0,"function":{"name":"bash","arguments":"{\"cmd\":\"ls\"}"}}]`), &ds); err != nil {
		t.Fatal(err)
	}
	r.mergeToolCalls(ds, true)
	if r.tools.Len() != 0 || r.truncated != 6+int64(len(`{"cmd":"ls"}`)) {
		t.Fatalf("a tool call past the cap: %d calls, truncated %d", r.tools.Len(), r.truncated)
	}
}

// The closing summary's output rate says what it counted: the server's usage, or
// chunks where the server reported none (a chunk may carry several tokens).
func TestSummaryOutputRate(t *testing.T) {
	for _, tc := range []struct {
		usage, chunks int64
		want          string
	}{
		{10, 0, "100 output tokens/s over the whole run (server usage; report's"},
		{0, 10, "100 output chunks/s over the whole run (the server reported no token usage, and a chunk may carry several tokens;"},
		{9, 1, "100 output tokens/s over the whole run (server usage; chunks for 1 turn without it, and a chunk may carry several tokens;"},
		{0, 0, "100 output tokens/s over the whole run (server usage;"},
	} {
		s := &Summary{OutputTokens: 1000, Elapsed: 10 * time.Second, UsageCounted: tc.usage, ChunkCounted: tc.chunks}
		if got := s.outputRate(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("usage %d, chunks %d: %q, want it to begin %q", tc.usage, tc.chunks, got, tc.want)
		}
	}
}

// Against the simulated server the closing summary says its figures are on the
// run's clock, the speed-up times the modelled hardware's.
func TestSummarySimSpeedup(t *testing.T) {
	s := &Summary{State: "complete", OutputTokens: 1000, Elapsed: 10 * time.Second, UsageCounted: 3, SimSpeedup: 60}
	if got := s.String(); !strings.Contains(got, "the simulated server ran 60x faster than the hardware it models: these times are 60 times shorter and these rates 60 times higher") {
		t.Errorf("summary against the sim:\n%s", got)
	}
	s.SimSpeedup = 0
	if got := s.String(); strings.Contains(got, "simulated server") {
		t.Errorf("summary against a real server speaks of the sim:\n%s", got)
	}
}
