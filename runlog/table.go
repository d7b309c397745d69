package runlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"unsafe"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/encoding"
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
// The Parquet file also carries its Arrow schema (footer key ARROW:schema, as
// pyarrow writes it), so pandas reads the dictionary-encoded columns as categories
// and timestamps as UTC datetimes, and polars as categoricals. Rows keep the log's
// order. A table is written in row groups of at most tableRowGroupRows rows or
// tableRowGroupBytes bytes of log, so memory stays bounded by those, not by the
// log's size.

// TableFile is the analysis table of a run folder (and of a report folder, for
// all its runs).
const TableFile = "turns.parquet"

// TableKind is the value of the Parquet footer key agentrace.kind (TableKindKey)
// that marks an analysis table (internal/outguard recognizes agentrace's outputs by
// it).
const TableKind = "turns-table"

// TableKindKey is the Parquet footer key naming the kind of an agentrace output.
const TableKindKey = "agentrace.kind"

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
	// names the run in messages. WriteTable opens it twice.
	Open func() (io.ReadCloser, error)
	// Extra are columns computed elsewhere (the report's per-turn token counts),
	// one value per log row in log order; NaN is null. They follow the log's.
	Extra []ExtraColumn
	// Rows, when > 0, is how many rows an earlier read of the log took (the
	// report's points): the table takes those, no more, from a log that grew
	// meanwhile (a run still being written; its batches only ever append).
	Rows int
}

// ExtraColumn is a float64 column added to a run's rows.
type ExtraColumn struct {
	Name   string
	Values []float64
}

// TableOptions configure WriteTable.
type TableOptions struct {
	// RunColumns adds the run and system columns (a table of several runs).
	RunColumns bool
	// Mem allocates the Arrow buffers of the logs read; nil uses the default.
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
	var info TableInfo
	if len(runs) == 0 {
		return info, errors.New("write turns table: no runs")
	}
	mem := o.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	// One plan per run (logs of different versions have different columns); the
	// table's columns are their union, in first-seen order.
	plans := make([]*tablePlan, len(runs))
	var cols []*tableCol
	index := map[string]int{}
	for i := range runs {
		p, err := planRun(&runs[i], o.RunColumns)
		if err != nil {
			return info, err
		}
		plans[i] = p
		info.Warnings = append(info.Warnings, p.warnings...)
		for _, c := range p.cols {
			if j, ok := index[c.name]; ok {
				if !arrow.TypeEqual(cols[j].arrowType, c.arrowType) {
					return info, fmt.Errorf("write turns table: column %q is %s in run %q but %s in an earlier run",
						c.name, c.arrowType, runs[i].Dir, cols[j].arrowType)
				}
				continue
			}
			index[c.name] = len(cols)
			cols = append(cols, c)
		}
	}
	group := make(orderedGroup, len(cols))
	afields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		group[i] = namedNode{Node: c.node, name: c.name}
		afields[i] = arrow.Field{Name: c.name, Type: c.arrowType, Nullable: true}
		info.Columns = append(info.Columns, c.name)
	}
	arrowSchema, err := serializeArrowSchema(arrow.NewSchema(afields, nil))
	if err != nil {
		return info, fmt.Errorf("write turns table: %w", err)
	}
	schema := parquet.NewSchema("turns", group)
	err = outguard.AtomicWrite(path, func(w io.Writer) error {
		pw := parquet.NewWriter(w, schema,
			parquet.Compression(&zstd.Codec{}),
			parquet.CreatedBy("agentrace", schemas.ToolVersion, ""),
			parquet.KeyValueMetadata("ARROW:schema", arrowSchema),
			parquet.KeyValueMetadata(TableKindKey, TableKind),
		)
		for i, p := range plans {
			n, warn, err := p.write(ctx, pw, index, len(cols), mem)
			info.Rows += n
			if warn != "" {
				info.Warnings = append(info.Warnings, warn)
			}
			if err != nil {
				return fmt.Errorf("write turns table %q from run %q: %w", path, runs[i].Dir, err)
			}
		}
		if err := pw.Close(); err != nil {
			return fmt.Errorf("write turns table %q: %w", path, err)
		}
		// Interrupted meanwhile: the temporary file is dropped, nothing replaced.
		return ctx.Err()
	})
	return info, err
}

