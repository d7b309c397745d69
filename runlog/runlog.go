// Package runlog writes and reads a replay run's turn log, turns.arrows: an Arrow
// IPC stream with schema schemas.TurnLogSchema, one row per client turn of every
// trajectory instance (issued or aborted), and the run's manifest.json.
//
// The log is streamed, not written atomically: the replay engine's single log
// goroutine appends rows with Writer.Write and calls Writer.Flush at least once a
// second, each Flush ending one record batch on disk. A crash therefore loses at
// most the rows since the last flush, and ReadFile returns every complete batch of
// such a stream together with an error matching ErrTruncated. A Writer is not safe
// for concurrent use: exactly one goroutine owns it, as arrow-go's IPC writer
// requires.
package runlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/redact"
	"github.com/agentrace/agentrace/internal/relpath"
	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// MaxBatchRows is the number of buffered rows at which Write ends a batch on its
// own, so that a burst of turns between two timed flushes stays bounded in memory.
const MaxBatchRows = 4096

// MaxBatchBytes is the size of the buffered rows' variable-length data (strings
// and chunk times) at which Write ends a batch on its own: memory stays bounded,
// and an Arrow string column's 32-bit offsets (2 GiB a batch) are never reached.
const MaxBatchBytes = 64 << 20

// ErrTruncated reports a turn log that did not end properly: the stream stops
// inside a message or lacks its end-of-stream marker (the writer never closed it,
// e.g. the process was killed). The records of the complete batches are still
// returned beside it.
var ErrTruncated = errors.New("turn log truncated")

// ErrUnreadable reports a file that is not a turn log at all: empty (a run killed
// before its first write), or without a readable Arrow IPC schema (random bytes,
// another format). Nothing can be recovered from it; a run with such a log cannot
// be scored or reported.
var ErrUnreadable = errors.New("not a readable turn log")

// ErrNoRows reports a turn log cut short before its first complete batch: it is
// a turn log, but not one row of it can be read.
var ErrNoRows = errors.New("no complete row")

// CheckRecovered turns a truncated log from which no row was recovered (err
// matches ErrTruncated, rows == 0) into an error matching ErrNoRows too; any other
// err is returned as it is. Readers that accept a partial log (the rows of its
// complete batches) call it, so that an empty result is never mistaken for a run
// that issued nothing.
func CheckRecovered(err error, rows int) error {
	if rows == 0 && errors.Is(err, ErrTruncated) && !errors.Is(err, ErrNoRows) {
		return fmt.Errorf("%w (%w)", ErrNoRows, err)
	}
	return err
}

// Writer appends TurnRecords to an Arrow IPC stream. It buffers rows in memory and
// writes them as one record batch on Flush (or when MaxBatchRows are buffered).
// Exactly one goroutine may use a Writer.
type Writer struct {
	bw    *bufio.Writer
	ipcw  *ipc.Writer
	b     *array.RecordBuilder
	cols  []column
	rows  int
	bytes int   // variable-length data of the buffered rows
	max   int   // MaxBatchBytes (tests lower it)
	err   error // sticky: the first write error
}

// NewWriter starts a turn log on w, writing the schema at once so that even an
// empty log is a readable stream. mem allocates the batches (memory.DefaultAllocator
// when nil). Close ends the stream; it does not close w.
func NewWriter(w io.Writer, mem memory.Allocator) (*Writer, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	schema := schemas.TurnLogSchema()
	cols, err := bindColumns(schema)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	lw := &Writer{
		bw:   bw,
		ipcw: ipc.NewWriter(bw, ipc.WithSchema(schema), ipc.WithAllocator(mem)),
		b:    array.NewRecordBuilder(mem, schema),
		cols: cols,
		max:  MaxBatchBytes,
	}
	// An empty batch makes the IPC writer emit the schema message now.
	if err := lw.writeBatch(); err != nil {
		lw.b.Release()
		return nil, err
	}
	if err := lw.bw.Flush(); err != nil {
		lw.b.Release()
		return nil, fmt.Errorf("write turn log schema: %w", err)
	}
	return lw, nil
}

