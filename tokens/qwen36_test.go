package tokens

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
)

// The digests Qwen3.6-35B-A3B's files have (public manifests of the model
// repository; see score/rulesets/checker-2026-10-qwen3.6.json).
const qwen36TemplateSHA256 = "e84f32a23fdda27689f868aa4a1a5621f41133e51a48d7f3efcbea2839574259"

// qwen36Model is the model id the Qwen3.6-shaped folder is cached under.
const qwen36Model = "Qwen/Qwen3.6-35B-A3B"

// qwen36OnlyInConfig are the added tokens the Qwen3.6-shaped folder lists only
// in tokenizer_config.json, as the real Qwen3.5/3.6 files do: tokenizer.json
// lists 26 added tokens (248044-248069, <think>, </think>, <tool_response> and
// </tool_response> among them: here Qwen3's 26 at 151643-151668), the config
// those and seven more (248070-248076: here from 151669 on, in that order).
var qwen36OnlyInConfig = []string{"<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>", "<tts_text_bos_single>", "<|audio_pad|>"}

// qwen36Folder builds, once per test binary, a Hugging Face hub cache in a
// temporary folder holding a Qwen3.6-shaped model snapshot: Qwen3's vocabulary
// and merges with Qwen3.5's pre-tokenizer pattern (PatternQwen35), the added
// tokens split between tokenizer.json and tokenizer_config.json as in the real
// files (qwen36OnlyInConfig), and the shared Qwen3.6 chat template as chat_template.jinja. It
// returns the hub folder and the snapshot folder.
func qwen36Folder(t testing.TB) (hub, snap string) {
	t.Helper()
	// Found before the Once: a missing input skips each test that needs it, where
	// a skip inside the Once would end it with nothing built for the next tests.
	qwen3, template := testenv.Tokenizer(t), testenv.SharedData(t, "templates/qwen3.6-35b-a3b.chat_template.jinja")
	qwen36.once.Do(func() {
		qwen36.hub, qwen36.snap, qwen36.err = buildQwen36(qwen3, template)
	})
	if qwen36.err != nil {
		t.Fatal(qwen36.err)
	}
	return qwen36.hub, qwen36.snap
}

var qwen36 struct {
	once      sync.Once
	hub, snap string
	err       error
}

func buildQwen36(qwen3Dir, template string) (hub, snap string, err error) {
	root, err := os.MkdirTemp("", "agentrace-qwen36-")
	if err != nil {
		return "", "", err
	}
	hub = filepath.Join(root, "hub")
	const commit = "0123456789abcdef0123456789abcdef01234567"
	repo := filepath.Join(hub, "models--Qwen--Qwen3.6-35B-A3B")
	snap = filepath.Join(repo, "snapshots", commit)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644); err != nil {
		return "", "", err
	}
	var tj map[string]json.RawMessage
	data, err := os.ReadFile(filepath.Join(qwen3Dir, HFTokenizerFile))
	if err != nil {
		return "", "", err
	}
	if err := json.Unmarshal(data, &tj); err != nil {
		return "", "", err
	}
	pre, _ := json.Marshal(map[string]any{"type": "Sequence", "pretokenizers": []any{
		map[string]any{"type": "Split", "pattern": map[string]string{"Regex": PatternQwen35}, "behavior": "Isolated", "invert": false},
		map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
	}})
	tj["pre_tokenizer"] = pre
	if data, err = json.Marshal(tj); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(snap, HFTokenizerFile), data, 0o644); err != nil {
		return "", "", err
	}
	var cfg map[string]json.RawMessage
	if data, err = os.ReadFile(filepath.Join(qwen3Dir, ConfigFile)); err != nil {
		return "", "", err
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", "", err
	}
	delete(cfg, "chat_template") // chat_template.jinja holds it, as in the real folder
	var dec map[string]map[string]any
	if err := json.Unmarshal(cfg["added_tokens_decoder"], &dec); err != nil {
		return "", "", err
	}
	next := 151669
	for _, s := range qwen36OnlyInConfig {
		dec[fmt.Sprint(next)] = map[string]any{"content": s, "lstrip": false, "normalized": false, "rstrip": false, "single_word": false, "special": true}
		next++
	}
	cfg["added_tokens_decoder"], _ = json.Marshal(dec)
	cfg["name_or_path"], _ = json.Marshal(qwen36Model)
	if data, err = json.Marshal(cfg); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(snap, ConfigFile), data, 0o644); err != nil {
		return "", "", err
	}
	src, err := os.ReadFile(template)
	if err != nil {
		return "", "", err
	}
	return hub, snap, os.WriteFile(filepath.Join(snap, TemplateFile), src, 0o644)
}