// serializeArrowSchema returns the Arrow schema as pyarrow stores it in a Parquet
// footer: the base64 of its IPC schema message.
func serializeArrowSchema(s *arrow.Schema) (string, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(s))
	if err := w.Close(); err != nil {
		return "", err
	}
	msg := buf.Bytes()
	// the stream is the schema message followed by the end-of-stream marker
	msg = bytes.TrimSuffix(msg, eos)
	return base64.StdEncoding.EncodeToString(msg), nil
}

// orderedGroup is a Parquet group whose fields keep their order (parquet.Group
// sorts them by name).
type orderedGroup []parquet.Field

func (g orderedGroup) ID() int                     { return 0 }
func (g orderedGroup) String() string              { return fmt.Sprintf("group of %d fields", len(g)) }
func (g orderedGroup) Type() parquet.Type          { return parquet.Group{}.Type() }
func (g orderedGroup) Optional() bool              { return false }
func (g orderedGroup) Repeated() bool              { return false }
func (g orderedGroup) Required() bool              { return true }
func (g orderedGroup) Leaf() bool                  { return false }
func (g orderedGroup) Fields() []parquet.Field     { return g }
func (g orderedGroup) Encoding() encoding.Encoding { return nil }
func (g orderedGroup) Compression() compress.Codec { return nil }
func (g orderedGroup) GoType() reflect.Type        { return reflect.TypeOf(map[string]any{}) }

type namedNode struct {
	parquet.Node
	name string
}

func (n namedNode) Name() string                           { return n.name }
func (n namedNode) Value(base reflect.Value) reflect.Value { return reflect.Value{} }

// tableCol is one output column: its Parquet node, its Arrow type (for the
// footer's Arrow schema) and how it adds row i of a log batch to a row.
type tableCol struct {
	name      string
	node      parquet.Node
	arrowType arrow.DataType
	put       func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row
}