// Write appends one row. It ends a batch on its own when MaxBatchRows are buffered.
func (w *Writer) Write(r *schemas.TurnRecord) error {
	if w.err != nil {
		return w.err
	}
	for i, c := range w.cols {
		c.put(w.b.Field(i), r)
	}
	w.rows++
	w.bytes += rowBytes(r)
	if w.rows >= MaxBatchRows || w.bytes >= w.max {
		return w.Flush()
	}
	return nil
}

// rowBytes is the variable-length data a row adds to a batch.
func rowBytes(r *schemas.TurnRecord) int {
	return len(r.SessionID) + len(r.ConversationID) + len(r.Domain) + len(r.Status) + len(r.Error) +
		len(r.Warnings) + len(r.OutputContent) + len(r.OutputReasoning) + len(r.OutputToolCalls) +
		len(r.FinishReason) + len(r.TPOTToolCalls) + 8*len(r.ChunkTimesNs) + 8*len(r.ToolCallChunkTimesNs)
}

// Buffered returns the number of rows written since the last batch ended.
func (w *Writer) Buffered() int { return w.rows }

// Flush ends the current batch (if it has rows) and pushes it to the underlying
// writer. Call it at least once a second.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.rows > 0 {
		if err := w.writeBatch(); err != nil {
			return err
		}
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("flush turn log: %w", err)
		return w.err
	}
	return nil
}

func (w *Writer) writeBatch() error {
	rec := w.b.NewRecordBatch()
	defer rec.Release()
	w.rows, w.bytes = 0, 0
	if err := w.ipcw.Write(rec); err != nil {
		w.err = fmt.Errorf("write turn log batch: %w", err)
		return w.err
	}
	return nil
}

// Close flushes the buffered rows, writes the end-of-stream marker and releases
// the Writer's memory. It does not close the underlying writer.
func (w *Writer) Close() error {
	defer w.b.Release()
	err := w.Flush()
	if cerr := w.ipcw.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close turn log stream: %w", cerr)
	}
	if ferr := w.bw.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("flush turn log: %w", ferr)
	}
	if err != nil && w.err == nil {
		w.err = err
	}
	return err
}

// File is a Writer on a file it owns: Close also syncs and closes the file. It
// knows where its last complete batch ends, so that a log whose writing failed
// (a full disk) can be cut back to its flushed rows by Abort.
type File struct {
	*Writer
	f  *os.File
	cw *countingWriter
	// good is the file offset after the last successful Flush: every byte before
	// it belongs to complete messages.
	good int64
}

// countingWriter counts the bytes that reached the file.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Create creates (or truncates) path and starts a turn log in it.
func Create(path string, mem memory.Allocator) (*File, error) {
	return CreateWrapped(path, mem, nil)
}

// CreateWrapped is Create with the file's writer wrapped by wrap (when not nil):
// tests inject write faults, such as a disk that fills up, this way.
func CreateWrapped(path string, mem memory.Allocator, wrap func(io.Writer) io.Writer) (*File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create turn log: %w", err)
	}
	var w io.Writer = f
	if wrap != nil {
		w = wrap(f)
	}
	cw := &countingWriter{w: w}
	lw, err := NewWriter(cw, mem)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start turn log %q: %w", path, err)
	}
	return &File{Writer: lw, f: f, cw: cw, good: cw.n}, nil
}

// Flush ends the current batch and pushes it to the file; on success every row
// written so far is on the file.
func (f *File) Flush() error {
	if err := f.Writer.Flush(); err != nil {
		return err
	}
	f.good = f.cw.n
	return nil
}

// Close ends the stream, syncs and closes the file.
func (f *File) Close() error {
	err := f.Writer.Close()
	if err == nil {
		f.good = f.cw.n
	}
	if serr := f.f.Sync(); serr != nil && err == nil {
		err = fmt.Errorf("sync turn log %q: %w", f.f.Name(), serr)
	}
	if cerr := f.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close turn log %q: %w", f.f.Name(), cerr)
	}
	return err
}

