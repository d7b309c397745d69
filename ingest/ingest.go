package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentrace/agentrace/internal/official"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/progress"
	"github.com/agentrace/agentrace/internal/relpath"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/tokens"
)

// Input formats.
const (
	FormatAuto     = "auto"
	FormatFlat     = "flat"
	FormatSnapshot = "snapshot"
)

// Defaults of Options.
const (
	DefaultMaxProblems  = 20
	DefaultMaxLineBytes = 64 << 20
	DefaultISLProfile   = "qwen3.6-35b-a3b"
	// DefaultMaxExpansion caps how many times its size a gzipped input may
	// decompress to (traces compress 5 to 15 times; a gzip bomb a thousand).
	DefaultMaxExpansion = 100
	// minExpansionBytes is what any gzipped input may decompress to, whatever its
	// size.
	minExpansionBytes = 64 << 20
	// blockBytes is the size of the chunks the input is read in: the chunks
	// in flight (read ahead, or holding rows of conversations not yet written)
	// are most of ingest's memory.
	blockBytes = 1 << 20
)

// Options configures Run.
type Options struct {
	// Out is the dataset directory to create.
	Out string
	// Inputs are the trace files, flat or snapshot JSONL, optionally gzipped.
	Inputs []string
	// Format is FormatAuto (detect per file, the default), FormatFlat or
	// FormatSnapshot.
	Format string
	// Overwrite replaces an existing Out, only when it is a dataset agentrace wrote
	// (internal/outguard).
	Overwrite bool
	// Strict refuses the inputs on any warning: what the reference client accepts
	// but does not check (rows out of turn order, values of unexpected types, a
	// tool_call_id answering no call, values the reference's pandas would alter...).
	// Without it, warnings are listed in the manifest and the inputs are ingested.
	Strict bool
	// SnapshotAsReference converts snapshot files exactly as the reference's
	// converter does, dropping reasoning_content, delay_seconds and intent_codes;
	// by default they are kept (replay sends the reasoning in the history, waits
	// the delays, and scores intents), so that a snapshot file and its flat form
	// give the same dataset.
	SnapshotAsReference bool
	// MaxProblems is how many problems are reported per file (default 20).
	MaxProblems int
	// MaxLineBytes rejects longer lines (default 64 MiB).
	MaxLineBytes int
	// MaxExpansion refuses a gzipped input that decompresses past this many times
	// its size (at least 64 MiB); 0 means DefaultMaxExpansion, a negative value no
	// limit.
	MaxExpansion float64
	// maxConvBytes is MaxConversationBytes (tests lower it).
	maxConvBytes int
	// Workers is the number of parsing goroutines (default GOMAXPROCS, at most 4).
	Workers int
	// Tokenizer, when set, is a tokenizer directory (tokens.Load): each
	// client turn's ISL is counted over its salted (repeat 1) messages and its tools,
	// rendered with the chat_template_kwargs of ISLProfile (default
	// DefaultISLProfile).
	Tokenizer  string
	ISLProfile string
	// isl, when set, counts ISL instead of Tokenizer (tests); islName names it in
	// the manifest. It is called with each client turn's messages as one JSON
	// array.
	isl     func(messages, tools []byte) (int, error)
	islName string
	// naiveISL counts each turn with Tokenizer the way the rules state it (a full
	// render and encode of the turn's messages, tokens.CountISL) instead of
	// incrementally (tokens.ISLCounter, which gives the same counts); for
	// measuring the difference.
	naiveISL bool
	// Progress, when not nil, receives progress lines: the phase (read, validate,
	// build, tokenize, write), input bytes read of the total and decompressed,
	// rows validated, conversations built and written, turns tokenized of those
	// seen, and an ETA. ProgressTTY redraws one line (every 200 ms); otherwise a
	// line is printed every ProgressEvery (default 5 s).
	Progress      io.Writer
	ProgressTTY   bool
	ProgressEvery time.Duration

	// islCounter makes the ISL counter of one conversation (nil: no ISL).
	islCounter func() islFunc
}

// islFunc counts the ISL of one client turn of a conversation, given its
// messages (the wire form, the salted system message first) and its tools;
// successive calls are the conversation's turns in order.
type islFunc func(messages [][]byte, tools []byte) (int, error)

