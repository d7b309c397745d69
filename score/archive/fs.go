package archive

import (
	"io"
	"io/fs"
	"path"
	"time"
)

// FS returns the source's files as an io/fs.FS (also fs.StatFS, fs.ReadDirFS
// and fs.ReadFileFS), for readers written against a folder: an archive's
// entries are read in place as Open reads them (a tar.gz's small entries from
// memory, the others streamed), ReadFile within MaxFileBytes; nothing is
// extracted. Refused entries (Problems) are absent from it.
func (s *Source) FS() fs.FS { return sourceFS{s} }

// ArchiveFS is FS for an archive, nil for a directory source: readers that look
// around a folder on disk (above it, as the submission checker looks for its
// tree's root) read the disk itself.
func (s *Source) ArchiveFS() fs.FS {
	if s.Kind == SourceDir {
		return nil
	}
	return s.FS()
}

type sourceFS struct{ s *Source }

var (
	_ fs.StatFS     = sourceFS{}
	_ fs.ReadDirFS  = sourceFS{}
	_ fs.ReadFileFS = sourceFS{}
)

// entry returns the indexed entry of an fs name ("." is the root).
func (f sourceFS) entry(op, name string) (*entry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	key := name
	if key == "." {
		key = ""
	}
	e, ok := f.s.entries[key]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return e, nil
}

func (f sourceFS) Open(name string) (fs.File, error) {
	e, err := f.entry("open", name)
	if err != nil {
		return nil, err
	}
	if e.dir {
		es, err := f.ReadDir(name)
		if err != nil {
			return nil, err
		}
		return &dirFile{info: entryInfo{e}, entries: es}, nil
	}
	rc, err := f.s.Open(e.name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &file{ReadCloser: rc, info: entryInfo{e}}, nil
}

func (f sourceFS) Stat(name string) (fs.FileInfo, error) {
	e, err := f.entry("stat", name)
	if err != nil {
		return nil, err
	}
	return entryInfo{e}, nil
}

func (f sourceFS) ReadDir(name string) ([]fs.DirEntry, error) {
	e, err := f.entry("readdir", name)
	if err != nil {
		return nil, err
	}
	if !e.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	kids := f.s.Children(e.name)
	out := make([]fs.DirEntry, 0, len(kids))
	for _, k := range kids {
		out = append(out, fs.FileInfoToDirEntry(entryInfo{f.s.entries[k]}))
	}
	return out, nil
}

func (f sourceFS) ReadFile(name string) ([]byte, error) {
	e, err := f.entry("read", name)
	if err != nil {
		return nil, err
	}
	if e.dir {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	b, err := f.s.ReadFile(e.name)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	// A tar entry's cached bytes are shared: the caller gets its own copy.
	return append([]byte(nil), b...), nil
}

// entryInfo is an indexed entry as an fs.FileInfo.
type entryInfo struct{ e *entry }

func (i entryInfo) Name() string {
	if i.e.name == "" {
		return "."
	}
	return path.Base(i.e.name)
}
func (i entryInfo) Size() int64 {
	if i.e.dir {
		return 0
	}
	return i.e.size
}
func (i entryInfo) Mode() fs.FileMode {
	if i.e.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i entryInfo) ModTime() time.Time { return time.Time{} }
func (i entryInfo) IsDir() bool        { return i.e.dir }
func (i entryInfo) Sys() any           { return nil }

// file is a regular file of the source opened for reading.
type file struct {
	io.ReadCloser
	info entryInfo
}

func (f *file) Stat() (fs.FileInfo, error) { return f.info, nil }

// dirFile is a directory of the source opened for listing.
type dirFile struct {
	info    entryInfo
	entries []fs.DirEntry
	off     int
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: fs.ErrInvalid}
}
func (d *dirFile) Close() error { return nil }

func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n <= 0 {
		d.off = len(d.entries)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(rest))
	d.off += n
	return rest[:n], nil
}
