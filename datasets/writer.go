package datasets

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// rowGroupBytes is the approximate size of the messages buffered before a row group
// is flushed, which bounds the writer's memory.
const rowGroupBytes = 8 << 20

// Writer writes a dataset directory one conversation at a time. The caller owns the
// directory (normally a temporary one from an output claim (internal/outguard)). A Writer is owned by one
// goroutine.
type Writer struct {
	dir     string
	files   []*os.File
	msgFile *os.File // messages.parquet, one of files
	convs   *parquet.GenericWriter[schemas.Conversation]
	msgs    *parquet.GenericWriter[messageRow]
	turns   *parquet.GenericWriter[turnRow]
	// msgRows and turnRows are reused for each conversation's rows.
	msgRows  []messageRow
	turnRows []turnRow
	counts   schemas.DatasetCounts
	digests  []convDigest
	pending  int
	closed   bool
}

type convDigest struct {
	id  string
	sum [sha256.Size]byte
}

// NewWriter creates the three Parquet tables in dir.
func NewWriter(dir string) (*Writer, error) {
	w := &Writer{dir: dir}
	open := func(name string) (*os.File, error) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("create dataset table: %w", err)
		}
		w.files = append(w.files, f)
		return f, nil
	}
	opts := []parquet.WriterOption{parquet.Compression(&fastSnappy{}), parquet.CreatedBy("agentrace", schemas.ToolVersion, ""),
		// The bounds of message texts filter nothing and cost a comparison of
		// every value (and the footer a copy of the largest).
		parquet.SkipPageBounds("content"), parquet.SkipPageBounds("reasoning_content"), parquet.SkipPageBounds("tool_calls"),
		parquet.SkipPageBounds("wire"), parquet.SkipPageBounds("extra")}
	f, err := open(schemas.ConversationsFile)
	if err != nil {
		return nil, w.abort(err)
	}
	w.convs = parquet.NewGenericWriter[schemas.Conversation](f, opts...)
	if f, err = open(schemas.MessagesFile); err != nil {
		return nil, w.abort(err)
	}
	w.msgFile = f
	w.msgs = parquet.NewGenericWriter[messageRow](f, opts...)
	if f, err = open(schemas.TurnsFile); err != nil {
		return nil, w.abort(err)
	}
	w.turns = parquet.NewGenericWriter[turnRow](f, opts...)
	return w, nil
}

func (w *Writer) abort(err error) error {
	for _, f := range w.files {
		_ = f.Close()
	}
	w.closed = true
	return err
}

// Abort closes the files without finishing them; the caller removes the directory.
func (w *Writer) Abort() {
	if !w.closed {
		_ = w.abort(nil)
	}
}

// Prepared is a conversation checked and digested by Prepare, ready for
// Writer.AddPrepared.
type Prepared struct {
	Conversation *schemas.Conversation
	Messages     []schemas.Message
	Turns        []schemas.Turn
	size         int
	digest       [sha256.Size]byte
}

// Prepare checks that a conversation's messages (Seq order) and client turns agree
// with it, fills each message's Wire when empty and the conversation's
// SystemEscaped, and computes its content digest. It is safe to call from several
// goroutines, so the expensive part of writing can run in parallel.
func Prepare(c *schemas.Conversation, msgs []schemas.Message, turns []schemas.Turn) (*Prepared, error) {
	p := &Prepared{Conversation: c, Messages: msgs, Turns: turns}
	if c.SystemEscaped == "" && c.System != "" {
		c.SystemEscaped = string(jsontext.AppendEscaped(nil, c.System))
	}
	for k := range msgs {
		m := &msgs[k]
		if m.ConversationID != c.ConversationID || int(m.Seq) != k {
			return nil, fmt.Errorf("add conversation %q: message %d is (%q, seq %d)", c.ConversationID, k, m.ConversationID, m.Seq)
		}
		if len(m.Wire) == 0 {
			m.Wire = AppendWire(nil, m)
		}
		p.size += len(m.Wire) + len(m.ToolCalls) + len(m.Extra)
		if m.Content != nil {
			p.size += len(*m.Content)
		}
		if m.ReasoningContent != nil {
			p.size += len(*m.ReasoningContent)
		}
	}
	for k := range turns {
		t := &turns[k]
		if t.ConversationID != c.ConversationID || t.ConvIndex != c.Index || int(t.ClientIndex) != k || int(t.MsgEnd) > len(msgs) {
			return nil, fmt.Errorf("add conversation %q: turn %d does not belong to it", c.ConversationID, t.Turn)
		}
	}
	p.digest = digest(c, msgs, turns)
	return p, nil
}