// Abort ends a log whose writing failed: it drops the rows not yet flushed, cuts
// the file back to the end of its last complete batch (freeing what a failed
// write left behind), appends the end-of-stream marker if it can, syncs and
// closes the file. The log then reads every row flushed before the failure; if
// even the marker cannot be written, it reads them with ErrTruncated. It returns
// the first error of those steps.
func (f *File) Abort() error {
	f.Writer.b.Release()
	var err error
	if terr := f.f.Truncate(f.good); terr != nil {
		err = fmt.Errorf("cut turn log %q back to its last batch: %w", f.f.Name(), terr)
	} else if _, werr := f.f.WriteAt(eos, f.good); werr != nil {
		err = fmt.Errorf("end turn log %q: %w", f.f.Name(), werr)
		_ = f.f.Truncate(f.good)
	}
	if serr := f.f.Sync(); serr != nil && err == nil {
		err = fmt.Errorf("sync turn log %q: %w", f.f.Name(), serr)
	}
	if cerr := f.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close turn log %q: %w", f.f.Name(), cerr)
	}
	return err
}

// eos is the IPC stream's end-of-stream marker: continuation token, zero length.
var eos = []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}

// tailReader remembers the last 8 bytes read through it.
type tailReader struct {
	r    io.Reader
	tail [8]byte
	n    int
}

func (t *tailReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n >= 8 {
		copy(t.tail[:], p[n-8:n])
	} else if n > 0 {
		copy(t.tail[:], t.tail[n:])
		copy(t.tail[8-n:], p[:n])
	}
	t.n += n
	return n, err
}

// MaxMessageBytes bounds an IPC message of a turn log of unknown size (a stream):
// a batch holds at most MaxBatchBytes of data plus one row.
const MaxMessageBytes = 256 << 20

// maxMetadataBytes bounds an IPC message's metadata (a schema, a batch's
// buffers): a few KB in a turn log.
const maxMetadataBytes = 16 << 20

// SizeOf is the size of r when it is a file (it has Stat), else -1.
func SizeOf(r io.Reader) int64 {
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			return st.Size()
		}
	}
	return -1
}

// newIPCReader is ipc.NewReader with message sizes bounded by size (the stream's
// length, < 0 when unknown).
func newIPCReader(r io.Reader, size int64, mem memory.Allocator) (*ipc.Reader, error) {
	body := int64(MaxMessageBytes)
	if size >= 0 {
		body = max(size, 1)
	}
	mr := ipc.NewMessageReader(r, ipc.WithAllocator(mem), ipc.WithMetadataSizeLimit(min(maxMetadataBytes, body)), ipc.WithBodySizeLimit(body))
	rd, err := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(mem))
	if err != nil {
		mr.Release()
		return nil, err
	}
	return rd, nil
}

// ErrVersion reports a turn log of another version than schemas.TurnLogVersion.
var ErrVersion = errors.New("unsupported turn log version")

// checkVersion refuses a turn log whose schema is of a version readers do not
// take (schemas.TurnLogVersionRead: versions 1 and 2 were development builds'
// before 0.1.0).
func checkVersion(schema *arrow.Schema) error {
	if v := Version(schema); !schemas.TurnLogVersionRead(v) {
		return fmt.Errorf("%w: the turn log is version %s, this agentrace reads version %s (replay the run again)", ErrVersion, v, schemas.TurnLogVersion)
	}
	return nil
}

