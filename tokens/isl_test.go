package tokens

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// islKwargs are the chat_template_kwargs the equivalence tests render with: none,
// the default ISL profile's, and the thinking switches.
var islKwargs = []map[string]any{
	nil,
	{"preserve_thinking": true},
	{"enable_thinking": false},
	{"enable_thinking": json.RawMessage("false"), "preserve_thinking": json.RawMessage("true")},
	{"enable_thinking": true},
	{"enable_thinking": "false"}, // a string is not `false`
}

// clientTurnEnds returns k for each prefix messages[:k] that ends with a user or
// tool message (a client turn).
func clientTurnEnds(t testing.TB, frags []json.RawMessage) []int {
	var ends []int
	for k, f := range frags {
		var m struct{ Role any }
		if err := json.Unmarshal(f, &m); err != nil {
			t.Fatal(err)
		}
		if m.Role == "user" || m.Role == "tool" {
			ends = append(ends, k+1)
		}
	}
	return ends
}

func joinMessages(frags [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(frags, []byte{','})...), ']')
}

// checkCounter counts every client turn of a conversation with one ISLCounter and
// with CountISL, and requires equal counts; where the counter renders natively it
// also requires its text to equal Render's. It returns the turns counted
// natively and with the engine, and of those the ones that reused the message
// loop's iterations of an earlier turn.
func checkCounter(t *testing.T, tok *Tokenizer, name string, frags []json.RawMessage, tools []byte, kw map[string]any, ends []int) (native, engine, reused int) {
	t.Helper()
	c := tok.NewISLCounter(kw)
	textCheck := tok.NewISLCounter(kw)
	all := make([][]byte, len(frags))
	for i, f := range frags {
		all[i] = f
	}
	for _, k := range ends {
		msgs := all[:k]
		want, werr := tok.CountISL(joinMessages(msgs), tools, kw)
		got, gerr := c.Count(msgs, tools)
		if (werr != nil) != (gerr != nil) || got != want {
			t.Errorf("%s, %d messages, kwargs %v: counter %d (%v), CountISL %d (%v)", name, k, kw, got, gerr, want, werr)
			continue
		}
		if !tok.template.qwen3 {
			continue
		}
		if text, ok := textCheck.renderQwen3(msgs, tools); ok {
			ref, err := tok.Render(NormalizeToolCallArguments(joinMessages(msgs)), tools, true, kw)
			if err != nil || text != ref {
				at := testenv.DiffAt(text, ref)
				t.Errorf("%s, %d messages, kwargs %v: native text differs from Render at byte %d (%v):\n  native: %q\n  render: %q", name, k, kw, at, err, testenv.Around(text, at), testenv.Around(ref, at))
			}
		}
	}
	return c.Ways()
}

// TestISLCounterSample is the acceptance check of incremental ISL on the
// shared sample: every client turn of every conversation, under each set of
// kwargs, counted by ISLCounter (one counter per conversation, as ingest does)
// equals CountISL (a full render and encode per turn); the Qwen3 template is
// rendered natively for every turn, with text equal to Render's.
func TestISLCounterSample(t *testing.T) {
	tok := loadQwen3(t)
	if !tok.template.qwen3 {
		t.Fatal("the Qwen3 tokenizer's template is not recognized as the Qwen3 template")
	}
	convs := sampleConversations(t)
	turns, native, engine := 0, 0, 0
	for i, conv := range convs {
		var frags []json.RawMessage
		if err := json.Unmarshal(conv.Messages, &frags); err != nil {
			t.Fatal(err)
		}
		ends := clientTurnEnds(t, frags)
		kw := islKwargs[i%len(islKwargs)]
		n, e, _ := checkCounter(t, tok, fmt.Sprintf("sample conversation %d", i), frags, conv.Tools, kw, ends)
		turns += len(ends)
		native += n
		engine += e
	}
	if turns < 1000 || native != turns {
		t.Errorf("%d turns: %d rendered natively, %d with the engine; want all natively", turns, native, engine)
	}
	t.Logf("%d conversations, %d client turns: counts equal to CountISL", len(convs), turns)
}

