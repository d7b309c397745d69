package tokens

import (
	"bytes"
	"sort"
	"strings"
	"unsafe"

	"github.com/ardanlabs/jinja"
)

// ISLCounter counts the ISL of the client turns of one conversation, one after
// the other, without re-tokenizing the history each time. Count gives exactly
// what CountISL gives for the same messages; it is faster in these ways:
//
//   - Segment cache. Encode splits a text at the added tokens (<|im_start|>,
//     <tool_call>, ...) and encodes each piece between them on its own, so a
//     text's count is the number of its added tokens plus the counts of its
//     pieces. The counter remembers each piece's count by its content; the
//     history's pieces recur turn after turn and are encoded once.
//   - Template values kept. For any template, each message is parsed into
//     template values (its tool-call arguments normalized) once, when it is first
//     seen, and the turn is rendered by the engine from those values
//     (renderCached).
//   - Message loop not run again. For any template whose message loop
//     loopTemplateOf admits (Qwen3.6's among them), the engine runs the loop's
//     body only for the messages past those whose iterations the previous turn
//     rendered and may be reused (renderLoop); the prologue and epilogue are
//     rendered each turn. A turn's prompt is not derived as a prefix of another
//     turn's render: Qwen's templates drop reasoning before the last user
//     message without preserve_thinking (TestISLCounterNotPrefixStable), which
//     the loop's state (their last_query_index) catches.
//   - Native rendering. For a chat template agentrace knows (the Qwen3
//     template, recognized by its exact source), the rendered text is built in
//     Go from the messages, each parsed once, instead of running the template
//     engine over the whole history for every turn. The build follows the
//     template statement by statement (see qwen3.go); tool-call arguments and
//     tools still go through the template engine's tojson. A message the
//     native build does not cover (content that is not text, unusual tool
//     calls, the render's placeholder characters) makes that turn use the
//     template engine, so the count never depends on which way was taken.
//
// A counter holds the pieces of one conversation (about its size); make one per
// conversation. It is not safe for concurrent use; the Tokenizer is.
type ISLCounter struct {
	t      *Tokenizer
	kwargs map[string]any

	segs     map[string]int32
	segBytes int

	// The messages of the last turn, parsed (native rendering only).
	src    [][]byte
	parsed []*qwenMessage
	tools  toolsCache
	bufs   [2][]byte // the native text, alternately (countText keeps the last)
	turn   int
	joined []byte
	// The previous text and its added tokens (countText).
	prev  string
	marks []mark

	// The engine path's cache (renderCached): each message's template value,
	// parsed once, and the tools'.
	esrc     [][]byte
	evals    []jinja.Value
	etools   []byte
	etoolVal jinja.Value
	etoolOK  bool
	items    []jinja.Value

	// The incremental render (renderLoop, for templates loopTemplateOf admits):
	// the output of each iteration of the message loop in the last render and
	// the state dumped at the start of each (and after the last), the number of
	// leading messages unchanged since then, and whether it is off for this
	// counter (checked once against the template, or never reusing).
	iters     []string
	states    []string
	unchanged int
	loopOff   bool
	checked   bool
	misses    int

	native, engine int // turns counted each way
	reused         int // of engine turns, those that reused earlier iterations (renderLoop)
}

// maxSegBytes bounds the text the segment cache keeps; past it the cache starts
// over.
const maxSegBytes = 256 << 20

// NewISLCounter returns a counter for one conversation's client turns, rendered
// with the chat_template_kwargs in kwargs (as CountISL's).
func (t *Tokenizer) NewISLCounter(kwargs map[string]any) *ISLCounter {
	return &ISLCounter{t: t, kwargs: kwargs, segs: map[string]int32{}}
}