// Files ingests files into the dataset directory out with the default options
// (format detected per file): the shortcut tests and the bench harness use to
// turn a JSONL fixture into a dataset. Commands call Run.
func Files(ctx context.Context, out string, files ...string) error {
	_, err := Run(ctx, Options{Out: out, Inputs: files})
	return err
}

// Run ingests opts.Inputs into the dataset directory opts.Out and returns its
// manifest. The directory appears only when everything succeeded; invalid input
// gives a *ValidationError listing the problems, and nothing is written.
func Run(ctx context.Context, opts Options) (schemas.DatasetManifest, error) {
	var m schemas.DatasetManifest
	if opts.Out == "" {
		return m, errors.New("ingest: no output directory")
	}
	if len(opts.Inputs) == 0 {
		return m, errors.New("ingest: no input files")
	}
	switch opts.Format {
	case "":
		opts.Format = FormatAuto
	case FormatAuto, FormatFlat, FormatSnapshot:
	default:
		return m, fmt.Errorf("ingest: unknown format %q (want auto, flat or snapshot)", opts.Format)
	}
	if opts.MaxProblems <= 0 {
		opts.MaxProblems = DefaultMaxProblems
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.maxConvBytes <= 0 {
		opts.maxConvBytes = MaxConversationBytes
	}
	if opts.Workers <= 0 {
		opts.Workers = min(runtime.GOMAXPROCS(0), 4)
	}
	if opts.Tokenizer != "" && opts.isl == nil {
		tok, err := tokens.Load(ctx, opts.Tokenizer)
		if err != nil {
			return m, fmt.Errorf("ingest: %w", err)
		}
		if opts.ISLProfile == "" {
			opts.ISLProfile = DefaultISLProfile
		}
		p, err := datasets.LookupProfile(opts.ISLProfile)
		if err != nil {
			return m, fmt.Errorf("ingest: %w", err)
		}
		kwargs := p.ChatTemplateKwargs
		if opts.naiveISL {
			opts.isl = func(msgs, tools []byte) (int, error) { return tok.CountISL(msgs, tools, kwargs) }
		} else {
			opts.islCounter = func() islFunc { return tok.NewISLCounter(kwargs).Count }
		}
		opts.islName = tok.Name()
	}
	if opts.isl != nil {
		count := opts.isl
		opts.islCounter = func() islFunc {
			var joined []byte
			return func(msgs [][]byte, tools []byte) (int, error) {
				joined = append(joined[:0], '[')
				for i, m := range msgs {
					if i > 0 {
						joined = append(joined, ',')
					}
					joined = append(joined, m...)
				}
				return count(append(joined, ']'), tools)
			}
		}
	}
	// The output is claimed before anything is read (internal/outguard): it may
	// not be, contain or sit inside an input, nor be written by another command
	// meanwhile; an existing one is replaced only when it is a dataset and
	// Overwrite is set, and only once the new one is whole.
	out := outguard.Output{Path: opts.Out, Kind: outguard.Dataset, Overwrite: opts.Overwrite}
	claim, err := outguard.Take(out, append(opts.Inputs, opts.Tokenizer)...)
	if err != nil {
		return m, fmt.Errorf("ingest: %w", err)
	}
	defer claim.Release()
	err = func(tmp string) error {
		w, err := datasets.NewWriter(tmp)
		if err != nil {
			return err
		}
		in := &ingester{opts: opts, w: w, seen: map[string]location{}, repeats: map[string]suffixed{}, problems: problemList{limit: opts.MaxProblems},
			warnings: problemList{limit: opts.MaxProblems}}
		in.prog.start(opts.Inputs)
		var line *progress.Line
		if opts.Progress != nil {
			every := opts.ProgressEvery
			if every <= 0 {
				every = 5 * time.Second
			}
			line = progress.New(opts.Progress, opts.ProgressTTY, every, in.status).Start()
			defer line.Stop()
		}
		err = in.run(ctx)
		if err != nil {
			w.Abort()
			return err
		}
		in.prog.phase.Store(phaseTables)
		m.Inputs = in.inputs
		var sums []string
		for _, f := range in.inputs {
			sums = append(sums, f.SHA256)
		}
		m.OfficialDataset = official.Bool(official.IsDataset(sums...))
		in.warnings.sort(opts.Inputs)
		for _, p := range in.warnings.err.Problems {
			m.Warnings = append(m.Warnings, p.String())
		}
		m.WarningCount = len(in.warnings.err.Problems) + in.warnings.err.Omitted
		m.CreatedAt = time.Now().UTC().Format(time.RFC3339)
		m.Tokenizer = opts.islName
		m, err = w.Close(m)
		in.prog.phase.Store(phaseDone)
		return err
	}(claim.Dir())
	if err == nil {
		err = claim.Commit()
	}
	return m, err
}

// location is where a conversation was first seen.
type location struct {
	file  string
	input int // position in Options.Inputs (a file may be given twice)
	line  int64
}

// suffixed is a conversation id with a repeat suffix, and where it was seen.
type suffixed struct {
	id     string
	repeat int
	at     location
}

type ingester struct {
	opts   Options
	w      *datasets.Writer
	inputs []schemas.DatasetInput
	seen   map[string]location
	input  int // the input being read
	index  int32
	rows   int // rows (or snapshot lines) read, metadata records aside
	bytes  atomic.Int64
	convs  atomic.Int64

	// repeats holds, by base id, the first conversation whose id has a repeat
	// suffix (C__repeat_N, datasets.SessionID): such an id collides with C's
	// session id on its repeat N.
	repeats map[string]suffixed

	// The build stage: jobs for the build workers, and their results in order
	// for the write loop.
	ctx    context.Context
	jobs   chan *convJob
	order  chan chan convResult
	failed atomic.Bool // a problem or error was found: stop building and writing
	// stop cancels the reading (StopAfterProblems reached); stopped tells it did.
	stop    context.CancelFunc
	stopped atomic.Bool

	mu       sync.Mutex
	problems problemList
	warnings problemList

	pool chunkPool
	prog progressCounts
}

func (in *ingester) addProblem(p Problem) {
	in.mu.Lock()
	stop := in.problems.add(p)
	if stop && in.problems.err.Stopped == "" {
		where := p.File
		if p.Line > 0 {
			where = fmt.Sprintf("%s:%d", p.File, p.Line)
		}
		in.problems.err.Stopped = fmt.Sprintf("reading stopped at %s after %d problems: the rest of the input was not checked", where, StopAfterProblems)
	}
	in.mu.Unlock()
	in.failed.Store(true)
	if stop {
		in.stopped.Store(true)
		in.stop()
	}
}

// addWarning records something the reference accepts but agentrace notes; with
// Options.Strict it is a problem.
func (in *ingester) addWarning(p Problem) {
	if in.opts.Strict {
		in.addProblem(p)
		return
	}
	in.mu.Lock()
	in.warnings.add(p)
	in.mu.Unlock()
}

func (in *ingester) status() string {
	return in.prog.status(&in.bytes, &in.convs, in.opts.islCounter != nil, time.Now())
}

func (in *ingester) run(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	in.ctx, in.stop = ctx, cancel
	in.jobs = make(chan *convJob)
	in.order = make(chan chan convResult, 8*in.opts.Workers)
	var wg sync.WaitGroup
	for range in.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range in.jobs {
				j.out <- in.buildJob(j)
			}
		}()
	}
	writeErr := make(chan error, 1)
	go func() { writeErr <- in.writeLoop() }()
	// The chunk buffers go back once every goroutine that could read them is done
	// (the deferred calls run last in, first out: after wg.Wait below).
	defer in.pool.close()
	var err error
	for i, path := range in.opts.Inputs {
		in.input = i
		if err = in.file(ctx, path); err != nil {
			cancel()
			break
		}
	}
	in.prog.readDone(time.Now())
	close(in.jobs)
	close(in.order)
	wg.Wait()
	if werr := <-writeErr; err == nil {
		err = werr
	}
	// Stopped for too many problems: those are the answer, not the cancellation.
	if err != nil && in.stopped.Load() && parent.Err() == nil && errors.Is(err, context.Canceled) {
		err = nil
	}
	if err != nil {
		return err
	}
	in.problems.sort(in.opts.Inputs)
	if in.problems.any() {
		err := in.problems.err
		return &err
	}
	if in.index == 0 {
		return errors.New("ingest: the inputs hold no conversation")
	}
	if n := in.convs.Load(); n != int64(in.index) {
		return fmt.Errorf("ingest: internal error: %d of %d conversations written without a problem reported", n, in.index)
	}
	return nil
}

