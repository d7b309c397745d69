package simserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestParseFaults(t *testing.T) {
	tests := []struct {
		spec    string
		want    FaultSpec
		wantErr string
	}{
		{spec: "", want: FaultSpec{}},
		{spec: "5xx=0.01,429=0.02,cut=0.03,malformed=0.04,stall=0.05,stall_s=30",
			want: FaultSpec{Error5xx: 0.01, Error429: 0.02, Cut: 0.03, Malformed: 0.04, Stall: 0.05, StallSeconds: 30}},
		{spec: " cut = 1 ", want: FaultSpec{Cut: 1}},
		{spec: "boom=0.1", wantErr: "unknown fault"},
		{spec: "cut", wantErr: "not NAME=RATE"},
		{spec: "cut=x", wantErr: "cut"},
		{spec: "cut=1.5", wantErr: "not in [0, 1]"},
		{spec: "cut=0.6,stall=0.6", wantErr: "add up to"},
		{spec: "stall_s=-1", wantErr: "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := ParseFaults(tc.spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseFaults(%q) error %v, want one with %q", tc.spec, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseFaults(%q) = %+v, %v; want %+v", tc.spec, got, err, tc.want)
			}
			if back, err := ParseFaults(got.String()); err != nil || back != got {
				t.Errorf("round trip of %q through %q: %+v, %v", tc.spec, got.String(), back, err)
			}
		})
	}
}

const streamBody = `{"stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":40,"messages":[{"role":"user","content":"hello"}]}`

func TestFaultKinds(t *testing.T) {
	tests := []struct {
		spec  string
		check func(t *testing.T, status int, body string, readErr error)
	}{
		{"5xx=1", func(t *testing.T, status int, body string, _ error) {
			if status != 500 || !strings.Contains(body, `"code":500`) {
				t.Errorf("status %d body %s", status, body)
			}
		}},
		{"429=1", func(t *testing.T, status int, body string, _ error) {
			if status != 429 || !strings.Contains(body, `"error"`) {
				t.Errorf("status %d body %s", status, body)
			}
		}},
		{"cut=1", func(t *testing.T, status int, body string, readErr error) {
			if status != 200 || readErr == nil || strings.Contains(body, "[DONE]") || !strings.Contains(body, "chat.completion.chunk") {
				t.Errorf("status %d, read error %v, body %q: want a stream cut after some chunks", status, readErr, body)
			}
		}},
		{"malformed=1", func(t *testing.T, status int, body string, readErr error) {
			bad := 0
			sc := bufio.NewScanner(strings.NewReader(body))
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "[DONE]" && !json.Valid([]byte(d)) {
					bad++
				}
			}
			if status != 200 || readErr != nil || bad != 1 || !strings.Contains(body, "[DONE]") {
				t.Errorf("status %d, read error %v, %d malformed chunks; want one in a complete stream", status, readErr, bad)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			cfg := tinyConfig(t)
			f, err := ParseFaults(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Faults = f
			_, hs := startServer(t, cfg)
			resp := post(t, hs.URL, streamBody)
			b, readErr := io.ReadAll(resp.Body)
			resp.Body.Close()
			tc.check(t, resp.StatusCode, string(b), readErr)
		})
	}
}

// TestFaultStall checks, in modelled time, that a stall holds the stream for
// stall_s divided by the speedup half-way through.
func TestFaultStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := tinyConfig(t)
		cfg.Speedup = 10
		cfg.Faults = FaultSpec{Stall: 1, StallSeconds: 30}
		s := newServer(t, cfg)
		w := newTimedWriter()
		s.Handler().ServeHTTP(w, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(streamBody)))
		var gap time.Duration
		for i := 1; i < len(w.times); i++ {
			gap = max(gap, w.times[i].Sub(w.times[i-1]))
		}
		if gap < 3*time.Second || gap > 4*time.Second || !strings.Contains(w.body.String(), "[DONE]") {
			t.Errorf("longest gap between writes %v, want about 30 s / 10; complete: %v", gap, strings.Contains(w.body.String(), "[DONE]"))
		}
	})
}

// TestFaultsDeterministic checks that the same seed gives the same faulted
// requests, and another seed other ones.
func TestFaultsDeterministic(t *testing.T) {
	faulted := func(seed int64) string {
		cfg := tinyConfig(t)
		cfg.Seed = seed
		cfg.Faults = FaultSpec{Error5xx: 0.5}
		_, hs := startServer(t, cfg)
		var b strings.Builder
		for i := range 24 {
			resp := post(t, hs.URL, fmt.Sprintf(`{"max_completion_tokens":2,"messages":[{"role":"user","content":"question %d"}]}`, i))
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 500 {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, b, c := faulted(1), faulted(1), faulted(2)
	if a != b {
		t.Errorf("seed 1 twice: %s and %s", a, b)
	}
	if a == c {
		t.Errorf("seeds 1 and 2 fault the same requests: %s", a)
	}
	if n := strings.Count(a, "x"); n < 4 || n > 20 {
		t.Errorf("%d of 24 faulted at rate 0.5: %s", n, a)
	}
}