type tablePlan struct {
	// ordinal is the run's row being written (Extra's index)
	ordinal  int
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

// Parquet leaves of the table, all optional.
var (
	nodeString = parquet.Optional(parquet.String())
	nodeDict   = parquet.Optional(parquet.Encoded(parquet.String(), &parquet.RLEDictionary))
	nodeInt32  = parquet.Optional(parquet.Int(32))
	nodeInt64  = parquet.Optional(parquet.Int(64))
	nodeBool   = parquet.Optional(parquet.Leaf(parquet.BooleanType))
	nodeDouble = parquet.Optional(parquet.Leaf(parquet.DoubleType))
	nodeTime   = parquet.Optional(parquet.Timestamp(parquet.Nanosecond))
)

func null(row parquet.Row, col int) parquet.Row {
	return append(row, parquet.NullValue().Level(0, 0, col))
}

func str(row parquet.Row, s string, col int) parquet.Row {
	return append(row, parquet.ByteArrayValue(unsafe.Slice(unsafe.StringData(s), len(s))).Level(0, 1, col))
}

// passThrough returns the node, Arrow type and row function of a log column kept as
// it is, or an error for a type the table does not take.
func passThrough(f arrow.Field, fi int) (parquet.Node, arrow.DataType, func(parquet.Row, arrow.RecordBatch, int, int) parquet.Row, error) {
	switch f.Type.ID() {
	case arrow.STRING:
		return nodeString, arrow.BinaryTypes.String, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
			a := b.Column(fi).(*array.String)
			if a.IsNull(i) {
				return null(row, col)
			}
			return str(row, a.Value(i), col)
		}, nil
	case arrow.INT32:
		return nodeInt32, arrow.PrimitiveTypes.Int32, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
			a := b.Column(fi).(*array.Int32)
			if a.IsNull(i) {
				return null(row, col)
			}
			return append(row, parquet.Int32Value(a.Value(i)).Level(0, 1, col))
		}, nil
	case arrow.INT64:
		return nodeInt64, arrow.PrimitiveTypes.Int64, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
			a := b.Column(fi).(*array.Int64)
			if a.IsNull(i) {
				return null(row, col)
			}
			return append(row, parquet.Int64Value(a.Value(i)).Level(0, 1, col))
		}, nil
	case arrow.BOOL:
		return nodeBool, arrow.FixedWidthTypes.Boolean, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
			a := b.Column(fi).(*array.Boolean)
			if a.IsNull(i) {
				return null(row, col)
			}
			return append(row, parquet.BooleanValue(a.Value(i)).Level(0, 1, col))
		}, nil
	case arrow.FLOAT64:
		return nodeDouble, arrow.PrimitiveTypes.Float64, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
			a := b.Column(fi).(*array.Float64)
			if a.IsNull(i) {
				return null(row, col)
			}
			return append(row, parquet.DoubleValue(a.Value(i)).Level(0, 1, col))
		}, nil
	case arrow.LIST:
		lt := f.Type.(*arrow.ListType)
		if lt.Elem().ID() != arrow.INT64 {
			break
		}
		// optional LIST { repeated group list { required int64 element } }:
		// definition level 0 = null, 1 = empty, 2 = an element
		node := parquet.Optional(parquet.List(parquet.Int(64)))
		typ := arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int64})
		return node, typ, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
			a := b.Column(fi).(*array.List)
			if a.IsNull(i) {
				return null(row, col)
			}
			start, end := a.ValueOffsets(i)
			if start == end {
				return append(row, parquet.NullValue().Level(0, 1, col))
			}
			vals := a.ListValues().(*array.Int64)
			for k := start; k < end; k++ {
				rep := 1
				if k == start {
					rep = 0
				}
				row = append(row, parquet.Int64Value(vals.Value(int(k))).Level(rep, 2, col))
			}
			return row
		}, nil
	}
	return nil, nil, nil, fmt.Errorf("column %q of type %s: the turns table does not take this type", f.Name, f.Type)
}

