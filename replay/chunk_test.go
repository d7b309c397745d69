package replay

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/jsontext"
)

// slowApply decodes a chunk with encoding/json, the reference for the scanner.
func slowApply(data []byte) (*response, error) { return slowApplyAs(data, true) }

func slowApplyAs(data []byte, streamed bool) (*response, error) {
	var r response
	r.reset()
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return &r, err
	}
	r.apply(&c, 7, streamed)
	return &r, nil
}

func fastApply(data []byte) (*response, error) { return fastApplyAs(data, true) }

func fastApplyAs(data []byte, streamed bool) (*response, error) {
	var r response
	r.reset()
	var s chunkScanner
	c, err := s.parse(data)
	if err != nil {
		return &r, err
	}
	var scratch []byte
	return &r, r.applyRaw(c, 7, &scratch, streamed)
}

func sameResponse(a, b *response) bool {
	return a.content.String() == b.content.String() && a.reasoning.String() == b.reasoning.String() &&
		a.toolCallsJSON() == b.toolCallsJSON() && a.finish == b.finish && len(a.chunkTimes) == len(b.chunkTimes) && len(a.toolChunkTimes) == len(b.toolChunkTimes) &&
		a.firstContentBytes == b.firstContentBytes && a.firstReasoningBytes == b.firstReasoningBytes &&
		a.promptTokens == b.promptTokens && a.completionTokens == b.completionTokens && a.cachedTokens == b.cachedTokens &&
		a.errorFrames == b.errorFrames && a.firstError == b.firstError && a.tpotToolCallsJSON() == b.tpotToolCallsJSON() &&
		a.chunks == b.chunks
}

var chunkSeeds = []string{
	`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi \"there\"\n\u00e9\ud83d\ude00 \/"},"logprobs":null,"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"reasoning_content":"a","reasoning":"a"},"finish_reason":"stop"}],"usage":null}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`,
	`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":8}}}`,
	`{"error":{"message":"boom","type":"x","code":500}}`,
	`{"choices":[{"index":1,"delta":{"content":"b"}},{"index":0,"message":{"content":"a"}}]}`,
	`{"Choices":[{"Delta":{"Content":"case"}}]}`,
	`{"choices":[{"delta":{"content":"a"}}],"choices":[{"delta":{"reasoning":"b"}}]}`,
	`{"choices":[{"delta":{"content":5}}]}`,
	`{"choices":[{"index":1.5}]}`,
	`{"choices":[{"delta":{"content":"\ud800x"}}]} `,
	`{"choices":[{"delta":{"content":"a"}}]}x`,
	`{"choices":[{"delta":null,"message":{"content":"m"}}]}`,
	`[1,2]`,
	`{"a":[1,{"b":-0.5e+3,"c":[true,false,null]}],"choices":[{"index":-0,"delta":{"content":"z"}}]}`,
	// Trailing bytes after the value (once accepted).
	"{\"a\":1}\x00 garbage", "{}\x00", "null\x00", `{"choices":[{"delta":{"content":"a"}}]}` + "\x00",
	// Where encoding/json decodes into what is there: a null choice, repeated
	// usage and error keys (the scanner differed on these).
	`{"choices":[null]}`, `{"choices":[{"delta":{"content":"a"}}],"choices":[null,{"delta":{"content":"b"}}]}`,
	`{"choices":[],"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2}}`,
	`{"choices":[],"usage":{"prompt_tokens":1},"usage":null,"usage":{"completion_tokens":2}}`,
	`{"choices":[{"delta":{"content":"a"}}],"error":{"message":"x"},"error":{"type":"y"}}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c"}],"tool_calls":null,"tool_calls":[{"index":0,"type":"function"}]}}]}`,
	`{"ch\u006fices":[{"d\u0065lta":{"c\u006Fntent":"esc"}}]}`, `{"choices":[{"index":null,"delta":{"content":"n"}}]}`,
	// Tool calls through the scanner (decodeToolCalls) or left to encoding/json.
	`{"choices":[{"delta":{"tool_calls":[{"index":1,"ID":"a","id":null,"function":{"name":"f\u00e9","arguments":{"x": [1, 2]}},"function":{"arguments":"\"q"}}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"a"}},{"index":2,"index":null,"type":"function","function":{"name":"g"}}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":-0},{"index":1.0}]}}]}`, `{"choices":[{"delta":{"tool_calls":[{"index":99999999999999999999}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[null,{"index":0,"id":"n"}]}}]}`, `{"choices":[{"delta":{"tool_calls":[{"id":5}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"function":null,"id":"x"}]}}]}`, `{"choices":[{"delta":{"tool_calls":{"index":0}}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c"}],"tool_calls":[{"type":"function"}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"ind\u0065x":3,"function":{"n\u0061me":"e"}}]}}]}`, `{"choices":[{"delta":{"tool_calls":[{"id":"\ud800","function":{"name":"\u00ff\n"}}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"arguments":null}}]}}]}`, `{"choices":[{"delta":{"tool_calls":[]}}]}`,
}