// item is one parsed line.
type item struct {
	line int64
	row  *row      // flat row or metadata record
	snap *snapshot // snapshot line
	meta []byte    // raw metadata record
	err  error
	raw  []byte // a copy of a flat line that is not JSON (splicer)
}

type chunk struct {
	seq       int64 // position in the run's sequence of chunks (chunkPool)
	data      []byte
	firstLine int64
	newlines  int  // the newlines in data, counted by the chunkReader
	final     bool // the file's last bytes, not ending in a newline
}

// parsed is a parsed chunk.
type parsed struct {
	seq   int64
	items []item
}

// chunkPool recycles the chunks' buffers. Freshly allocated memory is expensive
// here (page faults cost more than parsing), so a buffer is reused once no row
// read from it can be needed: for a flat file, when every conversation that
// started before it has been built; for a snapshot file, when the consumer has
// copied what it keeps.
type chunkPool struct {
	mu   sync.Mutex
	seq  int64
	live []pooled // in seq order
	free [][]byte
	// mapped are the buffers from allocBlock, returned by close.
	mapped [][]byte
}

type pooled struct {
	seq int64
	buf []byte
}

func (p *chunkPool) isMapped(b []byte) bool {
	for _, m := range p.mapped {
		if &m[0] == &b[0] {
			return true
		}
	}
	return false
}