// islEdgeConversations builds conversations around the Unicode edge cases: each
// case as a system prompt, user content, reasoning, assistant content, tool
// output, tool-call name and argument, in every structure the template
// distinguishes (system or not, tools or not, several user queries, parallel
// tool results, a user message that wraps a tool response, reasoning inside the
// content, arguments as objects with numbers Python prints differently).
func islEdgeConversations() []islConv {
	cases := edgeCases()
	var out []islConv
	tools := `[{"type":"function","function":{"name":"bash","description":"run \u2028 a command","parameters":{"type":"object","properties":{"cmd":{"type":"string"},"n":{"type":"number","default":1.0}}}}}]`
	for i, s := range cases {
		js, _ := json.Marshal(s)
		str := string(js)
		body := str[1 : len(str)-1] // the escaped text, to splice into other strings
		arg, _ := json.Marshal(map[string]any{"cmd": s})
		argStr, _ := json.Marshal(string(arg))
		msgs := []string{
			`{"role":"system","content":` + str + `}`,
			`{"role":"user","content":` + str + `}`,
			`{"role":"assistant","content":` + str + `,"reasoning_content":` + str + `,"tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":` + string(argStr) + `}}]}`,
			`{"role":"tool","content":` + str + `,"tool_call_id":"c1"}`,
			`{"role":"tool","content":"second result","tool_call_id":"c2"}`,
			`{"role":"assistant","content":"<think>\n` + body + `\n</think>\n\nanswer ` + body + `"}`,
			`{"role":"user","content":"<tool_response>` + body + `</tool_response>"}`,
			`{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{"name":` + str + `,"arguments":{"x":1.0,"y":1e16,"z":12345678901234567890123,"w":[0.1,2.5e-7],"s":` + str + `}}},{"function":{"name":"b","arguments":"not json {"}}]}`,
			`{"role":"tool","content":null}`,
			`{"role":"user","content":"next question ` + body + `"}`,
			`{"role":"assistant","reasoning_content":null,"content":"plain"}`,
			`{"role":"user"}`,
		}
		if i%3 == 1 {
			msgs = msgs[1:] // no system prompt
		}
		c := islConv{name: fmt.Sprintf("edge case %d %q", i, s)}
		for _, m := range msgs {
			c.frags = append(c.frags, json.RawMessage(m))
		}
		if i%2 == 0 {
			c.tools = []byte(tools)
		}
		out = append(out, c)
	}
	return out
}

type islConv struct {
	name  string
	frags []json.RawMessage
	tools []byte
}

// TestISLCounterEdgeCases: counts equal to CountISL (and native text equal to
// Render's) on conversations made of the Unicode and BPE edge cases.
func TestISLCounterEdgeCases(t *testing.T) {
	tok := loadQwen3(t)
	native, engine := 0, 0
	for i, c := range islEdgeConversations() {
		for _, k := range clientTurnEnds(t, c.frags) {
			// Each prefix on its own too: a counter that has seen nothing before.
			n, e, _ := checkCounter(t, tok, c.name, c.frags[:k], c.tools, islKwargs[(i+k)%len(islKwargs)], []int{k})
			native, engine = native+n, engine+e
		}
		n, e, _ := checkCounter(t, tok, c.name, c.frags, c.tools, islKwargs[i%len(islKwargs)], clientTurnEnds(t, c.frags))
		native, engine = native+n, engine+e
	}
	if native == 0 {
		t.Error("no turn was rendered natively")
	}
	t.Logf("%d turns rendered natively, %d with the engine (placeholder characters, ...)", native, engine)
}