func TestChunkScannerMatchesEncodingJSON(t *testing.T) {
	for _, s := range chunkSeeds {
		a, errA := fastApply([]byte(s))
		b, errB := slowApply([]byte(s))
		if (errA == nil) != (errB == nil) || !sameResponse(a, b) {
			t.Errorf("%s:\n fast %v %q %q\n slow %v %q %q", s, errA, a.content.String(), a.reasoning.String(), errB, b.content.String(), b.reasoning.String())
		}
	}
	var se *jsontext.SyntaxError
	if _, err := fastApply([]byte(`{"choices":[{"delta":{"content":"x"}`)); !errors.As(err, &se) {
		t.Fatalf("truncated chunk: %v", err)
	}
	if _, err := fastApply([]byte(`{"a":1}` + "\x00 garbage")); !errors.As(err, &se) || !strings.Contains(err.Error(), "trailing data") {
		t.Fatalf("trailing bytes: %v", err)
	}
}

// FuzzChunk checks the streaming path's chunk scanner against encoding/json: the
// same inputs are accepted, and they give the same response.
func FuzzChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		// encoding/json also folds two non-ASCII runes onto ASCII letters of keys
		// (U+017F onto s, U+212A onto k); the scanner folds ASCII only.
		low := strings.ToLower(in)
		if strings.Contains(in, "\u017f") || strings.Contains(in, "\u212a") || strings.Contains(low, `\u017f`) || strings.Contains(low, `\u212a`) {
			return
		}
		a, errA := fastApply([]byte(in))
		b, errB := slowApply([]byte(in))
		if (errA == nil) != (errB == nil) {
			t.Fatalf("fast err %v, encoding/json err %v", errA, errB)
		}
		if errA == nil && !sameResponse(a, b) {
			t.Fatalf("fast %q %q %s %q, encoding/json %q %q %s %q", a.content.String(), a.reasoning.String(), a.toolCallsJSON(), a.finish,
				b.content.String(), b.reasoning.String(), b.toolCallsJSON(), b.finish)
		}
		if !json.Valid([]byte(in)) && errA == nil {
			t.Fatal("accepted invalid JSON")
		}
		// A whole non-streamed completion takes the same path, merging tool calls
		// by position and timing nothing.
		a, errA = fastApplyAs([]byte(in), false)
		b, errB = slowApplyAs([]byte(in), false)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("non-streamed: fast err %v, encoding/json err %v", errA, errB)
		}
		if errA == nil && !sameResponse(a, b) {
			t.Fatalf("non-streamed: fast %q %q %s %q, encoding/json %q %q %s %q", a.content.String(), a.reasoning.String(), a.toolCallsJSON(), a.finish,
				b.content.String(), b.reasoning.String(), b.toolCallsJSON(), b.finish)
		}
	})
}

// chunk is the part of a chat.completion.chunk the client reads, decoded by
// encoding/json: the oracle for the scanner. Unknown fields are ignored.
type chunk struct {
	Choices []choice   `json:"choices"`
	Usage   *usage     `json:"usage"`
	Error   *errorBody `json:"error"`
}

type choice struct {
	Index        int      `json:"index"`
	Delta        *message `json:"delta"`
	Message      *message `json:"message"`
	FinishReason *string  `json:"finish_reason"`
}

type message struct {
	Content          *string         `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        *string         `json:"reasoning"`
	ToolCalls        []toolCallDelta `json:"tool_calls"`
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// apply merges one chunk decoded by encoding/json into r at time now: the
// oracle FuzzChunk checks the scanner path (applyRaw) against.
func (r *response) apply(c *chunk, now int64, streamed bool) {
	if c.Error != nil {
		r.noteError(c.Error)
	}
	if c.Usage != nil {
		r.applyUsage(c.Usage)
	}
	bearing, text := false, false
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // n > 1: the client records the first choice only
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			r.finish = *ch.FinishReason
		}
		m := ch.Delta
		if m == nil {
			m = ch.Message
		}
		if m == nil {
			continue
		}
		if r.addText(str(m.Content), str(m.ReasoningContent), str(m.Reasoning)) {
			bearing, text = true, true
		}
		if r.mergeToolCalls(m.ToolCalls, streamed) {
			bearing = true
		}
	}
	switch {
	case bearing && streamed:
		r.bear(now, text)
	case bearing:
		// A whole completion: output, but no first token or chunk time (the
		// reference times neither for a request not streamed).
		r.chunks++
	}
}

// TestChunkSequence: a response read chunk after chunk by the scanner, which
// decodes each chunk's tool calls into the lists of the one before, is the
// oracle's (encoding/json, a fresh value each chunk), a repeated tool_calls key
// after a longer list included.
func TestChunkSequence(t *testing.T) {
	for _, seq := range [][]string{{
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","type":"function","function":{"name":"f","arguments":"{"}},{"index":0,"id":"y","function":{"name":"g"}},{"index":0,"id":"c"}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"x\""}}],"tool_calls":[{"index":0},{"index":0}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"}"}}]}},{"index":1,"delta":{"tool_calls":[{"index":5,"id":"z"}]}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"done"}}]}`,
	}} {
		fast, slow := new(response), new(response)
		fast.reset()
		slow.reset()
		var s chunkScanner
		var scratch []byte
		for _, data := range seq {
			c, err := s.parse([]byte(data))
			if err == nil {
				err = fast.applyRaw(c, 7, &scratch, true)
			}
			if err != nil {
				t.Fatalf("%s: %v", data, err)
			}
			var sc chunk
			if err := json.Unmarshal([]byte(data), &sc); err != nil {
				t.Fatal(err)
			}
			slow.apply(&sc, 7, true)
		}
		if !sameResponse(fast, slow) {
			t.Errorf("fast %s %q, encoding/json %s %q", fast.toolCallsJSON(), fast.content.String(), slow.toolCallsJSON(), slow.content.String())
		}
	}
}
