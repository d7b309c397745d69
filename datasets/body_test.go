package datasets

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/schemas"
)

func sp(s string) *string { return &s }

// testDataset is two conversations built by hand: conv1 with a system prompt, a
// tool call and generation parameters, and noSys without a system prompt.
func testDataset(t testing.TB) (*Dataset, []schemas.Conversation, []schemas.Message, []schemas.Turn) {
	t.Helper()
	convs := []schemas.Conversation{
		{ConversationID: "conv1", Index: 0, Domain: Domain("conv1"), HasSystem: true, System: "Be helpful", Rows: 4, ClientTurns: 2, AssistantTurns: 2, Messages: 4},
		{ConversationID: "noSys", Index: 1, Domain: Domain("noSys"), Rows: 1, ClientTurns: 1, Messages: 1},
	}
	msgs := []schemas.Message{
		{ConversationID: "conv1", Seq: 0, Turn: 1, Role: "user", Content: sp("Hi \"there\"")},
		{ConversationID: "conv1", Seq: 1, Turn: 2, Role: "assistant", ToolCalls: `[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]`, ReasoningContent: sp("think")},
		{ConversationID: "conv1", Seq: 2, Turn: 3, Role: "tool", Content: sp("ok"), ToolCallID: sp("c1")},
		{ConversationID: "conv1", Seq: 3, Turn: 4, Role: "assistant", Content: sp("done")},
		{ConversationID: "noSys", Seq: 0, Turn: 1, Role: "user", Content: sp("x")},
	}
	for i := range msgs {
		msgs[i].Wire = AppendWire(nil, &msgs[i])
	}
	tools := `[{"type":"function","function":{"name":"bash"}}]`
	turns := []schemas.Turn{
		{ConversationID: "conv1", ConvIndex: 0, Turn: 1, ClientIndex: 0, Role: "user", MsgStart: 0, MsgEnd: 1, Tools: tools,
			Params: `{"model":"row-model","temperature":0.2,"seed":3,"stop":["\n"]}`, ExpectedTurn: 2},
		{ConversationID: "conv1", ConvIndex: 0, Turn: 3, ClientIndex: 1, Role: "tool", MsgStart: 2, MsgEnd: 3, Tools: tools,
			Params: `{"max_new_tokens":64}`, Inherited: `{"model":"row-model"}`, MaxTokens: 64, DelaySeconds: 0.5, ExpectedTurn: 4},
		{ConversationID: "noSys", ConvIndex: 1, Turn: 1, ClientIndex: 0, Role: "user", MsgStart: 0, MsgEnd: 1},
	}
	d, err := New(schemas.DatasetManifest{SchemaVersion: schemas.DatasetVersion}, convs, msgs, turns)
	if err != nil {
		t.Fatal(err)
	}
	return d, convs, msgs, turns
}

