package runlog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The analysis table (turns.parquet) is the turn log made for notebooks: one Parquet
// file that DuckDB, polars and pandas (pyarrow) read with no extension. It is built
// from the log's own Arrow schema, column by column, so a column the replay engine
// adds travels through unchanged; the rules below apply by name and type:
//
//   - concurrency (int32) comes first: the run's, so that tables of several runs
//     stack; a table of several runs (report's sweep-wide one) adds run, the run
//     folder, and system, the curve it belongs to.
//   - turn becomes client_turn (the client row's dataset turn), followed by
//     expected_turn (the dataset turn of the assistant row that answers it, the
//     turn of scores.parquet; null when the dataset is not found).
//   - status is followed by issued (Issued: a request was sent,
//     status ok, error, timeout or cancelled) and, after error, error_kind
//     (ErrorKind).
//   - every int64 column named *_ns other than a duration (delay_ns) is a time on the
//     run clock: kept as it is, and followed by *_at, the wall-clock time as a UTC
//     timestamp in nanoseconds (the manifest's started_unix_ns plus the run-clock
//     time), null when the time is 0 ("did not happen").
//   - durations, in milliseconds as float64 (Parquet has no nanosecond duration
//     type every reader takes): delay_ms after delay_ns, and after completed_at
//     lag_ms (issued - scheduled, null when not issued), ttft_ms (first token -
//     issued), latency_ms (completed - issued) and decode_ms (completed - first
//     token), each null when one of its times is 0. They are computed as the report computes its metrics
//     (float64(a-b)/1e6), so a query over them reproduces points.json exactly.
//   - low-cardinality strings (ids, domain, status, error, error_kind,
//     finish_reason, warnings, run, system) are dictionary-encoded; everything else
//     is passed through. Every column is optional (a column one run's log lacks is
//     null in its rows).
//
// The table is written by arrow-go's pqarrow from Arrow records of the table's
// schema, so the Parquet file also carries that schema (footer key ARROW:schema,
// as pyarrow writes it): pandas reads the dictionary-encoded columns as categories
// and timestamps as UTC datetimes, and polars as categoricals. Rows keep the log's
// order. A table is written in row groups of at most tableRowGroupRows rows or
// tableRowGroupBytes bytes of log, each one Arrow record built from the log's
// batches (one dictionary per column chunk), so memory stays bounded by those,
// not by the log's size.

// TableFile is the analysis table of a run folder (and of a report folder, for
// all its runs).
const TableFile = "turns.parquet"

// TableKind is the value of the Parquet footer key agentrace.kind
// (outguard.ParquetKey) that marks an analysis table (internal/outguard recognizes
// agentrace's outputs by it).
const TableKind = "turns-table"

const (
	tableRowGroupRows  = 64 << 10
	tableRowGroupBytes = 64 << 20
)

// durationNs are the *_ns columns that hold durations, not times on the run clock.
var durationNs = map[string]bool{"delay_ns": true}

// dictColumns are the string columns written dictionary-encoded.
var dictColumns = map[string]bool{
	"session_id": true, "conversation_id": true, "domain": true, "status": true, "error": true,
	"error_kind": true, "finish_reason": true, "warnings": true, "run": true, "system": true,
}

var (
	dictType      = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	timestampType = &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
)

// ExpectedTurns gives the expected assistant turn of a client turn of a
// conversation; ok is false when it is unknown.
type ExpectedTurns func(conversationID string, clientTurn int32) (expected int32, ok bool)

// TableRun is one run folder to put into an analysis table.
type TableRun struct {
	// Dir is the run folder (turns.arrows and manifest.json).
	Dir string
	// Manifest is the run's manifest; nil reads Dir's.
	Manifest *schemas.RunManifest
	// Expected gives expected_turn; nil reads it from the run's dataset
	// (DatasetDir), and leaves it null, with a warning, when that is not found.
	Expected ExpectedTurns
	// Run and System fill the run and system columns of a multi-run table.
	Run, System string
	// Open, when set, opens the turn log (a run inside an archive); Dir then only
	// names the run in messages. NewTableWriter opens it for its schema, and
	// WriteTable again for its rows.
	Open func() (io.ReadCloser, error)
	// Extra are columns computed elsewhere (the report's per-turn token counts);
	// NaN is null. They follow the log's.
	Extra []ExtraColumn
	// Rows, when > 0, is how many rows an earlier read of the log took:
	// WriteTable takes those, no more, from a log that grew meanwhile (a run
	// still being written; its batches only ever append).
	Rows int
}

