// Package infile opens the files agentrace reads as inputs, safely: only regular
// files are opened (a FIFO, a device such as /dev/zero, a socket or a folder is
// refused before anything blocks on it, and so is an entry of /proc or /sys,
// which looks like an empty regular file but holds what the kernel writes, such
// as /proc/self/environ), and whole-file reads are capped.
//
// Use it for every input path a user (or a manifest) names:
//
//	f, err := infile.Open(path)                       // *os.File of a regular file
//	data, err := infile.ReadFile(ctx, path, infile.SmallFile) // at most 64 MiB, else ErrTooLarge
//	data, err := infile.ReadSmall(path, 1<<20)                // a manifest, a marker: no context
//
// Open never blocks: the file is opened with O_NONBLOCK (so that a FIFO without a
// writer cannot hang the open), checked with fstat on the opened descriptor (no
// race between the check and the open), and only then used. Errors name the path
// and wrap ErrNotRegular or ErrTooLarge, so callers and tests can tell them apart.
package infile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/parquet-go/parquet-go"
)

// Size limits for ReadFile.
const (
	// SmallFile bounds manifests, configs, rulesets and summaries: JSON or YAML
	// files a person or agentrace writes, never data.
	SmallFile int64 = 64 << 20
	// LargeFile bounds files read whole that hold data (a tokenizer.json is about
	// 11 MB; a SWE-bench report a few MB).
	LargeFile int64 = 1 << 30
)

var (
	// ErrNotRegular is wrapped by the error for a path that is not a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is wrapped by the error for a file over the size limit.
	ErrTooLarge = errors.New("file too large")
)

// Open opens path for reading if it is a regular file (after following symbolic
// links). The error wraps ErrNotRegular for anything else (a folder, a FIFO, a
// device, a socket).
func Open(path string) (*os.File, error) {
	f, _, err := open(path)
	return f, err
}

// open is Open that also returns what the opened file's Stat said.
func open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|nonblock, 0)
	if err != nil {
		// A socket cannot be opened at all: say what it is rather than ENXIO.
		if st, serr := os.Stat(path); serr == nil && !st.Mode().IsRegular() {
			return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, describe(st.Mode()))}
		}
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, describe(st.Mode()))}
	}
	if kind, ok := pseudoFile(f); ok {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind)}
	}
	// O_NONBLOCK means nothing for a regular file's reads, but clear it anyway so
	// the descriptor behaves as a plain open's would.
	if err := clearNonblock(f); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// Check reports whether path could be opened as an input: it is a regular file
// (after following symbolic links). It opens nothing.
func Check(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, describe(st.Mode()))}
	}
	if kind, ok := pseudoPath(path); ok {
		return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind)}
	}
	return nil
}

// readChunk is the most one read asks for: a read of hundreds of MB takes a
// second or more, which an interrupt should not wait for.
const readChunk = 16 << 20

// ReadFile reads the whole of the regular file path, refusing one larger than
// limit bytes (the error wraps ErrTooLarge). A file that grows while it is read is
// cut off at limit+1 bytes and refused the same way. It stops, with ctx's error,
// once ctx is done.
func ReadFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	return readFile(path, limit, ctx.Err)
}

// ReadSmall is ReadFile for the small files a command reads on its way (a run's
// manifest, an output's marker or lock, a ruleset, a hub cache's ref): its limit
// is at most SmallFile, a read too brief for an interrupt to wait on, so no
// context stops it.
func ReadSmall(path string, limit int64) ([]byte, error) {
	return readFile(path, min(limit, SmallFile), func() error { return nil })
}

// readFile is ReadFile, stopping with stop's error once it has one.
func readFile(path string, limit int64, stop func() error) ([]byte, error) {
	f, st, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, tooLarge(path, st.Size(), limit)
	}
	// One buffer of the file's size plus a byte (to see it grow), read in place:
	// no doubling copies, and no huge non-preemptible copy that would hold up
	// the process (an interrupt, the garbage collector) for seconds.
	buf := make([]byte, st.Size()+1)
	n := 0
	for n < len(buf) && err == nil {
		if err = stop(); err != nil {
			return nil, err
		}
		var m int
		m, err = f.Read(buf[n:min(len(buf), n+readChunk)])
		n += m
	}
	data := buf[:n]
	switch {
	case err == io.ErrUnexpectedEOF || err == io.EOF:
		err = nil
	case err == nil:
		// The file grew while read: the rest, up to the limit.
		var rest []byte
		rest, err = io.ReadAll(io.LimitReader(f, limit+1-int64(n)))
		data = append(data, rest...)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(path, int64(len(data)), limit)
	}
	return data, nil
}

