package checker

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// locate returns the submission root the folder dir of fsys belongs to: dir
// itself when it holds results/, else the nearest folder above dir holding
// results/ with dir inside that results/.
func (c *run) locate(dir string) (string, bool) {
	if c.isDir(path.Join(dir, "results")) {
		return dir, true
	}
	for d := dir; d != "."; d = path.Dir(d) {
		if path.Base(d) == "results" && c.isDir(d) {
			return path.Dir(d), true
		}
	}
	return "", false
}

// structureRules are the rules of a whole submission, not evaluated when only a
// system or model folder is given.
var structureRules = []string{"path-exists", "required-dir", "src-dir", "src-readme", "system-results-dir", "accuracy-present", "shared-path-resolution"}

// Part is the findings on a bare system or model folder (not inside a
// submission's results/), judged as the checker judges that part, with the
// rules that could not be evaluated there.
type Part struct {
	Report
	NotEvaluated []string `json:"not_evaluated"`
}

// CheckPart judges a bare system folder on disk (holding <model>/r<N>/ folders)
// or model folder (holding r<N>/ folders): the checker's rules for that part,
// named as if the folder lay in a submission's results/. ok is false when dir is
// neither.
func CheckPart(dir string, d *Data) (Part, bool) {
	fsys, name, err := onDisk(dir)
	if err != nil {
		return Part{}, false
	}
	return checkPart(fsys, "/", name, d)
}

// onDisk names a folder on disk in an fs.FS of the whole disk (its root "/"),
// so that a tree's root above the folder is found as it is inside an archive.
func onDisk(dir string) (fs.FS, string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", err
	}
	name := strings.TrimPrefix(filepath.ToSlash(abs), "/")
	if name == "" {
		name = "."
	}
	return os.DirFS("/"), name, nil
}

// checkPart is CheckPart for the folder dir of fsys (labelled label).
func checkPart(fsys fs.FS, label, dir string, d *Data) (p Part, ok bool) {
	c := &run{fsys: fsys, label: label, root: ".", d: d}
	if !c.isDir(dir) {
		return Part{}, false
	}
	if len(c.listPoints(dir)) > 0 {
		// A model folder: its system is the folder above.
		c.part = path.Dir(path.Dir(dir))
		c.model(path.Dir(dir), dir, nil)
		not := append(append([]string{}, structureRules...), "power-descriptor", "power-estimated", "benchmark-model-dir", "tps-utilization")
		return c.asPart(not), true
	}
	for _, e := range c.readDirSorted(dir) {
		if e.dir && len(c.listPoints(path.Join(dir, e.name))) > 0 {
			c.part = path.Dir(dir)
			c.system(dir)
			return c.asPart(append([]string{}, structureRules...)), true
		}
	}
	return Part{}, false
}

func (c *run) asPart(not []string) Part {
	var kept []Finding
	for _, f := range c.out {
		if !contains(not, f.Rule) {
			kept = append(kept, f)
		}
	}
	r := Report{Root: joinLabel(c.label, c.part), Findings: kept}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	r.Passed = r.Errors() == 0
	return Part{Report: r, NotEvaluated: not}
}

// Applies reports whether a finding of scope concerns the folder of scope
// folder: the folder itself or one containing it (its curve, system, the tree).
func Applies(scope, folder string) bool {
	return scope == "" || scope == folder || strings.HasPrefix(folder, scope+"/")
}

// Cache checks each submission root, or bare system folder, once, for the
// commands that meet its points one by one. It is safe for concurrent use.
type Cache struct {
	d    *Data
	mu   sync.Mutex
	done map[string]*entry
}

type entry struct {
	once sync.Once
	rep  Report
	not  []string
	base string // the folder results/ scopes are relative to
}

// NewCache returns a cache judging with d.
func NewCache(d *Data) *Cache { return &Cache{d: d, done: map[string]*entry{}} }

// Data is the data the cache judges with.
func (c *Cache) Data() *Data { return c.d }

// For returns the findings that concern the point or curve folder dir (on disk):
// its own and its curve's, system's and tree's, from the submission root it lies
// in, or from its system folder judged as a part when it lies in none; and the
// rules not evaluated there. ok is false when dir is in no submission tree.
func (c *Cache) For(dir string) (found []Finding, notEvaluated []string, ok bool) {
	fsys, name, err := onDisk(dir)
	if err != nil {
		return nil, nil, false
	}
	return c.ForFS(fsys, "/", name)
}

// ForRun is For for the run folder dir (slash-separated) of the source at
// path: a folder on disk when archive is nil, else an archive read in place
// whose files archive holds (score/archive's Source.ArchiveFS). An archived tree
// gets the findings of the same tree extracted.
func (c *Cache) ForRun(path string, archive fs.FS, dir string) (found []Finding, notEvaluated []string, ok bool) {
	if archive == nil {
		return c.For(filepath.Join(path, filepath.FromSlash(dir)))
	}
	if dir == "" {
		dir = "."
	}
	return c.ForFS(archive, path, dir)
}

// ForFS is For for the folder dir of fsys, an archive read in place (score/archive's
// Source.FS) or a folder; label names fsys (the archive's path) and keys the
// cache with dir's tree. A tree is judged alike wherever it lies.
func (c *Cache) ForFS(fsys fs.FS, label, dir string) (found []Finding, notEvaluated []string, ok bool) {
	if c == nil || c.d == nil || !fs.ValidPath(dir) {
		return nil, nil, false
	}
	look := &run{fsys: fsys}
	key, sys := "", ""
	if root, isRoot := look.locate(dir); isRoot {
		key = root
	} else {
		// A bare system folder: the point's system is two levels up, a curve's one.
		sys = path.Dir(dir)
		if _, isPoint := parsePointDir(path.Base(dir)); isPoint {
			sys = path.Dir(sys)
		}
		if sys == "." || !look.isDir(sys) {
			return nil, nil, false
		}
		key = sys
	}
	c.mu.Lock()
	e := c.done[label+"\x00"+key]
	if e == nil {
		e = &entry{}
		c.done[label+"\x00"+key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		if sys == "" {
			sub, err := fs.Sub(fsys, key)
			if err == nil {
				e.rep = CheckFS(sub, joinLabel(label, key), c.d)
			}
			e.base = key
			return
		}
		if p, ok := checkPart(fsys, label, sys, c.d); ok {
			e.rep, e.not = p.Report, p.NotEvaluated
		}
		e.base = path.Dir(sys)
	})
	r, in := inside(e.base, dir)
	if !in {
		return nil, nil, false
	}
	rel := r
	switch {
	case sys != "":
		rel = path.Join("results", r)
	case r == ".":
		rel = ""
	}
	for _, f := range e.rep.Findings {
		if Applies(f.Scope, rel) {
			found = append(found, f)
		}
	}
	return found, e.not, true
}