// Scan reads a turn log stream of size bytes (< 0: unknown; SizeOf tells a
// file's) batch by batch, calling fn with each batch (valid only during the
// call). When the stream is truncated, fn has seen every complete batch and the
// error matches ErrTruncated; a stream that is not a turn log at all (empty,
// random bytes) gives an error matching ErrUnreadable.
//
// Whatever the stream holds, no message larger than the stream itself (a file's
// size) or MaxMessageBytes (a stream of unknown size) is allocated: random bytes
// must not make the reader allocate the 2 GiB a garbage length claims.
//
// It stops when ctx is done (checked at every read and every batch), returning
// ctx's error, never a truncation: a command interrupted while it reads a log
// stops at once instead of reading it to the end.
func Scan(ctx context.Context, r io.Reader, size int64, mem memory.Allocator, fn func(arrow.RecordBatch) error) (err error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	defer func() {
		if cerr := ctx.Err(); cerr != nil && err != nil {
			err = cerr
		}
	}()
	tr := &tailReader{r: bufio.NewReaderSize(infile.Reader(ctx, r), 256<<10)}
	rd, err := newIPCReader(tr, size, mem)
	if err != nil {
		if tr.n == 0 {
			return fmt.Errorf("%w: empty file", ErrUnreadable)
		}
		return fmt.Errorf("%w: no Arrow IPC schema at its start: %v", ErrUnreadable, err)
	}
	defer rd.Release()
	if err := checkVersion(rd.Schema()); err != nil {
		return err
	}
	for rd.Next() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(rd.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rd.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrTruncated, err)
	}
	if !bytes.Equal(tr.tail[:], eos) {
		return fmt.Errorf("%w: no end-of-stream marker (the writer did not close it)", ErrTruncated)
	}
	return nil
}

// Read reads every record of a turn log stream, until ctx is done. On a
// truncated stream it returns the records of the complete batches and an error
// matching ErrTruncated; any other error returns no records.
func Read(ctx context.Context, r io.Reader, mem memory.Allocator) ([]schemas.TurnRecord, error) {
	var out []schemas.TurnRecord
	err := Scan(ctx, r, SizeOf(r), mem, func(rec arrow.RecordBatch) error {
		var err error
		out, err = AppendRecords(out, rec)
		return err
	})
	if err != nil && !errors.Is(err, ErrTruncated) {
		return nil, err
	}
	return out, err
}

// ReadFile reads a whole turns.arrows. Like Read, a truncated log (a crashed or
// killed run) yields the rows of its complete batches plus an error matching
// ErrTruncated; callers that accept partial logs test for it with errors.Is. When
// no row was recovered the error matches ErrNoRows too (CheckRecovered).
func ReadFile(ctx context.Context, path string) ([]schemas.TurnRecord, error) {
	f, err := infile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read turn log: %w", err)
	}
	defer f.Close()
	recs, err := Read(ctx, f, memory.DefaultAllocator)
	if err = CheckRecovered(err, len(recs)); err != nil {
		return recs, fmt.Errorf("read turn log %q: %w", path, err)
	}
	return recs, nil
}

// Version returns the turn-log version of a log's schema ("1" when it has none).
func Version(schema *arrow.Schema) string {
	md := schema.Metadata()
	if i := md.FindKey(schemas.TurnLogVersionKey); i >= 0 {
		return md.Values()[i]
	}
	return "1"
}

// AppendRecords converts the rows of one turn-log batch to TurnRecords. Columns are
// found by name, so a log with extra (newer) columns reads; a column the log lacks
// leaves its field zero.
func AppendRecords(dst []schemas.TurnRecord, rec arrow.RecordBatch) ([]schemas.TurnRecord, error) {
	type bound struct {
		c   column
		arr arrow.Array
	}
	var bs []bound
	for _, c := range columns() {
		idx := rec.Schema().FieldIndices(c.name)
		if len(idx) == 0 {
			continue
		}
		arr := rec.Column(idx[0])
		if !arrow.TypeEqual(arr.DataType(), c.typ) {
			return dst, fmt.Errorf("turn log column %q has type %s, want %s", c.name, arr.DataType(), c.typ)
		}
		bs = append(bs, bound{c, arr})
	}
	n := int(rec.NumRows())
	start := len(dst)
	dst = append(dst, make([]schemas.TurnRecord, n)...)
	for _, b := range bs {
		for i := 0; i < n; i++ {
			b.c.get(b.arr, i, &dst[start+i])
		}
	}
	return dst, nil
}

