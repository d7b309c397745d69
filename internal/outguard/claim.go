package outguard

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Claim is an output taken by Take for one command's life: its lock is held, and
// the new output is built where Dir says until Commit puts it in place.
type Claim struct {
	// Path is the output, absolute and cleaned.
	Path string

	kind   Kind
	mode   mode
	work   string      // where the new output is written (a folder kind's Dir)
	before fs.FileInfo // what was at Path when taken, nil when nothing
	id     string      // the marker's id
	lock   *lock
	done   bool
	// entries are the names a Shared kind writes (Output.Entries); aside holds
	// the earlier output's entries of those names while the new ones are
	// written (mode moveAside).
	entries []string
	aside   string
}

type mode int

const (
	fresh     mode = iota // nothing at Path: built beside, renamed into place
	intoEmpty             // an empty folder at Path: built beside, its entries moved in
	replace               // an earlier output at Path: built beside, swapped in at Commit
	inPlace               // written at Path directly (Live, nothing there to keep)
	extend                // an earlier output of the kind extended in place (Add)
	moveAside             // a Shared kind over an earlier output: its entries moved aside, the new ones written in place
)

// Take claims the output o for the command's life: its path made absolute and
// cleaned, it checks o against inputs (CheckPaths), takes o's exclusive lock (a
// second writer of the same output is refused with ErrBusy, naming this
// process), puts back an earlier output a killed swap left aside, checks what is
// at the path (Output.Check) and, for a folder, makes the folder the command
// writes into, marked as o.Kind:
//
//   - nothing at the path (or an empty folder), o.Live: the path itself;
//   - otherwise a hidden folder beside it, which Commit puts in place. An earlier
//     output stays where it is, whole, until then: on an error, an interrupt or
//     a second interrupt the command's deferred Release drops what was built
//     (or, after a kill, the next Take of the output does).
//
// Call Release when done (deferred), Commit when the new output is whole.
func Take(o Output, inputs ...string) (*Claim, error) {
	if o.Path == "" {
		return nil, errors.New("no output path given")
	}
	abs, err := Abs(o.Path)
	if err != nil {
		return nil, err
	}
	o.Path = abs
	if err := CheckPaths(abs, inputs...); err != nil {
		return nil, err
	}
	parent := filepath.Dir(abs)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("output %q: %w", abs, err)
	}
	l, err := acquire(abs)
	if err != nil {
		return nil, err
	}
	c := &Claim{Path: abs, kind: o.Kind, lock: l, id: newID(), entries: o.Entries}
	ok := false
	defer func() {
		if !ok {
			l.release()
		}
	}()
	if err := recoverAside(abs); err != nil {
		return nil, err
	}
	removeStale(abs)
	got, err := o.existing()
	switch {
	case err == nil:
	case o.Add && errors.Is(err, ErrExists):
	default:
		return nil, err
	}
	if st, err := os.Lstat(abs); err == nil {
		c.before = st
	}
	switch {
	case got != "" && o.Add && !o.Overwrite:
		c.mode = extend
	case got != "" && o.Kind.Shared:
		c.mode = moveAside
	case got != "":
		c.mode = replace
	case o.Live || o.Kind.Shared:
		c.mode = inPlace
	case c.before != nil:
		c.mode = intoEmpty
	default:
		c.mode = fresh
	}
	if o.Kind.Folder {
		switch c.mode {
		case inPlace:
			if err := os.MkdirAll(abs, 0o755); err != nil {
				return nil, fmt.Errorf("create %q: %w", abs, err)
			}
			c.work = abs
			if err := writeMarker(abs, o.Kind, c.id, nil); err != nil {
				c.dropInPlace()
				return nil, err
			}
		case extend:
			c.work = abs
			if m, ok := readMarker(abs); ok && m.ID != "" {
				c.id = m.ID
			}
		case moveAside:
			c.work = abs
			if err := c.moveOldAside(); err != nil {
				return nil, err
			}
		default:
			if c.work, err = os.MkdirTemp(parent, "."+filepath.Base(abs)+newInfix+"*"); err != nil {
				return nil, fmt.Errorf("output %q: %w", abs, err)
			}
			if err := os.Chmod(c.work, 0o755); err != nil {
				os.RemoveAll(c.work)
				return nil, fmt.Errorf("output %q: %w", abs, err)
			}
			if err := writeMarker(c.work, o.Kind, c.id, nil); err != nil {
				os.RemoveAll(c.work)
				return nil, err
			}
		}
	}
	ok = true
	return c, nil
}

// Dir is the folder a folder output is written into: Path itself, or the hidden
// folder beside it that Commit puts in place.
func (c *Claim) Dir() string { return c.work }