// ExtraColumn is a float64 column added to a run's rows.
type ExtraColumn struct {
	Name string
	// Values, for WriteTable, are one value per log row in log order; a
	// RunTable's Write is given them batch by batch instead.
	Values []float64
	// Count makes the column int32 (token counts), as the same count is in every
	// other table; otherwise it is float64.
	Count bool
}

// TableOptions configure WriteTable.
type TableOptions struct {
	// RunColumns adds the run and system columns (a table of several runs).
	RunColumns bool
	// Mem allocates the Arrow buffers: the logs read, the row groups built and
	// pqarrow's while it writes them; nil uses the default.
	Mem memory.Allocator
}

// TableInfo says what WriteTable wrote.
type TableInfo struct {
	Rows     int
	Columns  []string
	Warnings []string
}

// WriteTable writes the analysis table of runs to path, atomically. Each log is
// read and checked by ScanRun: a run whose log and manifest disagree is refused,
// and a turn log cut short (a killed run, or one still being written)
// contributes its complete batches and a warning.
func WriteTable(ctx context.Context, path string, runs []TableRun, o TableOptions) (TableInfo, error) {
	tw, err := NewTableWriter(ctx, path, runs, o)
	if err != nil {
		return TableInfo{}, err
	}
	defer tw.Abort()
	for i := range runs {
		if err := tw.Run(i).fromLog(ctx); err != nil {
			return tw.info, fmt.Errorf("write turns table %q from run %q: %w", path, runs[i].Dir, err)
		}
	}
	return tw.Close()
}

// TableWriter writes an analysis table whose rows come from elsewhere, run by
// run: the pass that evaluates each run hands its log's batches to the run's
// RunTable as it reads them, so that no log is read again for the table.
// NewTableWriter plans the table from each run's manifest and the schema at the
// start of its turn log (the first message of its Arrow IPC stream, a few KB);
// the runs' RunTables may then be written from several goroutines at once: each
// builds its own row groups, and they reach the file in the runs' order (a run's
// row group waits until every run before it is closed). Memory is bounded by
// one row group per run being written.
type TableWriter struct {
	ctx    context.Context
	path   string
	file   *outguard.AtomicFile
	fw     *pqarrow.FileWriter
	schema *arrow.Schema
	index  map[string]int
	mem    memory.Allocator
	runs   []*RunTable

	mu     sync.Mutex
	turn   *sync.Cond // broadcast when next or err changes
	next   int        // the run whose row groups go to the file now
	err    error      // the first failure: the table is not written
	closed bool
	info   TableInfo
}

// ErrTableStopped is what a RunTable's Write and Close return once the table
// was stopped by another run's failure (TableWriter.Fail): that failure, not
// this, is the one to tell.
var ErrTableStopped = errors.New("the turns table was stopped by another run's failure")

// RunTable adds one run's rows to a TableWriter (TableWriter.Run).
type RunTable struct {
	tw   *TableWriter
	i    int
	plan *tablePlan
	mine []*tableCol // the run's column of each table column, nil where it lacks it
	rb   *array.RecordBuilder
	// rows are those of the row group being built, total those written before
	// it, logBytes the log bytes the row group was built from.
	rows, total int
	logBytes    int64
}

