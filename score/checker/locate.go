package checker

import (
	"path/filepath"
	"strings"
	"sync"
)

// Locate returns the submission root a folder belongs to: dir itself when it
// holds results/, else the nearest folder above dir holding results/ with dir
// inside that results/.
func Locate(dir string) (string, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	if isDir(filepath.Join(abs, "results")) {
		return abs, true
	}
	for d := abs; ; {
		parent := filepath.Dir(d)
		if parent == d {
			return "", false
		}
		if filepath.Base(d) == "results" && isDir(d) {
			return parent, true
		}
		d = parent
	}
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

// CheckPart judges a bare system folder (holding <model>/r<N>/ folders) or model
// folder (holding r<N>/ folders): the checker's rules for that part, named as if
// the folder lay in a submission's results/. ok is false when dir is neither.
func CheckPart(dir string, d *Data) (Part, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil || !isDir(abs) {
		return Part{}, false
	}
	if len(pointDirs(abs)) > 0 {
		// A model folder: its system is the folder above.
		c := &run{root: filepath.Dir(filepath.Dir(abs)), part: filepath.Dir(filepath.Dir(abs)), d: d}
		c.model(filepath.Dir(abs), abs, nil)
		not := append(append([]string{}, structureRules...), "power-descriptor", "power-estimated", "benchmark-model-dir", "tps-utilization")
		return c.asPart(not), true
	}
	for _, e := range readDirSorted(abs) {
		if e.dir && len(pointDirs(filepath.Join(abs, e.name))) > 0 {
			c := &run{root: filepath.Dir(abs), part: filepath.Dir(abs), d: d}
			c.system(abs)
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
	r := Report{Root: c.part, Findings: kept}
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
	if c == nil || c.d == nil {
		return nil, nil, false
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, false
	}
	key, part := "", ""
	if root, isRoot := Locate(abs); isRoot {
		key = root
	} else {
		// A bare system folder: the point's system is two levels up, a curve's one.
		sys := filepath.Dir(abs)
		if _, isPoint := parsePointDir(filepath.Base(abs)); isPoint {
			sys = filepath.Dir(sys)
		}
		if !isDir(sys) {
			return nil, nil, false
		}
		key, part = sys, sys
	}
	c.mu.Lock()
	e := c.done[key]
	if e == nil {
		e = &entry{}
		c.done[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		if part == "" {
			e.rep = Check(key, c.d)
			e.base = key
			return
		}
		p, ok := CheckPart(part, c.d)
		if ok {
			e.rep, e.not = p.Report, p.NotEvaluated
		}
		e.base = filepath.Dir(part)
	})
	var rel string
	if part == "" {
		r, err := filepath.Rel(e.base, abs)
		if err != nil {
			return nil, nil, false
		}
		rel = filepath.ToSlash(r)
	} else {
		r, err := filepath.Rel(e.base, abs)
		if err != nil {
			return nil, nil, false
		}
		rel = "results/" + filepath.ToSlash(r)
	}
	for _, f := range e.rep.Findings {
		if Applies(f.Scope, rel) {
			found = append(found, f)
		}
	}
	return found, e.not, true
}
