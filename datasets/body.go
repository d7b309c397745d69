package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/schemas"
)

// BodyOptions says how to build a client turn's request body. Model, Profile,
// Stream and MaxTokens are the run's defaults, the reference client's model_params:
// as there, they fill only what the turn's own row leaves unset, and they are
// applied before the values the conversation's first user row passes on (see
// AppendBody).
type BodyOptions struct {
	// Model is the run's model name; "" falls back to the profile's.
	Model string
	// Profile supplies sampling settings; nil for none.
	Profile *Profile
	// Salt salts the system message for instance Repeat (1-based; 0 means 1), as the
	// reference client does (spec §4).
	Salt   bool
	Repeat int
	// Stream is the run's streaming mode: on, it is the default "stream": true of
	// rows that do not set stream (as the reference's streaming: on); off, such rows
	// take their first user row's stream, else false.
	Stream bool
	// IncludeUsage adds "stream_options":{"include_usage":true} right after
	// "stream" to a streamed request. The reference client never sends it, so a
	// run that sets it is not official (replay --stream-usage).
	IncludeUsage bool
	// MaxTokens is the run's max_completion_tokens default; 0 falls back to the
	// profile's, and without one to DefaultRunMaxTokens, as the reference client's
	// model_params always carry one. A negative value sets no run default: the
	// reference's loader rules alone apply (AppendBody), as when it loads a dataset
	// without model_params.
	MaxTokens int
	// ClearGeneratedCache sends every recorded assistant message of the history with
	// one space put at the start of its reasoning_content, or of its content when it
	// has no reasoning (ClearedWire), so that no token a server generated live can be
	// reused as cached history. Off by default, so requests match the reference
	// client's.
	ClearGeneratedCache bool
}

// DefaultModelName is the model the reference client sends when neither the row,
// nor the run, nor the conversation's first user row names one.
const DefaultModelName = "no-model-name"

// appendModel appends a turn's model, as JSON: the row's own, else the run's
// (model, else the profile's), else the conversation's first user row's, else
// DefaultModelName.
func appendModel(dst []byte, ps, inh paramSet, model string, pr *Profile) []byte {
	switch {
	case ps.get("model") != nil:
		return append(dst, ps.get("model")...)
	case model != "" || pr.Model != "":
		if model == "" {
			model = pr.Model
		}
		return jsontext.AppendString(dst, model)
	case inh.get("model") != nil:
		return append(dst, inh.get("model")...)
	}
	return jsontext.AppendString(dst, DefaultModelName)
}

// Models returns the model names the run's requests carry (AppendBody's "model"),
// each once, in the order of the turns: what a server must serve for every turn
// to be answered.
func (d *Dataset) Models(o BodyOptions) []string {
	pr := o.Profile
	if pr == nil {
		pr = &Profile{}
	}
	seen := map[string]bool{}
	var names []string
	var buf []byte
	for ti := range d.Turns {
		buf = appendModel(buf[:0], d.params[ti], d.inherited[ti], o.Model, pr)
		if seen[string(buf)] {
			continue
		}
		seen[string(buf)] = true
		var name string
		if err := json.Unmarshal(buf, &name); err != nil {
			name = string(buf) // a row's model that is not a JSON string: sent as it is
		}
		names = append(names, name)
	}
	return names
}

// DefaultMaxTokens is the reference client's max_completion_tokens when no row
// value and no run default set one.
const DefaultMaxTokens = 128

// DefaultRunMaxTokens is the run's max_completion_tokens default when neither
// BodyOptions.MaxTokens nor the profile sets one: the reference client's
// model_params.max_new_tokens default.
const DefaultRunMaxTokens = 1024

// ErrNoSystemPrompt is returned by CheckSaltable for a conversation without a system
// prompt: salting needs one.
var ErrNoSystemPrompt = errors.New("conversation has no system prompt to salt")

// CheckSaltable reports an error naming the first conversation without a system
// prompt. Replay with salting on calls it before issuing anything, as the reference
// client rejects such a dataset before any request.
func (d *Dataset) CheckSaltable() error {
	for i := range d.Conversations {
		if !d.Conversations[i].HasSystem {
			return fmt.Errorf("check salting of conversation %q: %w", d.Conversations[i].ConversationID, ErrNoSystemPrompt)
		}
	}
	return nil
}