func planRun(r *TableRun, runColumns bool) (*tablePlan, error) {
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
		exp, err := ReadExpectedTurns(DatasetDir(r.Dir, r.Manifest.Config))
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
	add := func(name string, node parquet.Node, typ arrow.DataType, put func(parquet.Row, arrow.RecordBatch, int, int) parquet.Row) {
		p.cols = append(p.cols, &tableCol{name: name, node: node, arrowType: typ, put: put})
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

	concurrency := int32(m.Config.Concurrency)
	add("concurrency", nodeInt32, arrow.PrimitiveTypes.Int32, func(row parquet.Row, _ arrow.RecordBatch, _, col int) parquet.Row {
		return append(row, parquet.Int32Value(concurrency).Level(0, 1, col))
	})
	if runColumns {
		add("run", nodeDict, dictType, func(row parquet.Row, _ arrow.RecordBatch, _, col int) parquet.Row { return str(row, r.Run, col) })
		add("system", nodeDict, dictType, func(row parquet.Row, _ arrow.RecordBatch, _, col int) parquet.Row { return str(row, r.System, col) })
	}
	iStatus, iError, iHTTP := col("status"), col("error"), col("http_status")
	iConv, iTurn := col("conversation_id"), col("turn")
	iSched, iIssued, iFirst, iDone := col("scheduled_ns"), col("issued_ns"), col("first_token_ns"), col("completed_ns")
	status := func(b arrow.RecordBatch, i int) string {
		return strAt(b, iStatus, i)
	}
	errorKind := func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
		code, _ := i32At(b, iHTTP, i)
		if k := ErrorKind(status(b, i), code, strAt(b, iError, i)); k != "" {
			return str(row, k, col)
		}
		return null(row, col)
	}
	// msDiff is a duration column a - b (ms) of two run-clock times, null when
	// either is 0 (did not happen) or missing.
	msDiff := func(ia, ib int) func(parquet.Row, arrow.RecordBatch, int, int) parquet.Row {
		return func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
			x, y := i64At(b, ia, i), i64At(b, ib, i)
			if x == 0 || y == 0 {
				return null(row, col)
			}
			return append(row, parquet.DoubleValue(float64(x-y)/1e6).Level(0, 1, col))
		}
	}

	for fi, f := range schema.Fields() {
		switch {
		case f.Name == "turn" && f.Type.ID() == arrow.INT32:
			add("client_turn", nodeInt32, arrow.PrimitiveTypes.Int32, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
				if v, ok := i32At(b, fi, i); ok {
					return append(row, parquet.Int32Value(v).Level(0, 1, col))
				}
				return null(row, col)
			})
			add("expected_turn", nodeInt32, arrow.PrimitiveTypes.Int32, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
				turn, ok := i32At(b, iTurn, i)
				if !ok || p.expected == nil {
					return null(row, col)
				}
				if e, ok := p.expected(strAt(b, iConv, i), turn); ok && e > 0 {
					return append(row, parquet.Int32Value(e).Level(0, 1, col))
				}
				return null(row, col)
			})
		case f.Name == "status" && f.Type.ID() == arrow.STRING:
			add("status", nodeDict, dictType, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
				return str(row, status(b, i), col)
			})
			add("issued", nodeBool, arrow.FixedWidthTypes.Boolean, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
				return append(row, parquet.BooleanValue(Issued(status(b, i), i64At(b, iIssued, i))).Level(0, 1, col))
			})
			if iError < 0 {
				add("error_kind", nodeDict, dictType, errorKind)
			}
		case f.Name == "error" && f.Type.ID() == arrow.STRING:
			add("error", nodeDict, dictType, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
				return str(row, strAt(b, fi, i), col)
			})
			add("error_kind", nodeDict, dictType, errorKind)
		case f.Type.ID() == arrow.STRING && dictColumns[f.Name]:
			add(f.Name, nodeDict, dictType, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
				a := b.Column(fi).(*array.String)
				if a.IsNull(i) {
					return null(row, col)
				}
				return str(row, a.Value(i), col)
			})
		case f.Type.ID() == arrow.INT64 && durationNs[f.Name]:
			node, typ, put, _ := passThrough(f, fi)
			add(f.Name, node, typ, put)
			add(strings.TrimSuffix(f.Name, "_ns")+"_ms", nodeDouble, arrow.PrimitiveTypes.Float64, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
				return append(row, parquet.DoubleValue(float64(i64At(b, fi, i))/1e6).Level(0, 1, col))
			})
		case f.Type.ID() == arrow.INT64 && strings.HasSuffix(f.Name, "_ns"):
			node, typ, put, _ := passThrough(f, fi)
			add(f.Name, node, typ, put)
			add(strings.TrimSuffix(f.Name, "_ns")+"_at", nodeTime, timestampType, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
				v := i64At(b, fi, i)
				if v == 0 {
					return null(row, col)
				}
				return append(row, parquet.Int64Value(started+v).Level(0, 1, col))
			})
			if f.Name == "completed_ns" {
				// lag needs only the issue: a run-clock 0 schedule is a time here
				add("lag_ms", nodeDouble, arrow.PrimitiveTypes.Float64, func(row parquet.Row, b arrow.RecordBatch, i, col int) parquet.Row {
					x := i64At(b, iIssued, i)
					if x == 0 {
						return null(row, col)
					}
					return append(row, parquet.DoubleValue(float64(x-i64At(b, iSched, i))/1e6).Level(0, 1, col))
				})
				add("ttft_ms", nodeDouble, arrow.PrimitiveTypes.Float64, msDiff(iFirst, iIssued))
				add("latency_ms", nodeDouble, arrow.PrimitiveTypes.Float64, msDiff(iDone, iIssued))
				add("decode_ms", nodeDouble, arrow.PrimitiveTypes.Float64, msDiff(iDone, iFirst))
			}
		default:
			node, typ, put, err := passThrough(f, fi)
			if err != nil {
				return nil, fmt.Errorf("run %q: %w", r.Dir, err)
			}
			add(f.Name, node, typ, put)
		}
	}
	for _, x := range r.Extra {
		vals := x.Values
		add(x.Name, nodeDouble, arrow.PrimitiveTypes.Float64, func(row parquet.Row, _ arrow.RecordBatch, _, col int) parquet.Row {
			k := p.ordinal
			if k >= len(vals) || math.IsNaN(vals[k]) {
				return null(row, col)
			}
			return append(row, parquet.DoubleValue(vals[k]).Level(0, 1, col))
		})
	}
	return p, nil
}