// Add writes one conversation with its messages (Seq order) and client turns: it
// is Prepare followed by AddPrepared.
func (w *Writer) Add(c *schemas.Conversation, msgs []schemas.Message, turns []schemas.Turn) error {
	p, err := Prepare(c, msgs, turns)
	if err != nil {
		return err
	}
	return w.AddPrepared(p)
}

// AddPrepared writes a prepared conversation. Conversations must come in Index
// order.
func (w *Writer) AddPrepared(p *Prepared) error {
	c, msgs, turns := p.Conversation, p.Messages, p.Turns
	if w.closed {
		return errors.New("add conversation: writer closed")
	}
	if int(c.Index) != w.counts.Conversations {
		return fmt.Errorf("add conversation %q: index %d, want %d", c.ConversationID, c.Index, w.counts.Conversations)
	}
	w.pending += p.size
	w.digests = append(w.digests, convDigest{id: c.ConversationID, sum: p.digest})
	w.counts.Conversations++
	if c.Domain == schemas.DomainWorkflow {
		w.counts.Workflow++
	} else {
		w.counts.Coding++
	}
	w.counts.Rows += int(c.Rows)
	w.counts.ClientTurns += int(c.ClientTurns)
	w.counts.AssistantTurns += int(c.AssistantTurns)
	w.counts.Messages += len(msgs)
	if _, err := w.convs.Write([]schemas.Conversation{*c}); err != nil {
		return fmt.Errorf("write conversation %q: %w", c.ConversationID, err)
	}
	w.msgRows = w.msgRows[:0]
	for k := range msgs {
		w.msgRows = append(w.msgRows, newMessageRow(&msgs[k]))
	}
	_, err := w.msgs.Write(w.msgRows)
	clear(w.msgRows)
	if err != nil {
		return fmt.Errorf("write messages of conversation %q: %w", c.ConversationID, err)
	}
	w.turnRows = w.turnRows[:0]
	for k := range turns {
		turns[k].ClientTurn = turns[k].Turn
		w.turnRows = append(w.turnRows, newTurnRow(&turns[k]))
	}
	_, err = w.turns.Write(w.turnRows)
	clear(w.turnRows)
	if err != nil {
		return fmt.Errorf("write turns of conversation %q: %w", c.ConversationID, err)
	}
	if w.pending >= rowGroupBytes {
		if err := w.msgs.Flush(); err != nil {
			return fmt.Errorf("flush messages: %w", err)
		}
		w.pending = 0
		startWriteback(w.msgFile)
	}
	return nil
}

// messageRow is schemas.Message as the writer hands it to parquet-go: the same
// columns (TestWriteRowsMatchSchemas), with a pointer where a column is optional.
// parquet-go (v0.32.1) writes some zero values of a non-pointer optional field
// as values, not nulls, when one call holds runs of both, so the writer names
// the missing ones by nil pointers. Conversations go one a call, which it writes
// right, as schemas.Conversation.
type messageRow struct {
	ConversationID   string  `parquet:"conversation_id,dict"`
	Seq              int32   `parquet:"seq"`
	Turn             int32   `parquet:"turn"`
	Part             int32   `parquet:"part"`
	Role             string  `parquet:"role,dict"`
	Content          *string `parquet:"content,optional"`
	ContentJSON      bool    `parquet:"content_json"`
	ReasoningContent *string `parquet:"reasoning_content,optional"`
	Name             *string `parquet:"name,optional"`
	ToolCalls        *string `parquet:"tool_calls,optional"`
	ToolCallID       *string `parquet:"tool_call_id,optional"`
	IntentCodes      *string `parquet:"intent_codes,optional"`
	Wire             []byte  `parquet:"wire"`
	Extra            *string `parquet:"extra,optional"`
}

func newMessageRow(m *schemas.Message) messageRow {
	return messageRow{ConversationID: m.ConversationID, Seq: m.Seq, Turn: m.Turn, Part: m.Part, Role: m.Role,
		Content: m.Content, ContentJSON: m.ContentJSON, ReasoningContent: m.ReasoningContent, Name: m.Name,
		ToolCalls: nonEmpty(&m.ToolCalls), ToolCallID: m.ToolCallID, IntentCodes: nonEmpty(&m.IntentCodesJSON),
		Wire: m.Wire, Extra: nonEmpty(&m.Extra)}
}

