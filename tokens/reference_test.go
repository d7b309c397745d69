package tokens

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// qwen3 loads the Qwen3 tokenizer once for all tests of the package.
var qwen3 = struct {
	once sync.Once
	tok  *Tokenizer
	err  error
}{}

func loadQwen3(t testing.TB) *Tokenizer {
	t.Helper()
	dir := testenv.Tokenizer(t)
	qwen3.once.Do(func() { qwen3.tok, qwen3.err = Load(context.Background(), dir) })
	if qwen3.err != nil {
		t.Fatal(qwen3.err)
	}
	return qwen3.tok
}

// python returns python3 with jinja2 (and the given extra modules), or skips
// (fails under AGENTRACE_REQUIRE_DEPS).
func python(t testing.TB, modules ...string) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	for _, m := range append([]string{"jinja2"}, modules...) {
		if err == nil {
			err = exec.Command(p, "-c", "import "+m).Run()
		}
	}
	if err != nil {
		if os.Getenv("AGENTRACE_REQUIRE_DEPS") != "" {
			t.Fatalf("python3 with jinja2 %v is missing (%v); AGENTRACE_REQUIRE_DEPS is set, so this fails", modules, err)
		}
		t.Skipf("skipping: python3 with jinja2 %v is missing (`make testdeps` installs python3-jinja2 and python3-regex with apt as root or with sudo): %v", modules, err)
	}
	return p
}

// refScript is the Jinja2 and sample-reading reference script.
func refScript(t testing.TB) string {
	return filepath.Join(testenv.RepoRoot(t), "testdata", "py", "chat_template_ref.py")
}

// sampleTexts returns every content, reasoning, tool output and tool-call
// argument string of the shared sample (read once per test binary).
func sampleTexts(t testing.TB) []string {
	t.Helper()
	sample := testenv.SampleFlat(t)
	sampleCache.Lock()
	defer sampleCache.Unlock()
	if sampleCache.texts == nil {
		sampleCache.texts = readSampleTexts(t, sample)
	}
	return append([]string(nil), sampleCache.texts...)
}

var sampleCache struct {
	sync.Mutex
	texts []string
}

func readSampleTexts(t testing.TB, sample string) []string {
	out := runScript(t, "read sample texts", exec.Command(python(t), refScript(t), "texts", sample), nil)
	var texts []string
	for _, l := range decodeLines[struct{ Text string }](t, out) {
		texts = append(texts, l.Text)
	}
	if len(texts) < 1000 {
		t.Fatalf("only %d texts in the sample", len(texts))
	}
	return texts
}

// runScript runs a reference script with in (nil: nothing) as its standard
// input and returns its standard output; a failure says what it was doing and
// what the script wrote to its standard error (which Output keeps in the
// ExitError).
func runScript(t testing.TB, what string, cmd *exec.Cmd, in io.Reader) []byte {
	t.Helper()
	cmd.Stdin = in
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s: %v: %s", what, err, stderr)
	}
	return out
}

// decodeLines decodes each line of a reference script's output as a T.
func decodeLines[T any](t testing.TB, out []byte) []T {
	t.Helper()
	var vs []T
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	return vs
}

// textLines is texts as a reference script reads them: one {"text": s} a line.
func textLines(texts []string) *bytes.Buffer {
	var in bytes.Buffer
	for _, s := range texts {
		line, _ := json.Marshal(map[string]string{"text": s}) // a string map always encodes
		in.Write(line)
		in.WriteByte('\n')
	}
	return &in
}