// ReadManifest reads RUNDIR/manifest.json.
func ReadManifest(runDir string) (schemas.RunManifest, error) {
	var m schemas.RunManifest
	p := filepath.Join(runDir, schemas.RunManifestFile)
	data, err := infile.ReadSmall(p, infile.SmallFile)
	if err != nil {
		return m, fmt.Errorf("read run manifest: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("parse run manifest %q: %w", p, err)
	}
	// A manifest written before endpoints were redacted may hold a password:
	// whatever reads it (report, audit) gets the redacted form.
	m.Config.Endpoint = redact.URL(m.Config.Endpoint)
	return m, nil
}

// manifestReserve is the room a running manifest keeps for its final version.
const manifestReserve = 16 << 10

// WriteManifest writes RUNDIR/manifest.json atomically (indented JSON). A
// manifest in state running is written with room to spare (trailing spaces,
// which JSON readers skip), so that when the atomic rewrite of the final
// manifest fails (a full disk has no room for its temporary copy), the final
// manifest still replaces it in place: a run's manifest never stays "running"
// because the disk filled up. The error says when even that failed. The
// endpoint is recorded without its user information (internal/redact).
func WriteManifest(runDir string, m schemas.RunManifest) error {
	m.Config.Endpoint = redact.URL(m.Config.Endpoint)
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode run manifest: %w", err)
	}
	data = append(data, '\n')
	if m.State == schemas.RunRunning {
		data = append(data, bytes.Repeat([]byte{' '}, manifestReserve)...)
		data = append(data, '\n')
	}
	p := filepath.Join(runDir, schemas.RunManifestFile)
	err = outguard.AtomicWriteBytes(p, data)
	if err == nil {
		return nil
	}
	if ierr := writeInPlace(p, data); ierr != nil {
		return fmt.Errorf("write run manifest: %w (in place: %v)", err, ierr)
	}
	return nil
}

// DatasetDir returns the dataset folder a run names, found from the run folder runDir:
// the path recorded relative to the run folder, else the absolute one beside it
// (internal/relpath). "" when the manifest names none.
func DatasetDir(runDir string, c schemas.RunConfig) string {
	return relpath.Resolve(runDir, c.Dataset, c.DatasetAbs)
}

// writeInPlace overwrites an existing file that is at least as long as data, so
// that no new block is needed, and cuts it to data's length.
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err == nil && (!st.Mode().IsRegular() || st.Size() < int64(len(data))) {
		err = fmt.Errorf("%d bytes of room, %d needed", st.Size(), len(data))
	}
	if err == nil {
		_, err = f.WriteAt(data, 0)
	}
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ErrDisagree reports a run whose turn log and manifest disagree: the manifest
// says the run ended, but the log does not hold the rows it counts.
var ErrDisagree = errors.New("turn log and manifest disagree")

// CheckAgreement tells whether a run's turn log agrees with its manifest, so that
// a run whose log was lost or cut is never scored as if it were whole. counts are
// the log's readable rows by status and readErr the error reading it returned
// (nil, or one matching ErrTruncated). A manifest still "running" (the run was
// killed, or is going on) promises nothing and agrees with any log. Otherwise the
// log must hold exactly the manifest's counts, and end properly unless the run
// failed (a full disk may not even leave room for the end marker).
func CheckAgreement(m schemas.RunManifest, counts map[string]int, readErr error) error {
	if m.State == schemas.RunRunning || m.State == "" {
		return nil
	}
	got := counts
	differ := false
	for k, v := range m.Counts {
		if got[k] != v {
			differ = true
		}
	}
	for k, v := range got {
		if v != 0 && m.Counts[k] != v {
			differ = true
		}
	}
	if differ {
		msg := fmt.Sprintf("the manifest (state %s) counts rows %s, the log holds %s", m.State, fmtCounts(m.Counts), fmtCounts(got))
		if readErr != nil {
			msg += " (" + readErr.Error() + ")"
		}
		return fmt.Errorf("%w: %s", ErrDisagree, msg)
	}
	if readErr != nil && m.State != schemas.RunFailed {
		return fmt.Errorf("%w: the manifest says the run is %s, but the log did not end properly: %v", ErrDisagree, m.State, readErr)
	}
	return nil
}

// fmtCounts prints counts by status in a stable order, "none" when empty.
func fmtCounts(c map[string]int) string {
	keys := make([]string, 0, len(c))
	n := 0
	for k, v := range c {
		if v != 0 {
			keys = append(keys, k)
			n += v
		}
	}
	if n == 0 {
		return "none"
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k, c[k])
	}
	return b.String()
}
