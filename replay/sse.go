package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/agentrace/agentrace/schemas"
)

// errMalformed marks a response the client could not parse.
var errMalformed = errors.New("malformed response")

// response accumulates one turn's response, chunk by chunk. Times are run-clock
// nanoseconds.
type response struct {
	content   strings.Builder
	reasoning strings.Builder
	tools     []schemas.ToolCall // merged by index, in order of first appearance
	finish    string

	firstTokenNs        int64
	chunkTimes          []int64 // absolute; made relative to firstTokenNs at the end
	firstContentBytes   int
	firstReasoningBytes int

	promptTokens, completionTokens, cachedTokens int32
	sawDone                                      bool
}

func (r *response) reset() {
	r.content.Reset()
	r.reasoning.Reset()
	r.tools = r.tools[:0]
	r.finish = ""
	r.firstTokenNs = 0
	r.chunkTimes = r.chunkTimes[:0]
	r.firstContentBytes, r.firstReasoningBytes = 0, 0
	r.promptTokens, r.completionTokens, r.cachedTokens = -1, -1, -1
	r.sawDone = false
}

// chunk is the part of a chat.completion.chunk (or a chat.completion) the client
// reads. Unknown fields are ignored.
type chunk struct {
	Choices []choice   `json:"choices"`
	Usage   *usage     `json:"usage"`
	Error   *errorBody `json:"error"`
}

type choice struct {
	Index        int      `json:"index"`
	Delta        *message `json:"delta"`
	Message      *message `json:"message"`
	FinishReason *string  `json:"finish_reason"`
}

