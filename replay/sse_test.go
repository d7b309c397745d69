package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/agentrace/agentrace/schemas"
)

func parseSSE(input string, oneByte bool) (*response, error) {
	return parseSSEWith(input, oneByte, false)
}

func parseSSEWith(input string, oneByte, strict bool) (*response, error) {
	var rd = strings.NewReader(input)
	var br *bufio.Reader
	if oneByte {
		br = bufio.NewReaderSize(iotest.OneByteReader(rd), 16) // also forces lines over the buffer
	} else {
		br = bufio.NewReaderSize(rd, 64<<10)
	}
	s := sseReader{br: br, strict: strict}
	var r response
	r.reset()
	var clock int64
	err := s.read(&r, func() int64 { clock += 10; return clock })
	return &r, err
}

func TestSSE(t *testing.T) {
	const (
		usage = `data: {"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":64}}}` + "\n\n"
		done  = "data: [DONE]\n\n"
	)
	for _, tc := range []struct {
		name                    string
		in                      string
		content, reasoning      string
		tools                   string
		finish                  string
		chunks                  int
		toolChunks              int // of chunks: tool calls alone after the first (no receive event in the reference)
		firstContent, firstReas int
		prompt, completion, hit int32
		err                     string // by default
		warn                    string // by default
		strictErr               string // with strict (default: err)
		tpotTools               string
	}{
		{name: "plain", in: `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" + usage + done,
			content: "Hello", finish: "stop", chunks: 2, firstContent: 3, prompt: 100, completion: 7, hit: 64},
		{name: "quirks: comments, no space, CRLF, other fields, no blank lines, no DONE",
			in: ": ping\r\n\r\nevent: message\r\nid: 1\r\nretry: 5\r\ndata:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\r\n" +
				"data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\r\n\r\n: keep-alive\n\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
			content: "ab", finish: "length", chunks: 2, firstContent: 1, prompt: -1, completion: -1, hit: -1, warn: "no [DONE]"},
		{name: "reasoning fields, both at once counted once",
			in: `data: {"choices":[{"index":0,"delta":{"reasoning_content":"th","reasoning":"th"}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"reasoning":"ink"}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"content":"ok","reasoning_content":"!"}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" + done,
			content: "ok", reasoning: "think!", finish: "stop", chunks: 3, firstContent: 2, firstReas: 2, prompt: -1, completion: -1, hit: -1},
		{name: "tool calls merged by index",
			in: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"bash","arguments":""}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"cmd\":"}},{"index":1,"id":"call_b","type":"function","function":{"name":"ls","arguments":"{}"}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" + done,
			tools:  `[{"index":0,"id":"call_a","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"ls\"}"}},{"index":1,"id":"call_b","type":"function","function":{"name":"ls","arguments":"{}"}}]`,
			finish: "tool_calls", chunks: 3, toolChunks: 2, prompt: -1, completion: -1, hit: -1,
			// The reference's TPOT drops the first tool-call chunk of an answer with nothing else.
			tpotTools: `[{"index":0,"type":"function","function":{"name":"","arguments":"{\"cmd\":\"ls\"}"}},{"index":1,"id":"call_b","type":"function","function":{"name":"ls","arguments":"{}"}}]`},
		{name: "tool calls after content: nothing dropped for TPOT",
			in: `data: {"choices":[{"index":0,"delta":{"content":"Let me look."}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"bash","arguments":"{}"}}]}}]}` + "\n\n" + done,
			content: "Let me look.", tools: `[{"index":0,"id":"c","type":"function","function":{"name":"bash","arguments":"{}"}}]`,
			chunks: 2, toolChunks: 1, firstContent: 12, prompt: -1, completion: -1, hit: -1},
		{name: "one whole tool call: nothing left for TPOT",
			in:    `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"bash","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}` + "\n\n" + done,
			tools: `[{"index":0,"id":"c","type":"function","function":{"name":"bash","arguments":"{}"}}]`, finish: "tool_calls",
			chunks: 1, prompt: -1, completion: -1, hit: -1, tpotTools: "[]"},
		{name: "streamed delta without index goes to index 0; last id and name win",
			in: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{\"k\":"}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":"1}"}}]}}]}` + "\n\n" + done,
			tools:  `[{"index":0,"id":"b","type":"function","function":{"name":"y","arguments":"{\"k\":1}"}}]`,
			chunks: 2, toolChunks: 1, prompt: -1, completion: -1, hit: -1, tpotTools: `[{"index":0,"id":"b","type":"function","function":{"name":"y","arguments":"1}"}}]`},
		{name: "content after a first tool-call chunk: first content chunk counted alone",
			in: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":""}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"content":"ab"}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"content":"cde"}}]}` + "\n\n" + done,
			content: "abcde", tools: `[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}}]`,
			chunks: 3, firstContent: 2, prompt: -1, completion: -1, hit: -1},
		{name: "multi-line data joined", in: "data: {\"choices\":[{\"index\":0,\n" + `data: "delta":{"content":"x"},"finish_reason":"stop"}]}` + "\n\n",
			content: "x", finish: "stop", chunks: 1, firstContent: 1, prompt: -1, completion: -1, hit: -1, warn: "no [DONE]"},
		{name: "second choice ignored", in: `data: {"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"},"finish_reason":"stop"}]}` + "\n\n",
			content: "yes", finish: "stop", chunks: 1, firstContent: 3, prompt: -1, completion: -1, hit: -1, warn: "no [DONE]"},
		{name: "cut before finish", in: `data: {"choices":[{"index":0,"delta":{"content":"x"}}]}` + "\n\n",
			content: "x", chunks: 1, firstContent: 1, prompt: -1, completion: -1, hit: -1, warn: "no [DONE]", strictErr: "before a finish reason"},
		{name: "malformed frames skipped", in: "data: {\"choices\":[}\n\n" + `data: {"choices":[{"index":0,"delta":{"content":"a"}}]}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":"zero"}]},"finish_reason":"x"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}` + "\n\n" + done,
			content: "a", chunks: 1, firstContent: 1, prompt: -1, completion: -1, hit: -1,
			warn: `malformed_frame x2 (first: "{\"choices\":[}": invalid JSON at byte 13: unexpected '}')`, strictErr: "malformed"},
		{name: "error object ignored", in: `data: {"error":{"message":"KV cache full","type":"InternalServerError"}}` + "\n\n" +
			`data: {"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}` + "\n\n" + done,
			content: "b", finish: "stop", chunks: 1, firstContent: 1, prompt: -1, completion: -1, hit: -1,
			warn: "error_frame: InternalServerError: KV cache full", strictErr: "KV cache full"},
		{name: "two error objects", in: `data: {"error":{"message":"a; b"}}` + "\n\n" + `data: {"error":{"message":"c"}}` + "\n\n",
			prompt: -1, completion: -1, hit: -1, warn: "error_frame x2 (first: a, b); no [DONE]", strictErr: "server error in stream: a, b"},
		{name: "empty", in: "", prompt: -1, completion: -1, hit: -1, warn: "no [DONE]", strictErr: "before a finish reason"},
		{name: "long line", in: `data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("z", 100000) + `"},"finish_reason":"stop"}]}` + "\n\n" + done,
			content: strings.Repeat("z", 100000), finish: "stop", chunks: 1, firstContent: 100000, prompt: -1, completion: -1, hit: -1},
	} {
		for _, oneByte := range []bool{false, true} {
			if tc.strictErr == "" {
				tc.strictErr = tc.err
			}
			_, err := parseSSEWith(tc.in, oneByte, true)
			if tc.strictErr == "" && err != nil || tc.strictErr != "" && (err == nil || !strings.Contains(err.Error(), tc.strictErr)) {
				t.Fatalf("%s (one byte %v, strict): err = %v, want %q", tc.name, oneByte, err, tc.strictErr)
			}
			r, err := parseSSE(tc.in, oneByte)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("%s (one byte %v): err = %v, want %q", tc.name, oneByte, err, tc.err)
			}
			if w := r.warnings(true, err == nil); w != tc.warn {
				t.Fatalf("%s: warnings %q, want %q", tc.name, w, tc.warn)
			}
			if got := r.tpotToolCallsJSON(); got != tc.tpotTools {
				t.Fatalf("%s: tpot tool calls %s, want %s", tc.name, got, tc.tpotTools)
			}
			if r.content.String() != tc.content || r.reasoning.String() != tc.reasoning || r.toolCallsJSON() != tc.tools || r.finish != tc.finish {
				t.Fatalf("%s: content %q reasoning %q tools %s finish %q", tc.name, r.content.String(), r.reasoning.String(), r.toolCallsJSON(), r.finish)
			}
			if len(r.chunkTimes) != tc.chunks-tc.toolChunks || len(r.toolChunkTimes) != tc.toolChunks || r.chunks != tc.chunks ||
				r.firstContentBytes != tc.firstContent || r.firstReasoningBytes != tc.firstReas {
				t.Fatalf("%s: %d chunks (%d timed, %d tool-call only), first bytes %d/%d", tc.name, r.chunks, len(r.chunkTimes), len(r.toolChunkTimes), r.firstContentBytes, r.firstReasoningBytes)
			}
			if tc.chunks > 0 && r.firstTokenNs != r.chunkTimes[0] {
				t.Fatalf("%s: first token %d, first chunk %d", tc.name, r.firstTokenNs, r.chunkTimes[0])
			}
			if r.promptTokens != tc.prompt || r.completionTokens != tc.completion || r.cachedTokens != tc.hit {
				t.Fatalf("%s: usage %d %d %d", tc.name, r.promptTokens, r.completionTokens, r.cachedTokens)
			}
		}
	}
}