func TestAppendBodyExact(t *testing.T) {
	d, _, _, _ := testDataset(t)
	qwen, err := LookupProfile("qwen3.6-35b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	sys1 := `{"role":"system","content":"[salt: ba75]\n\nBe helpful\n\n[salt: e643]"}`
	u := `{"role":"user","content":"Hi \"there\""}`
	a := `{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}],"reasoning_content":"think"}`
	tool := `{"role":"tool","content":"ok","tool_call_id":"c1"}`
	tools := `"tools":[{"type":"function","function":{"name":"bash"}}]`
	for _, tc := range []struct {
		name string
		turn int
		o    BodyOptions
		want string
	}{
		{"salted repeat 2, streaming, profile under row params", 0,
			BodyOptions{Profile: &qwen, Salt: true, Repeat: 2, Stream: true, IncludeUsage: true},
			`{"model":"row-model","messages":[` + sys1 + `,` + u + `],"temperature":0.2,"max_completion_tokens":8192,"stream":true,` +
				`"stream_options":{"include_usage":true},"seed":3,"top_p":0.95,"top_k":20,"repetition_penalty":1.0,"stop":["\n"],` +
				`"presence_penalty":1.5,"chat_template_kwargs":{"preserve_thinking":true},` + tools + `}`},
		{"tool turn: history, row max tokens win, the run's model before the first user row's", 1,
			BodyOptions{Model: "served", Salt: true, Repeat: 2, MaxTokens: 100},
			`{"model":"served","messages":[` + sys1 + `,` + u + `,` + a + `,` + tool + `],"max_completion_tokens":64,"stream":false,` + tools + `}`},
		{"unsalted, no stream_options without IncludeUsage, the run's default max tokens", 0,
			BodyOptions{Stream: true},
			`{"model":"row-model","messages":[{"role":"system","content":"Be helpful"},` + u + `],"temperature":0.2,"max_completion_tokens":1024,"stream":true,"seed":3,"stop":["\n"],` + tools + `}`},
		{"no run default max tokens: the loader's 128", 0,
			BodyOptions{Stream: true, MaxTokens: -1},
			`{"model":"row-model","messages":[{"role":"system","content":"Be helpful"},` + u + `],"temperature":0.2,"max_completion_tokens":128,"stream":true,"seed":3,"stop":["\n"],` + tools + `}`},
		{"no system prompt, run max tokens, the reference's default model", 2,
			BodyOptions{MaxTokens: 100},
			`{"model":"no-model-name","messages":[{"role":"user","content":"x"}],"max_completion_tokens":100,"stream":false}`},
		{"clear generated cache, the first user row's model", 1,
			BodyOptions{ClearGeneratedCache: true},
			`{"model":"row-model","messages":[{"role":"system","content":"Be helpful"},` + u + `,` +
				`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}],"reasoning_content":" think"},` +
				tool + `],"max_completion_tokens":64,"stream":false,` + tools + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(d.AppendBody([]byte("prefix"), &d.Turns[tc.turn], tc.o))
			if got != "prefix"+tc.want {
				t.Errorf("body\n got %s\nwant %s", got, "prefix"+tc.want)
			}
			if !json.Valid([]byte(tc.want)) {
				t.Errorf("expected body is not JSON")
			}
			var body struct{ Messages json.RawMessage }
			if err := json.Unmarshal([]byte(tc.want), &body); err != nil {
				t.Fatal(err)
			}
			if msgs := d.RequestMessages(&d.Turns[tc.turn], tc.o); string(msgs) != string(body.Messages) {
				t.Errorf("RequestMessages = %s, want %s", msgs, body.Messages)
			}
		})
	}
}

