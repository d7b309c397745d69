package tokens

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
)

// renderRequest is one line of the Jinja2 reference script's input.
type renderRequest struct {
	Messages            json.RawMessage `json:"messages"`
	Tools               json.RawMessage `json:"tools,omitempty"`
	AddGenerationPrompt bool            `json:"add_generation_prompt"`
	Kwargs              json.RawMessage `json:"chat_template_kwargs,omitempty"`
	// NormalizeToolArguments renders the messages with string tool-call
	// arguments parsed into objects (Go: NormalizeToolCallArguments; Python:
	// the script's own restatement).
	NormalizeToolArguments bool `json:"normalize_tool_arguments,omitempty"`
}

type renderResult struct {
	Text  *string `json:"text"`
	Error *string `json:"error"`
}

// jinja2Render renders requests with Jinja2 in one python process; template is a
// tokenizer_config.json or a .jinja file.
func jinja2Render(t testing.TB, template string, reqs []renderRequest) []renderResult {
	t.Helper()
	var in bytes.Buffer
	for _, r := range reqs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(line)
		in.WriteByte('\n')
	}
	out := runScript(t, "jinja2 render", exec.Command(python(t), refScript(t), "render", template), &in)
	res := decodeLines[renderResult](t, out)
	if len(res) != len(reqs) {
		t.Fatalf("jinja2 returned %d results for %d requests", len(res), len(reqs))
	}
	return res
}

// sampleConversations returns conversation prefixes of the shared sample as the
// reference script builds them.
func sampleConversations(t testing.TB) []renderRequest {
	t.Helper()
	out := runScript(t, "sample conversations", exec.Command(python(t), refScript(t), "conversations", testenv.SampleFlat(t)), nil)
	return decodeLines[renderRequest](t, out)
}