// NewTableWriter starts the analysis table of runs at path (written beside it
// and renamed into place by Close). Its columns are the union of the runs', in
// first-seen order (logs of different versions have different columns).
func NewTableWriter(ctx context.Context, path string, runs []TableRun, o TableOptions) (*TableWriter, error) {
	if len(runs) == 0 {
		return nil, errors.New("write turns table: no runs")
	}
	tw := &TableWriter{ctx: ctx, path: path, mem: o.Mem, index: map[string]int{}}
	if tw.mem == nil {
		tw.mem = memory.DefaultAllocator
	}
	tw.turn = sync.NewCond(&tw.mu)
	var cols []*tableCol
	for i := range runs {
		p, err := planRun(ctx, &runs[i], o.RunColumns)
		if err != nil {
			return nil, err
		}
		tw.runs = append(tw.runs, &RunTable{tw: tw, i: i, plan: p})
		tw.info.Warnings = append(tw.info.Warnings, p.warnings...)
		for _, c := range p.cols {
			if j, ok := tw.index[c.name]; ok {
				if !arrow.TypeEqual(cols[j].arrowType, c.arrowType) {
					return nil, fmt.Errorf("write turns table: column %q is %s in run %q but %s in an earlier run",
						c.name, c.arrowType, runs[i].Dir, cols[j].arrowType)
				}
				continue
			}
			tw.index[c.name] = len(cols)
			cols = append(cols, c)
		}
	}
	fields := make([]arrow.Field, len(cols))
	props := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithCreatedBy("agentrace version " + schemas.ToolVersion),
		parquet.WithMaxRowGroupLength(tableRowGroupRows),
		parquet.WithAllocator(tw.mem),
		parquet.WithDictionaryDefault(false),
	}
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.arrowType, Nullable: true}
		if c.arrowType.ID() == arrow.DICTIONARY {
			props = append(props, parquet.WithDictionaryFor(c.name, true))
		}
		tw.info.Columns = append(tw.info.Columns, c.name)
	}
	tw.schema = arrow.NewSchema(fields, nil)
	for _, rt := range tw.runs {
		rt.mine = make([]*tableCol, len(cols))
		for _, c := range rt.plan.cols {
			rt.mine[tw.index[c.name]] = c
		}
	}
	file, err := outguard.CreateAtomic(path)
	if err != nil {
		return nil, err
	}
	// pqarrow stores the Arrow schema in the footer (ARROW:schema) itself
	fw, err := pqarrow.NewFileWriter(tw.schema, file, parquet.NewWriterProperties(props...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(tw.mem)))
	if err == nil {
		if err = fw.AppendKeyValueMetadata(outguard.ParquetKey, TableKind); err != nil {
			fw.Close()
		}
	}
	if err != nil {
		file.Abort()
		return nil, fmt.Errorf("write turns table %q: %w", path, err)
	}
	tw.file, tw.fw = file, fw
	return tw, nil
}

// Run is the RunTable of runs[i] as NewTableWriter was given them.
func (tw *TableWriter) Run(i int) *RunTable { return tw.runs[i] }

// Fail stops the table: it will not be written (Close returns err), and a
// RunTable waiting for its turn returns ErrTableStopped. A run that cannot be closed (its
// read failed) must say so by Fail, or the runs after it wait for it.
func (tw *TableWriter) Fail(err error) {
	tw.mu.Lock()
	if tw.err == nil {
		tw.err = err
	}
	tw.mu.Unlock()
	tw.turn.Broadcast()
}

// Close writes the table's footer and puts the file in place, once every run
// is closed; otherwise (or after Fail) nothing is written.
func (tw *TableWriter) Close() (TableInfo, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.closed {
		return tw.info, errors.New("write turns table: closed twice")
	}
	tw.closed = true
	if tw.err == nil && tw.next < len(tw.runs) {
		tw.err = fmt.Errorf("run %q was not written", tw.runs[tw.next].plan.run.Dir)
	}
	if tw.err == nil {
		// Interrupted meanwhile: the temporary file is dropped, nothing replaced.
		tw.err = tw.ctx.Err()
	}
	err := tw.fw.Close()
	if tw.err != nil {
		tw.file.Abort()
		return tw.info, fmt.Errorf("write turns table %q: %w", tw.path, tw.err)
	}
	if err != nil {
		tw.file.Abort()
		return tw.info, fmt.Errorf("write turns table %q: %w", tw.path, err)
	}
	return tw.info, tw.file.Commit()
}

// Abort drops the table unless Close wrote it.
func (tw *TableWriter) Abort() {
	tw.mu.Lock()
	closed := tw.closed
	tw.mu.Unlock()
	if !closed {
		tw.Fail(errors.New("aborted"))
		_, _ = tw.Close()
	}
}

