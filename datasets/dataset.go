package datasets

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/schemas"
)

// Dataset is an opened dataset directory: its manifest, its conversations and
// client turns, and each conversation's wire messages, ready for body assembly.
// A Dataset is safe for concurrent use once opened.
type Dataset struct {
	Dir      string
	Manifest schemas.DatasetManifest
	// Conversations are in Index order.
	Conversations []schemas.Conversation
	// Turns are all client turns, in conversation order, then turn order.
	Turns []schemas.Turn

	byID      map[string]int
	convs     []convData
	params    []paramSet // by position in Turns
	inherited []paramSet // by position in Turns

	clearOnce sync.Once
	clearData []wireData

	// repeatSalts[r] is the salt of repeat r, for the first passes.
	repeatSalts []string
}

// convData is one conversation's messages and their wire fragments.
type convData struct {
	msgs []schemas.Message
	wireData
	salt               string // SaltHex of the conversation id
	turnStart, turnEnd int    // range of Turns
}

// wireData is the wire fragments of a conversation's messages joined by commas:
// the first k messages are wire[:ends[k-1]].
type wireData struct {
	wire []byte
	ends []int
}

// Open reads the dataset directory dir: manifest.json and the three Parquet tables.
// It checks that they agree with each other, and stops, with ctx's error, once ctx
// is done.
func Open(ctx context.Context, dir string) (*Dataset, error) {
	d := &Dataset{Dir: dir}
	mb, err := infile.ReadFile(ctx, filepath.Join(dir, schemas.DatasetManifestFile), infile.SmallFile)
	if err != nil {
		return nil, fmt.Errorf("open dataset %q: %w", dir, err)
	}
	if err := json.Unmarshal(mb, &d.Manifest); err != nil {
		return nil, fmt.Errorf("open dataset %q: parse manifest: %w", dir, err)
	}
	for i := range d.Manifest.Inputs {
		for k, md := range d.Manifest.Inputs[i].Metadata {
			d.Manifest.Inputs[i].Metadata[k] = jsontext.AppendCompact(nil, md)
		}
	}
	if !schemas.DatasetVersionRead(d.Manifest.SchemaVersion) {
		return nil, fmt.Errorf("open dataset %q: schema version %q, this agentrace reads %q and %q", dir, d.Manifest.SchemaVersion, schemas.DatasetVersion, schemas.DatasetVersionPrevious)
	}
	if d.Conversations, err = readConversations(ctx, filepath.Join(dir, schemas.ConversationsFile), d.Manifest.SchemaVersion); err != nil {
		return nil, fmt.Errorf("open dataset %q: read %s: %w", dir, schemas.ConversationsFile, err)
	}
	msgs, err := infile.ReadParquet[schemas.Message](ctx, filepath.Join(dir, schemas.MessagesFile))
	if err != nil {
		return nil, fmt.Errorf("open dataset %q: read %s: %w", dir, schemas.MessagesFile, err)
	}
	if d.Turns, err = infile.ReadParquet[schemas.Turn](ctx, filepath.Join(dir, schemas.TurnsFile)); err != nil {
		return nil, fmt.Errorf("open dataset %q: read %s: %w", dir, schemas.TurnsFile, err)
	}
	if err := d.index(msgs); err != nil {
		return nil, fmt.Errorf("open dataset %q: %w", dir, err)
	}
	return d, nil
}

// readConversations reads conversations.parquet of a dataset of schema version
// v; a version 2 table's system prompt and tool call count are read from the
// columns it named them by.
func readConversations(ctx context.Context, path, v string) ([]schemas.Conversation, error) {
	convs, err := infile.ReadParquet[schemas.Conversation](ctx, path)
	if err != nil || v != schemas.DatasetVersionPrevious {
		return convs, err
	}
	old, err := infile.ReadParquet[schemas.ConversationV2](ctx, path)
	if err != nil {
		return nil, err
	}
	for i := range convs {
		convs[i].System, convs[i].ToolCallCount = old[i].System, old[i].ToolCalls
	}
	return convs, nil
}