// TestISLCounterFallback: messages the native build does not cover are counted
// through the template engine, with the same result as CountISL, errors
// included.
func TestISLCounterFallback(t *testing.T) {
	tok := loadQwen3(t)
	convs := []islConv{
		{name: "structured content", frags: []json.RawMessage{json.RawMessage(`{"role":"system","content":"s"}`), json.RawMessage(`{"role":"user","content":[{"type":"text","text":"hi"}]}`)}},
		{name: "placeholder rune", frags: []json.RawMessage{json.RawMessage(`{"role":"user","content":"a` + "\uFDD0" + `0` + "\uFDD1" + `b"}`), json.RawMessage(`{"role":"assistant","content":"x","tool_calls":[{"function":{"name":"f","arguments":{"v":1.0}}}]}`), json.RawMessage(`{"role":"tool","content":"r"}`)}},
		{name: "escaped placeholder", frags: []json.RawMessage{json.RawMessage(`{"role":"user","content":"a\ufdd00\uFDD1b"}`)}},
		{name: "tool call without function", frags: []json.RawMessage{json.RawMessage(`{"role":"user","content":"q"}`), json.RawMessage(`{"role":"assistant","content":"","tool_calls":[{"name":"f","arguments":"{}"}]}`), json.RawMessage(`{"role":"tool","content":"r"}`)}},
		{name: "numeric role", frags: []json.RawMessage{json.RawMessage(`{"role":1,"content":"q"}`), json.RawMessage(`{"role":"user","content":"q"}`)}},
		{name: "object tools", frags: []json.RawMessage{json.RawMessage(`{"role":"user","content":"q"}`)}, tools: []byte(`{"a":1}`)},
		{name: "invalid message", frags: []json.RawMessage{json.RawMessage(`{"role":"user","content":"q"`)}},
	}
	engine := 0
	for _, c := range convs {
		_, e, _ := checkCounter(t, tok, c.name, c.frags, c.tools, nil, []int{len(c.frags)})
		engine += e
	}
	if engine != len(convs) {
		t.Errorf("%d of %d uncovered conversations went through the engine", engine, len(convs))
	}
}

// FuzzISLCounter builds random conversations (roles, contents drawn from the
// edge cases and template-significant fragments, reasoning, tool calls, tools)
// and requires the counter to agree with CountISL on every client turn.
func FuzzISLCounter(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 42, 1000} {
		f.Add(seed)
	}
	tok := loadQwen3(f)
	f.Fuzz(func(t *testing.T, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 7))
		frags, tools := randomConversation(r)
		checkCounter(t, tok, fmt.Sprintf("seed %d", seed), frags, tools, islKwargs[r.IntN(len(islKwargs))], clientTurnEnds(t, frags))
	})
}

// TestISLCounterRandomQwen36 is FuzzISLCounter's check with Qwen3.6's template,
// which the counter renders incrementally (renderLoop), on 300 random
// conversations: counts equal to CountISL on every client turn.
func TestISLCounterRandomQwen36(t *testing.T) {
	tok := loadQwen36(t)
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 7))
		frags, tools := randomConversation(r)
		checkCounter(t, tok, fmt.Sprintf("seed %d", seed), frags, tools, islKwargs[r.IntN(len(islKwargs))], clientTurnEnds(t, frags))
	}
}

// randomConversation builds a random conversation (roles, contents drawn from
// the edge cases and template-significant fragments, reasoning, tool calls)
// and, half the time, tools.
func randomConversation(r *rand.Rand) ([]json.RawMessage, []byte) {
	cases := edgeCases()
	bits := []string{"", "x", "<think>", "</think>", "\n", "\n\n", "<tool_response>", "</tool_response>", "<|im_start|>", "<|im_end|>",
		"<tool_call>", "\u2028", " ", "é", "{\"a\": 1}", "<|im_"}
	text := func() string {
		var b strings.Builder
		for range r.IntN(4) {
			if r.IntN(3) == 0 {
				b.WriteString(cases[r.IntN(len(cases))])
			} else {
				b.WriteString(bits[r.IntN(len(bits))])
			}
		}
		return b.String()
	}
	q := func(s string) string { js, _ := json.Marshal(s); return string(js) }
	var frags []json.RawMessage
	if r.IntN(2) == 0 {
		frags = append(frags, json.RawMessage(`{"role":"system","content":`+q(text())+`}`))
	}
	for range 1 + r.IntN(12) {
		var m string
		switch r.IntN(5) {
		case 0, 1:
			m = `{"role":"user","content":` + q(text()) + `}`
		case 2:
			m = `{"role":"assistant","content":` + q(text())
			if r.IntN(2) == 0 {
				m += `,"reasoning_content":` + q(text())
			}
			if r.IntN(2) == 0 {
				m += `,"tool_calls":[`
				for j := range 1 + r.IntN(3) {
					if j > 0 {
						m += ","
					}
					args := q(`{"cmd": ` + q(text()) + `}`)
					if r.IntN(3) == 0 {
						args = q(text())
					}
					m += `{"id":"c","type":"function","function":{"name":` + q(text()) + `,"arguments":` + args + `}}`
				}
				m += `]`
			}
			m += `}`
		default:
			m = `{"role":"tool","content":` + q(text()) + `}`
		}
		frags = append(frags, json.RawMessage(m))
	}
	var tools []byte
	if r.IntN(2) == 0 {
		tools = []byte(`[{"type":"function","function":{"name":` + q(text()) + `,"parameters":{"d":` + q(text()) + `,"f":2.0}}}]`)
	}
	return frags, tools
}