func tooLarge(path string, size, limit int64) error {
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes or more, the limit is %d", ErrTooLarge, size, limit)}
}

// describe names a non-regular file mode for an error.
func describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	default:
		return "mode " + m.String()
	}
}

// ReadParquet reads every row of the Parquet file path, opened as Open opens it;
// it stops, with ctx's error, once ctx is done (its reads fail).
func ReadParquet[T any](ctx context.Context, path string) ([]T, error) {
	f, st, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := readParquet[T](ctx, ctxReaderAt{ctx, f}, st.Size())
	if cerr := ctx.Err(); err != nil && cerr != nil {
		return nil, cerr
	}
	return rows, err
}

// parquetStep is how many rows ReadParquet decodes between two looks at its
// context: a table's pages are read first, then decoded without further reads, and
// decoding a large table whole takes seconds.
const parquetStep = 4096

// readParquet is parquet.Read decoding parquetStep rows at a time, stopping once
// ctx is done.
func readParquet[T any](ctx context.Context, r io.ReaderAt, size int64) ([]T, error) {
	file, err := parquet.OpenFile(r, size)
	if err != nil {
		return nil, err
	}
	rows := make([]T, file.NumRows())
	reader := parquet.NewGenericReader[T](file)
	defer reader.Close()
	n := 0
	for n < len(rows) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, err := reader.Read(rows[n:min(len(rows), n+parquetStep)])
		n += m
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return nil, fmt.Errorf("read parquet: no progress after %d of %d rows", n, len(rows))
		}
	}
	return rows[:n], nil
}

// Reader reads r until ctx is done: each read after that fails with ctx's
// error, so that a long copy or scan of an input stops promptly.
func Reader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

// ctxReader fails its reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ctxReaderAt fails its reads once ctx is done.
type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}

// ReadColumns reads the named columns of the Parquet file at path without
// decoding its other columns or assembling rows: column by column, in the order
// given, every value in row order goes to each(column, row, value), after
// start(rows) was told the file's row count. A value's bytes (Value.ByteArray)
// are valid only during the call. Each named column must exist and not be
// repeated, and have no null unless allowNull. For a few columns of a wide table
// it is cheaper than ReadParquet of a struct naming them, which converts every
// row from the file's schema to the struct's.
func ReadColumns(ctx context.Context, path string, names []string, allowNull bool, start func(rows int64), each func(column int, row int64, v parquet.Value) error) error {
	f, st, err := open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	file, err := parquet.OpenFile(ctxReaderAt{ctx, f}, st.Size())
	if err != nil {
		return err
	}
	leaves := make([]int, len(names))
	for i, name := range names {
		col, ok := file.Schema().Lookup(name)
		if !ok {
			return fmt.Errorf("read parquet: no column %q", name)
		}
		if col.MaxRepetitionLevel > 0 {
			return fmt.Errorf("read parquet: column %q is repeated", name)
		}
		leaves[i] = col.ColumnIndex
	}
	start(file.NumRows())
	vals := make([]parquet.Value, parquetStep)
	for i, name := range names {
		var row int64
		for _, rg := range file.RowGroups() {
			pages := rg.ColumnChunks()[leaves[i]].Pages()
			err := readPages(ctx, pages, vals, func(v parquet.Value) error {
				if v.IsNull() && !allowNull {
					return fmt.Errorf("row %d is null", row)
				}
				if err := each(i, row, v); err != nil {
					return err
				}
				row++
				return nil
			})
			pages.Close()
			if err != nil {
				return fmt.Errorf("read parquet column %q: %w", name, err)
			}
		}
		if row != file.NumRows() {
			return fmt.Errorf("read parquet column %q: %d values for %d rows", name, row, file.NumRows())
		}
	}
	return nil
}

// readPages passes every value of pages to fn, page by page, decoding up to
// len(buf) values at a time and looking at ctx between pages.
func readPages(ctx context.Context, pages parquet.Pages, buf []parquet.Value, fn func(parquet.Value) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		err = readPage(p.Values(), buf, fn)
		parquet.Release(p)
		if err != nil {
			return err
		}
	}
}

func readPage(r parquet.ValueReader, buf []parquet.Value, fn func(parquet.Value) error) error {
	for {
		n, err := r.ReadValues(buf)
		for _, v := range buf[:n] {
			if ferr := fn(v); ferr != nil {
				return ferr
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		case n == 0:
			return errors.New("a page read no value")
		}
	}
}