// withParsedArguments turns every tool call's arguments string holding a JSON
// object into that object, as the OSL rebuild does, and writes the messages in
// the wire form (keys in wire order, null values omitted).
func withParsedArguments(t testing.TB, messages json.RawMessage) json.RawMessage {
	t.Helper()
	var msgs []map[string]json.RawMessage
	if err := json.Unmarshal(messages, &msgs); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		if tc, ok := m["tool_calls"]; ok {
			var calls []schemas.ToolCall
			if err := json.Unmarshal(tc, &calls); err != nil {
				t.Fatal(err)
			}
			parts := make([]string, len(calls))
			for j, c := range calls {
				args := c.Function.Arguments
				if !strings.HasPrefix(strings.TrimSpace(args), "{") || !json.Valid([]byte(args)) {
					s, _ := json.Marshal(args)
					args = string(s)
				}
				parts[j] = fmt.Sprintf(`{"id":%q,"type":%q,"function":{"name":%q,"arguments":%s}}`, c.ID, c.Type, c.Function.Name, args)
			}
			m["tool_calls"] = []byte("[" + strings.Join(parts, ",") + "]")
		}
		// Re-encode with keys in the wire order.
		b.WriteByte('{')
		first := true
		for _, k := range []string{"role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content"} {
			v, ok := m[k]
			if !ok || string(v) == "null" {
				continue // the wire form omits null values
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			fmt.Fprintf(&b, "%q:", k)
			b.Write(v)
		}
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.Bytes()
}

// templateCases expands conversations into render requests: with and without a
// generation prompt, with thinking switches and preserve_thinking, and with tool
// call arguments as strings and as parsed objects.
func templateCases(t testing.TB, convs []renderRequest) []renderRequest {
	var reqs []renderRequest
	kw := []string{"", `{"enable_thinking":false}`, `{"preserve_thinking":true}`, `{"preserve_thinking":false,"enable_thinking":true}`}
	for i, c := range convs {
		r := c
		r.AddGenerationPrompt = i%2 == 0
		if k := kw[i%len(kw)]; k != "" {
			r.Kwargs = json.RawMessage(k)
		}
		reqs = append(reqs, r)
		p := r
		p.AddGenerationPrompt = !r.AddGenerationPrompt
		p.Messages = withParsedArguments(t, c.Messages)
		reqs = append(reqs, p)
	}
	return reqs
}

func (r renderRequest) kwargs(t testing.TB) map[string]any {
	if len(r.Kwargs) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.Kwargs, &m); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// compareRenders renders reqs in Go and with Jinja2 and requires equal text
// (or an error on both sides).
func compareRenders(t *testing.T, tok *Tokenizer, template string, reqs []renderRequest) (texts []string) {
	want := jinja2Render(t, template, reqs)
	equal := 0
	for i, r := range reqs {
		msgs := []byte(r.Messages)
		if r.NormalizeToolArguments {
			msgs = NormalizeToolCallArguments(msgs)
		}
		got, err := tok.Render(msgs, r.Tools, r.AddGenerationPrompt, r.kwargs(t))
		switch {
		case want[i].Error != nil:
			if err == nil {
				t.Errorf("request %d: Jinja2 fails (%s), Go renders", i, *want[i].Error)
			} else {
				equal++
			}
		case err != nil:
			t.Errorf("request %d: %v", i, err)
		case got != *want[i].Text:
			t.Errorf("request %d differs from Jinja2 at byte %d:\n  go:     %q\n  jinja2: %q", i, testenv.DiffAt(got, *want[i].Text), testenv.Around(got, testenv.DiffAt(got, *want[i].Text)), testenv.Around(*want[i].Text, testenv.DiffAt(got, *want[i].Text)))
		default:
			equal++
			texts = append(texts, got)
		}
	}
	t.Logf("%s: %d of %d renders equal to Jinja2", filepath.Base(template), equal, len(reqs))
	return texts
}

// TestRenderMatchesJinja2 renders the Qwen3 template for prefixes of every
// conversation of the sample (system prompt, tools, tool calls, tool results,
// reasoning; thinking switches and preserve_thinking) and requires Jinja2's
// text character for character, then equal token counts with Hugging Face's
// tokenizers on the Jinja2 text.
func TestRenderMatchesJinja2(t *testing.T) {
	t.Parallel()
	tok := loadQwen3(t)
	reqs := templateCases(t, sampleConversations(t))
	texts := compareRenders(t, tok, filepath.Join(testenv.Tokenizer(t), ConfigFile), reqs)
	// Token counts: every eighth render through Hugging Face's tokenizers.
	var some []string
	for i := 0; i < len(texts); i += 8 {
		some = append(some, texts[i])
	}
	hf, _ := jsReference(t, "tokenizer-hf.mjs", some)
	for i, s := range some {
		if n := len(tok.Encode(s, false)); n != len(hf[i]) {
			t.Errorf("render %d: %d tokens, HF tokenizers %d", i*8, n, len(hf[i]))
		}
	}
	t.Logf("token counts of %d renders equal to HF tokenizers", len(some))
}

// TestNormalizedArgumentsMatchJinja2: ISL renders of sample prefixes with the
// history's tool-call argument strings parsed into objects, as the reference's
// token metrics do, equal Jinja2's renders of the same messages normalized in
// Python; it reports how many renders and tokens the normalization changes.
func TestNormalizedArgumentsMatchJinja2(t *testing.T) {
	t.Parallel()
	tok := loadQwen3(t)
	reqs := templateCases(t, sampleConversations(t))
	for i := range reqs {
		reqs[i].NormalizeToolArguments, reqs[i].AddGenerationPrompt = true, true
		// The sample's argument strings are written as json.dumps writes them,
		// which is also how tojson renders the parsed objects; compact them, as
		// other clients write them, so that the normalization shows.
		reqs[i].Messages = compactArguments(t, reqs[i].Messages)
	}
	texts := compareRenders(t, tok, filepath.Join(testenv.Tokenizer(t), ConfigFile), reqs)
	if len(texts) != len(reqs) {
		t.Fatalf("%d of %d renders equal", len(texts), len(reqs))
	}
	changed, delta := 0, 0
	for i, r := range reqs {
		plain, err := tok.Render(r.Messages, r.Tools, true, r.kwargs(t))
		if err != nil {
			t.Fatal(err)
		}
		if plain != texts[i] {
			changed++
			delta += len(tok.Encode(texts[i], false)) - len(tok.Encode(plain, false))
		}
	}
	if changed == 0 {
		t.Error("no render changed: the sample's tool calls carry string arguments, which should render as objects")
	}
	t.Logf("%d of %d renders changed by parsing the argument strings, %+d tokens in all", changed, len(reqs), delta)
}

// compactArguments returns msgs with every tool call's argument string compacted
// (json.Compact keeps the key order).
func compactArguments(t testing.TB, msgs json.RawMessage) json.RawMessage {
	t.Helper()
	var list []map[string]any
	if err := json.Unmarshal(msgs, &list); err != nil {
		t.Fatal(err)
	}
	for _, m := range list {
		calls, _ := m["tool_calls"].([]any)
		for _, c := range calls {
			fn, _ := c.(map[string]any)["function"].(map[string]any)
			if args, ok := fn["arguments"].(string); ok {
				var b bytes.Buffer
				if json.Compact(&b, []byte(args)) == nil {
					fn["arguments"] = b.String()
				}
			}
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(list); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b.Bytes())
}

// TestRenderFixtureMatchesJinja2 renders testdata/tokens/fixture.jinja, a template
// written for this test, on requests that reach what the Qwen3 template does
// not: preserve_thinking, tojson of tools, parsed arguments and kwargs (key
// order, non-ASCII, HTML characters, floats, big integers, U+2028/U+2029),
// raise_exception and loop controls.
func TestRenderFixtureMatchesJinja2(t *testing.T) {
	t.Parallel()
	root := testenv.RepoRoot(t)
	fixture := filepath.Join(root, "testdata", "tokens", "fixture.jinja")
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(testenv.Tokenizer(t), HFTokenizerFile), filepath.Join(dir, HFTokenizerFile)); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, TemplateFile), src, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "testdata", "tokens", "fixture-requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var reqs []renderRequest
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r renderRequest
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	if texts := compareRenders(t, tok, fixture, reqs); len(texts) != len(reqs)-1 {
		t.Errorf("%d renders equal, want all but the raise_exception one", len(texts))
	}
}

