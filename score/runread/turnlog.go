package runread

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"

	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BufferPool is an Arrow allocator that keeps freed buffers (by power-of-two size
// class) for the next batch: reading many turn logs then barely allocates, which
// leaves the garbage collector little to do while runs are scored in parallel. It
// is safe for concurrent use.
type BufferPool struct {
	mu      sync.Mutex
	free    map[int][][]byte
	backing memory.GoAllocator
}

// NewBufferPool returns an empty pool.
func NewBufferPool() *BufferPool { return &BufferPool{free: map[int][][]byte{}} }

func sizeClass(size int) int {
	if size <= 64 {
		return 64
	}
	return 1 << bits.Len(uint(size-1))
}

// Allocate returns a zeroed, 64-byte aligned buffer of size bytes.
func (p *BufferPool) Allocate(size int) []byte {
	class := sizeClass(size)
	p.mu.Lock()
	list := p.free[class]
	var b []byte
	if n := len(list); n > 0 {
		b, p.free[class] = list[n-1], list[:n-1]
	}
	p.mu.Unlock()
	if b == nil {
		return p.backing.Allocate(class)[:size]
	}
	b = b[:size]
	clear(b)
	return b
}

// Reallocate grows a buffer, keeping its bytes.
func (p *BufferPool) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free keeps a buffer for reuse (buffers not from this pool are dropped).
func (p *BufferPool) Free(b []byte) {
	c := cap(b)
	if c < 64 || c&(c-1) != 0 {
		return
	}
	p.mu.Lock()
	if len(p.free[c]) < 64 {
		p.free[c] = append(p.free[c], b[:c])
	}
	p.mu.Unlock()
}

// turnLogColumns are the turn-log columns scoring reads, with their types.
type turnLogColumns struct {
	session, conv, status, errText, content, reasoning, calls *array.String
	repeat, turn, usage                                       *array.Int32
	inWindow                                                  *array.Boolean
}

// bindTurnLog finds the columns in a batch; a column the log lacks stays nil and
// reads as zero, as runlog.AppendRecords treats it.
func bindTurnLog(rec arrow.RecordBatch) (turnLogColumns, error) {
	var c turnLogColumns
	col := func(name string) arrow.Array {
		if idx := rec.Schema().FieldIndices(name); len(idx) > 0 {
			return rec.Column(idx[0])
		}
		return nil
	}
	strs := []struct {
		name string
		dst  **array.String
	}{{"session_id", &c.session}, {"conversation_id", &c.conv}, {"status", &c.status}, {"error", &c.errText},
		{"output_content", &c.content}, {"output_reasoning", &c.reasoning}, {"output_tool_calls", &c.calls}}
	for _, s := range strs {
		if a := col(s.name); a != nil {
			v, ok := a.(*array.String)
			if !ok {
				return c, fmt.Errorf("turn log column %q has type %s, want utf8", s.name, a.DataType())
			}
			*s.dst = v
		}
	}
	ints := []struct {
		name string
		dst  **array.Int32
	}{{"repeat", &c.repeat}, {"turn", &c.turn}, {"usage_completion_tokens", &c.usage}}
	for _, s := range ints {
		if a := col(s.name); a != nil {
			v, ok := a.(*array.Int32)
			if !ok {
				return c, fmt.Errorf("turn log column %q has type %s, want int32", s.name, a.DataType())
			}
			*s.dst = v
		}
	}
	if a := col("in_window"); a != nil {
		v, ok := a.(*array.Boolean)
		if !ok {
			return c, fmt.Errorf("turn log column %q has type %s, want bool", "in_window", a.DataType())
		}
		c.inWindow = v
	}
	return c, nil
}

// TurnLogRow is the part of a turn-log row scoring needs.
type TurnLogRow struct {
	Session, Conv, Status     string
	Content, Reasoning, Calls string
	Repeat, Turn, Usage       int32
	InWindow                  bool
}

// TurnLogRows gathers the rows of a turn log that scoring needs, batch by
// batch: Add is a ScanOptions.Batches consumer, so that they come from the pass
// that feeds every other reader of the log.
//
// The output strings (content, reasoning, tool calls) point into the log's Arrow
// buffers unless clone is set: those stay valid until Release, which hands the
// buffers back to their allocator (a BufferPool recycles them). Identity strings
// are always copied.
type TurnLogRows struct {
	// Rows are the rows gathered so far, in the log's order.
	Rows    []TurnLogRow
	clone   bool
	batches []arrow.RecordBatch
	intern  map[string]string
}

// NewTurnLogRows gathers rows into dst (empty, nil or with room from an earlier
// log), cloning the output strings when clone is set.
func NewTurnLogRows(clone bool, dst []TurnLogRow) *TurnLogRows {
	return &TurnLogRows{Rows: dst[:0], clone: clone, intern: map[string]string{}}
}

// Release releases the batches the rows point into; the rows' output strings
// are invalid after it (unless cloned).
func (t *TurnLogRows) Release() {
	for _, b := range t.batches {
		b.Release()
	}
	t.batches = nil
}

// Add gathers the rows of one batch.
func (t *TurnLogRows) Add(rec arrow.RecordBatch) error {
	c, err := bindTurnLog(rec)
	if err != nil {
		return err
	}
	small := func(a *array.String, i int) string {
		if a == nil {
			return ""
		}
		v := a.Value(i) // aliases the batch's buffer: copy it (once per value)
		if s, ok := t.intern[v]; ok {
			return s
		}
		s := strings.Clone(v)
		t.intern[s] = s
		return s
	}
	big := func(a *array.String, i int) string {
		if a == nil {
			return ""
		}
		if t.clone {
			return strings.Clone(a.Value(i))
		}
		return a.Value(i)
	}
	i32 := func(a *array.Int32, i int) int32 {
		if a == nil {
			return 0
		}
		return a.Value(i)
	}
	if !t.clone {
		rec.Retain()
		t.batches = append(t.batches, rec)
	}
	n := int(rec.NumRows())
	t.Rows = slices.Grow(t.Rows, n)[:len(t.Rows)+n]
	batch := t.Rows[len(t.Rows)-n:]
	clear(batch)
	for i := range batch {
		r := &batch[i]
		r.Session, r.Conv, r.Status = small(c.session, i), small(c.conv, i), small(c.status, i)
		r.Repeat, r.Turn, r.Usage = i32(c.repeat, i), i32(c.turn, i), i32(c.usage, i)
		if c.usage != nil && c.usage.IsNull(i) {
			r.Usage = -1 // none reported (null from turn log version 4 on)
		}
		r.InWindow = c.inWindow != nil && c.inWindow.Value(i)
		if r.Status == schemas.StatusOK {
			r.Content, r.Reasoning, r.Calls = big(c.content, i), big(c.reasoning, i), big(c.calls, i)
		}
	}
	return nil
}
