// Package outguard is the one way agentrace claims an output, so that no command
// destroys anyone's data. For every command that writes:
//
//  1. The output's path is made absolute and cleaned first (X/../X is X, dir/ is
//     dir, . is the working folder).
//  2. An output never is, contains, or sits inside one of the command's inputs.
//     Paths are compared as the files they name: symbolic links are resolved and
//     files are compared by device and inode, so a link, a bind mount or a hard link
//     to an input is caught too.
//  3. An exclusive lock is held on the output for the command's life (an flock on
//     .X.agentrace-lock beside X, removed when the command ends): a second writer
//     of the same output is refused at once, with the holder's pid and command.
//  4. An existing output is replaced only with --overwrite, and only when agentrace
//     made it as the same kind of output (a dataset over a dataset, a run over a
//     run). A folder is agentrace's when it carries the marker file .agentrace
//     naming its kind, a random id and the entries agentrace wrote there; an entry
//     the marker does not list (a file the user added) makes the folder the
//     user's too: it is refused, naming that entry (a Shared kind, the demo's
//     folder, leaves such entries where they are instead). A Parquet file is
//     agentrace's when its footer holds the key "agentrace.kind" (ParquetKey); a
//     JSONL trace file when its first line is a dataset_metadata record whose
//     generator starts with "agentrace" (synth and export write one). Anything
//     else is never replaced, with or without --overwrite. An empty folder may
//     always be written into.
//  5. The earlier output stays, whole, until the new one is: the new one is built
//     in a hidden folder (or file) beside it, .X.agentrace-new-*, and put in place
//     at the end (folders swapped at once with renameat2 RENAME_EXCHANGE where the
//     file system has it, else moved aside and back on failure); the earlier one
//     is removed only after that. An error, an interrupt or a second interrupt
//     drops what was built; after a kill, the next claim of X removes it.
//
// How a command uses it:
//
//	c, err := outguard.Take(outguard.Output{Path: o.Out, Kind: outguard.Dataset, Overwrite: o.Overwrite}, o.Inputs...)
//	if err != nil {
//		return err // names the path, the input, the holder or the way out
//	}
//	defer c.Release()
//	... write into c.Dir() ...
//	return c.Commit()
//
// BuildDir and WriteFile do the same for an output written in one go. A run (Live)
// is written at its path itself when nothing is there to keep, so that it can be
// read while it runs; over an earlier run it is built beside too, and the command
// commits it only when it is whole. Check answers, without taking anything,
// whether Take would refuse (a command checks before long work, so that a refusal
// comes at once). Files inside a claimed output are written with AtomicWrite.
//
// Inputs are every path the command reads: trace files, dataset and run folders,
// tokenizer folders, rulesets. A path that does not exist is skipped (the command
// reports it when it opens it). Outputs written inside a run folder that the run
// folder is meant to hold (score's scores.json) pass the run's files, not the run
// folder, as inputs.
//
// Errors wrap ErrOverlap, ErrExists, ErrNotOurs or ErrBusy, so callers can tell
// them apart.
package outguard

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/schemas"
)

// Kind is a kind of output. Folder tells whether the output is a folder (else a
// file). Commands that add a new kind of output declare their own Kind value.
type Kind struct {
	Name   string
	Folder bool
	// Shared tells that the folder may hold the user's files beside agentrace's
	// (the demo's folder): a replacement replaces only the entries agentrace
	// wrote and leaves the others where they are.
	Shared bool
}

// The kinds of output agentrace writes.
var (
	Dataset = Kind{Name: "dataset", Folder: true}            // ingest
	Run     = Kind{Name: "run", Folder: true}                // replay; each point of a sweep
	Sweep   = Kind{Name: "sweep", Folder: true}              // sweep: c<N>/ runs
	Report  = Kind{Name: "report", Folder: true}             // report
	Demo    = Kind{Name: "demo", Folder: true, Shared: true} // demo
	Traces  = Kind{Name: "traces"}                           // JSONL traces: synth, export
	Rescore = Kind{Name: "rescore"}                          // rescore's results table (Parquet)
)