// turnRow is schemas.Turn as the writer hands it to parquet-go (see messageRow).
type turnRow struct {
	ConversationID string  `parquet:"conversation_id,dict"`
	ConvIndex      int32   `parquet:"conv_index"`
	Domain         string  `parquet:"domain,dict"`
	Turn           int32   `parquet:"turn"`
	ClientTurn     int32   `parquet:"client_turn"`
	ClientIndex    int32   `parquet:"client_index"`
	Role           string  `parquet:"role,dict"`
	MsgStart       int32   `parquet:"msg_start"`
	MsgEnd         int32   `parquet:"msg_end"`
	DelaySeconds   float64 `parquet:"delay_seconds"`
	Tools          *string `parquet:"tools,optional,dict"`
	Params         *string `parquet:"params,optional,dict"`
	Inherited      *string `parquet:"inherited,optional,dict"`
	MaxTokens      *int32  `parquet:"max_tokens,optional"`
	ExpectedTurn   *int32  `parquet:"expected_turn,optional"`
	HistoryBytes   int64   `parquet:"history_bytes"`
	ISL            *int32  `parquet:"isl,optional"`
}

func newTurnRow(t *schemas.Turn) turnRow {
	return turnRow{ConversationID: t.ConversationID, ConvIndex: t.ConvIndex, Domain: t.Domain, Turn: t.Turn,
		ClientTurn: t.ClientTurn, ClientIndex: t.ClientIndex, Role: t.Role, MsgStart: t.MsgStart, MsgEnd: t.MsgEnd,
		DelaySeconds: t.DelaySeconds, Tools: nonEmpty(&t.Tools), Params: nonEmpty(&t.Params), Inherited: nonEmpty(&t.Inherited),
		MaxTokens: nonZero(&t.MaxTokens), ExpectedTurn: nonZero(&t.ExpectedTurn), HistoryBytes: t.HistoryBytes, ISL: t.ISL}
}

// nonEmpty is s, or nil (null) when *s is empty.
func nonEmpty(s *string) *string {
	if *s == "" {
		return nil
	}
	return s
}

// nonZero is v, or nil (null) when *v is 0.
func nonZero(v *int32) *int32 {
	if *v == 0 {
		return nil
	}
	return v
}

// Close finishes the tables and writes manifest.json from m, with its schema and
// tool versions, counts and content hash filled in. It returns the manifest written.
func (w *Writer) Close(m schemas.DatasetManifest) (schemas.DatasetManifest, error) {
	if w.closed {
		return m, errors.New("close dataset writer: already closed")
	}
	w.closed = true
	var errs []error
	for _, c := range []io.Closer{w.convs, w.msgs, w.turns} {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	// The tables are synced at once: each fsync waits mostly on the disk, and
	// three in a row cost three latencies.
	syncErrs := make([]error, len(w.files))
	var wg sync.WaitGroup
	for i, f := range w.files {
		wg.Go(func() { syncErrs[i] = f.Sync() })
	}
	wg.Wait()
	errs = append(errs, syncErrs...)
	for _, f := range w.files {
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return m, fmt.Errorf("close dataset tables in %q: %w", w.dir, err)
	}
	m.SchemaVersion = schemas.DatasetVersion
	if m.ToolVersion == "" {
		m.ToolVersion = schemas.ToolVersion
	}
	m.Counts = w.counts
	m.ContentHash = w.contentHash()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return m, fmt.Errorf("encode dataset manifest: %w", err)
	}
	if err := outguard.AtomicWriteBytes(filepath.Join(w.dir, schemas.DatasetManifestFile), append(b, '\n')); err != nil {
		return m, err
	}
	return m, nil
}

// The content hash: a SHA-256 per conversation over its id, system prompt, wire
// messages with their turn, part, intent codes and extra fields, and its client
// turns (turn, role, message range, delay, tools, params, inherited params, max
// tokens, expected turn);
// then a SHA-256 over the (id, digest) pairs sorted by id. It leaves out file names,
// formats, snapshot metadata, creation time, ISL and the conversations' order, so
// that flat and snapshot input of the same trajectories hash the same.

