package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/klauspost/compress/gzip"
)

// Limits bound what reading a source may cost.
type Limits struct {
	// MaxExpansion is how many times its own size an archive may expand to
	// (uncompressed bytes of all entries); 0 means DefaultMaxExpansion, a negative
	// value lifts the limit.
	MaxExpansion float64
	// MaxFileBytes caps ReadFile (the small published files: summaries, configs);
	// 0 means DefaultMaxFileBytes.
	MaxFileBytes int64
	// Opened, when set, is given each file of the source opened for reading
	// (Open, and ReadFile of a file not held in memory) with its name in the
	// source, and returns the reader to read it through: a caller can count what
	// is read of each file (tests hold a run's log to one read).
	Opened func(name string, rc io.ReadCloser) io.ReadCloser
}

// Defaults of Limits.
const (
	DefaultMaxExpansion = 10
	DefaultMaxFileBytes = 64 << 20
	// cacheFileBytes is the largest tar entry kept in memory by the index pass, and
	// cacheTotalBytes the most all of them may take.
	cacheFileBytes  = 1 << 20
	cacheTotalBytes = 64 << 20
)

func (l Limits) maxExpansion() float64 {
	if l.MaxExpansion == 0 {
		return DefaultMaxExpansion
	}
	return l.MaxExpansion
}

func (l Limits) maxFile() int64 {
	if l.MaxFileBytes <= 0 {
		return DefaultMaxFileBytes
	}
	return l.MaxFileBytes
}

// Source kinds.
const (
	SourceDir   = "dir"
	SourceTarGz = "tar.gz"
	SourceTar   = "tar"
	SourceZip   = "zip"
)

// Problem is an entry of a source that is not read: a path leaving the tree (../,
// absolute), a symbolic or hard link, a special file.
type Problem struct {
	// Name is the entry's name as stored (or its path under a directory source).
	Name   string
	Reason string
}

func (p Problem) Error() string { return fmt.Sprintf("%s: %s", p.Name, p.Reason) }

// entry is one indexed regular file or directory.
type entry struct {
	name  string // cleaned, slash-separated, relative
	size  int64
	dir   bool
	order int    // tar: position among the archive's headers
	data  []byte // tar: cached content of a small file
	zf    *zip.File
}

// Source is a directory or an archive opened for reading in place. Names inside it
// are slash-separated paths relative to its root ("" is the root). It is safe for
// concurrent use once opened.
type Source struct {
	// Path is the directory or archive file as given.
	Path string
	// Kind is SourceDir, SourceTarGz, SourceTar or SourceZip.
	Kind string
	// Problems are the entries that were refused.
	Problems []Problem

	lim     Limits
	entries map[string]*entry
	kids    map[string][]string
	root    *os.Root    // dir
	zr      *zip.Reader // zip
	file    *os.File    // zip, tar
	size    int64       // archive size
	gz      bool

	// mu guards idle and closed: the tar streams left where their last read
	// ended, for the next entry opened after them.
	mu     sync.Mutex
	idle   []*tarCursor
	closed bool

	// factsMu guards facts: each run's facts by its folder, read once
	// (Run.Facts).
	factsMu sync.Mutex
	facts   map[string]*factsRead
}

// maxIdleCursors bounds the tar streams kept open between reads (as many as
// readers working through an archive at once: rescore's --jobs).
const maxIdleCursors = 16

// tarCursor is a stream of a tar archive, decompressed as far as it has been
// read: its next header is the entry of order next.
type tarCursor struct {
	tr    *tar.Reader
	next  int
	close func()
}

// ArchiveKind tells which archive form a file name has ("" when none).
func ArchiveKind(name string) string {
	n := strings.ToLower(name)
	switch {
	case strings.HasSuffix(n, ".tar.gz"), strings.HasSuffix(n, ".tgz"):
		return SourceTarGz
	case strings.HasSuffix(n, ".tar"):
		return SourceTar
	case strings.HasSuffix(n, ".zip"):
		return SourceZip
	}
	return ""
}