// Count returns the ISL of a client turn whose messages are the JSON objects in
// messages (the wire form: the salted system message first, then the history up
// to and including the turn's own message) and whose tools are toolsJSON (a JSON
// array, or empty): CountISL of the array of those messages. Passing the same
// byte slices again for the messages already seen (as ingest does, turn after
// turn) lets the counter skip parsing them.
func (c *ISLCounter) Count(messages [][]byte, toolsJSON []byte) (n int, err error) {
	defer recoverEncode(&err)
	if c.t.template != nil && c.t.template.qwen3 && c.t.chunk == nil {
		if text, ok := c.renderQwen3(messages, toolsJSON); ok {
			c.native++
			return c.countText(text), nil
		}
	}
	c.engine++
	if text, ok := c.renderCached(messages, toolsJSON); ok {
		return c.countText(text), nil
	}
	c.joined = append(c.joined[:0], '[')
	for i, m := range messages {
		if i > 0 {
			c.joined = append(c.joined, ',')
		}
		c.joined = append(c.joined, m...)
	}
	c.joined = append(c.joined, ']')
	text, err := c.t.Render(NormalizeToolCallArguments(c.joined), toolsJSON, true, c.kwargs)
	if err != nil {
		return 0, err
	}
	return c.countText(text), nil
}

// renderCached renders the turn with the template engine, as Render would,
// from template values of the messages and tools kept from turn to turn: each
// message is parsed (its tool-call arguments normalized) once, not once per
// turn. ok is false when a message, the tools or a kwarg needs the render's
// placeholders, or does not parse (the caller renders the turn in full then,
// and reports any error as Render does).
func (c *ISLCounter) renderCached(messages [][]byte, toolsJSON []byte) (string, bool) {
	if c.kwargsPlaceholders() {
		return "", false
	}
	k := len(messages)
	if len(c.esrc) > k {
		c.esrc, c.evals = c.esrc[:k], c.evals[:k]
	}
	c.unchanged = min(c.unchanged, k)
	for i, frag := range messages {
		if i < len(c.esrc) && sameBytes(c.esrc[i], frag) {
			if c.evals[i].IsUndefined() {
				return "", false
			}
			continue
		}
		c.unchanged = min(c.unchanged, i)
		v := cachedValue(frag, true)
		if i < len(c.esrc) {
			c.esrc[i], c.evals[i] = frag, v
		} else {
			c.esrc, c.evals = append(c.esrc, frag), append(c.evals, v)
		}
		if v.IsUndefined() {
			return "", false
		}
	}
	if c.etools == nil || !sameBytes(c.etools, toolsJSON) {
		c.iters, c.states = c.iters[:0], c.states[:0]
		c.etools, c.etoolVal, c.etoolOK = append([]byte{}, toolsJSON...), jinja.None(), true
		if len(bytes.TrimSpace(toolsJSON)) > 0 {
			c.etoolVal = cachedValue(toolsJSON, false)
			c.etoolOK = !c.etoolVal.IsUndefined()
		}
	}
	if !c.etoolOK {
		return "", false
	}
	c.items = append(c.items[:0], c.evals...)
	if c.t.template.loop != nil && !c.loopOff {
		if text, ok := c.renderLoop(); ok {
			return text, true
		}
	}
	c.iters, c.states = c.iters[:0], c.states[:0]
	var vb valueBuilder
	text, err := c.t.renderValues(&vb, jinja.NewList(c.items), c.etoolVal, true, c.kwargs)
	if err != nil {
		return "", false
	}
	return text, true
}

