package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/redact"
	"github.com/agentrace/agentrace/internal/toolcall"
	"github.com/agentrace/agentrace/schemas"
)

// errMalformed marks a response the client could not parse.
var errMalformed = errors.New("malformed response")

// DefaultMaxOutputBytes is the output a turn keeps by default (content,
// reasoning and tool-call arguments together): far above any real answer, far
// below what would exhaust memory at high concurrency.
const DefaultMaxOutputBytes = 4 << 20

// toolCallCost is what a new tool call (one more index) counts against the
// output limit, so that a stream of empty calls cannot grow without bound: at
// least what an empty call adds to the output_tool_calls JSON
// ({"index":N,"id":"","type":"","function":{"name":"","arguments":""}}, and a
// comma: 66 bytes and the index's up to 20 digits). Its id, type and name count
// too, as they are set.
const toolCallCost = 96

// maxIndexedCalls is the number of tool calls above which reset drops the index
// a hostile answer grew, as it drops other huge buffers.
const maxIndexedCalls = 1 << 12

// response accumulates one turn's response, chunk by chunk. Times are run-clock
// nanoseconds. What it keeps is bounded: at most maxBytes of output (the rest is
// counted in truncated) and maxBytes/4 chunk times.
type response struct {
	content   strings.Builder
	reasoning strings.Builder
	tools     toolcall.List // merged by index, in order of first appearance
	// tpotTools merges the tool-call chunks after the first, as the reference's
	// TPOT counts a response that has nothing but tool calls.
	tpotTools  toolcall.List
	toolChunks int    // chunks with a non-empty tool_calls list
	args       []byte // a tool call's arguments unquoted (argumentsText)
	// calls are the last chunk's tool-call lists, decoded (applyRaw), kept to
	// be decoded into again.
	calls  [][]toolCallDelta
	finish string
	// encoded holds the tool calls encoded for the turn log (callsJSON).
	encoded bytes.Buffer

	firstTokenNs int64
	// chunkTimes are the chunks the reference publishes a receive event for (the
	// first output-bearing one, then those carrying content or reasoning),
	// toolChunkTimes the others (tool calls alone, after the first); absolute, made
	// relative to firstTokenNs at the end.
	chunkTimes          []int64
	toolChunkTimes      []int64
	chunks              int // output-bearing chunks (the two lists may hold fewer)
	firstContentBytes   int // the first chunk carrying content
	firstReasoningBytes int // the first chunk carrying reasoning

	promptTokens, completionTokens, cachedTokens int32
	sawDone                                      bool

	// maxBytes is the output kept (0: DefaultMaxOutputBytes); it survives reset.
	maxBytes  int64
	kept      int64 // output bytes kept
	truncated int64 // output bytes dropped (and raw bytes of unreadable frames)

	// What the stream carried that the reference client tolerates.
	malformed      int
	firstMalformed string
	errorFrames    int
	firstError     string
	oversized      int
	// bom tells that the body began with a UTF-8 byte order mark (stripped).
	bom bool

	// scrub masks the run's secrets in what a warning quotes, before it is cut
	// short (the turn log masks the rest); it survives reset.
	scrub *redact.Scrubber
}

func (r *response) reset() {
	r.content.Reset()
	r.reasoning.Reset()
	r.tools.Reset(maxIndexedCalls)
	r.tpotTools.Reset(maxIndexedCalls)
	r.toolChunks = 0
	if cap(r.args) > 1<<20 {
		r.args = nil
	}
	r.finish = ""
	r.firstTokenNs = 0
	if cap(r.chunkTimes) > 1<<16 {
		r.chunkTimes = nil // give a huge answer's memory back
	}
	r.chunkTimes = r.chunkTimes[:0]
	if cap(r.toolChunkTimes) > 1<<16 {
		r.toolChunkTimes = nil
	}
	r.toolChunkTimes = r.toolChunkTimes[:0]
	r.chunks = 0
	r.firstContentBytes, r.firstReasoningBytes = 0, 0
	r.promptTokens, r.completionTokens, r.cachedTokens = -1, -1, -1
	r.sawDone = false
	r.kept, r.truncated = 0, 0
	r.malformed, r.firstMalformed = 0, ""
	r.errorFrames, r.firstError = 0, ""
	r.oversized = 0
	r.bom = false
}