func TestReadCompletion(t *testing.T) {
	var r response
	r.reset()
	body := `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning":"why","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":6}}`
	if err := readCompletion([]byte(body), &r, 42); err != nil {
		t.Fatal(err)
	}
	if r.reasoning.String() != "why" || r.toolCallsJSON() != `[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]` || r.finish != "tool_calls" || r.firstTokenNs != 0 || len(r.chunkTimes) != 0 || r.chunks != 1 || r.completionTokens != 6 || r.cachedTokens != -1 {
		t.Fatalf("%+v %s", r, r.toolCallsJSON())
	}
	r.reset()
	if err := readCompletion([]byte(`{"choices":[]}`), &r, 1); err == nil {
		t.Fatal("want an error for a completion without choices")
	}
}

// FuzzSSE checks that the parser never panics and that how the bytes arrive
// (all at once or one by one) never changes what it reads.
func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n",
		": c\r\ndata:{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\"}}]}}]}\r\n",
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":3}}}\n\n",
		"data: {\"error\":{\"message\":\"x\"}}\n\n",
		"data: {\"choices\":[{\"index\":0,\n\ndata: \"x\"\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a, errA := parseSSE(in, false)
		b, errB := parseSSE(in, true)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("error differs: %v vs %v", errA, errB)
		}
		if a.content.String() != b.content.String() || a.reasoning.String() != b.reasoning.String() ||
			a.toolCallsJSON() != b.toolCallsJSON() || a.finish != b.finish || len(a.chunkTimes) != len(b.chunkTimes) || len(a.toolChunkTimes) != len(b.toolChunkTimes) ||
			a.firstContentBytes != b.firstContentBytes || a.cachedTokens != b.cachedTokens {
			t.Fatalf("result depends on read sizes")
		}
		if len(a.chunkTimes) > 0 && a.firstTokenNs != a.chunkTimes[0] {
			t.Fatal("first token is not the first chunk")
		}
	})
}