// close returns the mapped buffers; it runs once nothing can point into them.
func (p *chunkPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.mapped {
		freeBlock(b)
	}
	p.mapped, p.free, p.live = nil, nil, nil
}

// maxFree bounds the idle heap buffers kept.
const maxFree = 4

// get returns a buffer of length size and its chunk sequence number.
func (p *chunkPool) get(size int) ([]byte, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seq := p.seq
	p.seq++
	if size == blockBytes {
		var buf []byte
		if n := len(p.free); n > 0 {
			buf, p.free = p.free[n-1], p.free[:n-1]
		} else if b, ok := allocBlock(blockBytes); ok {
			buf = b
			p.mapped = append(p.mapped, b)
		} else {
			buf = make([]byte, blockBytes)
		}
		p.live = append(p.live, pooled{seq, buf})
		return buf, seq
	}
	return make([]byte, size), seq
}

// release makes the buffers of chunks before seq reusable.
func (p *chunkPool) release(seq int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(p.live) && p.live[n].seq < seq {
		// Mapped buffers are always kept for reuse (close returns them).
		if len(p.free) < maxFree || p.isMapped(p.live[n].buf) {
			p.free = append(p.free, p.live[n].buf)
		}
		n++
	}
	p.live = append(p.live[:0], p.live[n:]...)
}

// countingReader counts and hashes the raw bytes of a file.
type countingReader struct {
	r   io.Reader
	h   io.Writer
	n   *atomic.Int64
	tot int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.tot += int64(n)
	c.n.Add(int64(n))
	return n, err
}