// renderLoop renders the turn whose message values are c.items with the
// rewritten template (loopTemplate), running the message loop's body only for
// the messages past those whose iterations the last render kept and may be
// reused: messages unchanged (and, when the body looks ahead, the one after
// too), the state at the loop's start the same, and the same state at the first
// iteration run as at the loop's start (its skipped iterations changed
// nothing). The state at the loop's start is checked after the render; when it
// differs, the turn is rendered again with every iteration run. ok is false on
// any error or unexpected output (the caller renders the template itself).
func (c *ISLCounter) renderLoop() (string, bool) {
	lt := c.t.template.loop
	k := len(c.items)
	start := min(len(c.iters), c.unchanged, k-1)
	if lt.lookahead {
		start = min(start, len(c.iters)-1, c.unchanged-1)
	}
	// States are dumped at the first iteration run and the last ("" between).
	for start > 0 && (c.states[start] != c.states[0] || strings.Contains(c.states[0], markOpaque)) {
		start--
	}
	start = max(start, 0)
	var began string
	if start > 0 {
		began = c.states[0]
	}
	text, seen, ok := c.renderFrom(start)
	if ok && start > 0 && seen != began {
		// The state at the loop's start changed (Qwen's index of the last user
		// query, say): run every iteration.
		start = 0
		text, _, ok = c.renderFrom(0)
	}
	if !ok {
		return "", false
	}
	if start > 0 {
		c.reused++
		c.misses = 0
	} else if c.misses++; c.misses > 3 {
		c.loopOff = true // never reuses: spare the dumps
	}
	if !c.checked {
		// Once per counter, the rewritten template against the template itself.
		c.checked = true
		var vb valueBuilder
		want, err := c.t.renderValues(&vb, jinja.NewList(c.items), c.etoolVal, true, c.kwargs)
		if err != nil || want != text {
			c.loopOff = true
			return "", false
		}
	}
	c.unchanged = k
	return text, true
}

// renderFrom renders with the rewritten template from iteration start on and
// rebuilds the turn's text from the kept iterations before start and the
// output; c.iters and c.states become the turn's. seen is the state the render
// saw at its first iteration run: the state at the loop's start, since the
// iterations before it did not run.
func (c *ISLCounter) renderFrom(start int) (text, seen string, ok bool) {
	var vb valueBuilder
	out, err := c.t.renderWith(c.t.template.loop.tmpl, &vb, jinja.NewList(c.items), c.etoolVal, true, c.kwargs,
		map[string]jinja.Value{loopStartVar: jinja.NewInt(int64(start)), loopVarsVar: loopVars(c.items, start)})
	if err != nil || len(vb.subst) > 0 {
		return "", "", false
	}
	first := strings.Index(out, markIter)
	endAt := strings.LastIndex(out, markEnd)
	if first < 0 || endAt < first {
		return "", "", false
	}
	prologue := out[:first]
	endState, epilogue, ok := strings.Cut(out[endAt+len(markEnd):], markState)
	if !ok {
		return "", "", false
	}
	c.iters, c.states = c.iters[:start], c.states[:start]
	for _, it := range strings.Split(out[first:endAt], markIter)[1:] {
		state, body, ok := strings.Cut(it, markState)
		if !ok {
			return "", "", false
		}
		c.iters, c.states = append(c.iters, body), append(c.states, state)
	}
	c.states = append(c.states, endState)
	if len(c.iters) != len(c.items) {
		return "", "", false
	}
	n := len(prologue) + len(epilogue)
	for _, it := range c.iters {
		n += len(it)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(prologue)
	for _, it := range c.iters {
		b.WriteString(it)
	}
	b.WriteString(epilogue)
	return b.String(), c.states[start], true
}

// cachedValue parses one message (message set: its tool-call arguments
// normalized, its content "" when absent) or the tools into a template value
// that needs no placeholders, or returns Undefined.
func cachedValue(frag []byte, message bool) jinja.Value {
	if hasPlaceholderRunes(frag) {
		return jinja.Undefined()
	}
	data := frag
	if message {
		data = NormalizeToolCallArguments(append(append([]byte{'['}, frag...), ']'))
	}
	var vb valueBuilder
	v, err := vb.fromJSON(data)
	if err != nil || len(vb.subst) > 0 {
		return jinja.Undefined()
	}
	if !message {
		return v
	}
	if !v.IsList() || len(v.AsList().Items) != 1 || messageValue(v.AsList().Items[0]) != nil {
		return jinja.Undefined()
	}
	return v.AsList().Items[0]
}

// loopVars returns the loop variables of the iterations from start on of a
// template loop over items, as the engine makes them (the same attributes, the
// same values), for the rewritten loop over items[start:].
func loopVars(items []jinja.Value, start int) jinja.Value {
	total := int64(len(items))
	out := make([]jinja.Value, 0, len(items)-start)
	for i := start; i < len(items); i++ {
		idx := int64(i)
		v := jinja.NewDict()
		d := v.AsDict()
		d.Set("length", jinja.NewInt(total))
		d.Set("index", jinja.NewInt(idx+1))
		d.Set("index0", jinja.NewInt(idx))
		d.Set("revindex", jinja.NewInt(total-idx))
		d.Set("revindex0", jinja.NewInt(total-idx-1))
		d.Set("first", jinja.NewBool(i == 0))
		d.Set("last", jinja.NewBool(i == len(items)-1))
		prev, next := jinja.Undefined(), jinja.Undefined()
		if i > 0 {
			prev = items[i-1]
		}
		if i < len(items)-1 {
			next = items[i+1]
		}
		d.Set("previtem", prev)
		d.Set("nextitem", next)
		d.Set("cycle", jinja.NewCallable("loop.cycle", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) == 0 {
				return jinja.Undefined(), nil
			}
			return args[int(idx)%len(args)], nil
		}))
		out = append(out, v)
	}
	return jinja.NewList(out)
}