// Write adds the rows of a batch of the run's turn log, in log order, with the
// values of the run's Extra columns for those rows (extra[j][i] the value of
// Extra[j] for the batch's row i; NaN, or no value, is null). A batch that
// crosses the end of a row group is cut there; a full row group goes to the
// file when the runs before this one are closed (Write waits until then).
func (rt *RunTable) Write(b arrow.RecordBatch, extra ...[]float64) error {
	p := rt.plan
	p.extra = extra
	n := int(b.NumRows())
	for lo := 0; lo < n; {
		hi := min(n, lo+tableRowGroupRows-rt.rows)
		if rt.rb == nil {
			rt.rb = array.NewRecordBuilder(rt.tw.mem, rt.tw.schema)
		}
		for k, c := range rt.mine {
			if c == nil {
				rt.rb.Field(k).AppendNulls(hi - lo)
				continue
			}
			c.put(rt.rb.Field(k), b, lo, hi)
		}
		rt.rows += hi - lo
		lo = hi
		if rt.rows >= tableRowGroupRows {
			if err := rt.flush(); err != nil {
				return err
			}
		}
	}
	p.extra = nil
	if rt.logBytes += batchBytes(b); rt.logBytes >= tableRowGroupBytes {
		return rt.flush()
	}
	return nil
}

// flush writes the row group being built, in the run's turn.
func (rt *RunTable) flush() error {
	if rt.rb == nil {
		rt.logBytes = 0
		return nil
	}
	// a fresh builder per row group: one dictionary per column chunk
	rec := rt.rb.NewRecordBatch()
	rt.rb.Release()
	rt.rb = nil
	defer rec.Release()
	return rt.inTurn(func(tw *TableWriter) error {
		if err := tw.fw.Write(rec); err != nil {
			return err
		}
		rt.total += rt.rows
		rt.rows, rt.logBytes = 0, 0
		return nil
	})
}

// inTurn calls fn with the table locked once every run before this one is
// closed.
func (rt *RunTable) inTurn(fn func(tw *TableWriter) error) error {
	tw := rt.tw
	tw.mu.Lock()
	defer tw.mu.Unlock()
	for tw.next != rt.i && tw.err == nil {
		tw.turn.Wait()
	}
	if tw.err != nil {
		return ErrTableStopped
	}
	if err := tw.ctx.Err(); err != nil {
		return err
	}
	return fn(tw)
}

// Close writes the run's last row group, in its turn, and hands the turn to
// the next run. note is what the read of its log said of a log that is not a
// finished run's (runread.TurnScan.Note, LogRead.Note; "" for none): the
// table's warnings say that those rows are in it.
func (rt *RunTable) Close(note string) error {
	if note != "" {
		note = fmt.Sprintf("run %q: %s; they are in the table", rt.plan.run.Dir, note)
	}
	return rt.close(note)
}

// close is Close with the table's warning for the run ("" for none).
func (rt *RunTable) close(warning string) error {
	err := rt.flush()
	if rt.rb != nil {
		rt.rb.Release()
		rt.rb = nil
	}
	if err != nil {
		return err
	}
	return rt.inTurn(func(tw *TableWriter) error {
		tw.next++
		tw.info.Rows += rt.total
		if warning != "" {
			tw.info.Warnings = append(tw.info.Warnings, warning)
		}
		tw.turn.Broadcast()
		return nil
	})
}

// added is how many rows of the run were added so far.
func (rt *RunTable) added() int { return rt.total + rt.rows }