// MarkerFile is the file in a folder that names the kind of output agentrace wrote
// there.
const MarkerFile = ".agentrace"

// ParquetKey is the Parquet footer key whose value names the kind of a Parquet file
// agentrace wrote.
const ParquetKey = "agentrace.kind"

// Errors wrapped by Check.
var (
	// ErrOverlap: the output is, contains or sits inside an input.
	ErrOverlap = errors.New("output overlaps an input")
	// ErrExists: the output exists, is agentrace's, of the same kind; --overwrite
	// would replace it.
	ErrExists = errors.New("output already exists")
	// ErrNotOurs: the output exists and is not agentrace's output of that kind; it
	// is never replaced.
	ErrNotOurs = errors.New("output is not agentrace's to replace")
	// ErrBusy: another process is writing the same output.
	ErrBusy = errors.New("output is being written by another command")
)

// Output is one output of a command.
type Output struct {
	// Path is where the output goes.
	Path string
	// Kind is what the command writes there.
	Kind Kind
	// Overwrite allows replacing an earlier output of the same kind (--overwrite).
	Overwrite bool
	// Ours, when set, recognizes an existing file as an earlier output of Kind, for
	// file formats the marks above do not cover.
	Ours func(path string) bool
	// Live: the output is a folder written while the command runs, to be read
	// meanwhile (a run): with nothing at Path to keep it is written at Path itself
	// (Claim.InPlace), and what was written stays there even when the command
	// did not finish.
	Live bool
	// Add: an earlier output of Kind is extended in place instead of refused
	// without Overwrite (a sweep given new points).
	Add bool
	// Entries are the names a Shared kind writes in its folder: only those are
	// replaced, the folder's other entries stay.
	Entries []string
}

// Abs returns path absolute and cleaned: what every check and claim works on.
// (Through a link to its folder an output names the same lock file, an flock
// being on the file, not its name.)
func Abs(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("output %q: %w", path, err)
	}
	return abs, nil
}

// Check is Output{Path: out, Kind: kind, Overwrite: overwrite}.Check(inputs...).
func Check(out string, kind Kind, overwrite bool, inputs ...string) error {
	return Output{Path: out, Kind: kind, Overwrite: overwrite}.Check(inputs...)
}

// Check returns nil when Take would take o now: it overlaps none of inputs
// (CheckPaths), no other process holds it, and it is absent, an empty folder
// (folder kinds), or an earlier output of the same kind with Overwrite set. It
// takes nothing.
func (o Output) Check(inputs ...string) error {
	if o.Path == "" {
		return errors.New("no output path given")
	}
	abs, err := Abs(o.Path)
	if err != nil {
		return err
	}
	o.Path = abs
	if err := CheckPaths(abs, inputs...); err != nil {
		return err
	}
	if err := probe(abs); err != nil {
		return err
	}
	_, err = o.existing()
	if o.Add && errors.Is(err, ErrExists) {
		return nil
	}
	return err
}