type message struct {
	Content          *string         `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        *string         `json:"reasoning"`
	ToolCalls        []toolCallDelta `json:"tool_calls"`
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
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

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// apply merges one parsed chunk (or a whole non-streamed completion) into r, at
// time now. It returns an error for an error object in the stream.
func (r *response) apply(c *chunk, now int64) error {
	if c.Error != nil {
		return fmt.Errorf("server error in stream: %s", c.Error)
	}
	if u := c.Usage; u != nil {
		r.promptTokens, r.completionTokens = u.PromptTokens, u.CompletionTokens
		if d := u.PromptTokensDetails; d != nil && d.CachedTokens != nil {
			r.cachedTokens = *d.CachedTokens
		}
	}
	bearing := false
	var cBytes, rBytes int
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // n > 1: the client records the first choice only
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			r.finish = *ch.FinishReason
		}
		m := ch.Delta
		if m == nil {
			m = ch.Message
		}
		if m == nil {
			continue
		}
		if s := str(m.Content); s != "" {
			r.content.WriteString(s)
			cBytes += len(s)
			bearing = true
		}
		// vLLM has sent reasoning as reasoning_content, as reasoning, and for a time
		// as both with the same text: take one of them, never both.
		rs := str(m.ReasoningContent)
		if rs == "" {
			rs = str(m.Reasoning)
		}
		if rs != "" {
			r.reasoning.WriteString(rs)
			rBytes += len(rs)
			bearing = true
		}
		for j := range m.ToolCalls {
			if r.mergeToolCall(&m.ToolCalls[j]) {
				bearing = true
			}
		}
	}
	if bearing {
		if r.firstTokenNs == 0 {
			r.firstTokenNs = now
			r.firstContentBytes, r.firstReasoningBytes = cBytes, rBytes
		}
		r.chunkTimes = append(r.chunkTimes, now)
	}
	return nil
}

// mergeToolCall merges a tool-call delta by index: id, type and name are taken
// from the first delta that has them, arguments are concatenated. It reports
// whether the delta carried anything.
func (r *response) mergeToolCall(d *toolCallDelta) bool {
	idx := len(r.tools)
	if d.Index != nil {
		idx = *d.Index
	}
	var tc *schemas.ToolCall
	for i := range r.tools {
		if r.tools[i].Index == idx {
			tc = &r.tools[i]
			break
		}
	}
	if tc == nil {
		r.tools = append(r.tools, schemas.ToolCall{Index: idx})
		tc = &r.tools[len(r.tools)-1]
	}
	if tc.ID == "" {
		tc.ID = d.ID
	}
	if tc.Type == "" {
		tc.Type = d.Type
	}
	if tc.Function.Name == "" {
		tc.Function.Name = d.Function.Name
	}
	args := argString(d.Function.Arguments)
	tc.Function.Arguments += args
	return d.ID != "" || d.Function.Name != "" || args != ""
}

// argString returns tool-call arguments as a string: a JSON string is unquoted,
// an object (as some servers send in non-streamed replies) is kept as its JSON.
func argString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// toolCallsJSON returns the merged tool calls ordered by index as a JSON array,
// "" when there are none.
func (r *response) toolCallsJSON() string {
	if len(r.tools) == 0 {
		return ""
	}
	sort.SliceStable(r.tools, func(i, j int) bool { return r.tools[i].Index < r.tools[j].Index })
	b, err := json.Marshal(r.tools)
	if err != nil {
		return ""
	}
	return string(b)
}

// sseReader reads Server-Sent Events of a streamed chat completion. It tolerates
// what real servers do: comment and keep-alive lines, "data:" without a space,
// CRLF line ends, events without the blank line between them, an empty choices
// list, other fields (event:, id:, retry:), and a stream that ends without
// [DONE].
type sseReader struct {
	br   *bufio.Reader
	line []byte // a line longer than br's buffer
	data []byte // the data of the event being read

	scan    chunkScanner
	scratch []byte
}

// read consumes the stream into r, calling now() for the arrival time of each
// event. It returns nil at [DONE] or at the end of a stream that carried a finish
// reason; an error for a stream cut before either, a malformed chunk, or an error
// object sent in the stream.
func (s *sseReader) read(r *response, now func() int64) error {
	s.data = s.data[:0]
	var dataAt int64
	for {
		line, err := s.readLine()
		if err != nil && len(line) == 0 {
			if len(s.data) > 0 {
				if derr := s.dispatch(r, dataAt); derr != nil {
					return derr
				}
			}
			if errors.Is(err, io.EOF) {
				if r.sawDone || r.finish != "" {
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
		case line[0] == ':':
			// comment or keep-alive
		case bytes.HasPrefix(line, []byte("data:")):
			v := line[5:]
			if len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			if len(s.data) > 0 && json.Valid(s.data) {
				// The previous event had no blank line after it.
				if err := s.dispatch(r, dataAt); err != nil {
					return err
				}
			}
			if len(s.data) == 0 {
				if string(bytes.TrimSpace(v)) == "[DONE]" {
					r.sawDone = true
					return nil
				}
				dataAt = now()
			} else {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, v...)
		default:
			// event:, id:, retry: and unknown fields carry nothing for the client.
		}
	}
}

// readLine returns the next line without its line end. A final line without a
// newline is returned with a nil error; the end is reported by the next call.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			s.line = append(s.line, frag...)
			continue
		}
		if len(s.line) > 0 {
			s.line = append(s.line, frag...)
			frag = s.line
		}
		if err != nil && (len(frag) == 0 || !errors.Is(err, io.EOF)) {
			return nil, err
		}
		frag = bytes.TrimSuffix(frag, []byte("\n"))
		frag = bytes.TrimSuffix(frag, []byte("\r"))
		return frag, nil
	}
}

func (s *sseReader) dispatch(r *response, at int64) error {
	data := s.data
	s.data = s.data[:0]
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		r.sawDone = true
		return nil
	}
	chs, usageRaw, errRaw, err := s.scan.parse(data)
	if err != nil {
		return fmt.Errorf("%w: chunk %.200q: %v", errMalformed, data, err)
	}
	return r.applyRaw(chs, usageRaw, errRaw, at, &s.scratch)
}

// readCompletion parses a non-streamed chat.completion body into r at time now.
func readCompletion(body []byte, r *response, now int64) error {
	var c chunk
	if err := json.Unmarshal(body, &c); err != nil {
		return fmt.Errorf("%w: body %.200q: %v", errMalformed, body, err)
	}
	if err := r.apply(&c, now); err != nil {
		return err
	}
	if len(c.Choices) == 0 {
		return fmt.Errorf("%w: completion without choices", errMalformed)
	}
	return nil
}