// fromLog reads the run's log (checked by ScanRun) into the table and closes
// the run. Extra columns take their values from TableRun.Extra.
func (rt *RunTable) fromLog(ctx context.Context) error {
	p := rt.plan
	f, err := p.openLog()
	if err != nil {
		rt.tw.Fail(err)
		return err
	}
	defer f.Close()
	extra := make([][]float64, len(p.run.Extra))
	lr, err := ScanRun(ctx, f, SizeOf(f), p.run.Manifest, rt.tw.mem, func(b arrow.RecordBatch) error {
		n := int(b.NumRows())
		if p.run.Rows > 0 {
			n = min(n, p.run.Rows-rt.added())
		}
		if n <= 0 {
			return nil
		}
		if n < int(b.NumRows()) {
			b = b.NewSlice(0, int64(n))
			defer b.Release()
		}
		at := rt.added()
		for j, x := range p.run.Extra {
			extra[j] = x.Values[min(at, len(x.Values)):min(at+n, len(x.Values))]
		}
		return rt.Write(b, extra...)
	})
	if err == nil {
		err = rt.flush()
	}
	if err == nil {
		for _, x := range p.run.Extra {
			if len(x.Values) != rt.total {
				err = fmt.Errorf("column %s has %d values for %d rows", x.Name, len(x.Values), rt.total)
			}
		}
	}
	if err != nil {
		rt.tw.Fail(err)
		return err
	}
	if rt.total < lr.Log.Rows {
		return rt.close(fmt.Sprintf("run %q: %s; the table holds the first %d, read earlier with the rest of its figures", p.run.Dir, lr.Note, rt.total))
	}
	return rt.Close(lr.Note)
}

// tableCol is one output column: its Arrow type and how it appends rows lo to hi
// (exclusive) of a log batch to its builder.
type tableCol struct {
	name      string
	arrowType arrow.DataType
	put       putFunc
}

type putFunc func(bld array.Builder, b arrow.RecordBatch, lo, hi int)

// rowsOf is a tableCol's put appending, for each row i, get(b, i) with add, or a
// null where get says there is no value.
func rowsOf[B interface {
	array.Builder
	*E
}, E any, T any](get func(b arrow.RecordBatch, i int) (T, bool), add func(B, T)) putFunc {
	return func(bld array.Builder, b arrow.RecordBatch, lo, hi int) {
		bb := bld.(B)
		for i := lo; i < hi; i++ {
			if v, ok := get(b, i); ok {
				add(bb, v)
			} else {
				bb.AppendNull()
			}
		}
	}
}

// Builders of the table's column types.
var (
	addString = (*array.StringBuilder).Append
	addInt32  = (*array.Int32Builder).Append
	addInt64  = (*array.Int64Builder).Append
	addBool   = (*array.BooleanBuilder).Append
	addDouble = (*array.Float64Builder).Append
	addTime   = func(b *array.TimestampBuilder, v int64) { b.Append(arrow.Timestamp(v)) }
	// AppendString fails only for a value of another type than the dictionary's
	addDict = func(b *array.BinaryDictionaryBuilder, s string) { _ = b.AppendString(s) }
)

// valueAt reads row i of column fi of type A, with its validity.
func valueAt[A interface {
	arrow.Array
	Value(int) T
}, T any](fi int) func(b arrow.RecordBatch, i int) (T, bool) {
	return func(b arrow.RecordBatch, i int) (T, bool) {
		a := b.Column(fi).(A)
		if a.IsNull(i) {
			var zero T
			return zero, false
		}
		return a.Value(i), true
	}
}

// present makes a value that stands for missing (schemas.TurnLogMissing: a
// version 3 log's -1 or "") null, as a version 4 log holds it.
func present[T comparable](get func(b arrow.RecordBatch, i int) (T, bool), missing T) func(b arrow.RecordBatch, i int) (T, bool) {
	return func(b arrow.RecordBatch, i int) (T, bool) {
		v, ok := get(b, i)
		return v, ok && v != missing
	}
}

type tablePlan struct {
	// extra are the Extra columns' values of the log batch being added
	// (RunTable.Write)
	extra    [][]float64
	run      *TableRun
	logPath  string
	cols     []*tableCol
	warnings []string
	expected ExpectedTurns
}

// openLog opens the run's turn log.
func (p *tablePlan) openLog() (io.ReadCloser, error) {
	if p.run.Open != nil {
		return p.run.Open()
	}
	f, err := infile.Open(p.logPath)
	if err != nil {
		return nil, fmt.Errorf("read turn log: %w", err)
	}
	return f, nil
}

