// Package yardstick is what replay's own speed is measured against: an endpoint
// that answers every chat completion at once with a fixed stream, and a minimal
// hand-written closed-loop client that posts precomputed bodies and reads the
// streams. `make bench` and replay's benchmarks run replay and the minimal client
// side by side against the same endpoint.
package yardstick

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrace/agentrace/datasets"
)

// Endpoint returns an OpenAI-compatible handler that answers every POST at once:
// it reads the whole body, then streams tokens content chunks of one token each,
// a finish_reason chunk, a usage chunk and [DONE], flushing every 16 chunks, as a
// fast server's socket would coalesce them. GET requests (a probe) get an empty
// models list: it answers whatever model a request names.
func Endpoint(tokens int) http.Handler {
	var pre []byte
	pre = append(pre, "data: {\"id\":\"y\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"...)
	for i := range tokens {
		pre = fmt.Appendf(pre, "data: {\"id\":\"y\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok%d\"}}]}\n\n", i)
	}
	pre = append(pre, "data: {\"id\":\"y\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"...)
	pre = fmt.Appendf(pre, "data: {\"id\":\"y\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":%d,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n", tokens)
	pre = append(pre, "data: [DONE]\n\n"...)
	// Flush points: every 16 chunks.
	var cuts []int
	n := 0
	for i := 0; i < len(pre); i++ {
		if pre[i] == '\n' && i+1 < len(pre) && pre[i+1] == '\n' {
			n++
			if n%16 == 0 {
				cuts = append(cuts, i+2)
			}
		}
	}
	cuts = append(cuts, len(pre))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"object":"list","data":[]}`)
			return
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl, _ := w.(http.Flusher)
		prev := 0
		for _, c := range cuts {
			if _, err := w.Write(pre[prev:c]); err != nil {
				return
			}
			if fl != nil {
				fl.Flush()
			}
			prev = c
		}
	})
}

// Result is what a client did.
type Result struct {
	Turns   int64
	Tokens  int64 // content fragments received
	Elapsed time.Duration
	// Lags are, for every turn after a trajectory's first, the time from the end
	// of the previous turn's stream to the next post: the same client lag replay
	// reports (issued minus scheduled without delays).
	Lags []time.Duration
}

// TurnsPerSecond and TokensPerSecond are the rates over the elapsed time.
func (r Result) TurnsPerSecond() float64  { return float64(r.Turns) / r.Elapsed.Seconds() }
func (r Result) TokensPerSecond() float64 { return float64(r.Tokens) / r.Elapsed.Seconds() }

// Minimal is the yardstick client: concurrency goroutines take trajectories 0..n-1
// in order and post each trajectory's precomputed bodies one after another
// (closed loop), reading each stream line by line and decoding each chunk's
// content. bodies(k) returns trajectory k's precomputed bodies: it only looks
// them up. session(k) is trajectory k's X-Session-ID (nil: k in decimal), as
// replay names it when the endpoint answers by session (the sim's recorded
// answers).
func Minimal(ctx context.Context, url string, concurrency, n int, bodies func(k int) [][]byte, session func(k int) string) (Result, error) {
	// The same connection settings as replay's transport, so that only the
	// clients' own work differs.
	tr := &http.Transport{MaxIdleConnsPerHost: concurrency + 16, DisableCompression: true,
		WriteBufferSize: 64 << 10, ReadBufferSize: 64 << 10}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var next, turns, tokens atomic.Int64
	var lagMu sync.Mutex
	var lags []time.Duration
	var firstErr error
	var errOnce sync.Once
	start := time.Now()
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			var myLags []time.Duration
			defer func() {
				lagMu.Lock()
				lags = append(lags, myLags...)
				lagMu.Unlock()
			}()
			br := bufio.NewReaderSize(nil, 64<<10)
			var chunk struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			for {
				k := int(next.Add(1) - 1)
				if k >= n || ctx.Err() != nil {
					return
				}
				id := strconv.Itoa(k)
				if session != nil {
					id = session(k)
				}
				var done time.Time
				for i, b := range bodies(k) {
					req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
					if err != nil {
						errOnce.Do(func() { firstErr = err })
						return
					}
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "text/event-stream")
					req.Header.Set("X-Session-ID", id)
					if i > 0 {
						myLags = append(myLags, time.Since(done))
					}
					resp, err := hc.Do(req)
					if err != nil {
						errOnce.Do(func() { firstErr = err })
						return
					}
					br.Reset(resp.Body)
					for {
						line, err := br.ReadSlice('\n')
						if len(line) > 6 && bytes.HasPrefix(line, []byte("data: ")) && !bytes.HasPrefix(line[6:], []byte("[DONE]")) {
							clear(chunk.Choices[:cap(chunk.Choices)]) // Unmarshal would merge into old elements
							chunk.Choices = chunk.Choices[:0]
							if json.Unmarshal(line[6:], &chunk) == nil && len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
								tokens.Add(1)
							}
						}
						if err != nil {
							break
						}
					}
					resp.Body.Close()
					done = time.Now()
					turns.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	return Result{Turns: turns.Load(), Tokens: tokens.Load(), Elapsed: elapsed, Lags: lags}, firstErr
}

// Bodies precomputes the request bodies of every conversation's client turns with
// o, as replay would send them: Bodies(d, o)[c][i] is conversation c's i-th.
func Bodies(d *datasets.Dataset, o datasets.BodyOptions) [][][]byte {
	out := make([][][]byte, len(d.Conversations))
	for ci := range d.Conversations {
		turns := d.ConversationTurns(ci)
		out[ci] = make([][]byte, len(turns))
		for i := range turns {
			out[ci][i] = d.AppendBody(nil, &turns[i], o)
		}
	}
	return out
}