// New builds a Dataset in memory from its rows, as Open does after reading them
// (for tests and generators that do not need the files).
func New(m schemas.DatasetManifest, convs []schemas.Conversation, msgs []schemas.Message, turns []schemas.Turn) (*Dataset, error) {
	d := &Dataset{Manifest: m, Conversations: convs, Turns: turns}
	if err := d.index(msgs); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Dataset) index(msgs []schemas.Message) error {
	d.repeatSalts = make([]string, 65)
	for r := 1; r < len(d.repeatSalts); r++ {
		d.repeatSalts[r] = repeatSalt(r)
	}
	d.byID = make(map[string]int, len(d.Conversations))
	d.convs = make([]convData, len(d.Conversations))
	for i := range d.Conversations {
		c := &d.Conversations[i]
		if int(c.Index) != i {
			return fmt.Errorf("conversation %q has index %d at position %d", c.ConversationID, c.Index, i)
		}
		if _, dup := d.byID[c.ConversationID]; dup {
			return fmt.Errorf("conversation %q appears twice", c.ConversationID)
		}
		d.byID[c.ConversationID] = i
		d.convs[i].salt = SaltHex(c.ConversationID)
		if c.SystemEscaped == "" && c.System != "" {
			c.SystemEscaped = string(jsontext.AppendEscaped(nil, c.System))
		}
	}
	ci := -1
	for start := 0; start < len(msgs); {
		id := msgs[start].ConversationID
		end := start
		for end < len(msgs) && msgs[end].ConversationID == id {
			end++
		}
		next, ok := d.byID[id]
		if !ok || next <= ci {
			return fmt.Errorf("messages of conversation %q out of order or unknown", id)
		}
		ci = next
		cd := &d.convs[ci]
		cd.msgs = msgs[start:end:end]
		size := 0
		for k := range cd.msgs {
			if int(cd.msgs[k].Seq) != k {
				return fmt.Errorf("conversation %q: message %d has seq %d", id, k, cd.msgs[k].Seq)
			}
			size += len(cd.msgs[k].Wire) + 1
		}
		cd.wireData = joinWire(cd.msgs, size, nil)
		start = end
	}
	for i := range d.convs {
		if got, want := len(d.convs[i].msgs), int(d.Conversations[i].Messages); got != want {
			return fmt.Errorf("conversation %q: %d messages, conversations table says %d", d.Conversations[i].ConversationID, got, want)
		}
	}
	d.params = make([]paramSet, len(d.Turns))
	d.inherited = make([]paramSet, len(d.Turns))
	prev := -1
	for ti := range d.Turns {
		t := &d.Turns[ti]
		c := int(t.ConvIndex)
		if c < 0 || c >= len(d.convs) || c < prev || d.Conversations[c].ConversationID != t.ConversationID {
			return fmt.Errorf("turn %d of conversation %q out of order or unknown", t.Turn, t.ConversationID)
		}
		cd := &d.convs[c]
		if c != prev {
			cd.turnStart = ti
			prev = c
		}
		cd.turnEnd = ti + 1
		if int(t.ClientIndex) != ti-cd.turnStart {
			return fmt.Errorf("conversation %q turn %d: client index %d, want %d", t.ConversationID, t.Turn, t.ClientIndex, ti-cd.turnStart)
		}
		if t.MsgEnd < t.MsgStart || int(t.MsgEnd) > len(cd.msgs) || t.MsgStart < 0 {
			return fmt.Errorf("conversation %q turn %d: messages [%d, %d) outside its %d messages", t.ConversationID, t.Turn, t.MsgStart, t.MsgEnd, len(cd.msgs))
		}
		ps, err := parseParams(t.Params)
		if err != nil {
			return fmt.Errorf("conversation %q turn %d: params: %w", t.ConversationID, t.Turn, err)
		}
		d.params[ti] = ps
		if d.inherited[ti], err = parseParams(t.Inherited); err != nil {
			return fmt.Errorf("conversation %q turn %d: inherited params: %w", t.ConversationID, t.Turn, err)
		}
	}
	return nil
}

// joinWire joins the messages' wire fragments with commas; alt, when not nil,
// replaces the fragment of a message.
func joinWire(msgs []schemas.Message, size int, alt func(m *schemas.Message) []byte) wireData {
	w := wireData{wire: make([]byte, 0, size), ends: make([]int, len(msgs))}
	for k := range msgs {
		if k > 0 {
			w.wire = append(w.wire, ',')
		}
		frag := msgs[k].Wire
		if alt != nil {
			if a := alt(&msgs[k]); a != nil {
				frag = a
			}
		}
		w.wire = append(w.wire, frag...)
		w.ends[k] = len(w.wire)
	}
	return w
}