// logSchema reads the schema at the start of a turn log.
func (p *tablePlan) logSchema() (*arrow.Schema, error) {
	path := p.logPath
	f, err := p.openLog()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd, err := newIPCReader(bufio.NewReader(f), SizeOf(f), memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("read turn log %q: %w: no Arrow IPC schema at its start: %v", path, ErrUnreadable, err)
	}
	defer rd.Release()
	if err := checkVersion(rd.Schema()); err != nil {
		return nil, fmt.Errorf("read turn log %q: %w", path, err)
	}
	return rd.Schema(), nil
}

// listType is the table's list<int64> (its elements never null).
var listType = arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int64})

// passThrough returns the Arrow type and put function of a log column kept as it
// is, or an error for a type the table does not take.
func passThrough(f arrow.Field, fi int) (arrow.DataType, putFunc, error) {
	switch f.Type.ID() {
	case arrow.STRING:
		return arrow.BinaryTypes.String, rowsOf(valueAt[*array.String](fi), addString), nil
	case arrow.INT32:
		return arrow.PrimitiveTypes.Int32, rowsOf(valueAt[*array.Int32](fi), addInt32), nil
	case arrow.INT64:
		return arrow.PrimitiveTypes.Int64, rowsOf(valueAt[*array.Int64](fi), addInt64), nil
	case arrow.BOOL:
		return arrow.FixedWidthTypes.Boolean, rowsOf(valueAt[*array.Boolean](fi), addBool), nil
	case arrow.FLOAT64:
		return arrow.PrimitiveTypes.Float64, rowsOf(valueAt[*array.Float64](fi), addDouble), nil
	case arrow.LIST:
		if f.Type.(*arrow.ListType).Elem().ID() != arrow.INT64 {
			break
		}
		return listType, func(bld array.Builder, b arrow.RecordBatch, lo, hi int) {
			lb := bld.(*array.ListBuilder)
			vb := lb.ValueBuilder().(*array.Int64Builder)
			a := b.Column(fi).(*array.List)
			vals := a.ListValues().(*array.Int64).Int64Values()
			for i := lo; i < hi; i++ {
				if a.IsNull(i) {
					lb.AppendNull()
					continue
				}
				start, end := a.ValueOffsets(i)
				lb.Append(true)
				vb.AppendValues(vals[start:end], nil)
			}
		}, nil
	}
	return nil, nil, fmt.Errorf("column %q of type %s: the turns table does not take this type", f.Name, f.Type)
}

