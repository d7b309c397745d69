package replay

import (
	"bufio"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// TestSSEBOM: a body that begins with a UTF-8 byte order mark keeps its first
// event (streamed) or parses (not streamed), and the turn says the mark was
// stripped.
func TestSSEBOM(t *testing.T) {
	const first = `data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}` + "\n\n"
	const rest = `data: {"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	for _, tc := range []struct {
		name, in, content, warn string
	}{
		{"no mark", first + rest, "Hello", ""},
		{"mark", utf8BOM + first + rest, "Hello", "leading_bom (the body began with a UTF-8 byte order mark: stripped)"},
		{"mark only once", utf8BOM + utf8BOM + first + rest, "lo", "leading_bom (the body began with a UTF-8 byte order mark: stripped)"},
	} {
		for _, oneByte := range []bool{false, true} {
			r, err := parseSSE(tc.in, oneByte)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := r.content.String(); got != tc.content {
				t.Errorf("%s (one byte %v): content %q, want %q", tc.name, oneByte, got, tc.content)
			}
			if got := r.warnings(true, true); got != tc.warn {
				t.Errorf("%s (one byte %v): warnings %q, want %q", tc.name, oneByte, got, tc.warn)
			}
		}
	}
	body := `{"choices":[{"index":0,"message":{"content":"Hi"},"finish_reason":"stop"}]}`
	for _, bom := range []bool{false, true} {
		in := body
		if bom {
			in = utf8BOM + body
		}
		var r response
		r.reset()
		if err := readCompletion([]byte(in), &r, 1); err != nil {
			t.Fatalf("non-streamed, mark %v: %v", bom, err)
		}
		if r.content.String() != "Hi" || r.bom != bom || strings.Contains(r.warnings(false, true), "leading_bom") != bom {
			t.Errorf("non-streamed, mark %v: content %q, warnings %q", bom, r.content.String(), r.warnings(false, true))
		}
	}
}

// TestSSEEventOfManyLines: one event whose JSON is split over many data: lines
// is one chunk, and reading it takes time linear in its lines. Before, every line
// re-validated the whole event so far: 4 times the lines took 16 times as long.
func TestSSEEventOfManyLines(t *testing.T) {
	event := func(lines int) string {
		var b strings.Builder
		b.WriteString(`data: {"choices":[{"index":0,"delta":{"content":"a"}}],` + "\n")
		for i := range lines {
			fmt.Fprintf(&b, "data: \"k%d\":[1,{\"s\":\"}\\\"]\"}],\n", i)
		}
		b.WriteString("data: \"z\":0}\n")
		// no blank line: the next event follows at once, as some servers send it
		b.WriteString(`data: {"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}` + "\n\n")
		return b.String()
	}
	parse := func(in string) *response {
		r, err := parseSSE(in, false)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := parse(event(3))
	if r.content.String() != "ab" || r.malformed != 0 || r.finish != "stop" {
		t.Fatalf("content %q, %d malformed, finish %q", r.content.String(), r.malformed, r.finish)
	}
	ratio := testenv.Scaling(t, 10000, func(n int) func() {
		in := event(n)
		return func() { parse(in) }
	})
	if ratio > 8 {
		t.Errorf("4 times the data lines took %.1f times as long (linear: 4, quadratic: 16)", ratio)
	}
}

// TestToolCallDeltasLinear: tool-call deltas each opening a new index merge in
// time linear in their number, and the tool calls kept, their JSON included,
// stay within the output limit however many deltas come and however long their
// ids and names. Before, each delta searched the calls so far (160k deltas:
// 7.4 s) and ids and names counted against nothing.
func TestToolCallDeltasLinear(t *testing.T) {
	stream := func(n int, name string) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"call_%d","function":{"name":"%s","arguments":"{}"}}]}}]}`+"\n\n", i, i, name)
		}
		b.WriteString(`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\ndata: [DONE]\n\n")
		return b.String()
	}
	read := func(in string, limit int64) *response {
		s := sseReader{br: bufio.NewReaderSize(strings.NewReader(in), 64<<10)}
		var r response
		r.maxBytes = limit
		r.reset()
		if err := s.read(&r, func() int64 { return 1 }); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	const limit = 256 << 10
	for _, name := range []string{"f", strings.Repeat("n", 4096)} {
		r := read(stream(20000, name), limit)
		js, tpot := r.toolCallsJSON(), r.tpotToolCallsJSON()
		if int64(len(js)) > limit || int64(len(tpot)) > limit || r.kept > limit {
			t.Errorf("name of %d bytes: tool calls %d bytes of JSON (tpot %d), kept %d, limit %d", len(name), len(js), len(tpot), r.kept, limit)
		}
		if r.truncated == 0 || r.tools.Len() == 0 {
			t.Errorf("name of %d bytes: %d calls kept, %d bytes truncated", len(name), r.tools.Len(), r.truncated)
		}
	}
	ratio := testenv.Scaling(t, 10000, func(n int) func() {
		in := stream(n, "f")
		return func() { read(in, 64<<20) }
	})
	if ratio > 8 {
		t.Errorf("4 times the tool-call deltas took %.1f times as long (linear: 4, quadratic: 16)", ratio)
	}
}