// edgeCases are Unicode and BPE corner cases.
func edgeCases() []string {
	cases := []string{
		"", " ", "\n", "  ", "\t", "hello world", "Hello, World!",
		// CJK, Arabic, other scripts.
		"中文分词测试，汉字与日本語のテキスト、한국어 텍스트。",
		"我们今天去公园玩了很久，然后回家吃饭。",
		"مرحبا بالعالم! هذا نص عربي مع أرقام ١٢٣٤٥ و English.",
		"Ελληνικά κείμενα και кириллица тоже, עברית, हिन्दी, ไทย",
		// Emoji, ZWJ sequences, modifiers, flags.
		"👨‍👩‍👧‍👦 family 🏳️‍🌈 flag 👍🏽 thumbs 🇫🇷🇩🇪 and 😀😃😄",
		"a👩‍💻b", "🧑🏿‍🤝‍🧑🏻",
		// Combining marks and normalization (NFC composes these).
		"Cafe\u0301 cafe\u0301s a\u0308o n\u0303 e\u0301\u0301",
		"Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇", "\u0301leading combining", "ﬁ ligature ℌ Å K",
		"\u1100\u1161\u11a8 jamo", "\u0958 devanagari nukta",
		// NBSP, zero-width and other spaces.
		"a\u00a0b\u200bc\u200cd\u200de\ufefff\u2060g", "\u00a0\u00a0 x", "x\u202fy\u205fz\u3000w",
		"\u2028line sep\u2029para", "a\u0085 b\u0085", "\ufeffBOM at start", "x \ufeff y", "tab\u000bvt\u000cff",
		"\u200b\u200b\u200b", "word\u00a0\n\u00a0word",
		// Full-width forms.
		"ＡＢＣ１２３！？ｈｅｌｌｏ　ｗｏｒｌｄ", "（全角括号）【】「」",
		// Runs of whitespace and newlines.
		"a    b\t\t\tc\n\n\n\nd \n \n e\r\n\r\nf   \n", "   ", "\n\n\n", " \t \n", "x   ", "   x",
		"line1\n    indented\n\tTabbed\n\n\n  \n", "\r\r\n\n\r", "a \n\n b", "end with space ",
		"  \n  \n  ", " \u00a0\n", "x\n \ny",
		// Contractions.
		"I'm you're we've they'll she'd it's don't can't", "I'M YOU'RE WE'VE THEY'LL SHE'D IT'S DON'T",
		"'s 't 're 've 'm 'll 'd", "''s '''", "o'clock rock'n'roll", "don\u017ft it\u017f", "'Re 'rE 'LL 'Ll",
		// Digits.
		"1234567890 3.14159 1,000,000 -42 +7 0x1F 1e10", "٠١٢٣٤٥٦٧٨٩ ۱۲۳ 二〇二四 ²³ ½ ⅓ Ⅻ",
		"12345678901234567890123456789012345678901234567890", "v1.2.3-rc4", "2026-11-29T12:00:00Z",
		// Special-token strings in text.
		"<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi<|im_end|>",
		"text <think>reason</think> more", "<tool_call>\n{\"name\": \"bash\"}\n</tool_call>",
		"<|endoftext|><|endoftext|>", "<|im_start", "< |im_start|>", "<|IM_START|>", "<|im_start|><|im_end|>",
		"x<|im_end|>y", "<tool_response>out</tool_response>", "<|im_start|>\n\n<|im_end|>  ",
		// Code.
		"func main() {\n\tfmt.Println(\"hi\")\n}\n", "    def f(self, x):\n        return x ** 2  # square\n",
		"if (a && b || !c) { return a->b; } // C++", "SELECT * FROM t WHERE x >= 10;",
		"https://example.com/path?q=1&r=2#frag", "$ ls -la | grep '\\.go$' > out.txt 2>&1",
		"=====\n-----\n*****", "{\"key\": [1, 2, {\"nested\": null}]}", "\\n\\t\\\\ escaped",
	}
	// 5,000-character words.
	cases = append(cases,
		strings.Repeat("a", 5000), strings.Repeat("ab", 2500), strings.Repeat("é", 5000),
		strings.Repeat("=", 5000), strings.Repeat("9", 5000), strings.Repeat("字", 5000),
		" "+strings.Repeat("x", 5000), strings.Repeat(" ", 5000), strings.Repeat("\n", 5000),
	)
	r := rand.New(rand.NewPCG(1, 2))
	letters := []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
	word := make([]rune, 5000)
	for i := range word {
		word[i] = letters[r.IntN(len(letters))]
	}
	cases = append(cases, string(word))
	// Random mixtures of every character class the pattern distinguishes.
	pool := []string{"a", "Z", "é", "字", "ß", "1", "٣", "½", " ", "  ", "\n", "\r\n", "\t", "\u00a0", "\u3000",
		"'", "'s", "'LL", ".", ",", "!", "-", "_", "<", ">", "😀", "👨‍👩‍👧", "\u200b", "\ufeff", "\u0301",
		"<|im_end|>", "<think>", "\u0085", "\u2028", "ﬁ", "１", "Ａ", "'re", "\"", "\\"}
	for i := 0; i < 400; i++ {
		var b strings.Builder
		n := 1 + r.IntN(40)
		for j := 0; j < n; j++ {
			b.WriteString(pool[r.IntN(len(pool))])
		}
		cases = append(cases, b.String())
	}
	return cases
}

// jsReference encodes texts in one node process running script
// (tokenizer-ids.mjs: @lenml/tokenizers; tokenizer-hf.mjs: Hugging Face's Rust
// tokenizers) and returns the ids and the encoding time the script measured.
func jsReference(t testing.TB, script string, texts []string) ([][]int, float64) {
	t.Helper()
	return jsReferenceWith(t, script, filepath.Join(testenv.Tokenizer(t), HFTokenizerFile), "", texts)
}