// existing checks what is at o.Path now and returns its kind ("" when nothing, or
// an empty folder).
func (o Output) existing() (string, error) {
	st, err := os.Lstat(o.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("output %q: %w", o.Path, err)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("output %q is a symbolic link: give the path it points to (%w)", o.Path, ErrNotOurs)
	}
	var got string
	switch {
	case st.IsDir():
		if !o.Kind.Folder {
			return "", fmt.Errorf("output %q is a folder; the %s output is a file: give a file name (%w)", o.Path, o.Kind.Name, ErrNotOurs)
		}
		empty, err := emptyDir(o.Path)
		if err != nil {
			return "", fmt.Errorf("output %q: %w", o.Path, err)
		}
		if empty {
			return "", nil
		}
		got = DirKind(o.Path)
	case st.Mode().IsRegular():
		if o.Kind.Folder {
			return "", fmt.Errorf("output %q is a file; the %s output is a folder: choose another path (%w)", o.Path, o.Kind.Name, ErrNotOurs)
		}
		got = FileKind(o.Path)
		if got == "" && o.Ours != nil && o.Ours(o.Path) {
			got = o.Kind.Name
		}
	default:
		return "", fmt.Errorf("output %q is not a regular file or folder (%s): choose another path (%w)", o.Path, st.Mode().Type(), ErrNotOurs)
	}
	switch {
	case got != o.Kind.Name && got != "":
		return got, fmt.Errorf("output %q holds an agentrace %s, not a %s: choose another path (%w)", o.Path, got, o.Kind.Name, ErrNotOurs)
	case got != o.Kind.Name:
		return got, fmt.Errorf("output %q already exists and agentrace did not write it: choose another path (%w)", o.Path, ErrNotOurs)
	}
	if st.IsDir() {
		// Only what agentrace wrote is replaced: an entry of the user's is named.
		if p, err := foreign(o.Path, o.Kind.Shared); err != nil {
			return got, fmt.Errorf("output %q: %w", o.Path, err)
		} else if p != "" {
			return got, fmt.Errorf("output %q holds %q, which agentrace did not write: move it out of the folder, or choose another path (%w)", o.Path, p, ErrNotOurs)
		}
	}
	if !o.Overwrite {
		return got, fmt.Errorf("output %q already holds a %s: overwriting replaces it, or choose another path (%w)", o.Path, got, ErrExists)
	}
	return got, nil
}

func emptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if len(names) > 0 {
		return false, nil
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return true, nil
}

// CheckPaths returns an error wrapping ErrOverlap when out is one of inputs, sits
// inside one (an input folder), or contains one. Symbolic links are resolved and
// existing files compared by identity (device and inode), so links, bind mounts
// and hard links are seen through. Empty inputs and inputs that do not exist are
// skipped.
func CheckPaths(out string, inputs ...string) error {
	outReal := resolve(out)
	outChain := chain(outReal) // out and its existing ancestors
	var outInfo fs.FileInfo
	if len(outChain) > 0 && outChain[0].path == outReal {
		outInfo = outChain[0].info
	}
	for _, in := range inputs {
		if in == "" || in == "-" {
			continue
		}
		inInfo, err := os.Stat(in)
		if err != nil {
			continue
		}
		if outInfo != nil && os.SameFile(outInfo, inInfo) {
			return fmt.Errorf("output %q is the input %q: choose another output (%w)", out, in, ErrOverlap)
		}
		if inInfo.IsDir() {
			for _, a := range outChain {
				if os.SameFile(a.info, inInfo) {
					return fmt.Errorf("output %q is inside the input folder %q: choose an output outside it (%w)", out, in, ErrOverlap)
				}
			}
		}
		if outInfo != nil && outInfo.IsDir() {
			for _, a := range chain(resolve(in)) {
				if os.SameFile(a.info, outInfo) {
					return fmt.Errorf("output %q contains the input %q: choose an output that does not hold it (%w)", out, in, ErrOverlap)
				}
			}
		}
	}
	return nil
}

type link struct {
	path string
	info fs.FileInfo
}

// chain lists p (when it exists) and every existing ancestor of p, innermost first.
// p must be absolute and free of symbolic links (resolve's result).
func chain(p string) []link {
	var out []link
	for {
		if st, err := os.Stat(p); err == nil {
			out = append(out, link{p, st})
		}
		parent := filepath.Dir(p)
		if parent == p {
			return out
		}
		p = parent
	}
}

// resolve returns p as an absolute path with every symbolic link of its longest
// existing prefix resolved (a link whose target does not exist yet too); the
// components that do not exist yet are appended as they are.
func resolve(p string) string { return resolveDepth(p, 0) }