// Open opens a directory or an archive (.tar.gz, .tgz, .tar, .zip) and indexes it.
// A directory is read through an os.Root, so nothing outside it is ever opened; a
// symbolic link inside it that leads out is listed in Problems and not read. An
// archive is read in place, never extracted: entries with absolute names or ..
// components, links and special files are listed in Problems and not read, and
// an archive that expands past lim.MaxExpansion times its size is an error
// (infile.ErrExpansion). Close releases it.
func Open(p string, lim Limits) (*Source, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", p, err)
	}
	s := &Source{Path: p, lim: lim, entries: map[string]*entry{"": {dir: true}}}
	switch {
	case st.IsDir():
		s.Kind = SourceDir
		err = s.indexDir()
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("open %q: not a regular file or directory", p)
	default:
		s.Kind = ArchiveKind(p)
		s.size = st.Size()
		switch s.Kind {
		case SourceTarGz, SourceTar:
			s.gz = s.Kind == SourceTarGz
			err = s.indexTar()
		case SourceZip:
			err = s.indexZip()
		default:
			return nil, fmt.Errorf("open %q: not a directory or a .tar.gz, .tgz, .tar or .zip archive", p)
		}
	}
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	s.kids = map[string][]string{}
	for n := range s.entries {
		if n == "" {
			continue
		}
		d := path.Dir(n)
		if d == "." {
			d = ""
		}
		s.kids[d] = append(s.kids[d], n)
	}
	for _, k := range s.kids {
		sort.Strings(k)
	}
	return s, nil
}

// Close releases the source's files.
func (s *Source) Close() error {
	s.mu.Lock()
	for _, c := range s.idle {
		c.close()
	}
	s.idle, s.closed = nil, true
	s.mu.Unlock()
	var err error
	if s.root != nil {
		err = s.root.Close()
		s.root = nil
	}
	if s.file != nil {
		err = errors.Join(err, s.file.Close())
		s.file = nil
	}
	return err
}

// cleanName turns a stored entry name into a safe relative name, or reports why
// it is not one.
func cleanName(raw string) (string, string) {
	n := strings.ReplaceAll(raw, "\\", "/")
	if strings.HasPrefix(n, "/") || (len(n) >= 2 && n[1] == ':') {
		return "", "absolute path: not read"
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", "path leads out of the archive (..): not read"
		}
	}
	n = path.Clean(n)
	if n == "." {
		n = ""
	}
	return n, ""
}

// add indexes a regular file and its parent directories.
func (s *Source) add(e *entry) {
	s.entries[e.name] = e
	for d := path.Dir(e.name); ; d = path.Dir(d) {
		if d == "." {
			d = ""
		}
		if _, ok := s.entries[d]; ok {
			break
		}
		s.entries[d] = &entry{name: d, dir: true}
		if d == "" {
			break
		}
	}
}

func (s *Source) indexDir() error {
	real, err := filepath.EvalSymlinks(s.Path)
	if err != nil {
		return fmt.Errorf("open %q: %w", s.Path, err)
	}
	if real, err = filepath.Abs(real); err != nil {
		return fmt.Errorf("open %q: %w", s.Path, err)
	}
	if s.root, err = os.OpenRoot(real); err != nil {
		return fmt.Errorf("open %q: %w", s.Path, err)
	}
	return filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		rel, rerr := filepath.Rel(real, p)
		if rerr != nil {
			return rerr
		}
		name := filepath.ToSlash(rel)
		if name == "." {
			name = ""
		}
		if err != nil {
			if name == "" {
				return fmt.Errorf("open %q: %w", s.Path, err)
			}
			s.Problems = append(s.Problems, Problem{name, "cannot be read: " + err.Error()})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch t := d.Type(); {
		case d.IsDir() && name != "" && outguard.OwnName(d.Name()):
			// An output being built or swapped out (internal/outguard): not a run.
			return fs.SkipDir
		case d.IsDir():
			if name != "" {
				s.add(&entry{name: name, dir: true})
			}
		case t&fs.ModeSymlink != 0:
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				s.Problems = append(s.Problems, Problem{name, "broken symbolic link: not read"})
				return nil
			}
			if target, err = filepath.Abs(target); err != nil {
				return err
			}
			inside, _ := filepath.Rel(real, target)
			if inside == ".." || strings.HasPrefix(inside, ".."+string(filepath.Separator)) || filepath.IsAbs(inside) {
				s.Problems = append(s.Problems, Problem{name, fmt.Sprintf("symbolic link leading out of the tree (to %s): not followed", target)})
				return nil
			}
			st, err := os.Stat(target)
			if err != nil || !st.Mode().IsRegular() {
				// Links to folders inside the tree are not entered (no loops).
				if err == nil && !st.IsDir() {
					s.Problems = append(s.Problems, Problem{name, "symbolic link to a special file: not read"})
				}
				return nil
			}
			s.add(&entry{name: name, size: st.Size()})
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				s.Problems = append(s.Problems, Problem{name, "cannot be read: " + err.Error()})
				return nil
			}
			s.add(&entry{name: name, size: info.Size()})
		default:
			s.Problems = append(s.Problems, Problem{name, "special file (" + t.String() + "): not read"})
		}
		return nil
	})
}

func (s *Source) expansionLimit() int64 {
	// A floor, so that tar's own padding (512-byte blocks, a 1 KiB trailer) does not
	// make a tiny archive "expand" past the ratio.
	return infile.ExpansionLimit(max(s.size, 1), s.lim.maxExpansion(), minExpansionBytes)
}