// BenchmarkSSE reads a 64-token stream with the client's parser; compare with
// BenchmarkSSEEncodingJSON, the same stream decoded chunk by chunk with
// encoding/json.
func BenchmarkSSE(b *testing.B) {
	stream := benchStream(64)
	s := sseReader{br: bufio.NewReaderSize(nil, 64<<10)}
	var r response
	rd := strings.NewReader(stream)
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		rd.Reset(stream)
		s.br.Reset(rd)
		r.reset()
		if err := s.read(&r, func() int64 { return 1 }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSSEEncodingJSON(b *testing.B) {
	stream := benchStream(64)
	var lines [][]byte
	for _, l := range strings.Split(stream, "\n") {
		if strings.HasPrefix(l, "data: {") {
			lines = append(lines, []byte(l[6:]))
		}
	}
	var r response
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		r.reset()
		for _, l := range lines {
			var c chunk
			if err := json.Unmarshal(l, &c); err != nil {
				b.Fatal(err)
			}
			r.apply(&c, 1, true)
		}
	}
}

func benchStream(tokens int) string {
	var sb strings.Builder
	sb.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	for i := range tokens {
		field := "content"
		if i < tokens/2 {
			field = "reasoning_content"
		}
		fmt.Fprintf(&sb, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{%q:" word\n%d"},"logprobs":null,"finish_reason":null}]}`+"\n\n", field, i)
	}
	sb.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n")
	sb.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":64,"prompt_tokens_details":{"cached_tokens":96}}}` + "\n\ndata: [DONE]\n\n")
	return sb.String()
}

// BenchmarkReadCompletion decodes a whole (non-streamed) chat.completion with
// text, reasoning, a tool call and usage.
func BenchmarkReadCompletion(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("word ", 200) + `","reasoning_content":"` + strings.Repeat("think ", 100) + `","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"path\":\"/a/b\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":6,"prompt_tokens_details":{"cached_tokens":2}}}`)
	var r response
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r.reset()
		if err := readCompletion(body, &r, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzArgumentsText: a tool call's arguments read without encoding/json
// (argumentsText) are schemas.ArgumentsText's, for any value encoding/json
// accepts (the oracle: ArgumentsText decodes with encoding/json), escapes,
// surrogates and invalid UTF-8 included.
func FuzzArgumentsText(f *testing.F) {
	for _, s := range []string{`"{\"path\": \"a.go\"}"`, `"plain"`, `""`, `"\ud83d\ude00 \u00e9 \/ \n"`, `"\ud800x"`, "\"\xff\"", `{"x": [1, 2]}`, `null`, ` "sp" `, `5`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			t.Skip()
		}
		var r response
		got, want := r.argumentsText(raw), schemas.ArgumentsText(raw)
		if got != want {
			t.Fatalf("argumentsText(%q) = %q, ArgumentsText %q", raw, got, want)
		}
	})
}
