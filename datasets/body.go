package datasets

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/agentrace/agentrace/schemas"
)

// BodyOptions says how to build a client turn's request body.
type BodyOptions struct {
	// Model is sent as "model"; "" falls back to the row's model, then the profile's.
	Model string
	// Profile supplies sampling settings the dataset row does not set; nil for none.
	Profile *Profile
	// Salt salts the system message for instance Repeat (1-based; 0 means 1), as the
	// reference client does (spec §4).
	Salt   bool
	Repeat int
	// Stream asks for Server-Sent Events; IncludeUsage adds
	// "stream_options":{"include_usage":true} right after "stream".
	Stream       bool
	IncludeUsage bool
	// MaxTokens is the run's max_completion_tokens for rows that set none; 0 falls
	// back to the profile's.
	MaxTokens int
	// ClearGeneratedCache sends every recorded assistant message of the history with
	// one space put at the start of its reasoning_content, or of its content when it
	// has no reasoning (ClearedWire), so that no token a server generated live can be
	// reused as cached history. Off by default, so requests match the reference
	// client's.
	ClearGeneratedCache bool
}

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

// appendMessages appends the JSON messages array of turn t.
func (d *Dataset) appendMessages(dst []byte, t *schemas.Turn, o *BodyOptions) []byte {
	ci := int(t.ConvIndex)
	cd := &d.convs[ci]
	dst = append(dst, '[')
	n := len(dst)
	dst = d.systemFragment(dst, ci, o)
	if t.MsgEnd > 0 {
		if len(dst) > n {
			dst = append(dst, ',')
		}
		wire, ends := cd.wire, cd.ends
		if o.ClearGeneratedCache {
			cl := d.cleared()
			wire, ends = cl[ci].wire, cl[ci].ends
		}
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
// returns it. The body is concatenated from pre-serialized fragments; nothing of
// the history is re-encoded. Keys come in the reference client's order (spec §5):
// model, messages, temperature, max_completion_tokens, stream, stream_options,
// seed, top_p, top_k, repetition_penalty, n, stop, presence_penalty,
// frequency_penalty, logit_bias, user, chat_template, chat_template_kwargs, tools,
// tool_choice; absent values are left out. A value the dataset row sets wins over
// the profile's. With o.Salt on, call CheckSaltable first: a conversation without a
// system prompt gets no system message.
func (d *Dataset) AppendBody(dst []byte, t *schemas.Turn, o BodyOptions) []byte {
	ps := d.params[d.turnIndex(t)]
	pr := o.Profile
	if pr == nil {
		pr = &Profile{}
	}
	dst = append(dst, '{')
	first := true
	key := func(k string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
	}
	switch {
	case o.Model != "":
		key("model")
		dst = AppendString(dst, o.Model)
	case ps.get("model") != nil:
		key("model")
		dst = append(dst, ps.get("model")...)
	case pr.Model != "":
		key("model")
		dst = AppendString(dst, pr.Model)
	}
	key("messages")
	dst = d.appendMessages(dst, t, &o)
	float := func(name string, pv *float64) {
		if v := ps.get(name); v != nil {
			key(name)
			dst = append(dst, v...)
		} else if pv != nil {
			key(name)
			dst = appendFloat(dst, *pv)
		}
	}
	raw := func(name string) {
		if v := ps.get(name); v != nil {
			key(name)
			dst = append(dst, v...)
		}
	}
	float("temperature", pr.Temperature)
	maxTokens := int(t.MaxTokens)
	if maxTokens <= 0 {
		maxTokens = o.MaxTokens
	}
	if maxTokens <= 0 {
		maxTokens = pr.MaxTokens
	}
	if maxTokens > 0 {
		key("max_completion_tokens")
		dst = strconv.AppendInt(dst, int64(maxTokens), 10)
	}
	key("stream")
	dst = strconv.AppendBool(dst, o.Stream)
	if o.Stream && o.IncludeUsage {
		key("stream_options")
		dst = append(dst, `{"include_usage":true}`...)
	}
	raw("seed")
	float("top_p", pr.TopP)
	if v := ps.get("top_k"); v != nil {
		key("top_k")
		dst = append(dst, v...)
	} else if pr.TopK != nil {
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
	if v := ps.get("chat_template_kwargs"); v != nil {
		key("chat_template_kwargs")
		dst = append(dst, v...)
	} else if len(pr.ChatTemplateKwargs) > 0 {
		key("chat_template_kwargs")
		dst = appendKwargs(dst, pr.ChatTemplateKwargs)
	}
	if t.Tools != "" {
		key("tools")
		dst = append(dst, t.Tools...)
	}
	raw("tool_choice")
	return append(dst, '}')
}

// appendKwargs appends a profile's chat_template_kwargs with sorted keys.
func appendKwargs(dst []byte, kw map[string]any) []byte {
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
		dst = AppendString(dst, k)
		dst = append(dst, ':')
		v, err := json.Marshal(kw[k])
		if err != nil {
			v = []byte("null")
		}
		dst = AppendCompact(dst, v)
	}
	return append(dst, '}')
}

// paramSet is a turn's generation parameters: keys with compact JSON values.
type paramSet []param

type param struct {
	key string
	val []byte
}

func (ps paramSet) get(k string) []byte {
	for i := range ps {
		if ps[i].key == k {
			return ps[i].val
		}
	}
	return nil
}