func planRun(ctx context.Context, r *TableRun, runColumns bool) (*tablePlan, error) {
	p := &tablePlan{run: r, logPath: filepath.Join(r.Dir, schemas.TurnLogFile)}
	if r.Manifest == nil {
		m, err := ReadManifest(r.Dir)
		if err != nil {
			return nil, fmt.Errorf("run %q: %w", r.Dir, err)
		}
		r.Manifest = &m
	}
	schema, err := p.logSchema()
	if err != nil {
		return nil, fmt.Errorf("run %q: %w", r.Dir, err)
	}
	p.expected = r.Expected
	if p.expected == nil {
		exp, err := ReadExpectedTurns(ctx, DatasetDir(r.Dir, r.Manifest.Config))
		if err != nil {
			p.warnings = append(p.warnings, fmt.Sprintf("run %q: expected_turn left null: %v", r.Dir, err))
		} else {
			p.expected = exp
		}
	}
	m := r.Manifest
	started := m.StartedUnixNs

	col := func(name string) int {
		if idx := schema.FieldIndices(name); len(idx) > 0 {
			return idx[0]
		}
		return -1
	}
	add := func(name string, typ arrow.DataType, put putFunc) {
		p.cols = append(p.cols, &tableCol{name: name, arrowType: typ, put: put})
	}
	strAt := func(b arrow.RecordBatch, fi, i int) string {
		if fi < 0 {
			return ""
		}
		if a, ok := b.Column(fi).(*array.String); ok && a.IsValid(i) {
			return a.Value(i)
		}
		return ""
	}
	i64At := func(b arrow.RecordBatch, fi, i int) int64 {
		if fi < 0 {
			return 0
		}
		if a, ok := b.Column(fi).(*array.Int64); ok && a.IsValid(i) {
			return a.Value(i)
		}
		return 0
	}
	i32At := func(b arrow.RecordBatch, fi, i int) (int32, bool) {
		if fi < 0 {
			return 0, false
		}
		if a, ok := b.Column(fi).(*array.Int32); ok && a.IsValid(i) {
			return a.Value(i), true
		}
		return 0, false
	}
	constant := func(s string) func(arrow.RecordBatch, int) (string, bool) {
		return func(arrow.RecordBatch, int) (string, bool) { return s, true }
	}

	concurrency := int32(m.Config.Concurrency)
	add("concurrency", arrow.PrimitiveTypes.Int32, rowsOf(func(arrow.RecordBatch, int) (int32, bool) { return concurrency, true }, addInt32))
	if runColumns {
		add("run", dictType, rowsOf(constant(r.Run), addDict))
		add("system", dictType, rowsOf(constant(r.System), addDict))
	}
	iStatus, iError, iHTTP := col("status"), col("error"), col("http_status")
	iConv, iTurn := col("conversation_id"), col("turn")
	iSched, iIssued, iFirst, iDone := col("scheduled_ns"), col("issued_ns"), col("first_token_ns"), col("completed_ns")
	status := func(b arrow.RecordBatch, i int) (string, bool) {
		return strAt(b, iStatus, i), true
	}
	errorKind := rowsOf(func(b arrow.RecordBatch, i int) (string, bool) {
		code, _ := i32At(b, iHTTP, i)
		s, _ := status(b, i)
		k := ErrorKind(s, code, strAt(b, iError, i))
		return k, k != ""
	}, addDict)
	// msDiff is a duration column a - b (ms) of two run-clock times, null when
	// either is 0 (did not happen) or missing.
	msDiff := func(ia, ib int) putFunc {
		return rowsOf(func(b arrow.RecordBatch, i int) (float64, bool) {
			x, y := i64At(b, ia, i), i64At(b, ib, i)
			return float64(x-y) / 1e6, x != 0 && y != 0
		}, addDouble)
	}

	for fi, f := range schema.Fields() {
		switch {
		case f.Name == "turn" && f.Type.ID() == arrow.INT32:
			add("client_turn", arrow.PrimitiveTypes.Int32, rowsOf(valueAt[*array.Int32](fi), addInt32))
			add("expected_turn", arrow.PrimitiveTypes.Int32, rowsOf(func(b arrow.RecordBatch, i int) (int32, bool) {
				turn, ok := i32At(b, iTurn, i)
				if !ok || p.expected == nil {
					return 0, false
				}
				e, ok := p.expected(strAt(b, iConv, i), turn)
				return e, ok && e > 0
			}, addInt32))
		case f.Name == "status" && f.Type.ID() == arrow.STRING:
			add("status", dictType, rowsOf(status, addDict))
			add("issued", arrow.FixedWidthTypes.Boolean, rowsOf(func(b arrow.RecordBatch, i int) (bool, bool) {
				s, _ := status(b, i)
				return Issued(s, i64At(b, iIssued, i)), true
			}, addBool))
			if iError < 0 {
				add("error_kind", dictType, errorKind)
			}
		case f.Name == "error" && f.Type.ID() == arrow.STRING:
			add("error", dictType, rowsOf(present(valueAt[*array.String](fi), ""), addDict))
			add("error_kind", dictType, errorKind)
		case f.Type.ID() == arrow.STRING && dictColumns[f.Name]:
			get := valueAt[*array.String](fi)
			if missing, ok := schemas.TurnLogMissing(f.Name); ok {
				get = present(get, missing.(string))
			}
			add(f.Name, dictType, rowsOf(get, addDict))
		case f.Type.ID() == arrow.STRING:
			get := valueAt[*array.String](fi)
			if missing, ok := schemas.TurnLogMissing(f.Name); ok {
				get = present(get, missing.(string))
			}
			add(f.Name, arrow.BinaryTypes.String, rowsOf(get, addString))
		case f.Type.ID() == arrow.INT32:
			get := valueAt[*array.Int32](fi)
			if missing, ok := schemas.TurnLogMissing(f.Name); ok {
				get = present(get, missing.(int32))
			}
			add(f.Name, arrow.PrimitiveTypes.Int32, rowsOf(get, addInt32))
		case f.Type.ID() == arrow.INT64 && durationNs[f.Name]:
			typ, put, _ := passThrough(f, fi)
			add(f.Name, typ, put)
			add(strings.TrimSuffix(f.Name, "_ns")+"_ms", arrow.PrimitiveTypes.Float64, rowsOf(func(b arrow.RecordBatch, i int) (float64, bool) {
				return float64(i64At(b, fi, i)) / 1e6, true
			}, addDouble))
		case f.Type.ID() == arrow.INT64 && strings.HasSuffix(f.Name, "_ns"):
			typ, put, _ := passThrough(f, fi)
			add(f.Name, typ, put)
			add(strings.TrimSuffix(f.Name, "_ns")+"_at", timestampType, rowsOf(func(b arrow.RecordBatch, i int) (int64, bool) {
				v := i64At(b, fi, i)
				return started + v, v != 0
			}, addTime))
			if f.Name == "completed_ns" {
				// lag needs only the issue: a run-clock 0 schedule is a time here
				add("lag_ms", arrow.PrimitiveTypes.Float64, rowsOf(func(b arrow.RecordBatch, i int) (float64, bool) {
					x := i64At(b, iIssued, i)
					return float64(x-i64At(b, iSched, i)) / 1e6, x != 0
				}, addDouble))
				add("ttft_ms", arrow.PrimitiveTypes.Float64, msDiff(iFirst, iIssued))
				add("latency_ms", arrow.PrimitiveTypes.Float64, msDiff(iDone, iIssued))
				add("decode_ms", arrow.PrimitiveTypes.Float64, msDiff(iDone, iFirst))
			}
		default:
			typ, put, err := passThrough(f, fi)
			if err != nil {
				return nil, fmt.Errorf("run %q: %w", r.Dir, err)
			}
			add(f.Name, typ, put)
		}
	}
	for j, x := range r.Extra {
		value := func(i int) (float64, bool) {
			if j >= len(p.extra) || i >= len(p.extra[j]) || math.IsNaN(p.extra[j][i]) {
				return 0, false
			}
			return p.extra[j][i], true
		}
		if x.Count {
			add(x.Name, arrow.PrimitiveTypes.Int32, rowsOf(func(_ arrow.RecordBatch, i int) (int32, bool) {
				v, ok := value(i)
				return int32(v), ok
			}, addInt32))
			continue
		}
		add(x.Name, arrow.PrimitiveTypes.Float64, rowsOf(func(_ arrow.RecordBatch, i int) (float64, bool) { return value(i) }, addDouble))
	}
	return p, nil
}