// InPlace tells whether the output is written at Path itself (Live with nothing
// to keep, or Add): what is written there stays, whole or not.
func (c *Claim) InPlace() bool { return c.mode == inPlace || c.mode == extend }

// Replacing tells whether an earlier output is at Path, kept until Commit.
func (c *Claim) Replacing() bool { return c.mode == replace }

// Commit puts the new output in place: it records the entries written in the
// marker, then renames the folder built beside into place (swapping it with an
// earlier output at once, and only then removing that), and lets go of the
// lock. On an error the earlier output is where it was.
func (c *Claim) Commit() error {
	if c == nil || c.done {
		return nil
	}
	defer c.end()
	if !c.kind.Folder {
		if c.work == "" {
			return fmt.Errorf("output %q: nothing was written", c.Path)
		}
		if err := c.unchanged(); err != nil {
			os.Remove(c.work)
			return err
		}
		if err := os.Rename(c.work, c.Path); err != nil {
			os.Remove(c.work)
			return fmt.Errorf("rename into %q: %w", c.Path, err)
		}
		syncDir(filepath.Dir(c.Path))
		return nil
	}
	entries, err := listEntries(c.work)
	if err != nil {
		return c.fail(err)
	}
	if c.kind.Shared {
		entries = present(c.work, c.entries)
	}
	if c.mode == extend {
		// Entries an earlier command recorded that are still there stay listed.
		if m, ok := readMarker(c.work); ok {
			entries = mergeEntries(m.Entries, entries)
		}
	}
	if err := writeMarker(c.work, c.kind, c.id, entries); err != nil {
		return c.fail(err)
	}
	switch c.mode {
	case inPlace, extend:
		return nil
	case moveAside:
		// The new output is whole: the earlier entries go (renamed first, so
		// that a kill while they are removed leaves nothing to put back).
		trash := filepath.Join(filepath.Dir(c.Path), "."+filepath.Base(c.Path)+newInfix+newID())
		if err := os.Rename(c.aside, trash); err != nil {
			return fmt.Errorf("remove the earlier entries of %q (in %q): %w", c.Path, c.aside, err)
		}
		c.aside = ""
		os.RemoveAll(trash)
	case fresh:
		if err := os.Rename(c.work, c.Path); err != nil {
			return c.fail(fmt.Errorf("rename into %q: %w", c.Path, err))
		}
	case intoEmpty:
		if err := c.moveInto(entries); err != nil {
			return c.fail(err)
		}
	case replace:
		if err := c.unchanged(); err != nil {
			return c.fail(err)
		}
		if err := swap(c.work, c.Path); err != nil {
			return c.fail(err)
		}
	}
	syncDir(filepath.Dir(c.Path))
	return nil
}

// fail drops what was built and returns err.
func (c *Claim) fail(err error) error {
	switch c.mode {
	case inPlace, extend:
	case moveAside:
		c.putBack()
	default:
		os.RemoveAll(c.work)
	}
	return err
}

// Release ends the claim: when Commit did not run, what was built is dropped
// (a folder created in place with it) and an earlier output stays as it was.
// The lock is let go. Deferred by every command that takes a claim.
func (c *Claim) Release() error {
	if c == nil || c.done {
		return nil
	}
	defer c.end()
	switch c.mode {
	case extend:
		return nil
	case inPlace:
		if c.kind.Shared && c.before != nil {
			return c.dropEntries()
		}
		return c.dropInPlace()
	case moveAside:
		return c.putBack()
	}
	if c.work != "" {
		return os.RemoveAll(c.work)
	}
	return nil
}

// dropInPlace removes what was written in place: the folder when Take created
// it, else what was written into the folder (empty when taken).
func (c *Claim) dropInPlace() error {
	if c.before == nil {
		return os.RemoveAll(c.Path)
	}
	ents, err := os.ReadDir(c.Path)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		errs = append(errs, os.RemoveAll(filepath.Join(c.Path, e.Name())))
	}
	return errors.Join(errs...)
}

// moveOldAside moves the earlier output's entries of the names this claim
// writes (and those its marker lists) into a hidden folder beside Path.
func (c *Claim) moveOldAside() error {
	names := c.entries
	if m, ok := readMarker(c.Path); ok {
		names = mergeEntries(m.Entries, names)
	}
	aside, err := os.MkdirTemp(filepath.Dir(c.Path), "."+filepath.Base(c.Path)+oldInfix+"*")
	if err != nil {
		return fmt.Errorf("output %q: %w", c.Path, err)
	}
	c.aside = aside
	for _, n := range present(c.Path, names) {
		if err := os.Rename(filepath.Join(c.Path, n), filepath.Join(aside, n)); err != nil {
			err = fmt.Errorf("move the earlier %q aside: %w", filepath.Join(c.Path, n), err)
			return errors.Join(err, c.putBack())
		}
	}
	return nil
}