func (r *response) limit() int64 {
	if r.maxBytes > 0 {
		return r.maxBytes
	}
	return DefaultMaxOutputBytes
}

// room returns how many of n more output bytes may be kept, counting the rest
// as truncated.
func (r *response) room(n int) int {
	free := r.limit() - r.kept
	if int64(n) <= free {
		return n
	}
	if free < 0 {
		free = 0
	}
	r.truncated += int64(n) - free
	return int(free)
}

// utf8Prefix returns the longest prefix of s no longer than n bytes that ends
// on a rune boundary, so that a cut output stays valid UTF-8.
func utf8Prefix[T string | []byte](s T, n int) T {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// keep appends as much of s to sb as the limit allows and returns len(s): the
// bytes the chunk carried.
func keep[T string | []byte](r *response, sb *strings.Builder, s T) int {
	n := r.room(len(s))
	part := utf8Prefix(s, n)
	r.truncated += int64(n - len(part))
	sb.WriteString(string(part))
	r.kept += int64(len(part))
	return len(s)
}

// bear records an output-bearing streamed chunk at time now; text tells that it
// carried content or reasoning. As the reference's accumulator publishes a
// receive event for the first output-bearing chunk (a pure tool-call one
// included) and after it only for chunks carrying text, such chunks go to
// chunkTimes and the others (tool calls alone) to toolChunkTimes.
func (r *response) bear(now int64, text bool) {
	first := r.firstTokenNs == 0
	if first {
		r.firstTokenNs = now
	}
	r.chunks++
	if int64(len(r.chunkTimes)+len(r.toolChunkTimes)) >= max(r.limit()/4, 1024) {
		return
	}
	if first || text {
		r.chunkTimes = append(r.chunkTimes, now)
	} else {
		r.toolChunkTimes = append(r.toolChunkTimes, now)
	}
}

// noteMalformed records a frame skipped as unreadable.
func (r *response) noteMalformed(data []byte, err error) {
	r.malformed++
	if r.firstMalformed == "" {
		r.firstMalformed = noSemicolons(fmt.Sprintf("%.60q: %v", r.scrub.Secrets(string(data)), err))
	}
}

// noteError records an error object sent in the stream.
func (r *response) noteError(e *errorBody) {
	r.errorFrames++
	if r.firstError == "" {
		msg := r.scrub.Text(e.String())
		if len(msg) > 200 {
			msg = string(utf8Prefix(msg, 200)) + "..."
		}
		r.firstError = noSemicolons(msg)
	}
}

// noSemicolons keeps "; " for separating warnings.
func noSemicolons(s string) string { return strings.ReplaceAll(s, "; ", ", ") }

// warnings lists what the client tolerated in the response, for the turn log's
// warnings column; ok tells whether the turn completed (a failed turn's stream
// lacks [DONE] for a reason already given).
func (r *response) warnings(streamed, ok bool) string {
	var parts []string
	if r.bom {
		parts = append(parts, "leading_bom (the body began with a UTF-8 byte order mark: stripped)")
	}
	if r.malformed > 0 {
		parts = append(parts, fmt.Sprintf("malformed_frame x%d (first: %s)", r.malformed, r.firstMalformed))
	}
	switch {
	case r.errorFrames == 1:
		parts = append(parts, "error_frame: "+r.firstError)
	case r.errorFrames > 1:
		parts = append(parts, fmt.Sprintf("error_frame x%d (first: %s)", r.errorFrames, r.firstError))
	}
	if r.oversized > 0 {
		parts = append(parts, fmt.Sprintf("oversized_frame x%d", r.oversized))
	}
	if streamed && ok && !r.sawDone {
		parts = append(parts, "no [DONE]")
	}
	return strings.Join(parts, "; ")
}

// toolCallDelta is one tool call of a chunk's delta: the wire form of a tool
// call with the index that says which call of the turn it continues.
type toolCallDelta struct {
	Index *int `json:"index"`
	datasets.WireToolCall
}

type usage struct {
	PromptTokens        int32 `json:"prompt_tokens"`
	CompletionTokens    int32 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int32 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type errorBody struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"`
}

func (e *errorBody) String() string {
	if e.Type != "" {
		return e.Type + ": " + e.Message
	}
	return e.Message
}

func (r *response) applyUsage(u *usage) {
	r.promptTokens, r.completionTokens = u.PromptTokens, u.CompletionTokens
	if d := u.PromptTokensDetails; d != nil && d.CachedTokens != nil {
		r.cachedTokens = *d.CachedTokens
	}
}

// addText adds a chunk's content and reasoning. vLLM has sent reasoning as
// reasoning_content, as reasoning, and for a time as both with the same text:
// take one of them, never both. It reports whether the chunk carried text.
func (r *response) addText(content, reasoningContent, reasoning string) bool {
	bearing := false
	if content != "" {
		n := keep(r, &r.content, content)
		if r.firstContentBytes == 0 {
			r.firstContentBytes = n
		}
		bearing = true
	}
	rs := reasoningContent
	if rs == "" {
		rs = reasoning
	}
	if rs != "" {
		n := keep(r, &r.reasoning, rs)
		if r.firstReasoningBytes == 0 {
			r.firstReasoningBytes = n
		}
		bearing = true
	}
	return bearing
}

// applyRaw merges one chunk read by the chunk scanner into r at time now: a
// streamed chat.completion.chunk, or with streamed false a whole non-streamed
// chat.completion. An error object is recorded (noteError), not returned: the
// caller decides what it means. It returns an error wrapping errMalformed,
// having merged nothing, when a structured part (usage, error, tool_calls) does
// not decode.
func (r *response) applyRaw(c *fastChunk, now int64, scratch *[]byte, streamed bool) error {
	chs := c.choices
	var e *errorBody
	for i, raw := range c.errs {
		if i == 0 {
			e = new(errorBody)
		}
		if err := json.Unmarshal(raw, e); err != nil {
			return fmt.Errorf("%w: error object: %v", errMalformed, err)
		}
	}
	var u *usage
	for i, raw := range c.usage {
		if i == 0 {
			u = new(usage)
		}
		if err := json.Unmarshal(raw, u); err != nil {
			return fmt.Errorf("%w: usage: %v", errMalformed, err)
		}
	}
	// Decode tool calls first: a malformed one fails the chunk before anything
	// of it is merged, as with encoding/json.
	// The lists are decoded into r.calls, the previous chunk's lists, reused.
	calls := r.calls[:0]
	for i := range chs {
		m := &chs[i].delta
		if !m.present {
			m = &chs[i].message
		}
		var tc []toolCallDelta
		if i < cap(calls) {
			// Emptied to its capacity: encoding/json decodes a repeated key's
			// list into the elements there.
			tc = calls[:i+1][i]
			clear(tc[:cap(tc)])
			tc = tc[:0]
		}
		for _, raw := range m.toolCalls {
			if err := decodeToolCalls(raw, &tc); err != nil {
				return fmt.Errorf("%w: tool_calls: %v", errMalformed, err)
			}
		}
		calls = append(calls, tc)
	}
	r.calls = calls
	if e != nil {
		r.noteError(e)
	}
	if u != nil {
		r.applyUsage(u)
	}
	bearing, carried := false, false
	text := func(tok []byte) string {
		if len(tok) <= 2 {
			return ""
		}
		if body, ok := jsontext.Verbatim(tok); ok {
			return unsafeString(body)
		}
		*scratch = jsontext.AppendUnquote((*scratch)[:0], tok)
		return unsafeString(*scratch)
	}
	for i := range chs {
		ch := &chs[i]
		if ch.index != 0 {
			continue
		}
		if len(ch.finish) > 2 {
			r.finish = strings.Clone(text(ch.finish))
		}
		m := &ch.delta
		if !m.present {
			m = &ch.message
		}
		if !m.present {
			continue
		}
		// Each text is copied into its builder before the next one reuses scratch.
		if c := text(m.content); c != "" && r.addText(c, "", "") {
			bearing, carried = true, true
		}
		rs := m.reasoningContent
		if len(rs) <= 2 {
			rs = m.reasoning
		}
		if c := text(rs); c != "" && r.addText("", c, "") {
			bearing, carried = true, true
		}
		if r.mergeToolCalls(calls[i], streamed) {
			bearing = true
		}
	}
	switch {
	case bearing && streamed:
		r.bear(now, carried)
	case bearing:
		// A whole completion: output, but no first token or chunk time (the
		// reference times neither for a request not streamed).
		r.chunks++
	}
	return nil
}

// mergeToolCalls merges one chunk's tool-call deltas by the reference's rule
// (internal/toolcall): by index (a streamed delta without one goes to index 0; a
// whole call of a non-streamed message to the next position). What is kept counts
// against the output limit (outputBudget). Every chunk but the first is also
// merged into tpotTools, as much of it as tools kept. It reports whether the list
// had any delta (the reference takes such a chunk as the first token of a pure
// tool-call answer).
func (r *response) mergeToolCalls(ds []toolCallDelta, streamed bool) bool {
	if len(ds) == 0 {
		return false
	}
	r.toolChunks++
	for i := range ds {
		d := &ds[i]
		idx := 0
		switch {
		case d.Index != nil:
			idx = *d.Index
		case !streamed:
			idx = r.tools.Len()
		}
		delta := toolcall.Delta{Index: idx, ID: d.ID, Type: d.Type, Name: d.Function.Name, Arguments: r.argumentsText(d.Function.Arguments)}
		kept, ok := r.tools.Merge(delta, (*outputBudget)(r))
		if ok && r.toolChunks > 1 {
			r.tpotTools.Merge(kept, nil)
		}
	}
	return true
}

// argumentsText is schemas.ArgumentsText(raw), the arguments' text, read as the
// chunk's strings are: arguments streamed as a JSON string (raw a value the
// chunk scanner or encoding/json accepted) are unquoted by internal/jsontext,
// without encoding/json, into a view that is valid until the next call; any
// other value is schemas.ArgumentsText's.
func (r *response) argumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return schemas.ArgumentsText(raw)
	}
	if body, ok := jsontext.Verbatim(raw); ok {
		return unsafeString(body)
	}
	r.args = jsontext.AppendUnquote(r.args[:0], raw)
	return unsafeString(r.args)
}