func (in *ingester) file(ctx context.Context, path string) error {
	f, err := infile.Open(path)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	cr := &countingReader{r: f, h: h, n: &in.bytes}
	br := bufio.NewReaderSize(cr, 64<<10)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("ingest: read gzip %q: %w", path, err)
		}
		defer zr.Close()
		r = zr
		if ratio := in.opts.MaxExpansion; ratio >= 0 {
			if ratio == 0 {
				ratio = DefaultMaxExpansion
			}
			size := int64(0)
			if st, err := f.Stat(); err == nil {
				size = st.Size()
			}
			r = &infile.ExpansionReader{R: zr, Limit: infile.ExpansionLimit(size, ratio, minExpansionBytes), Size: size, Ratio: ratio}
		}
	}
	input := schemas.DatasetInput{Format: in.opts.Format}
	input.Path, input.AbsPath = relpath.Record(in.opts.Out, path)
	fileProblem := func(line int64, conv string, turn int32, msg string) {
		in.addProblem(Problem{File: path, Line: line, ConversationID: conv, Turn: turn, Message: msg})
	}

	rd := &chunkReader{r: r, maxLine: in.opts.MaxLineBytes, line: 1, pool: &in.pool, n: &in.prog.data}
	rowsBefore := in.rows
	first, err := rd.next()
	if err != nil {
		return fmt.Errorf("ingest: read %q: %w", path, err)
	}
	if input.Format == FormatAuto {
		input.Format = detectFormat(first)
	}
	format := input.Format
	in.prog.flat.Store(format != FormatSnapshot)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		c   *chunk
		out chan parsed
	}
	jobs := make(chan job)
	order := make(chan chan parsed, in.opts.Workers)
	readErr := make(chan error, 1)
	go func() {
		defer close(order)
		defer close(jobs)
		c := first
		for c != nil {
			// The job goes to a worker before its result joins the order, so that
			// every result the consumer waits for is coming.
			out := make(chan parsed, 1)
			select {
			case jobs <- job{c, out}:
			case <-ctx.Done():
				readErr <- ctx.Err()
				return
			}
			select {
			case order <- out:
			case <-ctx.Done():
				readErr <- ctx.Err()
				return
			}
			var err error
			if c, err = rd.next(); err != nil {
				readErr <- err
				return
			}
		}
		readErr <- nil
	}()
	var wg sync.WaitGroup
	for range in.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				j.out <- parsed{j.c.seq, parseChunk(j.c, format, in.opts.MaxLineBytes)}
			}
		}()
	}
	defer wg.Wait()
	var err2 error
	if format == FormatSnapshot {
		err2 = in.consumeSnapshots(ctx, path, &input, order, fileProblem)
	} else {
		err2 = in.consumeFlat(ctx, path, &input, order, fileProblem)
	}
	if err2 != nil {
		cancel()
		for range order {
		}
		return err2
	}
	if err := <-readErr; err != nil {
		return fmt.Errorf("ingest: read %q: %w", path, err)
	}
	for _, l := range rd.longLines {
		fileProblem(l, "", 0, fmt.Sprintf("line longer than the limit of %d bytes", in.opts.MaxLineBytes))
	}
	if in.rows == rowsBefore {
		fileProblem(0, "", 0, "empty file (no rows)")
	}
	input.Lines = rd.line - 1
	if rd.unterminated {
		input.Lines++
	}
	input.Bytes = cr.tot
	input.SHA256 = hex.EncodeToString(h.Sum(nil))
	in.inputs = append(in.inputs, input)
	return nil
}

// chunkReader cuts a stream into chunks of whole lines.
type chunkReader struct {
	r            io.Reader
	maxLine      int
	line         int64 // number of the next line
	carry        []byte
	eof          bool
	longLines    []int64
	unterminated bool
	pool         *chunkPool
	n            *atomic.Int64 // counts the bytes read (decompressed)
}

// next returns the next chunk, nil at the end.
func (cr *chunkReader) next() (*chunk, error) {
	for {
		if cr.eof {
			if len(cr.carry) == 0 {
				return nil, nil
			}
			c := &chunk{seq: -1, data: cr.carry, firstLine: cr.line, final: true}
			cr.carry = nil
			cr.unterminated = true
			return c, nil
		}
		size := blockBytes
		if 2*len(cr.carry) > size {
			size = 2 * len(cr.carry)
		}
		if size > cr.maxLine+1 {
			size = max(cr.maxLine+1, len(cr.carry)+1)
		}
		buf, seq := cr.pool.get(size)
		n := copy(buf, cr.carry)
		m, err := io.ReadFull(cr.r, buf[n:])
		buf = buf[:n+m]
		if cr.n != nil {
			cr.n.Add(int64(m))
		}
		switch err {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			cr.eof = true
		default:
			return nil, err
		}
		last := bytes.LastIndexByte(buf, '\n')
		if last < 0 {
			cr.carry = buf
			if len(buf) > cr.maxLine {
				cr.longLines = append(cr.longLines, cr.line)
				cr.line++
				rest, err := cr.skipLine()
				if err != nil {
					return nil, err
				}
				cr.carry = rest
			}
			continue
		}
		c := &chunk{seq: seq, data: buf[:last+1], firstLine: cr.line}
		c.newlines = bytes.Count(c.data, []byte{'\n'})
		cr.line += int64(c.newlines)
		cr.carry = buf[last+1:]
		return c, nil
	}
}