// minExpansionBytes is what any archive may expand to, whatever its size.
const minExpansionBytes = 64 << 10

// tarStream opens the archive from its start: the tar reader, and a function
// closing what it opened.
func (s *Source) tarStream() (*tar.Reader, *infile.ExpansionReader, func(), error) {
	f, err := os.Open(s.Path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open %q: %w", s.Path, err)
	}
	var r io.Reader = f
	closers := []func(){func() { f.Close() }}
	if s.gz {
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, nil, nil, fmt.Errorf("open %q: not gzip: %w", s.Path, err)
		}
		r = zr
		closers = append(closers, func() { zr.Close() })
	}
	cr := &infile.ExpansionReader{R: r, Limit: s.expansionLimit(), Name: s.Path, Size: s.size, Ratio: s.lim.maxExpansion()}
	if !s.gz {
		cr.Limit = -1
	}
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	return tar.NewReader(cr), cr, closeAll, nil
}

func (s *Source) indexTar() error {
	tr, _, closeAll, err := s.tarStream()
	if err != nil {
		return err
	}
	defer closeAll()
	cached := int64(0)
	for order := 0; ; order++ {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read archive %q: %w", s.Path, err)
		}
		name, why := cleanName(h.Name)
		if why != "" {
			s.Problems = append(s.Problems, Problem{h.Name, why})
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if name != "" {
				s.add(&entry{name: name, dir: true})
			}
		case tar.TypeReg, '\x00': // '0' and the old form
			e := &entry{name: name, size: h.Size, order: order}
			if h.Size <= cacheFileBytes && cached+h.Size <= cacheTotalBytes {
				data, err := io.ReadAll(io.LimitReader(tr, h.Size))
				if err != nil {
					return fmt.Errorf("read archive %q entry %q: %w", s.Path, h.Name, err)
				}
				e.data = data
				cached += h.Size
			}
			s.add(e)
		case tar.TypeSymlink, tar.TypeLink:
			s.Problems = append(s.Problems, Problem{h.Name, fmt.Sprintf("link to %q: links are not followed in archives", h.Linkname)})
		case tar.TypeXGlobalHeader, tar.TypeXHeader, tar.TypeGNULongName, tar.TypeGNULongLink:
		default:
			s.Problems = append(s.Problems, Problem{h.Name, fmt.Sprintf("special entry (type %q): not read", h.Typeflag)})
		}
	}
}

func (s *Source) indexZip() error {
	f, err := os.Open(s.Path)
	if err != nil {
		return fmt.Errorf("open %q: %w", s.Path, err)
	}
	s.file = f
	zr, err := zip.NewReader(f, s.size)
	if err != nil {
		return fmt.Errorf("read archive %q: %w", s.Path, err)
	}
	s.zr = zr
	var total uint64
	for _, zf := range zr.File {
		name, why := cleanName(zf.Name)
		if why != "" {
			s.Problems = append(s.Problems, Problem{zf.Name, why})
			continue
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir() || strings.HasSuffix(zf.Name, "/"):
			if name != "" {
				s.add(&entry{name: name, dir: true})
			}
		case mode&fs.ModeSymlink != 0:
			s.Problems = append(s.Problems, Problem{zf.Name, "symbolic link: links are not followed in archives"})
		case !mode.IsRegular():
			s.Problems = append(s.Problems, Problem{zf.Name, "special entry: not read"})
		default:
			total += zf.UncompressedSize64
			if total > 1<<62 {
				total = 1 << 62
			}
			s.add(&entry{name: name, size: int64(zf.UncompressedSize64), zf: zf})
		}
	}
	if lim := s.expansionLimit(); lim >= 0 && total > uint64(lim) {
		return fmt.Errorf("%q: %w: its entries declare %d bytes from %d (%gx its size; a higher expansion limit lifts this)",
			s.Path, infile.ErrExpansion, total, s.size, s.lim.maxExpansion())
	}
	return nil
}

