package tokens

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
)

// tinyTokenizer is a hand-made byte-level tokenizer.json: all 256 bytes, a few
// merges in the given form, the Qwen split and one added token.
func tinyTokenizer(mergesJSON string) string {
	var vocab strings.Builder
	vocab.WriteString("{")
	for b := 0; b < 256; b++ {
		k, _ := json.Marshal(string(byteToRune[b]))
		vocab.Write(k)
		vocab.WriteString(":")
		vocab.WriteString(itoa(b))
		vocab.WriteString(",")
	}
	vocab.WriteString(`"he":256,"ll":257,"hell":258,"hello":259}`)
	return `{"version":"1.0","added_tokens":[{"id":260,"content":"<|end|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
"normalizer":{"type":"NFC"},
"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` + mustJSON(PatternQwen) + `},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]},
"post_processor":null,"decoder":null,
"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":"","end_of_word_suffix":"","fuse_unk":false,"byte_fallback":false,"ignore_merges":false,
"vocab":` + vocab.String() + `,"merges":` + mergesJSON + `}}`
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestMergeForms(t *testing.T) {
	for _, tc := range []struct{ name, merges string }{
		{"strings", `["h e","l l","he ll","hell o"]`},
		{"pairs", `[["h","e"],["l","l"],["he","ll"],["hell","o"]]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := Load(context.Background(), writeDir(t, map[string]string{HFTokenizerFile: tinyTokenizer(tc.merges)}))
			if err != nil {
				t.Fatal(err)
			}
			for text, want := range map[string][]int{
				"hello":          {259},
				"hell":           {258},
				"help":           {256, 'l', 'p'},
				"hello<|end|>he": {259, 260, 256},
				"":               {},
			} {
				if got := tok.Encode(text, false); !slices.Equal(got, want) {
					t.Errorf("Encode(%q) = %v, want %v", text, got, want)
				}
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	good := tinyTokenizer(`["h e"]`)
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"missing", map[string]string{}, "no tokenizer.json or tiktoken.model"},
		{"empty", map[string]string{HFTokenizerFile: ""}, "empty or truncated"},
		{"truncated", map[string]string{HFTokenizerFile: good[:len(good)/2]}, "not valid JSON (truncated?)"},
		{"unknown model", map[string]string{HFTokenizerFile: strings.Replace(good, `"type":"BPE"`, `"type":"WordPiece"`, 1)}, `unsupported model type "WordPiece"`},
		{"no model", map[string]string{HFTokenizerFile: `{"added_tokens":[]}`}, "no model section"},
		{"bad merge", map[string]string{HFTokenizerFile: tinyTokenizer(`["h e x"]`)}, "not two tokens"},
		{"merge of unknown", map[string]string{HFTokenizerFile: tinyTokenizer(`["x y"]`)}, "missing from the vocabulary"},
		{"not byte-level", map[string]string{HFTokenizerFile: strings.Replace(good, `{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}`, `{"type":"Digits","individual_digits":true}`, 1)}, "only byte-level BPE"},
		{"unknown normalizer", map[string]string{HFTokenizerFile: strings.Replace(good, `{"type":"NFC"}`, `{"type":"BertNormalizer"}`, 1)}, `unsupported normalizer "BertNormalizer"`},
		{"bad config", map[string]string{HFTokenizerFile: good, ConfigFile: `{"chat_template": "{{`}, "tokenizer_config.json"},
		{"bad template", map[string]string{HFTokenizerFile: good, ConfigFile: `{"chat_template": "{% for %}"}`}, "chat template"},
		{"tiktoken bad line", map[string]string{TiktokenFile: "aGVsbG8=\n"}, `tiktoken.model" line 1`},
		{"tiktoken bad base64", map[string]string{TiktokenFile: "!!! 3\n"}, "line 1: token"},
		{"tiktoken empty", map[string]string{TiktokenFile: ""}, "empty or truncated"},
		{"tiktoken missing bytes", map[string]string{TiktokenFile: "aA== 0\n"}, "lacks the token for byte"},
		{"negative added id", map[string]string{HFTokenizerFile: good, ConfigFile: `{"added_tokens_decoder": {"-5": {"content": "<x>"}}}`}, "id -5 is negative: a token id is 0 or more"},
		{"huge added id", map[string]string{HFTokenizerFile: good, ConfigFile: `{"added_tokens_decoder": {"4294967296": {"content": "<x>"}}}`}, "id 4294967296 is over 2147483647"},
		{"added id not a number", map[string]string{HFTokenizerFile: good, ConfigFile: `{"added_tokens_decoder": {"x1": {"content": "<x>"}}}`}, `id "x1" is not a whole number`},
		{"negative id in tokenizer.json", map[string]string{HFTokenizerFile: strings.Replace(good, `{"id":260,`, `{"id":-5,`, 1)}, `added_tokens: "<|end|>": id -5 is negative`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(context.Background(), writeDir(t, tc.files))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := Load(context.Background(), filepath.Join(t.TempDir(), "absent")); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("Load of a missing folder: %v", err)
	}
}

// TestConcurrentEncode encodes the sample from several goroutines at once and
// requires the ids of a sequential pass; run with -race to check the cache.
func TestConcurrentEncode(t *testing.T) {
	tok := loadQwen3(t)
	texts := edgeCases()
	if !testing.Short() {
		texts = append(texts, sampleTexts(t)[:400]...)
	}
	want := make([][]int, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s, false)
	}
	// A fresh tokenizer, so that the goroutines race to fill its cache.
	fresh, err := Load(context.Background(), testenv.Tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range texts {
				i := (k + g*len(texts)/8) % len(texts)
				if got := fresh.Encode(texts[i], false); !slices.Equal(got, want[i]) {
					t.Errorf("goroutine %d text %d: ids differ", g, i)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestCountOSLRules(t *testing.T) {
	tok := loadQwen3(t)
	// Neither reasoning nor tool calls: the plain text, no special tokens added.
	r := schemas.Response{Content: "Hello <|im_end|> world"}
	if n, err := tok.CountOSL(r); err != nil || n != len(tok.Encode(r.Content, false)) || n != 4 {
		t.Errorf("plain CountOSL = %d, %v; want 4", n, err)
	}
	// With reasoning: the template difference.
	r = schemas.Response{Content: "hi", Reasoning: "think"}
	full := "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n<think>\nthink\n</think>\n\nhi<|im_end|>\n"
	base := "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<|im_end|>\n"
	want := len(tok.Encode(full, false)) - len(tok.Encode(base, false))
	if n, err := tok.CountOSL(r); err != nil || n != want {
		t.Errorf("CountOSL with reasoning = %d, %v; want %d", n, err, want)
	}
	// Tool call arguments: a JSON object string is parsed (keys keep their order).
	r = schemas.Response{ToolCalls: []schemas.ToolCall{{Index: 0, ID: "c", Type: "function", Function: schemas.ToolFunction{Name: "bash", Arguments: `{"z": 1, "a": "x"}`}}}}
	full = "<|im_start|>user\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"z\": 1, \"a\": \"x\"}}\n</tool_call><|im_end|>\n"
	want = len(tok.Encode(full, false)) - len(tok.Encode(base, false))
	if n, err := tok.CountOSL(r); err != nil || n != want {
		t.Errorf("CountOSL with a tool call = %d, %v; want %d", n, err, want)
	}
	// Arguments that are not a JSON object stay a string.
	r.ToolCalls[0].Function.Arguments = `{"unterminated`
	full = strings.Replace(full, `{"z": 1, "a": "x"}`, `{"unterminated`, 1)
	want = len(tok.Encode(full, false)) - len(tok.Encode(base, false))
	if n, err := tok.CountOSL(r); err != nil || n != want {
		t.Errorf("CountOSL with bad arguments = %d, %v; want %d", n, err, want)
	}
	// The TPOT suffix of plain content drops the first chunk's bytes and counts
	// plain text.
	r = schemas.Response{Content: "Hello world and more"}
	if n, err := tok.CountTPOTSuffix(TPOTSuffix(r, 5, 0, nil, false)); err != nil || n != len(tok.Encode(" world and more", false)) {
		t.Errorf("CountTPOTSuffix = %d, %v", n, err)
	}
	if n, err := tok.CountTPOTSuffix(TPOTSuffix(r, 999, 7, nil, false)); err != nil || n != 0 {
		t.Errorf("CountTPOTSuffix past the end = %d, %v; want 0", n, err)
	}
	// With reasoning, the first reasoning chunk is dropped, all content kept,
	// and the rest is counted as a message even when one reasoning chunk was all.
	r = schemas.Response{Content: "Done.", Reasoning: "Let me think"}
	suffix, asMessage := TPOTSuffix(r, 3, 12, nil, false)
	if suffix.Reasoning != "" || suffix.Content != "Done." || !asMessage {
		t.Errorf("TPOT suffix with reasoning: %+v %v", suffix, asMessage)
	}
	want, _ = tok.countMessage(schemas.Response{Content: "Done."})
	if n, err := tok.CountTPOTSuffix(suffix, asMessage); err != nil || n != want {
		t.Errorf("CountTPOTSuffix as a message = %d, %v; want %d", n, err, want)
	}
	// A response of tool calls alone counts the calls without the first chunk.
	calls := []schemas.ToolCall{{Index: 0, ID: "c", Type: "function", Function: schemas.ToolFunction{Name: "bash", Arguments: `{"cmd":"ls -la"}`}}}
	after := []schemas.ToolCall{{Index: 0, Type: "function", Function: schemas.ToolFunction{Arguments: `"ls -la"}`}}}
	suffix, asMessage = TPOTSuffix(schemas.Response{ToolCalls: calls}, 0, 0, after, true)
	if len(suffix.ToolCalls) != 1 || suffix.ToolCalls[0].Function.Arguments != `"ls -la"}` || !asMessage {
		t.Errorf("TPOT suffix of tool calls: %+v %v", suffix, asMessage)
	}
	whole, _ := tok.CountOSL(schemas.Response{ToolCalls: calls})
	if n, err := tok.CountTPOTSuffix(suffix, asMessage); err != nil || n <= 0 || n >= whole {
		t.Errorf("CountTPOTSuffix of tool calls after the first chunk = %d, %v; whole response %d", n, err, whole)
	}
	if n, err := tok.CountTPOTSuffix(TPOTSuffix(schemas.Response{ToolCalls: calls}, 0, 0, nil, true)); err != nil || n != 0 {
		t.Errorf("CountTPOTSuffix with nothing after the first chunk = %d, %v; want 0 (dropped)", n, err)
	}
}

// TestCountOSLClamps uses a template whose empty assistant renders longer than a
// real one, so the difference is negative and clamps at 0.
func TestCountOSLClamps(t *testing.T) {
	tmpl := `{% for m in messages %}{% if m.role == 'assistant' %}{% if m.content %}{{ m.content }}{% else %}a long placeholder for an empty message{% endif %}{% endif %}{% endfor %}`
	dir := writeDir(t, map[string]string{HFTokenizerFile: tinyTokenizer(`["h e"]`), TemplateFile: tmpl})
	tok, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := tok.CountOSL(schemas.Response{Content: "he", Reasoning: "x"}); err != nil || n != 0 {
		t.Errorf("CountOSL = %d, %v; want 0", n, err)
	}
}

func TestCountISL(t *testing.T) {
	tok := loadQwen3(t)
	msgs := []byte(`[{"role":"system","content":"sys"},{"role":"user","content":"hi"}]`)
	n, err := tok.CountISL(msgs, nil, map[string]any{"enable_thinking": false})
	want := len(tok.Encode("<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", false))
	if err != nil || n != want {
		t.Errorf("CountISL = %d, %v; want %d", n, err, want)
	}
	if _, err := tok.CountISL([]byte(`{"role":"user"}`), nil, nil); err == nil {
		t.Error("CountISL of a non-array: no error")
	}
	if _, err := tok.CountISL([]byte(`[{"role":"user","content":"x"}`), nil, nil); err == nil {
		t.Error("CountISL of truncated JSON: no error")
	}
}

func TestTokenize(t *testing.T) {
	tok := loadQwen3(t)
	dir := testenv.Tokenizer(t)
	in := `{"text":"hello <|im_end|> world"}
{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true,"chat_template_kwargs":{"enable_thinking":false}}

{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"f"}}],"add_generation_prompt":false}
`
	var out bytes.Buffer
	if err := Tokenize(context.Background(), TokenizeOptions{Tokenizer: dir, JSONL: "-", In: strings.NewReader(in), Out: &out}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d output lines, want 3:\n%s", len(lines), out.String())
	}
	var res []TokenizeResult
	for _, l := range lines {
		var r TokenizeResult
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		res = append(res, r)
	}
	if want := tok.Encode("hello <|im_end|> world", false); !slices.Equal(res[0].IDs, want) || res[0].N != len(want) || res[0].Text != nil {
		t.Errorf("text line: %+v", res[0])
	}
	text, err := tok.Render([]byte(`[{"role":"user","content":"hi"}]`), nil, true, map[string]any{"enable_thinking": false})
	if err != nil {
		t.Fatal(err)
	}
	if res[1].Text == nil || *res[1].Text != text || !slices.Equal(res[1].IDs, tok.Encode(text, false)) {
		t.Errorf("messages line: %+v", res[1])
	}
	if res[2].Text == nil || !strings.Contains(*res[2].Text, `{"type": "function", "function": {"name": "f"}}`) {
		t.Errorf("tools line: %+v", res[2])
	}
	// Plain text: the count of standard input.
	out.Reset()
	if err := Tokenize(context.Background(), TokenizeOptions{Tokenizer: dir, In: strings.NewReader("hello world"), Out: &out}); err != nil || out.String() != "2\n" {
		t.Errorf("plain tokenize = %q, %v", out.String(), err)
	}
	// A bad line names its number.
	err = Tokenize(context.Background(), TokenizeOptions{Tokenizer: dir, JSONL: "-", In: strings.NewReader("{\"text\":\"a\"}\n{\"nothing\":1}\n"), Out: &out})
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line error = %v", err)
	}
}

func TestApprox(t *testing.T) {
	tok := loadQwen3(t)
	texts := sampleTexts(t)
	var exact, approx int
	for _, s := range texts {
		exact += len(tok.Encode(s, false))
		approx += Approx{}.CountText(s)
	}
	ratio := float64(approx) / float64(exact)
	t.Logf("Approx: %d tokens for %d exact (ratio %.3f)", approx, exact, ratio)
	if ratio < 0.85 || ratio > 1.15 {
		t.Errorf("Approx is %.3f of the exact count on the sample, want within 15%%", ratio)
	}
	if (Approx{}).CountText("") != 0 || (Approx{}).CountText("hello") != 1 || (Approx{}).CountText("12345") != 5 {
		t.Error("Approx basics")
	}
}

func BenchmarkLoad(b *testing.B) {
	dir := testenv.Tokenizer(b)
	for b.Loop() {
		if _, err := Load(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode encodes every text of the shared sample (a warm word cache
// after the first pass); bench/tokens.go compares a cold pass with the JS
// reference side by side.
func BenchmarkEncode(b *testing.B) {
	tok := loadQwen3(b)
	texts := benchTexts(b)
	for b.Loop() {
		for _, s := range texts {
			tok.Encode(s, false)
		}
	}
}

// BenchmarkEncodeCold is BenchmarkEncode with a fresh tokenizer (an empty
// cache) for every pass; Load is not timed.
func BenchmarkEncodeCold(b *testing.B) {
	dir := testenv.Tokenizer(b)
	texts := benchTexts(b)
	for b.Loop() {
		b.StopTimer()
		tok, err := Load(context.Background(), dir)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for _, s := range texts {
			tok.Encode(s, false)
		}
	}
}

// benchTexts is the shared sample's texts, a benchmark's bytes set to their size.
func benchTexts(b *testing.B) []string {
	texts := sampleTexts(b)
	size := 0
	for _, s := range texts {
		size += len(s)
	}
	b.SetBytes(int64(size))
	return texts
}
