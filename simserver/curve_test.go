package simserver

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/score/scoretest"
)

// timedWriter is an in-memory ResponseWriter that notes when each write
// happens, so that a test in a synctest bubble sees the modelled times of the
// chunks.
type timedWriter struct {
	h      http.Header
	status int
	body   bytes.Buffer
	times  []time.Time
}

func newTimedWriter() *timedWriter { return &timedWriter{h: make(http.Header)} }

func (w *timedWriter) Header() http.Header { return w.h }
func (w *timedWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *timedWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	w.times = append(w.times, time.Now())
	return w.body.Write(b)
}
func (w *timedWriter) Flush() {}

// lastUsage decodes the usage chunk of a stream (the second-last event): the
// curve needs no more, and decoding every chunk would dominate the test's time.
func lastUsage(stream []byte) (usage, error) {
	var u usage
	i := bytes.LastIndex(stream, []byte(`"usage":`))
	if i < 0 || !bytes.HasSuffix(stream, []byte("data: [DONE]\n\n")) {
		return u, fmt.Errorf("no usage chunk or no [DONE] in %d bytes", len(stream))
	}
	end := bytes.IndexByte(stream[i:], '\n')
	var c struct{ Usage usage }
	if err := json.Unmarshal(append([]byte("{"), stream[i:i+end]...), &c); err != nil {
		return u, fmt.Errorf("usage chunk: %w", err)
	}
	return c.Usage, nil
}

// turnResult is one replayed turn as the driver saw it.
type turnResult struct {
	conv, client             int
	prompt, completion, hits int
	issued, first, last      time.Time
}

// sampleDataset ingests the shared sample into a temporary dataset.
func sampleDataset(t *testing.T) *datasets.Dataset {
	t.Helper()
	return scoretest.Ingest(t, filepath.Join(t.TempDir(), "ds"), testenv.SampleFlat(t))
}

// replayClosedLoop replays trajectories (trajectory k is conversation k mod n,
// repeat k div n + 1, salted) at the given concurrency against s's handler, in
// process, without delays, and returns every turn and the makespan. Run it in a
// synctest bubble: the clock is then the modelled one.
func replayClosedLoop(t *testing.T, s *Server, d *datasets.Dataset, conc, trajectories int, o datasets.BodyOptions) ([]turnResult, time.Duration) {
	t.Helper()
	h := s.Handler()
	var (
		next    atomic.Int64
		mu      sync.Mutex
		results []turnResult
		wg      sync.WaitGroup
	)
	start := time.Now()
	n := len(d.Conversations)
	for range conc {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= trajectories {
					return
				}
				ci, repeat := k%n, k/n+1
				session := datasets.SessionID(d.Conversations[ci].ConversationID, repeat)
				turns := d.ConversationTurns(ci)
				for i := range turns {
					bo := o
					bo.Repeat = repeat
					body := d.AppendBody(nil, &turns[i], bo)
					req := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body))
					req.Header.Set("X-Session-ID", session)
					w := newTimedWriter()
					issued := time.Now()
					h.ServeHTTP(w, req)
					if w.status != 200 {
						t.Errorf("%s turn %d: status %d: %s", session, turns[i].Turn, w.status, w.body.String())
						return
					}
					u, err := lastUsage(w.body.Bytes())
					if err != nil {
						t.Errorf("%s turn %d: %v", session, turns[i].Turn, err)
						return
					}
					mu.Lock()
					results = append(results, turnResult{conv: ci, client: i, prompt: u.PromptTokens,
						completion: u.CompletionTokens, hits: u.PromptTokensDetails.CachedTokens,
						issued: issued, first: w.times[0], last: w.times[len(w.times)-1]})
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return results, time.Since(start)
}

// curvePoint summarises a replay.
type curvePoint struct {
	systemTPS, decodeTPS, laterHitRate float64
	turns                              int
}

func summarise(rs []turnResult, makespan time.Duration) curvePoint {
	var gen, hits, prompt int
	var rate float64
	var nrate int
	for _, r := range rs {
		gen += r.completion
		if r.client > 0 {
			hits += r.hits
			prompt += r.prompt
		}
		if d := r.last.Sub(r.first).Seconds(); r.completion > 1 && d > 0 {
			rate += float64(r.completion-1) / d
			nrate++
		}
	}
	return curvePoint{systemTPS: float64(gen) / makespan.Seconds(), decodeTPS: rate / float64(nrate),
		laterHitRate: float64(hits) / float64(prompt), turns: len(rs)}
}

