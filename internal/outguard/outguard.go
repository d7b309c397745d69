// Package outguard keeps agentrace's outputs from destroying anyone's data. Two rules
// hold for every command that writes:
//
//  1. An output never is, contains, or sits inside one of the command's inputs.
//     Paths are compared as the files they name: symbolic links are resolved and
//     files are compared by device and inode, so a link, a bind mount or a hard link
//     to an input is caught too.
//  2. An existing output is replaced only with --overwrite, and only when agentrace
//     made it as the same kind of output (a dataset over a dataset, a run over a run).
//     A folder is agentrace's when it carries the marker file .agentrace naming its
//     kind (MarkDir writes it); a Parquet file when its footer holds the key
//     "agentrace.kind" (ParquetKey); a JSONL trace file when its first line is a
//     dataset_metadata record whose generator starts with "agentrace" (synth and
//     export write one). Folders written by agentrace before the marker existed are
//     recognized by their files (a dataset's manifest and tables, a run's manifest
//     and turn log, a demo's or a report's layout). Anything else is never replaced,
//     with or without --overwrite. An empty folder may always be written into.
//
// How a command uses it (check before writing anything, then write):
//
//	out := outguard.Output{Path: o.Out, Kind: outguard.Dataset, Overwrite: o.Overwrite}
//	if err := out.Check(o.Inputs...); err != nil {
//		return err // names the path, the input and the way out
//	}
//	// a folder built in a temporary folder and renamed into place (atomicfile.Dir):
//	atomicfile.Dir(o.Out, true, func(tmp string) error {
//		if err := outguard.MarkDir(tmp, outguard.Dataset); err != nil { ... }
//		...
//	})
//
// A folder written in place while the command runs (a replay run, a sweep, the demo)
// is taken with Begin, which checks, moves an earlier output aside, creates and marks
// the folder; Claim.Finish then deletes the earlier output (Claim.Abandon puts it back
// when the new one never got started). A file output is written with atomicfile after
// Check; a Parquet output adds ParquetMetadata(kind) to its writer options so that it
// can be replaced later.
//
// Inputs are every path the command reads: trace files, dataset and run folders,
// tokenizer folders, rulesets. A path that does not exist is skipped (the command
// reports it when it opens it). Outputs written inside a run folder that the run
// folder is meant to hold (score's scores.json) pass the run's files, not the run
// folder, as inputs.
//
// Errors wrap ErrOverlap, ErrExists or ErrNotOurs, so callers can tell them apart.
package outguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/schemas"
)

// Kind is a kind of output. Folder tells whether the output is a folder (else a
// file). Commands that add a new kind of output declare their own Kind value.
type Kind struct {
	Name   string
	Folder bool
}

// The kinds of output agentrace writes.
var (
	Dataset = Kind{"dataset", true}  // ingest
	Run     = Kind{"run", true}      // replay; each point of a sweep
	Sweep   = Kind{"sweep", true}    // sweep: c<N>/ runs
	Report  = Kind{"report", true}   // report
	Demo    = Kind{"demo", true}     // demo
	Traces  = Kind{"traces", false}  // JSONL traces: synth, export
	Rescore = Kind{"rescore", false} // rescore's results table (Parquet)
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
}

// Check is Output{Path: out, Kind: kind, Overwrite: overwrite}.Check(inputs...).
func Check(out string, kind Kind, overwrite bool, inputs ...string) error {
	return Output{Path: out, Kind: kind, Overwrite: overwrite}.Check(inputs...)
}

// Check returns nil when o may be written: it overlaps none of inputs (CheckPaths)
// and it is absent, an empty folder (folder kinds), or an earlier output of the
// same kind with Overwrite set.
func (o Output) Check(inputs ...string) error {
	if o.Path == "" {
		return errors.New("no output path given")
	}
	if err := CheckPaths(o.Path, inputs...); err != nil {
		return err
	}
	_, err := o.existing()
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
	case !o.Overwrite:
		return got, fmt.Errorf("output %q already holds a %s: pass --overwrite to replace it, or choose another path (%w)", o.Path, got, ErrExists)
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
}

// MarkDir writes dir's marker: agentrace wrote dir as kind.
func MarkDir(dir string, kind Kind) error {
	b, err := json.Marshal(marker{Kind: kind.Name, Tool: "agentrace", ToolVersion: schemas.ToolVersion})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, MarkerFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("mark %q as an agentrace %s: %w", dir, kind.Name, err)
	}
	return nil
}

// DirKind returns the kind of output agentrace wrote in dir: its marker's, else
// the kind its files show (folders written before markers existed), else "".
func DirKind(dir string) string {
	if b, err := infile.ReadFile(filepath.Join(dir, MarkerFile), 1<<20); err == nil {
		var m marker
		if json.Unmarshal(b, &m) == nil && m.Tool == "agentrace" && m.Kind != "" {
			return m.Kind
		}
		return ""
	}
	return legacyDirKind(dir)
}

// legacyDirKind recognizes the folders agentrace wrote before MarkerFile.
func legacyDirKind(dir string) string {
	switch {
	case isDatasetDir(dir):
		return Dataset.Name
	case isRunDir(dir):
		return Run.Name
	case isDemoDir(dir):
		return Demo.Name
	case isReportDir(dir):
		return Report.Name
	case isSweepDir(dir):
		return Sweep.Name
	}
	return ""
}

func isRegular(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// manifestHas reports whether dir/manifest.json is a JSON object with every key.
func manifestHas(dir string, keys ...string) bool {
	b, err := infile.ReadFile(filepath.Join(dir, schemas.DatasetManifestFile), infile.SmallFile)
	if err != nil {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

func isDatasetDir(dir string) bool {
	return isRegular(filepath.Join(dir, schemas.ConversationsFile)) &&
		manifestHas(dir, "schema_version", "tool_version", "content_hash", "counts")
}

func isRunDir(dir string) bool {
	return isRegular(filepath.Join(dir, schemas.TurnLogFile)) &&
		manifestHas(dir, "schema_version", "tool_version", "config", "state")
}

// visible lists the entries of dir that do not start with a dot.
func visible(dir string) ([]fs.DirEntry, bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	var out []fs.DirEntry
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e)
		}
	}
	return out, true
}

// isDemoDir: what the demo wrote, and nothing else (hidden files aside).
func isDemoDir(dir string) bool {
	ents, ok := visible(dir)
	if !ok || len(ents) == 0 {
		return false
	}
	ours := map[string]bool{"traces.jsonl": true, "dataset": true, "runs": true, "report": true}
	for _, e := range ents {
		if !ours[e.Name()] {
			return false
		}
	}
	return isDatasetDir(filepath.Join(dir, "dataset")) || FileKind(filepath.Join(dir, "traces.jsonl")) == Traces.Name
}

func isReportDir(dir string) bool {
	return isRegular(filepath.Join(dir, "report.html")) && isRegular(filepath.Join(dir, "points.json"))
}

// isSweepDir: c<N> run folders and nothing else (hidden files aside).
func isSweepDir(dir string) bool {
	ents, ok := visible(dir)
	if !ok || len(ents) == 0 {
		return false
	}
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() || len(n) < 2 || n[0] != 'c' || strings.Trim(n[1:], "0123456789") != "" {
			return false
		}
		if !isRunDir(filepath.Join(dir, n)) && DirKind(filepath.Join(dir, n)) != Run.Name {
			return false
		}
	}
	return true
}