// putBack drops the entries written in place of those moved aside and puts the
// earlier ones back.
func (c *Claim) putBack() error {
	if c.aside == "" {
		return nil
	}
	err := restoreEntries(c.Path, c.aside, c.entries)
	if err == nil {
		c.aside = ""
	}
	return err
}

// restoreEntries removes names (and every entry of aside) from dir, moves the
// entries of aside back into dir and removes aside.
func restoreEntries(dir, aside string, names []string) error {
	ents, err := os.ReadDir(aside)
	if err != nil {
		return fmt.Errorf("put back the earlier entries of %q from %q: %w", dir, aside, err)
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, n)))
	}
	for _, e := range ents {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		if err := os.Rename(filepath.Join(aside, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("put back %q from %q: %w", e.Name(), aside, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.Remove(aside)
}

// dropEntries removes the entries a Shared kind wrote in place.
func (c *Claim) dropEntries() error {
	var errs []error
	for _, n := range append(append([]string{}, c.entries...), MarkerFile) {
		errs = append(errs, os.RemoveAll(filepath.Join(c.Path, n)))
	}
	return errors.Join(errs...)
}

// present lists the names of names that exist in dir.
func present(dir string, names []string) []string {
	out := []string{}
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func (c *Claim) end() {
	c.done = true
	c.lock.release()
}

// unchanged checks that Path still holds what Take found there.
func (c *Claim) unchanged() error {
	st, err := os.Lstat(c.Path)
	switch {
	case c.before == nil && errors.Is(err, fs.ErrNotExist):
		return nil
	case c.before != nil && err == nil && os.SameFile(st, c.before):
		return nil
	}
	return fmt.Errorf("output %q changed while agentrace wrote it (not by agentrace): nothing replaced; choose another path (%w)", c.Path, ErrNotOurs)
}

// moveInto moves the entries built beside into the empty folder at Path, the
// marker last, and removes the folder built beside.
func (c *Claim) moveInto(entries []string) error {
	if empty, err := emptyDir(c.Path); err != nil || !empty {
		return fmt.Errorf("output %q is no longer empty: nothing moved in; choose another path (%w)", c.Path, ErrNotOurs)
	}
	for _, n := range append(entries, MarkerFile) {
		if err := os.Rename(filepath.Join(c.work, n), filepath.Join(c.Path, n)); err != nil {
			return fmt.Errorf("move %q into %q: %w", n, c.Path, err)
		}
	}
	return os.Remove(c.work)
}

// swap puts the folder built at src in place of the earlier output at dst, then
// removes the earlier one: at once where the file system can exchange the two,
// else by moving the earlier one aside first and back when the second rename
// fails. The earlier output is removed only once the new one is in place.
func swap(src, dst string) error {
	err := exchange(src, dst)
	if err == nil {
		return os.RemoveAll(src) // now the earlier output
	}
	if !errors.Is(err, errors.ErrUnsupported) && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOSYS) {
		return fmt.Errorf("put the new output in place of %q: %w", dst, err)
	}
	return swapByRenames(src, dst)
}

// swapByRenames is swap where the file system cannot exchange two folders: the
// earlier output is moved aside, the new one renamed into place, and the earlier
// one moved back when that fails, removed only once it succeeded.
func swapByRenames(src, dst string) error {
	aside := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+oldInfix+newID())
	if err := os.Rename(dst, aside); err != nil {
		return fmt.Errorf("move the earlier output %q aside: %w", dst, err)
	}
	if err := os.Rename(src, dst); err != nil {
		if err2 := os.Rename(aside, dst); err2 != nil {
			return fmt.Errorf("put the new output in place of %q: %w; the earlier output is kept at %q", dst, err, aside)
		}
		return fmt.Errorf("put the new output in place of %q: %w", dst, err)
	}
	return os.RemoveAll(aside)
}

// recoverAside puts back what a claim of path killed before its end left aside
// (.X.agentrace-old-* beside it): a whole earlier output a swap had moved out
// (it holds a marker) when nothing is at path, or the earlier entries of a
// Shared kind, over the new ones written meanwhile.
func recoverAside(path string) error {
	olds, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+globEscape(filepath.Base(path))+oldInfix+"*"))
	for _, o := range olds {
		if _, err := os.Lstat(filepath.Join(o, MarkerFile)); err != nil {
			if err := restoreEntries(path, o, nil); err != nil {
				return err
			}
			continue
		}
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			if err := os.Rename(o, path); err != nil {
				return fmt.Errorf("put back the earlier output %q from %q: %w", path, o, err)
			}
			continue
		}
		os.RemoveAll(o)
	}
	return nil
}