// TestISLCounterNotPrefixStable: with templates for which a turn's prompt is not
// a prefix of the next turn's (one keeps the reasoning of the assistant messages
// after the last user message only, as Qwen's templates do without
// preserve_thinking; one writes the message count in its header), the counter's
// counts still equal a full render and encode of every turn. The test first
// checks that each template really is not prefix-stable on the conversations.
func TestISLCounterNotPrefixStable(t *testing.T) {
	base := loadQwen3(t)
	templates := map[string]string{
		"drops earlier reasoning": `{%- set ns = namespace(last=-1) %}
{%- for m in messages %}{%- if m.role == 'user' %}{%- set ns.last = loop.index0 %}{%- endif %}{%- endfor %}
{%- for m in messages %}
{{- '<|im_start|>' + m.role + '\n' }}
{%- if m.role == 'assistant' and loop.index0 > ns.last and m.reasoning_content %}{{- '<think>\n' + m.reasoning_content + '\n</think>\n\n' }}{%- endif %}
{{- m.content + '<|im_end|>\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}`,
		"counts messages in its header": `{{- '<|im_start|>system\n' + (messages|length|string) + ' messages<|im_end|>\n' }}
{%- for m in messages %}{{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}`,
	}
	convs := []islConv{{name: "two questions", frags: []json.RawMessage{
		json.RawMessage(`{"role":"system","content":"s"}`),
		json.RawMessage(`{"role":"user","content":"first question"}`),
		json.RawMessage(`{"role":"assistant","reasoning_content":"think one","content":"answer one"}`),
		json.RawMessage(`{"role":"user","content":"second question"}`),
		json.RawMessage(`{"role":"assistant","reasoning_content":"think two","content":"answer two"}`),
		json.RawMessage(`{"role":"user","content":"third question"}`),
	}}}
	edge := islEdgeConversations()
	convs = append(convs, edge[:min(len(edge), 12)]...)
	for name, src := range templates {
		ct, err := newChatTemplate(src, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tok := &Tokenizer{name: base.name, model: base.model, normalize: base.normalize, pre: base.pre,
			rawAdded: base.rawAdded, normAdded: base.normAdded, vocabSize: base.vocabSize, template: ct}
		unstable := 0
		for _, c := range convs {
			ends := clientTurnEnds(t, c.frags)
			all := make([][]byte, len(c.frags))
			for i, f := range c.frags {
				all[i] = f
			}
			final, err := tok.Render(joinMessages(all), c.tools, false, nil)
			if err != nil {
				t.Fatalf("%s, %s: %v", name, c.name, err)
			}
			for _, k := range ends {
				prev, err := tok.Render(joinMessages(all[:k]), c.tools, false, nil)
				if err != nil {
					t.Fatalf("%s, %s: %v", name, c.name, err)
				}
				if !strings.HasPrefix(final, prev) {
					unstable++
				}
			}
			checkCounter(t, tok, name+", "+c.name, c.frags, c.tools, nil, ends)
		}
		if unstable == 0 {
			t.Errorf("%s: every turn's render is a prefix of the last one's: the template does not test what it should", name)
		}
		t.Logf("%s: %d turns whose render is not a prefix of the conversation's last render, counts equal to CountISL", name, unstable)
	}
}

// TestISLCounterLoopTemplates: which templates the counter renders
// incrementally (loopTemplateOf) and which it leaves to full renders, and in
// every case counts equal to a full render and encode of every turn, reusing
// earlier iterations only where the template allows it: a loop body that reads
// the message count, a variable before setting it (the previous iteration's),
// a mutating call, or a counter it keeps in a namespace.
func TestISLCounterLoopTemplates(t *testing.T) {
	base := loadQwen3(t)
	const end = `{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}`
	cases := []struct {
		name, src string
		admitted  bool
		reuses    bool
	}{
		{"plain", `{%- for m in messages %}{{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}` + end, true, true},
		{"looks ahead", `{%- for m in messages %}{{- '<|im_start|>' + m.role + '\n' + m.content }}{%- if loop.last or loop.nextitem.role != m.role %}{{- '<|im_end|>\n' }}{%- endif %}` + end, true, true},
		{"state from the prologue", `{%- set ns = namespace(last=-1) %}{%- for m in messages %}{%- if m.role == 'user' %}{%- set ns.last = loop.index0 %}{%- endif %}{%- endfor %}
{%- for m in messages %}{{- '<|im_start|>' + m.role + '\n' }}{%- if loop.index0 > ns.last %}{{- '(after) ' }}{%- endif %}{{- m.content + '<|im_end|>\n' }}` + end, true, true},
		{"sets before reading", `{%- for m in messages %}{%- set c = m.content|trim %}{%- if m.role == 'tool' %}{%- set c = '<tool_response>' + c + '</tool_response>' %}{%- endif %}{{- m.role + ':' + c + '\n' }}` + end, true, true},
		{"counter in a namespace", `{%- set n = namespace(i=0) %}{%- for m in messages %}{%- set n.i = n.i + 1 %}{{- n.i ~ ' ' ~ m.content + '\n' }}` + end, true, false},
		{"reads the message count", `{%- for m in messages %}{{- m.content ~ ' of ' ~ (messages|length) + '\n' }}` + end, false, false},
		{"reads loop.length", `{%- for m in messages %}{{- m.content ~ ' of ' ~ loop.length + '\n' }}` + end, false, false},
		{"reads the previous iteration's variable", `{%- for m in messages %}{%- if prev is defined %}{{- '(' + prev + ')' }}{%- endif %}{%- set prev = m.role %}{{- m.content + '\n' }}` + end, false, false},
		{"mutates a list", `{%- set seen = [] %}{%- for m in messages %}{{- seen.append(m.role) or '' }}{{- m.content ~ (seen|length) + '\n' }}` + end, false, false},
		{"mutates in the prologue", `{%- set seen = [] %}{{- seen.append(1) or '' }}{%- for m in messages %}{{- m.content + '\n' }}` + end, false, false},
		{"breaks", `{%- for m in messages %}{%- if m.role == 'system' %}{%- continue %}{%- endif %}{{- m.content + '\n' }}` + end, false, false},
	}
	convs := []islConv{{name: "two questions", frags: []json.RawMessage{
		json.RawMessage(`{"role":"system","content":"s"}`),
		json.RawMessage(`{"role":"user","content":"first question"}`),
		json.RawMessage(`{"role":"assistant","content":"answer one"}`),
		json.RawMessage(`{"role":"tool","content":" r1 "}`),
		json.RawMessage(`{"role":"tool","content":"r2"}`),
		json.RawMessage(`{"role":"assistant","content":"answer two"}`),
		json.RawMessage(`{"role":"tool","content":"r3"}`),
		json.RawMessage(`{"role":"user","content":"second question"}`),
		json.RawMessage(`{"role":"assistant","content":"answer three"}`),
		json.RawMessage(`{"role":"tool","content":"r4"}`),
		json.RawMessage(`{"role":"tool","content":"r5"}`),
	}}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct, err := newChatTemplate(tc.src, nil)
			if err != nil {
				t.Fatal(err)
			}
			if (ct.loop != nil) != tc.admitted {
				t.Fatalf("admitted for incremental rendering: %v, want %v", ct.loop != nil, tc.admitted)
			}
			tok := &Tokenizer{name: base.name, model: base.model, normalize: base.normalize, pre: base.pre,
				rawAdded: base.rawAdded, normAdded: base.normAdded, vocabSize: base.vocabSize, template: ct}
			reused := 0
			for _, c := range convs {
				_, _, r := checkCounter(t, tok, c.name, c.frags, c.tools, nil, clientTurnEnds(t, c.frags))
				reused += r
			}
			if (reused > 0) != tc.reuses {
				t.Errorf("%d turns reused earlier iterations; want reuse %v", reused, tc.reuses)
			}
		})
	}
}