// outputBudget counts what a tool call keeps against the response's output
// limit: a new call costs toolCallCost, a replaced id, type or name its growth,
// arguments their bytes (cut on a rune boundary); what finds no room is counted
// as truncated.
type outputBudget response

func (b *outputBudget) NewCall(d *toolcall.Delta) bool {
	r := (*response)(b)
	if r.limit()-r.kept < toolCallCost {
		r.truncated += int64(len(d.Arguments))
		return false
	}
	r.kept += toolCallCost
	return true
}

func (b *outputBudget) Replace(old, v string) bool {
	r := (*response)(b)
	grow := int64(len(v) - len(old))
	if grow > 0 && r.limit()-r.kept < grow {
		r.truncated += int64(len(v))
		return false
	}
	r.kept += grow
	return true
}

func (b *outputBudget) Arguments(s string) string {
	r := (*response)(b)
	n := r.room(len(s))
	part := utf8Prefix(s, n)
	r.truncated += int64(n - len(part))
	r.kept += int64(len(part))
	return part
}

// toolCallsJSON returns the merged tool calls ordered by index as a JSON array,
// "" when there are none.
func (r *response) toolCallsJSON() string { return r.callsJSON(&r.tools, false) }

// tpotToolCallsJSON is the tpot_tool_calls value: when the response has tool
// calls and neither content nor reasoning, its tool calls without the first
// tool-call chunk ("[]" when nothing is left); "" otherwise.
func (r *response) tpotToolCallsJSON() string {
	if r.toolChunks == 0 || r.content.Len() > 0 || r.reasoning.Len() > 0 {
		return ""
	}
	return r.callsJSON(&r.tpotTools, true)
}

