package simserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkShortAnswers measures requests/s of short streamed answers through a
// loopback HTTP client at a speedup high enough that the modelled time is
// negligible: the sim's own cost per request. Run with -cpu 1 for a per-core
// figure (client and server share the core).
func BenchmarkShortAnswers(b *testing.B) {
	p, err := LookupHardware(DefaultHardware)
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Hardware: p, Speedup: 1e6, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}
	body := `{"model":"qwen3.6-35b-a3b","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":8,` +
		`"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say something short."}]}`
	b.SetParallelism(32)
	cpu0 := cpuSeconds(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(hs.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				b.Error(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(b.N)/(cpuSeconds(b)-cpu0), "req/cpu-s")
}

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds(tb testing.TB) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
