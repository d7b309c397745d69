package simserver

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/schemas"
)

// chunk is an SSE chunk as a client decodes it.
type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Choices []struct {
		Delta struct {
			Role      string             `json:"role"`
			Content   *string            `json:"content"`
			Reasoning *string            `json:"reasoning_content"`
			ToolCalls []schemas.ToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// streamed is a streamed answer put back together.
type streamed struct {
	chunks              []chunk
	content, reasoning  string
	toolNames, toolArgs []string
	toolIDs             []string
	finish              string
	usage               *usage
	done                bool
}

func readStream(t testing.TB, r io.Reader) streamed {
	t.Helper()
	var s streamed
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not an SSE data line", line)
		}
		if data == "[DONE]" {
			s.done = true
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		s.chunks = append(s.chunks, c)
		if c.Usage != nil {
			s.usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil {
				s.content += *ch.Delta.Content
			}
			if ch.Delta.Reasoning != nil {
				s.reasoning += *ch.Delta.Reasoning
			}
			for _, tc := range ch.Delta.ToolCalls {
				for len(s.toolNames) <= tc.Index {
					s.toolNames, s.toolArgs, s.toolIDs = append(s.toolNames, ""), append(s.toolArgs, ""), append(s.toolIDs, "")
				}
				s.toolNames[tc.Index] += tc.Function.Name
				s.toolArgs[tc.Index] += tc.Function.Arguments
				s.toolIDs[tc.Index] += tc.ID
			}
			if ch.FinishReason != nil {
				s.finish = *ch.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

func tinyConfig(t testing.TB) Config {
	t.Helper()
	p, err := LookupHardware("tiny")
	if err != nil {
		t.Fatal(err)
	}
	return Config{Hardware: p, Speedup: 1000, Seed: 7, Output: OutputLength{Mean: 40, Sigma: 0.3, Min: 8, Max: 200}}
}

// newServer is a simulator of cfg, closed when the test ends.
func newServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func startServer(t testing.TB, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, hs
}

func post(t testing.TB, url, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const bashTools = `[{"type":"function","function":{"name":"bash","description":"run a command","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}]`

func TestStreamShape(t *testing.T) {
	_, hs := startServer(t, tinyConfig(t))
	tests := []struct {
		name, body string
		tools      bool
		finish     string
		maxTokens  int
	}{
		{"content", `{"model":"sim-tiny","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello"}]}`, false, "stop", 0},
		{"tool call", `{"model":"sim-tiny","stream":true,"stream_options":{"include_usage":true},"tools":` + bashTools + `,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"list files"}]}`, true, "tool_calls", 0},
		{"max tokens", `{"model":"sim-tiny","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":5,"messages":[{"role":"user","content":"hello"}]}`, false, "length", 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, hs.URL, tc.body)
			defer resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if got := resp.Header.Get("X-Sim-Speedup"); got != "1000" {
				t.Errorf("X-Sim-Speedup = %q, want 1000", got)
			}
			s := readStream(t, resp.Body)
			if !s.done {
				t.Error("no [DONE]")
			}
			if len(s.chunks) == 0 || s.chunks[0].Choices[0].Delta.Role != "assistant" || s.chunks[0].Object != "chat.completion.chunk" {
				t.Errorf("first chunk %+v is not the role chunk", s.chunks[0])
			}
			if s.finish != tc.finish {
				t.Errorf("finish_reason %q, want %q", s.finish, tc.finish)
			}
			if s.usage == nil || s.usage.PromptTokens == 0 || s.usage.TotalTokens != s.usage.PromptTokens+s.usage.CompletionTokens {
				t.Fatalf("usage %+v", s.usage)
			}
			if tc.maxTokens > 0 && s.usage.CompletionTokens != tc.maxTokens {
				t.Errorf("completion tokens %d, want %d", s.usage.CompletionTokens, tc.maxTokens)
			}
			if s.reasoning == "" {
				t.Error("no reasoning_content deltas")
			}
			if tc.tools {
				if len(s.toolNames) != 1 || s.toolNames[0] != "bash" || !strings.HasPrefix(s.toolIDs[0], "chatcmpl-tool-") {
					t.Fatalf("tool calls %q ids %q", s.toolNames, s.toolIDs)
				}
				var args struct{ Command string }
				if err := json.Unmarshal([]byte(s.toolArgs[0]), &args); err != nil || args.Command == "" {
					t.Errorf("arguments %q: %v", s.toolArgs[0], err)
				}
			} else if tc.finish == "stop" && s.content == "" {
				t.Error("no content")
			}
		})
	}
}

func TestNonStreaming(t *testing.T) {
	_, hs := startServer(t, tinyConfig(t))
	resp := post(t, hs.URL, `{"model":"sim-tiny","tools":`+bashTools+`,"messages":[{"role":"user","content":"go"}]}`)
	defer resp.Body.Close()
	var out struct {
		Object  string
		Choices []struct {
			Message struct {
				Role      string
				Content   *string
				Reasoning string `json:"reasoning_content"`
				ToolCalls []struct {
					ID       string
					Type     string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
		Usage usage
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	m := out.Choices[0].Message
	if out.Object != "chat.completion" || m.Role != "assistant" || m.Content != nil || len(m.ToolCalls) != 1 ||
		m.ToolCalls[0].Function.Name != "bash" || out.Choices[0].FinishReason != "tool_calls" || out.Usage.CompletionTokens == 0 {
		t.Errorf("response %+v", out)
	}
}

func TestBadRequests(t *testing.T) {
	_, hs := startServer(t, tinyConfig(t))
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"bad json", `{"messages":`, 400, "invalid JSON"},
		{"no messages", `{"model":"sim-tiny","messages":[]}`, 400, "messages must be a non-empty list"},
		{"missing messages", `{"model":"sim-tiny"}`, 400, "messages must be a non-empty list"},
		{"unknown model", `{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, 404, "gpt-9"},
		{"unknown role", `{"messages":[{"role":"robot","content":"x"}]}`, 400, "unknown role"},
		{"zero max tokens", `{"max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, 400, "max tokens"},
		{"bad tools", `{"tools":{"a":1},"messages":[{"role":"user","content":"x"}]}`, 400, "tools"},
		{"too long", `{"messages":[{"role":"user","content":"` + strings.Repeat("word ", 2000) + `"}]}`, 400, "maximum context length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, hs.URL, tc.body)
			defer resp.Body.Close()
			var e struct {
				Error struct {
					Message string
					Type    string
					Code    int
				}
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || e.Error.Code != tc.status || !strings.Contains(e.Error.Message, tc.want) {
				t.Errorf("status %d, error %+v; want %d with %q", resp.StatusCode, e.Error, tc.status, tc.want)
			}
		})
	}
}

func TestModelsHealthMetrics(t *testing.T) {
	_, hs := startServer(t, tinyConfig(t))
	resp := post(t, hs.URL, `{"messages":[{"role":"user","content":"hello there"}]}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	get := func(path string) (int, string, http.Header) {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	if code, body, h := get("/health"); code != 200 || h.Get("X-Sim-Speedup") != "1000" {
		t.Errorf("health: %d %q %v", code, body, h)
	}
	if code, body, _ := get("/v1/models"); code != 200 || !strings.Contains(body, `"id":"sim-tiny"`) {
		t.Errorf("models: %d %s", code, body)
	}
	code, body, _ := get("/metrics")
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:prompt_tokens_total",
		"vllm:generation_tokens_total", "vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket",
		"agentrace_sim_speedup 1000"} {
		if !strings.Contains(body, name) {
			t.Errorf("metrics lack %s", name)
		}
	}
}

// TestLaxScalars: stream and max tokens are read as vLLM's request model
// (pydantic, lax mode) reads them, so a dataset's "stream":1.0 or
// "max_completion_tokens":8.0 (sent as the file carries them) gets the answer a
// vLLM server gives: a stream for a truthy 1, 1.0 or "yes", a whole response for
// 0, 0.0 and null, and an error for values pydantic refuses.
func TestLaxScalars(t *testing.T) {
	_, hs := startServer(t, tinyConfig(t))
	const msgs = `"messages":[{"role":"user","content":"hello"}]`
	for _, tc := range []struct {
		params string
		status int
		stream bool
	}{
		{`"stream":1.0,"max_completion_tokens":8.0`, 200, true},
		{`"stream":1`, 200, true},
		{`"stream":"yes"`, 200, true},
		{`"stream":true,"max_tokens":"6"`, 200, true},
		{`"stream":0.0`, 200, false},
		{`"stream":0,"max_completion_tokens":8`, 200, false},
		{`"stream":null`, 200, false},
		{`"stream":2`, 400, false},
		{`"stream":0.5`, 400, false},
		{`"stream":"maybe"`, 400, false},
		{`"stream":[]`, 400, false},
		{`"max_completion_tokens":8.5`, 400, false},
	} {
		resp := post(t, hs.URL, `{"model":"sim-tiny",`+tc.params+`,`+msgs+`}`)
		ct := resp.Header.Get("Content-Type")
		resp.Body.Close()
		if resp.StatusCode != tc.status || (tc.status == 200 && (ct == "text/event-stream") != tc.stream) {
			t.Errorf("%s: status %d, content type %q; want %d, streamed %v", tc.params, resp.StatusCode, ct, tc.status, tc.stream)
		}
	}
}