// callsJSON returns l's calls ordered by index as a JSON array; none are "[]"
// with empty, else "". It encodes into r's buffer, kept for the next turn.
func (r *response) callsJSON(l *toolcall.List, empty bool) string {
	calls := l.Calls()
	if len(calls) == 0 {
		if empty {
			return "[]"
		}
		return ""
	}
	r.encoded.Reset()
	enc := json.NewEncoder(&r.encoded)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(calls); err != nil {
		return ""
	}
	out := string(bytes.TrimSuffix(r.encoded.Bytes(), []byte("\n")))
	if r.encoded.Cap() > 1<<20 {
		r.encoded = bytes.Buffer{} // give a huge answer's memory back
	}
	return out
}

// sseReader reads Server-Sent Events of a streamed chat completion. It tolerates
// what real servers do: comment and keep-alive lines, "data:" without a space,
// CRLF line ends, events without the blank line between them, an empty choices
// list, other fields (event:, id:, retry:), and a stream that ends without
// [DONE]. By default it also tolerates what the reference client tolerates, and
// records it (response.warnings): a frame that does not parse is skipped, an
// error object sent in a 200 stream is ignored, and a stream that ends cleanly
// without a finish reason or [DONE] completes. With strict, each of these fails
// the turn. A frame longer than maxFrame is never held: it is skipped (counted
// as truncated output), or with strict fails the turn.
type sseReader struct {
	br   *bufio.Reader
	line []byte   // a line longer than br's buffer
	data []byte   // the data of the event being read
	end  eventEnd // where data's first JSON value ends, data[:fed] fed to it
	fed  int

	strict   bool
	maxFrame int  // 0: 2 × DefaultMaxOutputBytes + 1 MiB
	skipping bool // the event being read was too long: drop its data lines

	scan    chunkScanner
	scratch []byte
}