func resolveDepth(p string, depth int) string {
	// Resolve the raw path first: filepath.Abs cleans lexically, which is wrong for
	// "link/.." when link is a symbolic link.
	if r, err := filepath.EvalSymlinks(p); err == nil {
		if ra, err := filepath.Abs(r); err == nil {
			return ra
		}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	var rest []string
	cur := abs
	for {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if st, err := os.Lstat(cur); err == nil && st.Mode()&fs.ModeSymlink != 0 && depth < 40 {
			if target, err := os.Readlink(cur); err == nil {
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(cur), target)
				}
				return resolveDepth(filepath.Join(append([]string{target}, rest...)...), depth+1)
			}
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
}

// marker is the content of MarkerFile.
type marker struct {
	Kind        string `json:"kind"`
	Tool        string `json:"tool"`
	ToolVersion string `json:"tool_version"`
	// ID is random, drawn when the output was claimed.
	ID string `json:"id"`
	// Entries are the names agentrace wrote in the folder, recorded when the
	// output was committed; null while it is written in place.
	Entries []string `json:"entries"`
}

func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeMarker(dir string, kind Kind, id string, entries []string) error {
	b, err := json.MarshalIndent(marker{Kind: kind.Name, Tool: "agentrace", ToolVersion: schemas.ToolVersion, ID: id, Entries: entries}, "", "  ")
	if err != nil {
		return err
	}
	if err := AtomicWriteBytes(filepath.Join(dir, MarkerFile), append(b, '\n')); err != nil {
		return fmt.Errorf("mark %q as an agentrace %s: %w", dir, kind.Name, err)
	}
	return nil
}

func readMarker(dir string) (marker, bool) {
	var m marker
	b, err := infile.ReadSmall(filepath.Join(dir, MarkerFile), 1<<20)
	if err != nil || json.Unmarshal(b, &m) != nil || m.Tool != "agentrace" || m.Kind == "" {
		return marker{}, false
	}
	return m, true
}

// MarkDir marks dir as an agentrace output of kind, written in place (its
// entries unrecorded): for fixtures; commands claim their outputs with Take.
func MarkDir(dir string, kind Kind) error { return writeMarker(dir, kind, newID(), nil) }

// DirKind returns the kind of output agentrace wrote in dir, from its marker; ""
// when it has none.
func DirKind(dir string) string {
	m, _ := readMarker(dir)
	return m.Kind
}

// foreign returns the first path under the marked folder dir that agentrace did
// not write there ("" when none): an entry its marker does not list and that no
// later command adds (added), searched into every listed entry that is a marked
// folder itself. With shared, dir's own unlisted entries are allowed (they are
// left where they are).
func foreign(dir string, shared bool) (string, error) {
	m, ok := readMarker(dir)
	if !ok {
		return "", nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	listed := map[string]bool{}
	for _, n := range m.Entries {
		listed[n] = true
	}
	for _, e := range ents {
		n := e.Name()
		if OwnName(n) {
			continue
		}
		if m.Entries != nil && !listed[n] && !added(m.Kind, n) {
			if shared {
				continue
			}
			return filepath.Join(dir, n), nil
		}
		if e.IsDir() && DirKind(filepath.Join(dir, n)) != "" {
			if p, err := foreign(filepath.Join(dir, n), false); p != "" || err != nil {
				return p, err
			}
		}
	}
	return "", nil
}

// added tells whether name, in a folder of kind, is an entry other agentrace
// commands add after the folder was written: a run's scores (score), its turns
// table (log export) and what publish writes into it (performance/,
// accuracy/, point.yaml), a sweep's sweep_summary.csv (publish).
func added(kind, name string) bool {
	switch kind {
	case Run.Name:
		switch name {
		case schemas.ScoresFile, schemas.ScoresTable, "turns.parquet", "performance", "accuracy", "point.yaml":
			return true
		}
	case Sweep.Name:
		return name == "sweep_summary.csv"
	}
	return false
}