// systemFragment appends the (salted) system message of conversation ci to dst; it
// appends nothing when the conversation has no system prompt.
func (d *Dataset) systemFragment(dst []byte, ci int, o *BodyOptions) []byte {
	c := &d.Conversations[ci]
	if !c.HasSystem {
		return dst
	}
	if !o.Salt {
		return AppendSystemMessage(dst, c.SystemEscaped, "", "")
	}
	rs := ""
	if o.Repeat < len(d.repeatSalts) {
		rs = d.repeatSalts[max(o.Repeat, 1)]
	} else {
		rs = repeatSalt(o.Repeat)
	}
	return AppendSystemMessage(dst, c.SystemEscaped, rs, d.convs[ci].salt)
}

// AppendSystemMessage appends the system message with the JSON-escaped content
// systemEscaped to dst. With salts (both non-empty) the content becomes
// "[salt: R]\n\n" + content + "\n\n[salt: S]" (spec §4); see SaltHex.
func AppendSystemMessage(dst []byte, systemEscaped, repeatSalt, convSalt string) []byte {
	dst = append(dst, `{"role":"system","content":"`...)
	if repeatSalt == "" && convSalt == "" {
		dst = append(dst, systemEscaped...)
		return append(dst, `"}`...)
	}
	dst = append(dst, `[salt: `...)
	dst = append(dst, repeatSalt...)
	dst = append(dst, `]\n\n`...)
	dst = append(dst, systemEscaped...)
	dst = append(dst, `\n\n[salt: `...)
	dst = append(dst, convSalt...)
	return append(dst, `]"}`...)
}

// RepeatSalt returns the salt R of instance repeat (1-based; below 1 means 1).
func RepeatSalt(repeat int) string { return repeatSalt(repeat) }

func repeatSalt(repeat int) string {
	if repeat < 1 {
		repeat = 1
	}
	return SaltHex(strconv.Itoa(repeat))
}

// turnIndex returns the position of t in d.Turns.
func (d *Dataset) turnIndex(t *schemas.Turn) int {
	ci := int(t.ConvIndex)
	if ci < 0 || ci >= len(d.convs) {
		panic(fmt.Sprintf("datasets: turn of conversation index %d outside the dataset (%d conversations)", ci, len(d.convs)))
	}
	cd := &d.convs[ci]
	ti := cd.turnStart + int(t.ClientIndex)
	if t.ClientIndex < 0 || ti >= cd.turnEnd {
		panic(fmt.Sprintf("datasets: client turn %d outside conversation %q", t.ClientIndex, t.ConversationID))
	}
	return ti
}

// wireOf returns conversation ci's messages joined with commas as o sends them,
// and where each ends.
func (d *Dataset) wireOf(ci int, o *BodyOptions) ([]byte, []int) {
	if o.ClearGeneratedCache {
		cl := d.cleared()
		return cl[ci].wire, cl[ci].ends
	}
	return d.convs[ci].wire, d.convs[ci].ends
}

// appendMessages appends the JSON messages array of turn t.
func (d *Dataset) appendMessages(dst []byte, t *schemas.Turn, o *BodyOptions) []byte {
	ci := int(t.ConvIndex)
	dst = append(dst, '[')
	n := len(dst)
	dst = d.systemFragment(dst, ci, o)
	if t.MsgEnd > 0 {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		wire, ends := d.wireOf(ci, o)
		dst = append(dst, wire[:ends[t.MsgEnd-1]]...)
	}
	return append(dst, ']')
}

// RequestMessages returns the JSON messages array of client turn t: the (salted)
// system message followed by the conversation's messages before t.MsgEnd.
func (d *Dataset) RequestMessages(t *schemas.Turn, o BodyOptions) []byte {
	d.turnIndex(t)
	return d.appendMessages(nil, t, &o)
}

// AppendBody appends the exact JSON request body of client turn t to dst and
// returns it: the bytes the reference client's OpenAI adapter encodes for the same
// row (spec §5). The body is concatenated from pre-serialized fragments; nothing of
// the history is re-encoded. Keys come in the reference's order: model, messages,
// temperature, max_completion_tokens, stream, [stream_options], seed, top_p, top_k,
// repetition_penalty, n, stop, presence_penalty, frequency_penalty, logit_bias,
// user, chat_template, chat_template_kwargs, tools, tool_choice; absent values are
// left out.
//
// Each value is resolved as the reference's dataset loader resolves it: the row's
// own value, else the run's default (o: model, sampling settings, stream when
// streaming, max_completion_tokens), else, for model, max_completion_tokens,
// max_new_tokens and stream only, the conversation's first user row's value (in
// file order; Turn.Inherited). The max tokens sent are the first truthy (in
// Python's sense) of max_new_tokens, max_completion_tokens, the row's own
// max_tokens, else DefaultMaxTokens; the model falls back to DefaultModelName and
// stream to false. Tools were resolved at ingest (Turn.Tools). With o.Salt on, call
// CheckSaltable first: a conversation without a system prompt gets no system
// message.
func (d *Dataset) AppendBody(dst []byte, t *schemas.Turn, o BodyOptions) []byte {
	dst = d.appendHead(dst, t, &o)
	dst = d.appendMessages(dst, t, &o)
	return d.appendFields(dst, t, &o)
}