// errOversized reports a frame longer than the reader holds.
var errOversized = errors.New("frame too large")

func (s *sseReader) frameLimit() int {
	if s.maxFrame > 0 {
		return s.maxFrame
	}
	return 2*DefaultMaxOutputBytes + 1<<20
}

// read consumes the stream into r, calling now() for the arrival time of each
// event. It returns nil at [DONE] or at the clean end of the stream; an error
// for a stream cut by the network, and with strict for a malformed frame, an
// error object, an oversized frame, or a stream that ended before a finish
// reason or [DONE].
func (s *sseReader) read(r *response, now func() int64) error {
	s.data = s.data[:0]
	s.skipping = false
	defer s.release()
	if b, err := s.br.Peek(len(utf8BOM)); err == nil && string(b) == utf8BOM {
		s.br.Discard(len(utf8BOM))
		r.bom = true
	}
	var dataAt int64
	for {
		line, long, err := s.readLine()
		if long > 0 {
			if err := s.oversized(r, long); err != nil {
				return err
			}
			continue
		}
		if err != nil && len(line) == 0 {
			if len(s.data) > 0 {
				if derr := s.dispatch(r, dataAt); derr != nil {
					return derr
				}
			}
			if errors.Is(err, io.EOF) {
				if r.sawDone || r.finish != "" || !s.strict {
					return nil
				}
				return fmt.Errorf("stream ended before a finish reason or [DONE]: %w", io.ErrUnexpectedEOF)
			}
			return fmt.Errorf("read stream: %w", err)
		}
		switch {
		case len(line) == 0:
			if len(s.data) > 0 {
				if err := s.dispatch(r, dataAt); err != nil {
					return err
				}
			}
			s.skipping = false
		case line[0] == ':':
			// comment or keep-alive
		case bytes.HasPrefix(line, []byte("data:")):
			v := line[5:]
			if len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			if len(s.data) > 0 {
				// Whether the data so far is a whole event is asked only when
				// another data line comes: an event of one line (the common case)
				// is never fed, and no byte is fed twice.
				s.end.feed(s.data, s.fed)
				s.fed = len(s.data)
				if s.end.whole(s.data) {
					// The previous event had no blank line after it.
					if err := s.dispatch(r, dataAt); err != nil {
						return err
					}
					s.skipping = false
				}
			}
			if s.skipping {
				r.truncated += int64(len(v))
				continue
			}
			if len(s.data)+len(v) > s.frameLimit() {
				n := int64(len(s.data) + len(v))
				s.data = s.data[:0]
				if err := s.oversized(r, n); err != nil {
					return err
				}
				continue
			}
			if len(s.data) == 0 {
				if string(bytes.TrimSpace(v)) == "[DONE]" {
					r.sawDone = true
					return nil
				}
				dataAt = now()
				s.end, s.fed = eventEnd{}, 0
			} else {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, v...)
		default:
			// event:, id:, retry: and unknown fields carry nothing for the client.
		}
	}
}