// jsReferenceWith is jsReference with the tokenizer.json given, and, when config
// is not "", a tokenizer_config.json whose added tokens the script adds as
// transformers does (tokenizer-hf.mjs only).
func jsReferenceWith(t testing.TB, script, tokenizerJSON, config string, texts []string) ([][]int, float64) {
	t.Helper()
	dir, node := testenv.JS(t)
	args := []string{filepath.Join(dir, script), tokenizerJSON}
	if config != "" {
		args = append(args, config)
	}
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	cmd.Stdin = textLines(texts)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("node %s: %v: %s", script, err, stderr.String())
		return nil, 0
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(texts)+1 {
		t.Errorf("node %s returned %d lines for %d texts", script, len(lines), len(texts))
		return nil, 0
	}
	ids := make([][]int, len(texts))
	for i := range texts {
		var l struct{ IDs []int }
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil {
			t.Errorf("node %s line %d: %v", script, i+1, err)
			return nil, 0
		}
		ids[i] = l.IDs
	}
	var last struct {
		EncodeMS float64 `json:"encode_ms"`
	}
	if err := json.Unmarshal([]byte(lines[len(texts)]), &last); err != nil {
		t.Errorf("node %s: last line: %v", script, err)
		return nil, 0
	}
	return ids, last.EncodeMS
}

// lenmlSpaceDeviation reports whether s holds a character that @lenml/tokenizers
// classifies differently from Hugging Face: its JavaScript regexps take U+FEFF
// as whitespace and U+0085 as not, where Oniguruma (Hugging Face's regexp
// engine) follows Unicode's White_Space property, which has U+0085 and not
// U+FEFF.
func lenmlSpaceDeviation(s string) bool { return strings.ContainsAny(s, "\u0085\ufeff") }

// TestEncodeMatchesReferences is the acceptance check: ids equal to Hugging
// Face's own tokenizers on every text of the sample and every edge case, and
// equal to @lenml/tokenizers wherever its whitespace class agrees with Hugging
// Face's (see lenmlSpaceDeviation).
func TestEncodeMatchesReferences(t *testing.T) {
	t.Parallel()
	testenv.JS(t) // skips here, not in the goroutines below
	tok := loadQwen3(t)
	sample, edges := sampleTexts(t), edgeCases()
	all := append(append([]string(nil), sample...), edges...)
	// Both references at once, each one node process for every text.
	var hf, lenml [][]int
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); hf, _ = jsReference(t, "tokenizer-hf.mjs", all) }()
	go func() { defer wg.Done(); lenml, _ = jsReference(t, "tokenizer-ids.mjs", all) }()
	wg.Wait()
	if hf == nil || lenml == nil {
		t.FailNow()
	}
	sets := []struct {
		name     string
		from, to int
	}{{"sample", 0, len(sample)}, {"edge cases", len(sample), len(all)}}
	for _, set := range sets {
		eqHF, eqLenml, deviating, tokens := 0, 0, 0, 0
		var bad []string
		for i := set.from; i < set.to; i++ {
			s := all[i]
			got := tok.Encode(s, false)
			tokens += len(got)
			okHF, okLenml := slices.Equal(got, hf[i]), slices.Equal(got, lenml[i])
			if okHF {
				eqHF++
			}
			if okLenml {
				eqLenml++
			}
			dev := lenmlSpaceDeviation(s)
			if dev {
				deviating++
			}
			if (!okHF || !okLenml && !dev) && len(bad) < 10 {
				bad = append(bad, fmt.Sprintf("text %d %.80q:\n  go    %v\n  hf    %v\n  lenml %v", i, s, head(got), head(hf[i]), head(lenml[i])))
			}
		}
		n := set.to - set.from
		t.Logf("%s: %d texts, %d tokens; equal to HF tokenizers %d (%.2f%%), to @lenml/tokenizers %d (%.2f%%; %d texts hold U+0085/U+FEFF)",
			set.name, n, tokens, eqHF, pct(eqHF, n), eqLenml, pct(eqLenml, n), deviating)
		if len(bad) > 0 {
			t.Errorf("%s: texts differ from a reference:\n%s", set.name, strings.Join(bad, "\n"))
		}
	}
}

func pct(a, b int) float64 { return 100 * float64(a) / float64(b) }

func head(ids []int) []int {
	if len(ids) > 24 {
		return ids[:24]
	}
	return ids
}