var curve32 = flag.Bool("curve32", false, "TestCurve also measures concurrency 32 (64 trajectories)")

// TestCurve replays the shared sample closed-loop at concurrency 1 and 8 on the
// H200 hardware, in modelled time: system tokens/s rise with concurrency,
// per-request decode tokens/s fall, and later turns of a trajectory hit the
// prefix cache almost entirely.
func TestCurve(t *testing.T) {
	d := sampleDataset(t)
	p, err := LookupHardware(DefaultHardware)
	if err != nil {
		t.Fatal(err)
	}
	levels := []int{1, 8}
	if *curve32 {
		levels = append(levels, 32)
	}
	var pts []curvePoint
	for _, c := range levels {
		synctest.Test(t, func(t *testing.T) {
			s, err := New(Config{Hardware: p, Dataset: d, Fidelity: 1, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			trajectories := max(len(d.Conversations), 2*c)
			rs, span := replayClosedLoop(t, s, d, c, trajectories, datasets.BodyOptions{Model: p.Model, Salt: true, Stream: true, IncludeUsage: true})
			pt := summarise(rs, span)
			st := s.Stats()
			t.Logf("concurrency %d: %d turns in %.0f modelled s: system %.0f tokens/s, per-request decode %.1f tokens/s, later-turn prefix hit rate %.3f, preemptions %d",
				c, pt.turns, span.Seconds(), pt.systemTPS, pt.decodeTPS, pt.laterHitRate, st.Preemptions)
			pts = append(pts, pt)
		})
	}
	if t.Failed() {
		return
	}
	if !(pts[1].systemTPS > 1.5*pts[0].systemTPS) {
		t.Errorf("system tokens/s %.0f at concurrency 8, want well above %.0f at 1", pts[1].systemTPS, pts[0].systemTPS)
	}
	if !(pts[1].decodeTPS < pts[0].decodeTPS) {
		t.Errorf("per-request decode tokens/s %.1f at concurrency 8, want below %.1f at 1", pts[1].decodeTPS, pts[0].decodeTPS)
	}
	for i, pt := range pts {
		if pt.laterHitRate < 0.9 {
			t.Errorf("concurrency %d: later-turn prefix hit rate %.3f, want >= 0.9 (the pool holds every trajectory)", levels[i], pt.laterHitRate)
		}
	}
}

// TestThrash replays eight of the sample's trajectories at concurrency 8 with
// the H200 pool and with a pool of 40k tokens — less than eight trajectories'
// contexts: with the small pool the later turns' prefix hit rate collapses,
// blocks are evicted and requests are preempted, yet every turn completes.
func TestThrash(t *testing.T) {
	d := sampleDataset(t)
	p, err := LookupHardware(DefaultHardware)
	if err != nil {
		t.Fatal(err)
	}
	small := p
	small.KVBlocks = 40000 / small.BlockSize
	small.MaxModelLen = 32768
	var rates []float64
	for _, prof := range []Hardware{p, small} {
		synctest.Test(t, func(t *testing.T) {
			s, err := New(Config{Hardware: prof, Dataset: d, Fidelity: 1, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rs, span := replayClosedLoop(t, s, d, 8, 8, datasets.BodyOptions{Model: p.Model, Salt: true, Stream: true, IncludeUsage: true})
			pt, st := summarise(rs, span), s.Stats()
			t.Logf("pool %d tokens: %d turns, system %.0f tokens/s, later-turn hit rate %.3f, %d preemptions, %d evictions",
				prof.KVBlocks*prof.BlockSize, pt.turns, pt.systemTPS, pt.laterHitRate, st.Preemptions, st.Evictions)
			if prof.KVBlocks == small.KVBlocks && (st.Evictions == 0 || st.Preemptions == 0) {
				t.Errorf("small pool: %d evictions, %d preemptions; want both", st.Evictions, st.Preemptions)
			}
			rates = append(rates, pt.laterHitRate)
		})
	}
	if !t.Failed() && !(rates[1] < rates[0]-0.2) {
		t.Errorf("later-turn hit rate %.3f with the small pool, %.3f with the H200 pool: want a collapse", rates[1], rates[0])
	}
}