// oversized handles a frame of n bytes too large to hold: with strict it fails
// the turn; otherwise the event is skipped (the rest of its data lines too).
func (s *sseReader) oversized(r *response, n int64) error {
	if s.strict {
		return fmt.Errorf("%w: an event of more than %d bytes (the output limit)", errOversized, s.frameLimit())
	}
	r.oversized++
	r.truncated += n
	s.data = s.data[:0]
	s.skipping = true
	return nil
}

// release drops buffers a huge frame grew, so an idle slot holds little.
func (s *sseReader) release() {
	if cap(s.line) > 1<<20 {
		s.line = nil
	}
	if cap(s.data) > 1<<20 {
		s.data = nil
	}
	if cap(s.scratch) > 1<<20 {
		s.scratch = nil
	}
}

// readLine returns the next line without its line end. A final line without a
// newline is returned with a nil error; the end is reported by the next call. A
// line longer than the frame limit is read through and dropped: long is then its
// length and line is nil.
func (s *sseReader) readLine() (line []byte, long int64, err error) {
	s.line = s.line[:0]
	limit := s.frameLimit() + 16 // room for "data: " and a line end
	for {
		frag, err := s.br.ReadSlice('\n')
		if long > 0 || len(s.line)+len(frag) > limit {
			// Too long: count it and read on to its end without keeping it.
			if long == 0 {
				long = int64(len(s.line))
				s.line = s.line[:0]
			}
			long += int64(len(frag))
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, 0, err
			}
			return nil, long, nil
		}
		if err == bufio.ErrBufferFull {
			s.line = append(s.line, frag...)
			continue
		}
		if len(s.line) > 0 {
			s.line = append(s.line, frag...)
			frag = s.line
		}
		if err != nil && (len(frag) == 0 || !errors.Is(err, io.EOF)) {
			return nil, 0, err
		}
		frag = bytes.TrimSuffix(frag, []byte("\n"))
		frag = bytes.TrimSuffix(frag, []byte("\r"))
		return frag, 0, nil
	}
}