// ReadExpectedTurns reads the expected assistant turn of every client turn of the
// dataset folder dir (its turns.parquet).
func ReadExpectedTurns(ctx context.Context, dir string) (ExpectedTurns, error) {
	if dir == "" {
		return nil, errors.New("the run's manifest names no dataset")
	}
	type row struct {
		ConversationID string `parquet:"conversation_id"`
		Turn           int32  `parquet:"turn"`
		ExpectedTurn   int32  `parquet:"expected_turn"`
	}
	rows, err := infile.ReadParquet[row](ctx, filepath.Join(dir, schemas.TurnsFile))
	if err != nil {
		return nil, fmt.Errorf("read dataset %q: %w", dir, err)
	}
	type key struct {
		conv string
		turn int32
	}
	m := make(map[key]int32, len(rows))
	for _, r := range rows {
		m[key{r.ConversationID, r.Turn}] = r.ExpectedTurn
	}
	return func(conv string, turn int32) (int32, bool) {
		e, ok := m[key{conv, turn}]
		return e, ok
	}, nil
}

// batchBytes is the size of a batch's buffers.
func batchBytes(b arrow.RecordBatch) int64 {
	var n int64
	var walk func(d arrow.ArrayData)
	walk = func(d arrow.ArrayData) {
		for _, buf := range d.Buffers() {
			if buf != nil {
				n += int64(buf.Len())
			}
		}
		for _, c := range d.Children() {
			walk(c)
		}
	}
	for _, c := range b.Columns() {
		walk(c.Data())
	}
	return n
}