// AppendNextBody is AppendBody(dst[:0], t, o) for a dst that holds AppendBody's
// body of prev with the same o, prev an earlier client turn of t's conversation:
// the history prev sent stays in place, and only the messages after it and the
// fields after the messages are appended, so that a turn costs what is new in it
// rather than a copy of its whole history. A dst that does not start and end as
// prev's body does, or a prev of another conversation or not earlier, is built
// afresh.
func (d *Dataset) AppendNextBody(dst []byte, prev, t *schemas.Turn, o BodyOptions) []byte {
	if prev == nil || prev.ConvIndex != t.ConvIndex || prev.MsgEnd == 0 || prev.MsgEnd > t.MsgEnd {
		return d.AppendBody(dst[:0], t, o)
	}
	var scratch [512]byte
	head := d.appendHead(scratch[:0], t, &o)
	if len(head) > len(dst) || string(dst[:len(head)]) != string(head) {
		return d.AppendBody(dst[:0], t, o)
	}
	tail := d.appendFields(append(head[len(head):], ']'), prev, &o)
	if len(tail) > len(dst)-len(head) || string(dst[len(dst)-len(tail):]) != string(tail) {
		return d.AppendBody(dst[:0], t, o)
	}
	wire, ends := d.wireOf(int(t.ConvIndex), &o)
	dst = append(dst[:len(dst)-len(tail)], wire[ends[prev.MsgEnd-1]:ends[t.MsgEnd-1]]...)
	dst = append(dst, ']')
	return d.appendFields(dst, t, &o)
}

// appendHead appends the start of turn t's body, up to its messages array.
func (d *Dataset) appendHead(dst []byte, t *schemas.Turn, o *BodyOptions) []byte {
	ti := d.turnIndex(t)
	pr := o.Profile
	if pr == nil {
		pr = &Profile{}
	}
	dst = append(dst, `{"model":`...)
	dst = appendModel(dst, d.params[ti], d.inherited[ti], o.Model, pr)
	return append(dst, `,"messages":`...)
}

