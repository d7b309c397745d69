package simserver

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/tokens"
)

func TestPieces(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"hello world", []string{"hello", " world"}},
		{"internationalization", []string{"internat", "ionaliza", "tion"}},
		{"a.b\n\nc", []string{"a", ".", "b", "\n\n", "c"}},
		{"    x = 1", []string{"   ", " x", " =", " 1"}},
		{strings.Repeat(" ", 20) + "y", []string{strings.Repeat(" ", 16), "   ", " y"}},
		{"<|im_start|>user\n", []string{"<|im_start|>", "user", "\n"}},
		{"<think>\nhm\n</think>", []string{"<think>", "\n", "hm", "\n", "</think>"}},
		{"<thin", []string{"<", "thin"}},
		{"x.<|im_end|>", []string{"x", ".", "<|im_end|>"}},
		{"x <think>", []string{"x", " ", "<think>"}},
		{"a ((b))", []string{"a", " ((", "b", "))"}},
		{"héllo", []string{"héllo"}},
		{"日本語です", []string{"日本", "語で", "す"}},
		{`{"a": 1}`, []string{`{"`, "a", `":`, " 1", "}"}},
	}
	for _, tc := range tests {
		got := appendPieces(nil, tc.in)
		if !slices.Equal(got, tc.want) {
			t.Errorf("pieces(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if n := countPieces(tc.in); n != len(tc.want) {
			t.Errorf("countPieces(%q) = %d, want %d", tc.in, n, len(tc.want))
		}
	}
}

// TestPiecesDensity checks the approximation's bytes per token on prose and
// code against what Qwen3's tokenizer gives on the same text (5.0 and 4.2).
func TestPiecesDensity(t *testing.T) {
	prose := strings.Repeat("The parser fails when the input has a trailing comma, so we should check the last token before returning. ", 20)
	code := strings.Repeat("def parse(tokens):\n    for i, tok in enumerate(tokens):\n        if tok == ',' and i == len(tokens) - 1:\n            raise ValueError(\"trailing comma\")\n", 20)
	for _, tc := range []struct {
		name string
		text string
		qwen float64
	}{{"prose", prose, 5.0}, {"code", code, 4.2}} {
		if r := float64(len(tc.text)) / float64(countPieces(tc.text)); r < 0.7*tc.qwen || r > 1.3*tc.qwen {
			t.Errorf("%s: %.2f bytes per token, Qwen3 %.1f", tc.name, r, tc.qwen)
		}
	}
}

// TestPiecesAgainstQwen3 counts the shared sample's message texts with the
// pseudo-tokenizer and with the real Qwen3 tokenizer: totals agree within 15%.
func TestPiecesAgainstQwen3(t *testing.T) {
	tok, err := tokens.Load(context.Background(), testenv.Tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(testenv.SampleFlat(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	var pseudo, real, bytes int
	for rows := 0; sc.Scan() && rows < 400; rows++ {
		var r struct {
			Content     string `json:"content"`
			Reasoning   string `json:"reasoning_content"`
			ToolResults []struct {
				Content string `json:"content"`
			} `json:"tool_results"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		texts := []string{r.Content, r.Reasoning}
		for _, tr := range r.ToolResults {
			texts = append(texts, tr.Content)
		}
		for _, s := range texts {
			pseudo += countPieces(s)
			real += len(tok.Encode(s, false))
			bytes += len(s)
		}
	}
	ratio := float64(pseudo) / float64(real)
	t.Logf("%d bytes: %d pseudo-tokens (%.2f bytes each), %d Qwen3 tokens (%.2f bytes each), ratio %.3f",
		bytes, pseudo, float64(bytes)/float64(pseudo), real, float64(bytes)/float64(real), ratio)
	if ratio < 0.85 || ratio > 1.15 {
		t.Errorf("pseudo-tokens / Qwen3 tokens = %.3f, want within 15%%", ratio)
	}
}

// joinable tells whether tokenizing a+b must give tokenize(a)+tokenize(b): a
// ends with a newline that b does not continue, or b starts with a marker.
func joinable(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	return a[len(a)-1] == '\n' && b[0] != '\n' || special(b, 0) > 0
}

// FuzzPieces checks the pseudo-tokenizer's invariants: the pieces spell the
// text, a valid UTF-8 text gives valid UTF-8 pieces (so streamed deltas never
// split a character), and tokenizing a+b equals tokenizing a then b when a ends
// with a newline or b starts with a marker — the property that makes a turn's
// prompt a prefix of the next turn's.
func FuzzPieces(f *testing.F) {
	for _, s := range []string{"hello world", "a.b", "<think>\nx\n</think>\n\n", "  x", "日本語", "{\"command\": \"ls -la\"}"} {
		f.Add(s+"\n", s)
		f.Add(s+" .", "<|im_end|>\n")
		f.Add(s+"<", "<think>"+s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		s := a + b
		ps := appendPieces(nil, s)
		if strings.Join(ps, "") != s {
			t.Fatalf("pieces of %q do not spell it: %q", s, ps)
		}
		for _, p := range ps {
			if p == "" {
				t.Fatalf("empty piece in %q", ps)
			}
			if utf8.ValidString(s) && !utf8.ValidString(p) {
				t.Fatalf("piece %q of valid %q is not valid UTF-8", p, s)
			}
		}
		if !joinable(a, b) {
			return
		}
		if got := append(appendPieces(nil, a), appendPieces(nil, b)...); !slices.Equal(got, ps) {
			t.Fatalf("pieces(%q)+pieces(%q) = %q, want %q", a, b, got, ps)
		}
	})
}

// TestRenderEchoMatchesAnswer checks that an answer's rendering gives exactly the
// tokens of the same message echoed in a later prompt.
func TestRenderEchoMatchesAnswer(t *testing.T) {
	answers := []answer{
		{Reasoning: "Look at the files first.", ToolCalls: []answerCall{{ID: "c1", Name: "bash", Arguments: `{"command": "ls -la"}`}}},
		{Reasoning: "", Content: "Done.\nAll tests pass."},
		{Reasoning: "two calls", Content: "x", ToolCalls: []answerCall{{Name: "a", Arguments: "{}"}, {Name: "b_c", Arguments: `{"k": [1, 2]}`}}},
	}
	s, err := New(tinyConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tt := s.tt
	for _, a := range answers {
		body, _ := a.render()
		gen := tt.append(nil, body)
		m := map[string]any{"role": "assistant", "content": a.Content, "reasoning_content": a.Reasoning}
		var calls []map[string]any
		for _, c := range a.ToolCalls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		if calls != nil {
			m["tool_calls"] = calls
		}
		raw, _ := json.Marshal(m)
		var req chatRequest
		if err := json.Unmarshal([]byte(`{"messages":[`+string(raw)+`]}`), &req); err != nil {
			t.Fatal(err)
		}
		echo, bad := s.promptTokens(nil, &req)
		if bad != "" {
			t.Fatal(bad)
		}
		header := tt.append(nil, genPrompt)
		want := append(header, gen...)
		if got := echo[:len(echo)-len(header)]; !slices.Equal(got, want) {
			t.Errorf("answer %+v: echo renders %d tokens, generation %d; they differ", a, len(got), len(want))
		}
	}
}