func digest(c *schemas.Conversation, msgs []schemas.Message, turns []schemas.Turn) [sha256.Size]byte {
	h := sha256.New()
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	num := func(v int64) { b = binary.AppendVarint(b, v) }
	flush := func() {
		h.Write(b)
		b = b[:0]
	}
	str(c.ConversationID)
	if c.HasSystem {
		num(1)
	} else {
		num(0)
	}
	str(c.System)
	num(int64(len(msgs)))
	for k := range msgs {
		m := &msgs[k]
		num(int64(m.Turn))
		num(int64(m.Part))
		b = binary.AppendUvarint(b, uint64(len(m.Wire)))
		flush()
		h.Write(m.Wire)
		str(m.IntentCodesJSON)
		str(m.Extra)
	}
	num(int64(len(turns)))
	for k := range turns {
		t := &turns[k]
		num(int64(t.Turn))
		str(t.Role)
		num(int64(t.MsgStart))
		num(int64(t.MsgEnd))
		num(int64(math.Float64bits(t.DelaySeconds)))
		str(t.Tools)
		str(t.Params)
		str(t.Inherited)
		num(int64(t.MaxTokens))
		num(int64(t.ExpectedTurn))
		flush()
	}
	flush()
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// ConversationDigest returns one conversation's content digest (its messages in
// Seq order, with Wire filled, and its client turns), the unit the content hash
// combines: two conversations with the same digest have the same content.
func ConversationDigest(c *schemas.Conversation, msgs []schemas.Message, turns []schemas.Turn) [sha256.Size]byte {
	return digest(c, msgs, turns)
}

// ContentHash combines conversations' digests, given in any order with their ids,
// into the content hash a dataset's manifest records.
func ContentHash(ids []string, digests [][sha256.Size]byte) string {
	ds := make([]convDigest, len(ids))
	for i := range ids {
		ds[i] = convDigest{id: ids[i], sum: digests[i]}
	}
	return combineDigests(ds)
}

func (w *Writer) contentHash() string {
	return combineDigests(append([]convDigest(nil), w.digests...))
}

// combineDigests sorts ds by id and hashes the (id, digest) pairs.
func combineDigests(ds []convDigest) string {
	sort.Slice(ds, func(i, j int) bool { return ds[i].id < ds[j].id })
	h := sha256.New()
	var b []byte
	for _, d := range ds {
		b = binary.AppendUvarint(b[:0], uint64(len(d.id)))
		b = append(b, d.id...)
		b = append(b, d.sum[:]...)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fastSnappy is Parquet's SNAPPY codec with the fast encoder of
// github.com/klauspost/compress/s2 (Snappy-compatible output, as parquet-go's own
// codec, which uses the slower "better" mode). A large page is cut in two halves
// compressed at once on two goroutines (parquet-go compresses a table's pages one
// after another, on the goroutine that writes it): a Snappy block is its
// uncompressed length followed by literals and copies that refer back only into
// what the block has already produced, so the two halves' elements, one after
// the other under the whole page's length, are one valid block. A Writer has
// one, used by its goroutine only (it keeps the buffer the second halves are
// compressed into).
type fastSnappy struct {
	scratch []byte
}

// splitSnappyBytes is the smallest page whose halves are compressed in
// parallel: below it, handing half to another goroutine costs more than it
// saves.
const splitSnappyBytes = 64 << 10

func (*fastSnappy) String() string                            { return "SNAPPY" }
func (*fastSnappy) CompressionCodec() format.CompressionCodec { return format.Snappy }
func (c *fastSnappy) Encode(dst, src []byte) ([]byte, error) {
	if len(src) < splitSnappyBytes || runtime.GOMAXPROCS(0) < 2 {
		n := s2.MaxEncodedLen(len(src))
		if cap(dst) < n {
			dst = make([]byte, n)
		}
		return s2.EncodeSnappy(dst[:n], src), nil
	}
	return c.encodeHalves(dst, src), nil
}

// encodeHalves compresses src as one Snappy block made of its two halves
// compressed independently, the second on another goroutine.
func (c *fastSnappy) encodeHalves(dst, src []byte) []byte {
	first, second := src[:len(src)/2], src[len(src)/2:]
	done := make(chan []byte, 1)
	go func() { done <- s2.EncodeSnappy(c.scratch[:cap(c.scratch)], second) }()
	// The first half is compressed in place: its own length preamble is
	// written where the whole block's ends, and overwritten by it.
	var hdr [binary.MaxVarintLen64]byte
	whole := binary.PutUvarint(hdr[:], uint64(len(src)))
	half := binary.PutUvarint(hdr[:], uint64(len(first)))
	n := whole - half + s2.MaxEncodedLen(len(first)) + s2.MaxEncodedLen(len(second))
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	out := s2.EncodeSnappy(dst[whole-half:n], first)
	dst = dst[:whole-half+len(out)]
	binary.PutUvarint(dst, uint64(len(src)))
	enc := <-done
	_, skip := binary.Uvarint(enc)
	dst = append(dst, enc[skip:]...)
	c.scratch = enc[:0]
	return dst
}

func (*fastSnappy) Decode(dst, src []byte) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return dst[:0], err
	}
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	return s2.Decode(dst[:n], src)
}