// parseParams splits a turn's params object into key/value pairs in the wire
// encoding, nulls left out.
func parseParams(s string) (paramSet, error) {
	if s == "" {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &obj); err != nil {
		return nil, err
	}
	ps := make(paramSet, 0, len(obj))
	for k, v := range obj {
		if string(v) == "null" {
			continue
		}
		// An infinity is kept as 1e999 or -1e999 (ingest): a value, true in
		// Python's sense, that the wire writes as null, as msgspec writes inf.
		ps = append(ps, param{key: k, val: jsontext.AppendCompact(nil, v), truth: truthy(v)})
	}
	return ps, nil
}

// cleared returns the conversations' wire fragments with every assistant message's
// content changed as BodyOptions.ClearGeneratedCache documents, built once.
func (d *Dataset) cleared() []wireData {
	d.clearOnce.Do(func() {
		d.clearData = make([]wireData, len(d.convs))
		for i := range d.convs {
			cd := &d.convs[i]
			d.clearData[i] = joinWire(cd.msgs, len(cd.wire)+2*len(cd.msgs), ClearedWire)
		}
	})
	return d.clearData
}

// WireToolCall is one tool call of a chat message as a request (or a dataset
// message) carries it: its arguments the raw JSON, a string or, as some datasets
// and servers write them, an object.
type WireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// ToolCalls reads a message's tool_calls (schemas.Message.ToolCalls) as a response
// holds them: numbered in order, each one's arguments as their string, or as the
// raw JSON when they are not a string.
func ToolCalls(raw string) ([]schemas.ToolCall, error) {
	var calls []WireToolCall
	if err := json.Unmarshal([]byte(raw), &calls); err != nil {
		return nil, err
	}
	out := make([]schemas.ToolCall, len(calls))
	for i, tc := range calls {
		args := string(tc.Function.Arguments)
		var s string
		if json.Unmarshal(tc.Function.Arguments, &s) == nil {
			args = s
		}
		out[i] = schemas.ToolCall{Index: i, ID: tc.ID, Type: tc.Type, Function: schemas.ToolFunction{Name: tc.Function.Name, Arguments: args}}
	}
	return out, nil
}

// ClearedWire returns the wire form of an assistant message with one space put at
// the start of the first text a chat template renders for it: its reasoning_content
// when present, else its content (content " " when it has none). Because prefix
// caches hash blocks in a chain, a change at the start of the message means no token
// the server generated live for it can match the recorded history, while the prompt
// before it still hits. It returns nil for any other message and for structured
// content, which are sent unchanged.
func ClearedWire(m *schemas.Message) []byte {
	if m.Role != schemas.RoleAssistant || m.ContentJSON {
		return nil
	}
	c := *m
	if m.ReasoningContent != nil && *m.ReasoningContent != "" {
		r := " " + *m.ReasoningContent
		c.ReasoningContent = &r
	} else {
		s := " "
		if m.Content != nil {
			s = " " + *m.Content
		}
		c.Content = &s
	}
	return AppendWire(nil, &c)
}

// Conversation returns the conversation with source id id.
func (d *Dataset) Conversation(id string) (*schemas.Conversation, bool) {
	i, ok := d.byID[id]
	if !ok {
		return nil, false
	}
	return &d.Conversations[i], true
}

// ConversationTurns returns the client turns of conversation convIndex.
func (d *Dataset) ConversationTurns(convIndex int) []schemas.Turn {
	cd := &d.convs[convIndex]
	return d.Turns[cd.turnStart:cd.turnEnd:cd.turnEnd]
}

// Messages returns the wire messages of conversation convIndex in Seq order (the
// system message is not among them).
func (d *Dataset) Messages(convIndex int) []schemas.Message {
	return d.convs[convIndex].msgs
}

// Turn returns the client turn of conversation id with dataset turn number turn.
func (d *Dataset) Turn(id string, turn int) (*schemas.Turn, error) {
	ci, ok := d.byID[id]
	if !ok {
		return nil, fmt.Errorf("find conversation %q: not in the dataset", id)
	}
	cd := &d.convs[ci]
	for ti := cd.turnStart; ti < cd.turnEnd; ti++ {
		if int(d.Turns[ti].Turn) == turn {
			return &d.Turns[ti], nil
		}
	}
	return nil, fmt.Errorf("find turn %d of conversation %q: not a client turn", turn, id)
}