// Ways returns how many turns were rendered natively (a known template), how
// many with the template engine, and of those how many reused the message
// loop's iterations of an earlier turn (renderLoop).
func (c *ISLCounter) Ways() (native, engine, reused int) { return c.native, c.engine, c.reused }

// countText is len(t.Encode(s, false)), with the pieces between added tokens
// counted through the cache. Where the added tokens depend on nothing but their
// own bytes (no lstrip, rstrip or single_word, no chunking: Qwen's), the part of
// s it shares with the previous text is not walked again: Encode's scan for
// added tokens goes left to right and decides at each place from the next
// maxLen bytes, so every token that starts at least maxLen bytes before the end
// of the shared prefix is found in s as it was in the previous text, with the
// same count up to it. s must not change afterwards (it is kept for the next
// call).
func (c *ISLCounter) countText(s string) int {
	a := &c.t.rawAdded
	if c.t.chunk != nil {
		n := 0
		c.t.chunk(s, func(part string) { n += c.countRaw(part) })
		return n
	}
	if !a.any {
		return c.segment(s)
	}
	if a.context {
		return c.countRaw(s)
	}
	shared := commonPrefix(c.prev, s)
	// The last mark whose token was decided within the shared prefix.
	j := sort.Search(len(c.marks), func(i int) bool { return c.marks[i].start+a.maxLen > shared }) - 1
	n, from := 0, 0
	if j >= 0 {
		n, from = c.marks[j].count, c.marks[j].end
	}
	c.marks = c.marks[:j+1]
	pos := from // end of the previous token
	last := a.walk(s[from:], func(between string, tok *addedToken, end int) {
		n += c.segment(between) + 1
		start := pos + len(between)
		pos = from + end
		c.marks = append(c.marks, mark{start: start, end: pos, count: n})
	})
	c.prev = s
	return n + c.segment(s[from+last:])
}

// mark is an added token found in the previous text: where it starts and ends,
// and the count of the text up to its end.
type mark struct{ start, end, count int }

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	const block = 512
	for i+block <= n && a[i:i+block] == b[i:i+block] {
		i += block
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

func (c *ISLCounter) countRaw(s string) int {
	if !c.t.rawAdded.any {
		return c.segment(s)
	}
	n := 0
	last := c.t.rawAdded.walk(s, func(between string, _ *addedToken, _ int) {
		n += c.segment(between) + 1
	})
	return n + c.segment(s[last:])
}

// segment is len(t.encodeRawPart(nil, s)), cached by content.
func (c *ISLCounter) segment(s string) int {
	if s == "" {
		return 0
	}
	if n, ok := c.segs[s]; ok {
		return int(n)
	}
	n := len(c.t.encodeRawPart(nil, s))
	if c.segBytes+len(s) > maxSegBytes {
		clear(c.segs)
		c.segBytes = 0
	}
	c.segs[strings.Clone(s)] = int32(n)
	c.segBytes += len(s)
	return n
}

// sameBytes reports whether a and b hold the same bytes, at once when they are
// the same slice.
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b) {
		return true
	}
	return bytes.Equal(a, b)
}