// TestCountOSLMatchesReference counts the OSL of assistant turns of the sample
// with CountOSL and, independently, as the rules state it: Jinja2 renders
// [user "", assistant] and [user "", assistant ""] and Hugging Face's tokenizers
// counts both.
func TestCountOSLMatchesReference(t *testing.T) {
	t.Parallel()
	tok := loadQwen3(t)
	var responses []schemas.Response
	var reqs []renderRequest
	reqs = append(reqs, renderRequest{Messages: json.RawMessage(`[{"role":"user","content":""},{"role":"assistant","content":""}]`)})
	for _, c := range sampleConversations(t) {
		var msgs []json.RawMessage
		if err := json.Unmarshal(c.Messages, &msgs); err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			var a struct {
				Role             string
				Content          *string
				ReasoningContent string             `json:"reasoning_content"`
				ToolCalls        []schemas.ToolCall `json:"tool_calls"`
			}
			if err := json.Unmarshal(m, &a); err != nil {
				t.Fatal(err)
			}
			if a.Role != "assistant" || len(responses) >= 60 || len(responses)%2 == 1 && len(a.ToolCalls) == 0 {
				continue
			}
			r := schemas.Response{Reasoning: a.ReasoningContent, ToolCalls: a.ToolCalls}
			if a.Content != nil {
				r.Content = *a.Content
			}
			responses = append(responses, r)
			one := withParsedArguments(t, json.RawMessage("["+string(m)+"]"))
			reqs = append(reqs, renderRequest{Messages: json.RawMessage(`[{"role":"user","content":""},` + string(one[1:]))})
		}
	}
	rendered := jinja2Render(t, filepath.Join(testenv.Tokenizer(t), ConfigFile), reqs)
	var texts []string
	for i, r := range rendered {
		if r.Text == nil {
			t.Fatalf("request %d: Jinja2: %v", i, *r.Error)
		}
		texts = append(texts, *r.Text)
	}
	hf, _ := jsReference(t, "tokenizer-hf.mjs", texts)
	if hf == nil {
		t.FailNow()
	}
	equal := 0
	for i, r := range responses {
		want := max(0, len(hf[i+1])-len(hf[0]))
		if r.Reasoning == "" && len(r.ToolCalls) == 0 {
			continue
		}
		got, err := tok.CountOSL(r)
		if err != nil {
			t.Fatal(err)
		}
		if got == want {
			equal++
		} else {
			t.Errorf("response %d: CountOSL %d, reference %d", i, got, want)
		}
	}
	t.Logf("OSL equal to Jinja2 + HF tokenizers for %d of %d sample responses", equal, len(responses))
}
