package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentrace/agentrace/simserver"
)

// simGoal is the row's floor: requests/s of short answers on one core.
const simGoal = 5000

// benchSim measures the simulated server's requests/s on one core
// (GOMAXPROCS=1, the loopback HTTP client in the same process and on the same
// core) for short streamed answers at a speedup that makes modelled time
// negligible, side by side with a bare net/http handler that streams the same
// bytes without any model. Per core = requests / CPU seconds of the process, so
// that other load on a shared machine does not count against it.
func benchSim(env Env) (Row, error) {
	p, err := simserver.LookupHardware(simserver.DefaultHardware)
	if err != nil {
		return Row{}, err
	}
	s, err := simserver.New(simserver.Config{Hardware: p, Speedup: 1e6, Seed: 1})
	if err != nil {
		return Row{}, err
	}
	defer s.Close()
	body := `{"model":"qwen3.6-35b-a3b","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":8,` +
		`"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say something short."}]}`

	// The yardstick streams a recorded sim answer from memory.
	canned, err := simRecordOnce(s.Handler(), body)
	if err != nil {
		return Row{}, err
	}
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(canned)
		http.NewResponseController(w).Flush()
	})

	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	simWall, simCPU, err := simLoadLoopback(s.Handler(), body, 3*time.Second)
	if err != nil {
		return Row{}, fmt.Errorf("sim: %w", err)
	}
	bareWall, bareCPU, err := simLoadLoopback(bare, body, 3*time.Second)
	if err != nil {
		return Row{}, fmt.Errorf("bare net/http: %w", err)
	}
	return Row{
		Name: "sim: short streamed answers, requests/s per core",
		Measured: fmt.Sprintf("sim %.0f req/s per core (%.0f req/s wall at GOMAXPROCS=1); bare net/http streaming the same bytes %.0f per core (%.0f wall)",
			simCPU, simWall, bareCPU, bareWall),
		Ratio: fmt.Sprintf("%.2fx of goal; %.2fx of bare net/http", simCPU/simGoal, simCPU/bareCPU),
		Goal:  fmt.Sprintf(">= %d req/s per core", simGoal),
		Met:   simCPU >= simGoal,
	}, nil
}

// simRecordOnce returns the body of one response of h.
func simRecordOnce(h http.Handler, body string) ([]byte, error) {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body)))
	if w.Code != 200 {
		return nil, fmt.Errorf("status %d: %s", w.Code, w.Body.String())
	}
	return w.Body.Bytes(), nil
}

// simLoadLoopback serves h on a loopback port and drives it with 32 concurrent
// keep-alive clients for d; it returns requests per wall second and per CPU
// second of the process.
func simLoadLoopback(h http.Handler, body string, d time.Duration) (wall, perCPU float64, err error) {
	hs := httptest.NewServer(h)
	defer hs.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var n atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	cpu0, t0 := simCPUSeconds(), time.Now()
	for range 32 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := client.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != 200 {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				n.Add(1)
			}
		})
	}
	time.Sleep(d)
	close(stop)
	wg.Wait()
	el, cpu := time.Since(t0).Seconds(), simCPUSeconds()-cpu0
	if e, ok := firstErr.Load().(error); ok {
		return 0, 0, e
	}
	return float64(n.Load()) / el, float64(n.Load()) / cpu, nil
}

// simCPUSeconds is the process's user and system CPU time.
func simCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