// loadQwen36 resolves the Qwen3.6-shaped folder by its model id in its hub
// cache, with no network: HF_HUB_CACHE names the cache, the proxies point
// nowhere and HF_HUB_OFFLINE is set, so a lookup that reached for the network
// would fail.
func loadQwen36(t testing.TB) *Tokenizer {
	t.Helper()
	hub, _ := qwen36Folder(t)
	t.Setenv("HF_HUB_CACHE", hub)
	t.Setenv("HF_HUB_OFFLINE", "1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:9")
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:9")
	tok, err := Load(context.Background(), qwen36Model)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// sampleTurns returns every conversation of the sample whole (the longest
// prefix the reference script writes for each).
func sampleTurns(t testing.TB) []renderRequest {
	var out []renderRequest
	for _, c := range sampleConversations(t) {
		if n := len(out); n > 0 && strings.HasPrefix(strings.TrimSuffix(string(c.Messages), "]"), strings.TrimSuffix(string(out[n-1].Messages), "]")) {
			out[n-1] = c
			continue
		}
		out = append(out, c)
	}
	return out
}

// TestQwen36ByModelID is the acceptance check of counting with a Qwen3.6-shaped
// model folder found by its model id in a Hugging Face cache with the network
// off: its identity (the template's digest, the added tokens only the config
// lists), every ISL render of every client turn of the sample (preserve_thinking,
// as the reference renders) and every OSL render ([user "", assistant]) equal
// to Jinja2's, and every count of those texts, the sample's texts and the edge
// cases equal to Hugging Face tokenizers' with the config's tokens added as
// transformers adds them.
func TestQwen36ByModelID(t *testing.T) {
	tok := loadQwen36(t)
	_, snap := qwen36Folder(t)
	checkQwen36Folder(t, tok, snap)
}

// checkQwen36Folder is TestQwen36ByModelID's check of tok, loaded by the model
// id from the hub snapshot folder snap.
func checkQwen36Folder(t *testing.T, tok *Tokenizer, snap string) {
	id := tok.Identity()
	if id.Dir != snap || id.Spec != qwen36Model || id.Name != qwen36Model {
		t.Errorf("identity %+v: want dir %s, spec and name %s", id, snap, qwen36Model)
	}
	if id.TemplateFrom != TemplateFile || id.TemplateSHA256 != qwen36TemplateSHA256 {
		t.Errorf("template %s sha256 %s, want %s %s", id.TemplateFrom, id.TemplateSHA256, TemplateFile, qwen36TemplateSHA256)
	}
	if n := tok.AddedFromConfig(); n != len(qwen36OnlyInConfig) {
		t.Errorf("%d added tokens from the config, want %d", n, len(qwen36OnlyInConfig))
	}
	for _, s := range []string{"<think>", "</think>", "<tool_response>", "</tool_response>", "<tts_pad>"} {
		if ids := tok.Encode(s, false); len(ids) != 1 {
			t.Errorf("%s encodes as %v, want one token", s, ids)
		}
	}
	template := filepath.Join(snap, TemplateFile)
	kw := map[string]any{"preserve_thinking": true}
	var reqs []renderRequest
	var what []string
	for ci, c := range sampleTurns(t) {
		var frags []json.RawMessage
		if err := json.Unmarshal(c.Messages, &frags); err != nil {
			t.Fatal(err)
		}
		for _, k := range clientTurnEnds(t, frags) {
			msgs := joinMessages(rawSlices(frags[:k]))
			reqs = append(reqs, renderRequest{Messages: NormalizeToolCallArguments(msgs), Tools: c.Tools, AddGenerationPrompt: true, Kwargs: json.RawMessage(`{"preserve_thinking":true}`)})
			what = append(what, fmt.Sprintf("conversation %d ISL %d messages", ci, k))
		}
		for k, f := range frags {
			var m struct{ Role string }
			if json.Unmarshal(f, &m) != nil || m.Role != "assistant" {
				continue
			}
			one := withParsedArguments(t, json.RawMessage("["+string(f)+"]"))
			reqs = append(reqs, renderRequest{Messages: json.RawMessage(`[{"role":"user","content":""},` + string(one[1:]))})
			what = append(what, fmt.Sprintf("conversation %d OSL message %d", ci, k))
		}
	}
	reqs = append(reqs, renderRequest{Messages: json.RawMessage(`[{"role":"user","content":""},{"role":"assistant","content":""}]`)})
	what = append(what, "OSL baseline")
	want := jinja2RenderOnce(t, template, reqs)
	var texts []string
	isl, osl := 0, 0
	for i, r := range reqs {
		var kwargs map[string]any
		if r.AddGenerationPrompt {
			kwargs = kw
		}
		got, err := tok.Render(r.Messages, r.Tools, r.AddGenerationPrompt, kwargs)
		switch {
		case want[i].Text == nil:
			t.Fatalf("%s: Jinja2: %s", what[i], *want[i].Error)
		case err != nil:
			t.Fatalf("%s: %v", what[i], err)
		case got != *want[i].Text:
			at := testenv.DiffAt(got, *want[i].Text)
			t.Errorf("%s: render differs from Jinja2 at byte %d:\n  go:     %q\n  jinja2: %q", what[i], at, testenv.Around(got, at), testenv.Around(*want[i].Text, at))
		}
		if r.AddGenerationPrompt {
			isl++
		} else {
			osl++
		}
		texts = append(texts, *want[i].Text)
	}
	if isl < 1000 {
		t.Errorf("only %d client turns", isl)
	}
	t.Logf("%d ISL renders (every client turn) and %d OSL renders equal to Jinja2", isl, osl)

	// Counts: the renders, the sample's texts, the edge cases.
	rendered := len(texts)
	texts = append(append(texts, sampleTexts(t)...), edgeCases()...)
	texts = append(texts, marksAndNFC()...)
	hf, _ := jsReferenceWith(t, "tokenizer-hf.mjs", filepath.Join(snap, HFTokenizerFile), filepath.Join(snap, ConfigFile), texts)
	if hf == nil {
		t.FailNow()
	}
	bad := 0
	for i, s := range texts {
		got := tok.Encode(s, false)
		if !slices.Equal(got, hf[i]) {
			if bad++; bad <= 10 {
				t.Errorf("text %d %.80q: %d tokens, HF tokenizers %d:\n  go %v\n  hf %v", i, s, len(got), len(hf[i]), head(got), head(hf[i]))
			}
		}
	}
	t.Logf("ids equal to HF tokenizers (with the config's added tokens) on %d of %d texts (%d renders, %d sample texts and edge cases)", len(texts)-bad, len(texts), rendered, len(texts)-rendered)

	// The counts the rules take, from those renders: ISL is the render's count,
	// OSL the difference from the baseline.
	base := len(hf[rendered-1])
	for i, r := range reqs[:rendered-1] {
		if r.AddGenerationPrompt {
			n, err := tok.CountISL(r.Messages, r.Tools, kw)
			if err != nil || n != len(hf[i]) {
				t.Errorf("%s: CountISL %d (%v), reference %d", what[i], n, err, len(hf[i]))
			}
			continue
		}
		var m struct {
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		}
		var msgs []json.RawMessage
		if err := json.Unmarshal(r.Messages, &msgs); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(msgs[1], &m); err != nil {
			t.Fatalf("%s: %v", what[i], err)
		}
		resp := schemas.Response{Content: m.Content, Reasoning: m.ReasoningContent}
		if len(m.ToolCalls) > 0 {
			calls, err := datasets.ToolCalls(string(m.ToolCalls))
			if err != nil {
				t.Fatalf("%s: %v", what[i], err)
			}
			resp.ToolCalls = calls
		}
		if resp.Reasoning == "" && len(resp.ToolCalls) == 0 {
			continue // counted as plain text (the rules' plain-text case)
		}
		n, err := tok.CountOSL(resp)
		if want := max(0, len(hf[i])-base); err != nil || n != want {
			t.Errorf("%s: CountOSL %d (%v), reference %d", what[i], n, err, want)
		}
	}
}

func rawSlices(frags []json.RawMessage) [][]byte {
	out := make([][]byte, len(frags))
	for i, f := range frags {
		out[i] = f
	}
	return out
}

// marksAndNFC are texts where PatternQwen35 differs from Qwen's pattern or where
// NFC changes the text: combining marks after letters, spaces, digits,
// punctuation, newlines and at the start; marks that NFC composes and ones it
// reorders; spacing marks (Mc) and enclosing marks (Me); and the \s edge
// characters (U+0085, U+00A0, U+180E, U+200B, U+2028, U+FEFF, U+3000).
func marksAndNFC() []string {
	marks := []string{"\u0301", "\u0308", "\u0338", "\u093e", "\u0903", "\u20dd", "\u0e31", "\u05b8", "\u064b", "\u302a", "\U0001d165"}
	bases := []string{"a", "A", " ", "  ", "1", "٣", ".", "'", "\n", "\r\n", "\t", "\u00a0", "\u0085", "\u180e", "\u200b", "\u2028", "\ufeff", "\u3000", "字", "<think>", ">", "=", "", "e\u0301"}
	var out []string
	for _, b := range bases {
		for _, m := range marks {
			out = append(out, b+m, "x"+b+m+"y", b+m+m+"z", m+b, "word "+b+m+"word", b+m+" "+m)
		}
	}
	return append(out,
		"Cafe\u0301 re\u0301sume\u0301 na\u0131\u0308ve", "a\u0323\u0307 q\u0307\u0323 s\u0323\u0307", // NFC composes and reorders
		"\u1100\u1161\u11a8\u1100\u1161", "\u0915\u093c\u093f \u0928\u092e\u0938\u094d\u0924\u0947", // jamo; Devanagari
		"ก\u0e34\u0e48น ข\u0e49าว", "عَرَبِيّ", "שָׁלוֹם", "𝅘𝅥𝅮 music", "1\u20e3 #\ufe0f\u20e3", "Z\u0351\u036b\u0343\u036a\u0302",
		"don\u0301't I'\u0301m", "'\u0301s '\u0301ll", "\u0301'\u0301", " \u0301\n\u0301\r\n \u0301",
		"a"+strings.Repeat("\u0301", 31)+"\u0323b", "q"+strings.Repeat("\u0307\u0323", 40)+" s"+strings.Repeat("\u0323\u0307\u0308", 20),
		"e"+strings.Repeat("\u0308", 35)+"\u0301\u0327 \u034f\u0301"+strings.Repeat("\u0301", 33),
		strings.Repeat("e\u0301", 3000), strings.Repeat(" \u0301", 2000), strings.Repeat("\u0301", 4000))
}

// TestISLCounterAnyTemplate: with a template the counter has no native build
// of (Qwen3.6's), counts equal CountISL (a full render and encode) on every
// client turn of the sample under each set of kwargs, on the edge-case
// conversations, and on the conversations the cached path leaves to a full
// render (placeholder characters, invalid messages), errors included.
func TestISLCounterAnyTemplate(t *testing.T) {
	tok := loadQwen36(t)
	if tok.template.qwen3 {
		t.Fatal("Qwen3.6's template is taken for Qwen3's")
	}
	if tok.template.loop == nil {
		t.Fatal("Qwen3.6's template is not admitted for incremental rendering")
	}
	turns, reused := 0, 0
	for i, conv := range sampleTurns(t) {
		var frags []json.RawMessage
		if err := json.Unmarshal(conv.Messages, &frags); err != nil {
			t.Fatal(err)
		}
		ends := clientTurnEnds(t, frags)
		_, _, r := checkCounter(t, tok, fmt.Sprintf("sample conversation %d", i), frags, conv.Tools, islKwargs[i%len(islKwargs)], ends)
		turns += len(ends)
		reused += r
	}
	// Each conversation's first turn runs every iteration, and so does a turn
	// after a new user query (the template's last_query_index changes).
	if reused*10 < turns*9 {
		t.Errorf("%d of %d turns reused the iterations of an earlier turn; want at least 90%%", reused, turns)
	}
	for i, c := range islEdgeConversations() {
		checkCounter(t, tok, c.name, c.frags, c.tools, islKwargs[i%len(islKwargs)], clientTurnEnds(t, c.frags))
	}
	for _, c := range []islConv{
		{name: "placeholder rune", frags: []json.RawMessage{json.RawMessage(`{"role":"user","content":"a` + "\uFDD0" + `0` + "\uFDD1" + `b"}`), json.RawMessage(`{"role":"assistant","content":"x","tool_calls":[{"function":{"name":"f","arguments":{"v":1.0}}}]}`), json.RawMessage(`{"role":"user","content":"r"}`)}},
		{name: "float arguments", frags: []json.RawMessage{json.RawMessage(`{"role":"user","content":"q"}`), json.RawMessage(`{"role":"assistant","content":"x","tool_calls":[{"function":{"name":"f","arguments":"{\"v\": 1.0, \"w\": 1e22}"}}]}`), json.RawMessage(`{"role":"tool","content":"r\u2028s"}`)}},
		{name: "invalid message", frags: []json.RawMessage{json.RawMessage(`{"role":"user","content":"q"`)}},
		{name: "no user query", frags: []json.RawMessage{json.RawMessage(`{"role":"system","content":"s"}`)}},
	} {
		checkCounter(t, tok, c.name, c.frags, c.tools, nil, []int{len(c.frags)})
	}
	t.Logf("%d client turns of the sample: counts equal to CountISL, %d reusing an earlier turn's iterations", turns, reused)
}

// jinja2Renders keeps Jinja2's renders of the Qwen3.6 template's requests for
// the test binary's life: the stand-in and the reconstructed folder hold the
// same template (the same digest), rendered once.
var jinja2Renders struct {
	sync.Mutex
	bySHA map[string][]renderResult
}

// jinja2RenderOnce is jinja2Render of reqs, kept by the template's digest (the
// requests are the same for a digest in this file's tests).
func jinja2RenderOnce(t *testing.T, template string, reqs []renderRequest) []renderResult {
	t.Helper()
	data, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	key := sha256Hex(data)
	jinja2Renders.Lock()
	defer jinja2Renders.Unlock()
	if r, ok := jinja2Renders.bySHA[key]; ok && len(r) == len(reqs) {
		return r
	}
	r := jinja2Render(t, template, reqs)
	if jinja2Renders.bySHA == nil {
		jinja2Renders.bySHA = map[string][]renderResult{}
	}
	jinja2Renders.bySHA[key] = r
	return r
}
