package simserver

import (
	"fmt"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// TestSessionMatchesPrepareTurn: a session prepares each body of a sequence as
// Server.PrepareTurn prepares it alone (the same prompt and answer tokens, block
// hashes, answer and errors), whether the body extends the last one, rewrites
// its history, changes its tools or salt, spaces its JSON differently, repeats
// a key after the messages or is invalid there.
func TestSessionMatchesPrepareTurn(t *testing.T) {
	msg := func(i int) string {
		switch i % 3 {
		case 0:
			return fmt.Sprintf(`{"role":"user","content":"step %d: run the tests and tell me what fails"}`, i)
		case 1:
			return fmt.Sprintf(`{"role":"assistant","content":"","reasoning_content":"thinking about %d","tool_calls":[{"id":"c%d","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"ls -la %d\"}"}}]}`, i, i, i)
		}
		return fmt.Sprintf(`{"role":"tool","tool_call_id":"c%d","content":"%s"}`, i-1, strings.Repeat("file.py ", 40+i))
	}
	history := func(n int, sep string) string {
		parts := []string{`{"role":"system","content":"You are a coding agent."}`}
		for i := range n {
			parts = append(parts, msg(i))
		}
		return strings.Join(parts, sep)
	}
	tools := `[{"type":"function","function":{"name":"bash","parameters":{"type":"object"}}}]`
	body := func(n int) string {
		return `{"model":"qwen3.6-35b-a3b","messages":[` + history(n, ",") + `],"max_completion_tokens":64,"stream":true,"tools":` + tools + `}`
	}
	bodies := []string{
		body(1), body(3), body(4), body(6), // a growing conversation
		body(6), // the same body again
		strings.Replace(body(8), "step 3", "step three", 1), // a rewritten history
		body(9), // and back
		`{"model":"qwen3.6-35b-a3b","messages":[` + history(9, ",") + ` , ` + msg(9) + "\n]\n,\"max_completion_tokens\":64,\"stream\":true,\"tools\":" + tools + "}\n",
		strings.Replace(body(10), `"bash"}`, `"sh"}`, 1), // other tools
		strings.Replace(body(10), `"stream":true`, `"stream":true,"cache_salt":"s1"`, 1),
		body(11) + " x", // trailing data
		strings.Replace(body(12), `],"max_completion_tokens"`, `,{"role":}],"max_completion_tokens"`, 1),
		strings.Replace(body(12), `],"max_completion_tokens"`, `],}`, 1),
		strings.Replace(body(12), `"tools":`, `"messages":[{"role":"user","content":"only this"}],"tools":`, 1),
		strings.Replace(body(13), `"stream":true`, `"stream":true,"model":"other-model"`, 1),
		body(13), body(14),
		`{"model":"qwen3.6-35b-a3b","messages":[` + history(14, ",") + `],"max_completion_tokens":0}`,
		body(15),
		`{"model":"qwen3.6-35b-a3b","messages":[` + history(15, ",") + `]}`,
	}
	p, err := LookupHardware(DefaultHardware)
	if err != nil {
		t.Fatal(err)
	}
	p.MaxModelLen = 2400 // the longest bodies are refused: over the context length
	whole, err := New(Config{Hardware: p, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	inc, err := New(Config{Hardware: p, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer inc.Close()
	sess := inc.NewSession("sess-1")
	refused := 0
	for i, b := range bodies {
		want, werr := whole.PrepareTurn([]byte(b), "sess-1")
		got, gerr := sess.PrepareTurn([]byte(b))
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("body %d: session says %v, whole body %v", i, gerr, werr)
		}
		if werr != nil {
			refused++
			continue
		}
		if got.PromptTokens != want.PromptTokens || got.OutputTokens != want.OutputTokens || got.Finish != want.Finish ||
			!reflect.DeepEqual(got.q.hashes, want.q.hashes) {
			t.Fatalf("body %d: session prepared %d+%d tokens (%s, %d blocks), whole body %d+%d (%s, %d blocks)", i,
				got.PromptTokens, got.OutputTokens, got.Finish, len(got.q.hashes), want.PromptTokens, want.OutputTokens, want.Finish, len(want.q.hashes))
		}
		r1, c1, k1 := got.Answer()
		r2, c2, k2 := want.Answer()
		if r1 != r2 || c1 != c2 || !reflect.DeepEqual(k1, k2) {
			t.Fatalf("body %d: the answers differ", i)
		}
	}
	if refused < 5 {
		t.Errorf("%d bodies refused, want the invalid and oversized ones", refused)
	}
}

// TestHTTPSessionsMatchWhole: over HTTP a session's requests are prepared
// through its Session (only what is new read, tokenized and hashed, the last
// turn's KV blocks checked before the prefix index) and answered byte for byte
// as a server that prepares every request whole answers them, usage and cached
// tokens included; an invalid body in between does not lead the next astray.
func TestHTTPSessionsMatchWhole(t *testing.T) {
	turn := func(i int) string {
		if i%2 == 0 {
			return fmt.Sprintf(`,{"role":"user","content":"step %d: %s"}`, i, strings.Repeat("run the tests ", 30+i))
		}
		return fmt.Sprintf(`,{"role":"assistant","content":"done %d","reasoning_content":"%s"}`, i, strings.Repeat("thinking ", 20+i))
	}
	body := func(n int) string {
		h := `{"role":"system","content":"You are a coding agent."}`
		for i := range n {
			h += turn(i)
		}
		return `{"model":"qwen3.6-35b-a3b","messages":[` + h + `],"max_completion_tokens":48}`
	}
	bodies := []string{body(1), body(3), body(5), body(5)[:40], body(7), body(9), body(9), body(11)}
	p, err := LookupHardware(DefaultHardware)
	if err != nil {
		t.Fatal(err)
	}
	serve := func(whole bool) []string {
		s, err := New(Config{Hardware: p, Speedup: 1e6, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if whole {
			s.sessions.take(s, "sess-1") // held: every request is prepared whole
		}
		var out []string
		for _, b := range bodies {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(b))
			r.Header.Set("X-Session-ID", "sess-1")
			s.Handler().ServeHTTP(w, r)
			out = append(out, fmt.Sprint(w.Code, " ", regexp.MustCompile(`"created":\d+`).ReplaceAllString(w.Body.String(), "")))
		}
		return out
	}
	got, want := serve(false), serve(true)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("request %d: with its session\n%s\nprepared whole\n%s", i, got[i], want[i])
		}
	}
	if !strings.Contains(want[len(want)-1], `"cached_tokens":`) || strings.Contains(want[len(want)-1], `"cached_tokens":0}`) {
		t.Errorf("the last turn found nothing in the prefix cache: %s", want[len(want)-1])
	}
}

// TestHTTPSessionsConcurrent: requests of one session at once (a client that
// does not wait for its last answer) are all answered as when they come one at
// a time: the one that holds the session reads it incrementally, the others
// are prepared whole; run with -race it also checks that the scheduler's
// keeping of a finished turn's blocks and the next submission share nothing
// unguarded.
func TestHTTPSessionsConcurrent(t *testing.T) {
	body := func(n int) string {
		h := `{"role":"system","content":"You are a coding agent."}`
		for i := range n {
			h += fmt.Sprintf(`,{"role":"user","content":"step %d: %s"}`, i, strings.Repeat("run the tests ", 20))
		}
		return `{"model":"qwen3.6-35b-a3b","messages":[` + h + `],"max_completion_tokens":16,"stream":true,"stream_options":{"include_usage":true}}`
	}
	p, err := LookupHardware(DefaultHardware)
	if err != nil {
		t.Fatal(err)
	}
	ask := func(s *Server, b string) string {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(b))
		r.Header.Set("X-Session-ID", "sess-1")
		s.Handler().ServeHTTP(w, r)
		// What streams in which chunk, and the cache hits, depend on what else
		// runs: the text and the token counts do not.
		st := readStream(t, w.Body)
		return fmt.Sprintf("%d %q %q %d+%d", w.Code, st.reasoning, st.content, st.usage.PromptTokens, st.usage.CompletionTokens)
	}
	alone, err := New(Config{Hardware: p, Speedup: 1e6, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	s, err := New(Config{Hardware: p, Speedup: 1e6, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 8
	want := make([]string, n)
	for i := range n {
		want[i] = ask(alone, body(i+1))
	}
	got := make([]string, n)
	var wg sync.WaitGroup
	for round := range 3 {
		for i := range n {
			wg.Go(func() { got[i] = ask(s, body(i+1)) })
		}
		wg.Wait()
		for i := range n {
			if got[i] != want[i] {
				t.Fatalf("round %d, request %d at once with the others:\n%s\nalone:\n%s", round, i, got[i], want[i])
			}
		}
	}
}