// Names lists every indexed regular file and directory, sorted ("" is the root).
func (s *Source) Names() []string {
	out := make([]string, 0, len(s.entries))
	for n := range s.entries {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// IsDir tells whether name is a directory of the source.
func (s *Source) IsDir(name string) bool {
	e, ok := s.entries[name]
	return ok && e.dir
}

// IsFile tells whether name is a regular file of the source.
func (s *Source) IsFile(name string) bool {
	e, ok := s.entries[name]
	return ok && !e.dir
}

// Size is a regular file's size in bytes (-1 when it is none).
func (s *Source) Size(name string) int64 {
	e, ok := s.entries[name]
	if !ok || e.dir {
		return -1
	}
	return e.size
}

// Label names an entry for messages: the source's path joined with it.
func (s *Source) Label(name string) string {
	if name == "" {
		return s.Path
	}
	if s.Kind == SourceDir {
		return filepath.Join(s.Path, filepath.FromSlash(name))
	}
	return s.Path + "/" + name
}

// Open opens a regular file of the source for streaming. In a tar archive this
// reads (decompresses) on from where an earlier read of the source ended when it
// has not passed the entry, else from the archive's start.
func (s *Source) Open(name string) (io.ReadCloser, error) {
	rc, err := s.open(name)
	if err != nil || s.lim.Opened == nil {
		return rc, err
	}
	return s.lim.Opened(name, rc), nil
}

func (s *Source) open(name string) (io.ReadCloser, error) {
	e, ok := s.entries[name]
	if !ok || e.dir {
		return nil, fmt.Errorf("open %q: %w", s.Label(name), fs.ErrNotExist)
	}
	switch s.Kind {
	case SourceDir:
		f, err := s.root.Open(filepath.FromSlash(name))
		if err != nil {
			return nil, fmt.Errorf("open %q: %w", s.Label(name), err)
		}
		st, err := f.Stat()
		if err != nil || !st.Mode().IsRegular() {
			f.Close()
			return nil, fmt.Errorf("open %q: not a regular file", s.Label(name))
		}
		return f, nil
	case SourceZip:
		rc, err := e.zf.Open()
		if err != nil {
			return nil, fmt.Errorf("open %q: %w", s.Label(name), err)
		}
		return rc, nil
	}
	if e.data != nil {
		return io.NopCloser(bytes.NewReader(e.data)), nil
	}
	c, err := s.cursorTo(e.order)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", s.Label(name), err)
	}
	return &cursorReader{r: io.LimitReader(c.tr, e.size), c: c, s: s}, nil
}

// cursorTo returns a tar stream whose next read is the data of the entry of
// order: an idle one that has not passed it, the furthest along, else one from
// the archive's start. Entries opened in archive order (rescore reads its runs
// so) thus decompress the archive once, not once per entry.
func (s *Source) cursorTo(order int) (*tarCursor, error) {
	s.mu.Lock()
	best := -1
	for i, c := range s.idle {
		if c.next <= order && (best < 0 || c.next > s.idle[best].next) {
			best = i
		}
	}
	var c *tarCursor
	if best >= 0 {
		c = s.idle[best]
		s.idle = slices.Delete(s.idle, best, best+1)
	}
	s.mu.Unlock()
	if c == nil {
		tr, _, closeAll, err := s.tarStream()
		if err != nil {
			return nil, err
		}
		c = &tarCursor{tr: tr, close: closeAll}
	}
	for c.next <= order {
		if _, err := c.tr.Next(); err != nil {
			c.close()
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		c.next++
	}
	return c, nil
}

// park keeps a stream for the next entry opened after it; past maxIdleCursors
// the one furthest behind is closed.
func (s *Source) park(c *tarCursor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.close()
		return
	}
	s.idle = append(s.idle, c)
	if len(s.idle) > maxIdleCursors {
		last := 0
		for i, x := range s.idle {
			if x.next < s.idle[last].next {
				last = i
			}
		}
		s.idle[last].close()
		s.idle = slices.Delete(s.idle, last, last+1)
	}
}

// cursorReader reads one entry from a tar stream; Close hands the stream back
// to its source (closed instead when a read failed).
type cursorReader struct {
	r      io.Reader
	c      *tarCursor
	s      *Source
	failed bool
}

func (r *cursorReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.failed = true
	}
	return n, err
}

func (r *cursorReader) Close() error {
	switch {
	case r.c == nil:
	case r.failed:
		r.c.close()
	default:
		r.s.park(r.c)
	}
	r.c = nil
	return nil
}

// ReadFile reads a whole regular file, refusing one larger than the source's
// MaxFileBytes (a summary or a config is small; a huge one is not read into
// memory).
func (s *Source) ReadFile(name string) ([]byte, error) {
	e, ok := s.entries[name]
	if !ok || e.dir {
		return nil, fmt.Errorf("read %q: %w", s.Label(name), fs.ErrNotExist)
	}
	limit := s.lim.maxFile()
	if e.size > limit {
		return nil, fmt.Errorf("read %q: %d bytes, more than the %d this file may have", s.Label(name), e.size, limit)
	}
	if e.data != nil {
		return e.data, nil
	}
	rc, err := s.Open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", s.Label(name), err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read %q: more than the %d bytes this file may have", s.Label(name), limit)
	}
	return data, nil
}

// Children lists the immediate entries of directory dir (names relative to the
// source), sorted.
func (s *Source) Children(dir string) []string { return s.kids[dir] }