// removeStale removes what an earlier claim of path left beside it when it was
// killed: its lock is held now, so nothing else writes there.
func removeStale(path string) {
	news, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+globEscape(filepath.Base(path))+newInfix+"*"))
	for _, n := range news {
		os.RemoveAll(n)
	}
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// OwnName tells whether name is a file a claim keeps beside its outputs (a lock,
// a folder or file being built or swapped out) or a folder's marker: never an
// output, nor an input to read.
func OwnName(name string) bool {
	return name == MarkerFile || strings.HasPrefix(name, ".") &&
		(strings.HasSuffix(name, lockSuffix) || strings.Contains(name, newInfix) || strings.Contains(name, oldInfix))
}

// listEntries lists dir's entries but the claim's own, sorted.
func listEntries(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, e := range ents {
		if !OwnName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

func mergeEntries(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range append(append([]string{}, a...), b...) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func syncDir(dir string) {
	if f, err := os.Open(dir); err == nil {
		_ = f.Sync()
		f.Close()
	}
}

// WriteFile writes the file output o (a file kind): it takes o (Take), writes
// what fill writes to a hidden file beside it, syncs it and renames it into
// place, replacing an earlier file at once. On an error nothing is left and an
// earlier file stays.
func WriteFile(o Output, inputs []string, fill func(w io.Writer) error) error {
	c, err := Take(o, inputs...)
	if err != nil {
		return err
	}
	defer c.Release()
	return c.WriteFile(fill)
}

// WriteFile writes a file claim's content (see the function WriteFile) and
// commits it.
func (c *Claim) WriteFile(fill func(w io.Writer) error) error {
	if c.kind.Folder {
		return fmt.Errorf("outguard: WriteFile is for file outputs, not %s", c.kind.Name)
	}
	f, err := os.CreateTemp(filepath.Dir(c.Path), "."+filepath.Base(c.Path)+newInfix+"*")
	if err != nil {
		return fmt.Errorf("create temp for %q: %w", c.Path, err)
	}
	c.work = f.Name()
	if err := fillFile(f, c.Path, fill); err != nil {
		os.Remove(c.work)
		return err
	}
	return c.Commit()
}

// BuildDir writes the folder output o: it takes o (Take), fills the folder Dir
// names and commits it when fill succeeded.
func BuildDir(o Output, inputs []string, fill func(dir string) error) error {
	c, err := Take(o, inputs...)
	if err != nil {
		return err
	}
	defer c.Release()
	if err := fill(c.Dir()); err != nil {
		return err
	}
	return c.Commit()
}

// AtomicWrite writes the file path, inside an output the command has claimed
// (or its own run folder), so that a reader never sees it half-written: a
// temporary file beside it, synced and renamed into place when fill succeeded.
func AtomicWrite(path string, fill func(w io.Writer) error) error {
	a, err := CreateAtomic(path)
	if err != nil {
		return err
	}
	if err := fill(a); err != nil {
		a.Abort()
		return err
	}
	return a.Commit()
}

// AtomicFile is AtomicWrite for a writer that fills the file over many calls
// (from several goroutines' work, in turn): written to a temporary file beside
// path, put in place by Commit, dropped by Abort.
type AtomicFile struct {
	path string
	f    *os.File
	bw   *bufio.Writer
}

// CreateAtomic starts writing the file path as AtomicWrite does.
func CreateAtomic(path string) (*AtomicFile, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+newInfix+"*")
	if err != nil {
		return nil, fmt.Errorf("create temp for %q: %w", path, err)
	}
	return &AtomicFile{path: path, f: f, bw: bufio.NewWriterSize(f, 1<<20)}, nil
}

// Write writes to the temporary file.
func (a *AtomicFile) Write(p []byte) (int, error) { return a.bw.Write(p) }

// Commit syncs the file and renames it into place; on an error nothing is left.
func (a *AtomicFile) Commit() error {
	tmp := a.f.Name()
	if err := finishFile(a.f, a.bw, a.path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, a.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("rename %q: %w", a.path, err)
	}
	return nil
}

// Abort drops the file written so far.
func (a *AtomicFile) Abort() {
	a.f.Close()
	os.Remove(a.f.Name())
}

// AtomicWriteBytes is AtomicWrite of data.
func AtomicWriteBytes(path string, data []byte) error {
	return AtomicWrite(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// fillFile writes fill's bytes to f through a buffer, syncs and closes it (mode
// 0644); f is closed on every path.
func fillFile(f *os.File, path string, fill func(w io.Writer) error) error {
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := fill(bw); err != nil {
		f.Close()
		return err
	}
	return finishFile(f, bw, path)
}

// finishFile flushes bw to f, syncs and closes f (mode 0644); f is closed on
// every path.
func finishFile(f *os.File, bw *bufio.Writer, path string) error {
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %q: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %q: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %q: %w", path, err)
	}
	return os.Chmod(f.Name(), 0o644)
}