func TestKimiProfileBody(t *testing.T) {
	d, _, _, _ := testDataset(t)
	k, _ := LookupProfile("kimi-k3")
	got := string(d.AppendBody(nil, &d.Turns[2], BodyOptions{Profile: &k}))
	want := `{"model":"moonshotai/Kimi-K3","messages":[{"role":"user","content":"x"}],"temperature":1.0,"max_completion_tokens":8192,"stream":false,"top_p":1.0}`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// TestAppendBodyResolution follows the order of the reference's loader
// (agentic_inference_dataset.py load() at ea332753): the run's defaults are
// written into the rows that lack them first, then the first user row's model,
// max_completion_tokens, max_new_tokens and stream fill what is still missing;
// max tokens resolve through max_new_tokens, max_completion_tokens, max_tokens
// (Python truthiness), else 128.
func TestAppendBodyResolution(t *testing.T) {
	convs := []schemas.Conversation{{ConversationID: "c", Index: 0, Domain: "coding", Rows: 1, ClientTurns: 5, Messages: 1}}
	msgs := []schemas.Message{{ConversationID: "c", Seq: 0, Turn: 1, Role: "user", Content: sp("x")}}
	msgs[0].Wire = AppendWire(nil, &msgs[0])
	inh := `{"model":"m0","max_completion_tokens":55,"max_new_tokens":77,"stream":false}`
	turns := []schemas.Turn{
		{Params: "", Inherited: inh},
		{Params: `{"max_new_tokens":0,"max_tokens":9}`, Inherited: `{"max_completion_tokens":55}`},
		{Params: `{"max_completion_tokens":"100","stream":1.0,"model":7}`},
		{Params: `{"max_tokens":9}`},
		{Params: `{"max_completion_tokens":0,"max_tokens":0}`, Inherited: `{"stream":true}`},
	}
	for i := range turns {
		turns[i].ConversationID, turns[i].Domain, turns[i].Turn, turns[i].ClientIndex, turns[i].Role, turns[i].MsgEnd = "c", "coding", int32(i+1), int32(i), "user", 1
	}
	d, err := New(schemas.DatasetManifest{SchemaVersion: schemas.DatasetVersion}, convs, msgs, turns)
	if err != nil {
		t.Fatal(err)
	}
	qwen, _ := LookupProfile("qwen3.6-35b-a3b")
	m := `"messages":[{"role":"user","content":"x"}]`
	qs := `"top_p":0.95,"top_k":20,"repetition_penalty":1.0,"presence_penalty":1.5,"chat_template_kwargs":{"preserve_thinking":true}`
	for _, tc := range []struct {
		name string
		turn int
		o    BodyOptions
		want string
	}{
		{"no run defaults: everything from the first user row", 0, BodyOptions{MaxTokens: -1},
			`{"model":"m0",` + m + `,"max_completion_tokens":77,"stream":false}`},
		{"profile and streaming first: only max_new_tokens still comes from the first user row", 0, BodyOptions{Profile: &qwen, Stream: true},
			`{"model":"Qwen/Qwen3.6-35B-A3B",` + m + `,"temperature":1.0,"max_completion_tokens":77,"stream":true,` + qs + `}`},
		{"a falsy max_new_tokens falls through to the inherited max_completion_tokens", 1, BodyOptions{MaxTokens: -1},
			`{"model":"no-model-name",` + m + `,"max_completion_tokens":55,"stream":false}`},
		{"the run's max tokens before the inherited ones, the row's max_tokens after", 1, BodyOptions{MaxTokens: 300},
			`{"model":"no-model-name",` + m + `,"max_completion_tokens":300,"stream":false}`},
		{"values of other types sent as the file has them", 2, BodyOptions{Profile: &qwen, Stream: true},
			`{"model":7,` + m + `,"temperature":1.0,"max_completion_tokens":"100","stream":1.0,` + qs + `}`},
		{"the row's own max_tokens when nothing else is set", 3, BodyOptions{MaxTokens: -1},
			`{"model":"no-model-name",` + m + `,"max_completion_tokens":9,"stream":false}`},
		{"all falsy: the reference's 128; the inherited stream", 4, BodyOptions{MaxTokens: -1},
			`{"model":"no-model-name",` + m + `,"max_completion_tokens":128,"stream":true}`},
		{"the run's default 1024 without a profile", 3, BodyOptions{},
			`{"model":"no-model-name",` + m + `,"max_completion_tokens":1024,"stream":false}`},
		{"stream_options only with IncludeUsage on a streamed request", 4, BodyOptions{Stream: true, IncludeUsage: true, MaxTokens: -1},
			`{"model":"no-model-name",` + m + `,"max_completion_tokens":128,"stream":true,"stream_options":{"include_usage":true}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(d.AppendBody(nil, &d.Turns[tc.turn], tc.o)); got != tc.want {
				t.Errorf("body\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	if !d.Streams(&d.Turns[2], BodyOptions{}) || d.Streams(&d.Turns[0], BodyOptions{Stream: false}) || !d.Streams(&d.Turns[1], BodyOptions{Stream: true}) {
		t.Error("Streams disagrees with the stream values")
	}
}

func TestCheckSaltable(t *testing.T) {
	d, _, _, _ := testDataset(t)
	err := d.CheckSaltable()
	if !errors.Is(err, ErrNoSystemPrompt) || !strings.Contains(err.Error(), `"noSys"`) {
		t.Errorf("CheckSaltable = %v, want ErrNoSystemPrompt naming noSys", err)
	}
}

func TestClearedWireOnlyAssistants(t *testing.T) {
	d, _, msgs, _ := testDataset(t)
	for i := range msgs {
		w := ClearedWire(&msgs[i])
		if (w != nil) != (msgs[i].Role == "assistant") {
			t.Errorf("message %d (%s): cleared %s", i, msgs[i].Role, w)
		}
	}
	if got := string(ClearedWire(&msgs[3])); got != `{"role":"assistant","content":" done"}` {
		t.Errorf("ClearedWire = %s", got)
	}
	_ = d
}

func TestWriterRoundTrip(t *testing.T) {
	d0, convs, msgs, turns := testDataset(t)
	_ = d0
	dir := t.TempDir()
	w, err := NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	isl := int32(42)
	turns[1].ISL = &isl
	if err := w.Add(&convs[0], msgs[:4], turns[:2]); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(&convs[1], msgs[4:], turns[2:]); err != nil {
		t.Fatal(err)
	}
	m, err := w.Close(schemas.DatasetManifest{Inputs: []schemas.DatasetInput{{Path: "x.jsonl", Format: "flat"}}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Counts != (schemas.DatasetCounts{Conversations: 2, Coding: 2, Rows: 5, ClientTurns: 3, AssistantTurns: 2, Messages: 5}) {
		t.Errorf("counts %+v", m.Counts)
	}
	d, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Manifest.ContentHash != m.ContentHash || len(m.ContentHash) != 64 {
		t.Errorf("content hash %q, manifest says %q", d.Manifest.ContentHash, m.ContentHash)
	}
	convs[0].SystemEscaped = "Be helpful"
	if !reflect.DeepEqual(d.Conversations, convs) {
		t.Errorf("conversations\n got %+v\nwant %+v", d.Conversations, convs)
	}
	if !reflect.DeepEqual(d.Turns, turns) {
		t.Errorf("turns\n got %+v\nwant %+v", d.Turns, turns)
	}
	for ci := range convs {
		got := d.Messages(ci)
		for k := range got {
			want := msgs[k]
			if ci == 1 {
				want = msgs[4+k]
			}
			if !reflect.DeepEqual(got[k], want) {
				t.Errorf("conversation %d message %d\n got %+v\nwant %+v", ci, k, got[k], want)
			}
		}
	}
	if c, ok := d.Conversation("noSys"); !ok || c.Index != 1 {
		t.Errorf("Conversation(noSys) = %v, %v", c, ok)
	}
	if ts := d.ConversationTurns(0); len(ts) != 2 || ts[1].Turn != 3 {
		t.Errorf("ConversationTurns(0) = %+v", ts)
	}
	if tr, err := d.Turn("conv1", 3); err != nil || tr.ClientIndex != 1 {
		t.Errorf("Turn(conv1, 3) = %+v, %v", tr, err)
	}
	if _, err := d.Turn("conv1", 2); err == nil {
		t.Error("Turn(conv1, 2) (an assistant row) succeeded")
	}

	// The hash depends on content, not on order or file names: the same rows in
	// the other order give the same hash; a changed delay gives another.
	hash := func(order []int, delay float64) string {
		w, err := NewWriter(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		ranges := [][2]int{{0, 4}, {4, 5}}
		tr := [][2]int{{0, 2}, {2, 3}}
		for idx, ci := range order {
			c := convs[ci]
			c.Index = int32(idx)
			ts := append([]schemas.Turn(nil), turns[tr[ci][0]:tr[ci][1]]...)
			for k := range ts {
				ts[k].ConvIndex = int32(idx)
				if ts[k].Turn == 3 {
					ts[k].DelaySeconds = delay
				}
			}
			if err := w.Add(&c, append([]schemas.Message(nil), msgs[ranges[ci][0]:ranges[ci][1]]...), ts); err != nil {
				t.Fatal(err)
			}
		}
		m, err := w.Close(schemas.DatasetManifest{})
		if err != nil {
			t.Fatal(err)
		}
		return m.ContentHash
	}
	if a, b := hash([]int{0, 1}, 0.5), hash([]int{1, 0}, 0.5); a != b || a != m.ContentHash {
		t.Errorf("hash depends on order: %s, %s, %s", a, b, m.ContentHash)
	}
	if a, b := hash([]int{0, 1}, 0.5), hash([]int{0, 1}, 0.75); a == b {
		t.Error("hash ignores a delay change")
	}
	_ = filepath.Join
}

// BenchmarkAppendBody measures body assembly for a long history against a plain
// copy of the same bytes (`make bench` reports the same on the real sample).
func BenchmarkAppendBody(b *testing.B) {
	convs := []schemas.Conversation{{ConversationID: "c", HasSystem: true, System: strings.Repeat("system ", 200)}}
	var msgs []schemas.Message
	var turns []schemas.Turn
	for k := range 200 {
		role := "user"
		if k%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, schemas.Message{ConversationID: "c", Seq: int32(k), Turn: int32(k + 1), Role: role, Content: sp(strings.Repeat("some history text\n", 100))})
		msgs[k].Wire = AppendWire(nil, &msgs[k])
		if role == "user" {
			turns = append(turns, schemas.Turn{ConversationID: "c", Turn: int32(k + 1), ClientIndex: int32(len(turns)), Role: role, MsgStart: int32(k), MsgEnd: int32(k + 1)})
		}
	}
	convs[0].Messages, convs[0].SystemEscaped = int32(len(msgs)), string(jsontext.AppendEscaped(nil, convs[0].System))
	d, err := New(schemas.DatasetManifest{}, convs, msgs, turns)
	if err != nil {
		b.Fatal(err)
	}
	last := &d.Turns[len(d.Turns)-1]
	o := BodyOptions{Model: "m", Salt: true, Repeat: 3, Stream: true, IncludeUsage: true}
	body := d.AppendBody(nil, last, o)
	buf := make([]byte, 0, 2*len(body))
	b.Run("AppendBody", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			buf = d.AppendBody(buf[:0], last, o)
		}
	})
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			buf = append(buf[:0], body...)
		}
	})
}

// TestAppendNextBody: a body built on from an earlier turn's of the same
// conversation (the history kept in place) is the body AppendBody builds, for
// every pair of turns and options (salted, with a profile, with the generated
// cache cleared, with the model and the max tokens changing between turns); a
// dst that is not the earlier turn's body is built afresh.
func TestAppendNextBody(t *testing.T) {
	d, _, _, _ := testDataset(t)
	qwen, err := LookupProfile("qwen3.6-35b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	opts := []BodyOptions{{}, {Salt: true, Repeat: 3, Profile: &qwen, Stream: true, IncludeUsage: true}, {ClearGeneratedCache: true, Model: "m", MaxTokens: -1}}
	// Turns 0 and 1 are conv1's (the model and the max tokens differ), 2 is noSys's.
	prevs := []*schemas.Turn{&d.Turns[0], &d.Turns[1], &d.Turns[2]}
	for oi, o := range opts {
		for ti := range d.Turns {
			tr := &d.Turns[ti]
			want := string(d.AppendBody(nil, tr, o))
			for pi, prev := range prevs {
				dst := d.AppendBody(make([]byte, 0, 8), prev, o)
				if got := string(d.AppendNextBody(dst, prev, tr, o)); got != want {
					t.Errorf("options %d, turn %d after turn %d:\n got %s\nwant %s", oi, ti, pi, got, want)
				}
			}
			for _, dst := range []string{"", "{}", want[:len(want)/2], `{"model":"x"}`} {
				if got := string(d.AppendNextBody([]byte(dst), prevs[0], tr, o)); got != want {
					t.Errorf("options %d, turn %d after a dst %q that is not turn 0's body: got %s", oi, ti, dst, got)
				}
			}
		}
	}
}

// TestToolCalls: a message's tool_calls read as a response holds them, numbered,
// string arguments unquoted and object arguments kept as their JSON.
func TestToolCalls(t *testing.T) {
	got, err := ToolCalls(`[{"id":"a","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"ls\"}"}},` +
		`{"id":"b","type":"function","function":{"name":"edit","arguments":{"path":"x"}}}]`)
	if err != nil {
		t.Fatal(err)
	}
	want := []schemas.ToolCall{
		{Index: 0, ID: "a", Type: "function", Function: schemas.ToolFunction{Name: "bash", Arguments: `{"cmd":"ls"}`}},
		{Index: 1, ID: "b", Type: "function", Function: schemas.ToolFunction{Name: "edit", Arguments: `{"path":"x"}`}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ToolCalls = %+v, want %+v", got, want)
	}
	if _, err := ToolCalls(`{"not":"a list"}`); err == nil {
		t.Error("an object read as tool calls")
	}
}