func (s *sseReader) dispatch(r *response, at int64) error {
	data := s.data
	s.data = s.data[:0]
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		r.sawDone = true
		return nil
	}
	errs := r.errorFrames
	c, err := s.scan.parse(data)
	if err == nil {
		err = r.applyRaw(c, at, &s.scratch, true)
	}
	if err != nil {
		if s.strict {
			return fmt.Errorf("%w: chunk %.200q: %v", errMalformed, data, err)
		}
		r.noteMalformed(data, err)
		return nil
	}
	if s.strict && r.errorFrames > errs {
		return fmt.Errorf("server error in stream: %s", r.firstError)
	}
	return nil
}

// utf8BOM is the UTF-8 byte order mark, which a body may begin with: it is
// stripped, with the turn warning leading_bom.
const utf8BOM = "\xef\xbb\xbf"

// eventEnd follows where the first JSON value of an event's data ends, as data
// lines are appended, so that telling whether the data read so far is one whole
// value (an event not followed by a blank line) costs nothing per line: each
// byte is fed once, and the
// value is checked once, by jsontext.Valid, when it closes. Data that is a
// whole value followed by anything but whitespace is never one.
type eventEnd struct {
	mode     byte // 0 before the value; '{' inside an object or array; '"' in a string; 'a' in another scalar; 'c' closed
	depth    int
	inStr    bool // in a string inside an object or array
	esc      bool
	valid    bool // the closed value is valid JSON
	trailing bool // something but whitespace came after it
}

// feed follows data[from:], the bytes just appended.
func (e *eventEnd) feed(data []byte, from int) {
	for i := from; i < len(data); i++ {
		c := data[i]
		space := c == ' ' || c == '\t' || c == '\n' || c == '\r'
		switch e.mode {
		case 0:
			switch {
			case space:
			case c == '{' || c == '[':
				e.mode, e.depth = '{', 1
			case c == '"':
				e.mode = '"'
			default:
				e.mode = 'a'
			}
		case '{':
			switch {
			case e.esc:
				e.esc = false
			case e.inStr:
				e.esc, e.inStr = c == '\\', c != '"'
			case c == '"':
				e.inStr = true
			case c == '{' || c == '[':
				e.depth++
			case c == '}' || c == ']':
				if e.depth--; e.depth == 0 {
					e.close(data[:i+1])
				}
			}
		case '"':
			switch {
			case e.esc:
				e.esc = false
			case c == '\\':
				e.esc = true
			case c == '"':
				e.close(data[:i+1])
			}
		case 'a':
			if space {
				e.close(data[:i])
			}
		case 'c':
			e.trailing = e.trailing || !space
		}
	}
}

func (e *eventEnd) close(value []byte) {
	e.mode, e.valid = 'c', jsontext.Valid(value, jsontext.JSON)
}

// whole tells whether data, all of it fed, is one JSON value and whitespace.
func (e *eventEnd) whole(data []byte) bool {
	switch e.mode {
	case 'c':
		return e.valid && !e.trailing
	case 'a': // a number or a literal on the event's one line so far
		return jsontext.Valid(data, jsontext.JSON)
	}
	return false
}

// readCompletion parses a non-streamed chat.completion body into r at time now.
// An error object or a body without choices fails the turn, as the reference's
// decoding of a whole response does. A leading byte order mark is stripped.
func readCompletion(body []byte, r *response, now int64) error {
	if bytes.HasPrefix(body, []byte(utf8BOM)) {
		body, r.bom = body[len(utf8BOM):], true
	}
	var s chunkScanner
	var scratch []byte
	c, err := s.parse(body)
	if err == nil {
		err = r.applyRaw(c, now, &scratch, false)
	}
	if err != nil {
		return fmt.Errorf("%w: body %.200q: %v", errMalformed, body, err)
	}
	if r.errorFrames > 0 {
		return fmt.Errorf("server error in response: %s", r.firstError)
	}
	if len(c.choices) == 0 {
		return fmt.Errorf("%w: completion without choices", errMalformed)
	}
	return nil
}

// unsafeString views b as a string without copying; b must not change while the
// string is in use.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