// appendFields appends the fields of turn t's body after its messages array,
// and the body's closing brace.
func (d *Dataset) appendFields(dst []byte, t *schemas.Turn, o *BodyOptions) []byte {
	ti := d.turnIndex(t)
	ps, inh := d.params[ti], d.inherited[ti]
	pr := o.Profile
	if pr == nil {
		pr = &Profile{}
	}
	key := func(k string) {
		dst = append(dst, ',', '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
	}
	// raw writes the turn's own value of name as it is and tells whether the
	// turn has one (where it has none, the profile's value, if any, is sent).
	raw := func(name string) bool {
		v := ps.get(name)
		if v != nil {
			key(name)
			dst = append(dst, v...)
		}
		return v != nil
	}
	float := func(name string, pv *float64) {
		if !raw(name) && pv != nil {
			key(name)
			dst = jsontext.AppendPyFloat(dst, *pv)
		}
	}
	float("temperature", pr.Temperature)
	key("max_completion_tokens")
	dst = d.appendMaxTokens(dst, ps, inh, o)
	key("stream")
	stream := d.streamValue(ps, inh, o)
	dst = append(dst, stream...)
	if o.Stream && o.IncludeUsage && truthy(stream) {
		key("stream_options")
		dst = append(dst, `{"include_usage":true}`...)
	}
	if !raw("seed") && pr.Seed != "" {
		key("seed")
		dst = append(dst, pr.Seed...)
	}
	float("top_p", pr.TopP)
	if !raw("top_k") && pr.TopK != nil {
		key("top_k")
		dst = strconv.AppendInt(dst, int64(*pr.TopK), 10)
	}
	float("repetition_penalty", pr.RepetitionPenalty)
	raw("n")
	raw("stop")
	float("presence_penalty", pr.PresencePenalty)
	float("frequency_penalty", pr.FrequencyPenalty)
	raw("logit_bias")
	raw("user")
	raw("chat_template")
	switch {
	case raw("chat_template_kwargs"):
	case pr.ChatTemplateKwargsJSON != "":
		key("chat_template_kwargs")
		dst = append(dst, pr.ChatTemplateKwargsJSON...)
	case len(pr.ChatTemplateKwargs) > 0:
		key("chat_template_kwargs")
		dst = AppendKwargs(dst, pr.ChatTemplateKwargs)
	}
	if t.Tools != "" {
		key("tools")
		dst = append(dst, t.Tools...)
	}
	raw("tool_choice")
	return append(dst, '}')
}

// appendMaxTokens appends the max_completion_tokens value of a turn with own
// parameters ps and inherited inh (AppendBody).
func (d *Dataset) appendMaxTokens(dst []byte, ps, inh paramSet, o *BodyOptions) []byte {
	if v, t := ps.lookup("max_new_tokens"); v != nil || inh.get("max_new_tokens") != nil {
		if v == nil {
			v, t = inh.lookup("max_new_tokens")
		}
		if t {
			return append(dst, v...)
		}
	}
	run := o.MaxTokens
	if run == 0 && o.Profile != nil {
		run = o.Profile.MaxTokens
	}
	if run == 0 {
		run = DefaultRunMaxTokens
	}
	switch v, t := ps.lookup("max_completion_tokens"); {
	case v != nil:
		if t {
			return append(dst, v...)
		}
	case run > 0:
		return strconv.AppendInt(dst, int64(run), 10)
	case inh.get("max_completion_tokens") != nil:
		if v, t := inh.lookup("max_completion_tokens"); t {
			return append(dst, v...)
		}
	}
	if v, t := ps.lookup("max_tokens"); v != nil && t {
		return append(dst, v...)
	}
	return strconv.AppendInt(dst, DefaultMaxTokens, 10)
}

// streamValue returns the JSON value of a turn's "stream" (AppendBody).
func (d *Dataset) streamValue(ps, inh paramSet, o *BodyOptions) []byte {
	switch {
	case ps.get("stream") != nil:
		return ps.get("stream")
	case o.Stream:
		return []byte("true")
	case inh.get("stream") != nil:
		return inh.get("stream")
	}
	return []byte("false")
}

// Streams reports whether the request of turn t asks for a streamed answer (its
// "stream" value is truthy): the reference client reads the answer as Server-Sent
// Events exactly then, whatever the run's streaming mode.
func (d *Dataset) Streams(t *schemas.Turn, o BodyOptions) bool {
	ti := d.turnIndex(t)
	return truthy(d.streamValue(d.params[ti], d.inherited[ti], &o))
}

// truthy reports whether the compact JSON value v is true in Python's sense: not
// false, null, zero, "", [] or {}.
func truthy(v []byte) bool {
	switch string(v) {
	case "", "false", "null", `""`, "[]", "{}":
		return false
	}
	if c := v[0]; c == '-' || (c >= '0' && c <= '9') {
		f, err := strconv.ParseFloat(string(v), 64)
		return err != nil || f != 0
	}
	return true
}

// AppendKwargs appends a profile's chat_template_kwargs with sorted keys.
func AppendKwargs(dst []byte, kw map[string]any) []byte {
	keys := make([]string, 0, len(kw))
	for k := range kw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsontext.AppendString(dst, k)
		dst = append(dst, ':')
		v, err := json.Marshal(kw[k])
		if err != nil {
			v = []byte("null")
		}
		dst = jsontext.AppendCompact(dst, v)
	}
	return append(dst, '}')
}

// paramSet is a turn's generation parameters: keys with compact JSON values.
type paramSet []param

type param struct {
	key string
	val []byte // the wire form
	// truth is Python's truth of the value: true for an infinity, whose wire
	// form is null (parseParams).
	truth bool
}

// lookup returns the wire form of parameter k and its truth.
func (ps paramSet) lookup(k string) ([]byte, bool) {
	for i := range ps {
		if ps[i].key == k {
			return ps[i].val, ps[i].truth
		}
	}
	return nil, false
}

func (ps paramSet) get(k string) []byte {
	for i := range ps {
		if ps[i].key == k {
			return ps[i].val
		}
	}
	return nil
}