// write streams the run's log into pw, one row group per tableRowGroupRows rows or
// tableRowGroupBytes bytes of log. It returns the rows written and a warning when
// the log was cut short.
func (p *tablePlan) write(ctx context.Context, pw *parquet.Writer, index map[string]int, ncols int, mem memory.Allocator) (int, string, error) {
	f, err := p.openLog()
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	// the run's column for each table column, nil where the run lacks it
	mine := make([]*tableCol, ncols)
	for _, c := range p.cols {
		mine[index[c.name]] = c
	}
	var (
		rows        []parquet.Row
		held        []arrow.RecordBatch
		total       int
		bufferBytes int64
	)
	release := func() {
		for _, b := range held {
			b.Release()
		}
		held, rows, bufferBytes = held[:0], rows[:0], 0
	}
	defer release()
	flush := func() error {
		if len(rows) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := pw.WriteRows(rows); err != nil {
			return err
		}
		if err := pw.Flush(); err != nil {
			return err
		}
		total += len(rows)
		release()
		return nil
	}
	lr, serr := ScanRun(ctx, f, SizeOf(f), p.run.Manifest, mem, func(b arrow.RecordBatch) error {
		n := int(b.NumRows())
		if p.run.Rows > 0 {
			n = min(n, p.run.Rows-(total+len(rows)))
		}
		if n <= 0 {
			return nil
		}
		b.Retain() // the rows point into its strings until they are written
		held = append(held, b)
		for i := range n {
			var row parquet.Row
			p.ordinal = total + len(rows)
			for k, c := range mine {
				if c == nil {
					row = null(row, k)
					continue
				}
				row = c.put(row, b, i, k)
			}
			rows = append(rows, row)
		}
		bufferBytes += batchBytes(b)
		if len(rows) >= tableRowGroupRows || bufferBytes >= tableRowGroupBytes {
			return flush()
		}
		return nil
	})
	if serr != nil {
		return total, "", serr
	}
	if err := flush(); err != nil {
		return total, "", err
	}
	for _, x := range p.run.Extra {
		if len(x.Values) != total {
			return total, "", fmt.Errorf("column %s has %d values for %d rows", x.Name, len(x.Values), total)
		}
	}
	switch {
	case total < lr.Log.Rows:
		return total, fmt.Sprintf("run %q: %s; the table holds the first %d, read earlier with the rest of its figures", p.run.Dir, lr.Note, total), nil
	case lr.Note != "":
		return total, fmt.Sprintf("run %q: %s; they are in the table", p.run.Dir, lr.Note), nil
	}
	return total, "", nil
}

// ReadExpectedTurns reads the expected assistant turn of every client turn of the
// dataset folder dir (its turns.parquet).
func ReadExpectedTurns(dir string) (ExpectedTurns, error) {
	if dir == "" {
		return nil, errors.New("the run's manifest names no dataset")
	}
	type row struct {
		ConversationID string `parquet:"conversation_id"`
		Turn           int32  `parquet:"turn"`
		ExpectedTurn   int32  `parquet:"expected_turn"`
	}
	rows, err := parquet.ReadFile[row](filepath.Join(dir, schemas.TurnsFile))
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