// skipLine discards the rest of an over-long line and returns what follows its
// newline in the last read.
func (cr *chunkReader) skipLine() ([]byte, error) {
	buf := make([]byte, 64<<10)
	for {
		n, err := cr.r.Read(buf)
		if cr.n != nil {
			cr.n.Add(int64(n))
		}
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return append([]byte(nil), buf[i+1:n]...), nil
		}
		if err == io.EOF {
			cr.eof = true
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// detectFormat looks at the first record of a file that is not a metadata record:
// a snapshot line has a "messages" member, a flat row does not.
func detectFormat(c *chunk) string {
	if c == nil {
		return FormatFlat
	}
	data := c.data
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		messages, metadata := false, false
		member := func(k, v []byte) {
			switch keyString(k) {
			case "messages":
				messages = true
			case "_type":
				metadata = string(v) == `"dataset_metadata"`
			}
		}
		if err := parseObject(line, member); err != nil {
			// NaN or a raw control character: read the keys of what pandas takes.
			l2, _, ok := pandasLine(bytes.TrimSuffix(line, []byte{'\r'}))
			if !ok || parseObject(l2, member) != nil {
				return FormatFlat
			}
		}
		if metadata {
			continue
		}
		if messages {
			return FormatSnapshot
		}
		return FormatFlat
	}
	return FormatFlat
}

// parseChunk parses every line of a chunk.
func parseChunk(c *chunk, format string, maxLine int) []item {
	items := make([]item, 0, c.newlines+1)
	data := c.data
	line := c.firstLine
	for len(data) > 0 {
		l := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		var it item
		if len(l) > maxLine {
			it = item{line: line, err: fmt.Errorf("line longer than the limit of %d bytes", maxLine)}
		} else {
			it = parseLine(l, line, format)
		}
		if it.err != nil && c.final && data == nil {
			it.err = fmt.Errorf("truncated last line (no newline at the end of the file): %w", it.err)
		}
		if it.err != nil || it.row != nil || it.snap != nil {
			items = append(items, it)
		}
		line++
	}
	return items
}

// parseLine parses one line; a blank line gives an empty item.
func parseLine(l []byte, line int64, format string) item {
	it := item{line: line}
	if len(l) > 0 && l[len(l)-1] == '\r' {
		l = l[:len(l)-1]
	}
	if len(bytes.TrimSpace(l)) == 0 {
		return it
	}
	if !utf8.Valid(l) {
		off := 0
		for off < len(l) {
			r, size := utf8.DecodeRune(l[off:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			off += size
		}
		it.err = fmt.Errorf("invalid UTF-8 at byte %d", off+1)
		return it
	}
	if format == FormatSnapshot {
		s, r, err := parseSnapshotHead(l, line)
		if err != nil && jsontext.Valid(l, jsontext.Python) {
			// Not JSON, but the reference's converter (json.loads) takes NaN and
			// Infinity, and writes them back for pandas to read.
			if l2, warnings, ok := pandasLine(l); ok {
				if s2, r2, err2 := parseSnapshotHead(l2, line); err2 == nil {
					s, r, err = s2, r2, nil
					if s != nil {
						s.warnings = warnings
					}
				}
			}
		}
		it.snap, it.row, it.err = s, r, err
		if r != nil && r.metadata {
			it.meta, it.snap = l, nil
		}
		return it
	}
	r, err := parseFlatPandas(l, line)
	if err != nil {
		// Kept for the splicer: the line may be a piece of a record that a raw
		// newline in a string split.
		it.raw = append([]byte(nil), l...)
	}
	it.row, it.err = r, err
	if r != nil && r.metadata {
		it.meta = l
	}
	return it
}
