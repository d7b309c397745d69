// Package checker judges a submission tree as the MLPerf Endpoints submission
// checker (mlcommons/endpoints-submission-cli, src/submission_checker/) judges it:
// every rule id of the checker's catalog, at the checker's severity, each rule one
// function named after its id (rules.go), at an explicit level (tree, system,
// curve, point, file).
//
// The checker's round data (its rule catalog, approved drafters, seed sets,
// accepted model names and agentic targets) are data files embedded at the
// versions read (Sources) and replaceable (DataOptions). The tree is read in the
// layout the checker's main line reads today:
//
//	<root>/results/<system>/system_power.json
//	<root>/results/<system>/<model>/r<N>/{point.yaml,system_desc.json,result_summary.json,accuracy_results.json}
//	<root>/src/<impl>/README.md, <root>/docs/
//
// Check returns the error and warning findings; the checker's informational
// results (a rule that passed) are not findings.
package checker

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Severity is the checker's severity of a finding.
type Severity string

// The checker's severities (info is a passed check and never a finding).
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Level is what a rule judges.
type Level string

// The levels of the rules.
const (
	LevelTree   Level = "tree"   // the submission root
	LevelSystem Level = "system" // results/<system>/
	LevelCurve  Level = "curve"  // results/<system>/<model>/
	LevelPoint  Level = "point"  // results/<system>/<model>/r<N>/
	LevelFile   Level = "file"   // one file's schema
)

// Finding is one error or warning of a rule.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Level    Level    `json:"level"`
	// Scope is the folder judged, relative to the root: "" (the tree),
	// results/<system>, results/<system>/<model> or results/<system>/<model>/r<N>.
	Scope string `json:"scope"`
	// Point is the point folder's name (r<N>) where the finding is a point's.
	Point  string `json:"point,omitempty"`
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason"`
}

// Report is the findings on one tree.
type Report struct {
	Root     string    `json:"root"`
	Findings []Finding `json:"findings"`
	// Passed is the checker's verdict: no error.
	Passed bool `json:"passed"`
}

// Errors counts the error findings.
func (r Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == Error {
			n++
		}
	}
	return n
}

// Check judges the tree at root, a folder on disk. root may be a submission
// root (holding results/), or an organisation folder with exactly one such
// child, as the checker's _resolve_submission_root takes it.
func Check(root string, d *Data) Report {
	return CheckFS(os.DirFS(root), root, d)
}

// CheckFS judges the tree at the root of fsys: a folder on disk (os.DirFS) or
// an archive read in place (score/archive's Source.FS), both judged alike.
// label names the root in the report and its messages.
func CheckFS(fsys fs.FS, label string, d *Data) Report {
	if sub := resolveRoot(fsys); sub != "." {
		if s, err := fs.Sub(fsys, sub); err == nil {
			fsys, label = s, joinLabel(label, sub)
		}
	}
	c := &run{fsys: fsys, label: label, root: ".", d: d}
	c.tree()
	rep := Report{Root: label, Findings: c.out}
	if rep.Findings == nil {
		rep.Findings = []Finding{}
	}
	rep.Passed = rep.Errors() == 0
	return rep
}

// joinLabel names the folder sub of a tree labelled label.
func joinLabel(label, sub string) string {
	switch {
	case sub == ".":
		return label
	case strings.HasSuffix(label, "/"):
		return label + sub
	}
	return label + "/" + sub
}

// resolveRoot is the folder of fsys holding results/: "." or its one child
// that does.
func resolveRoot(fsys fs.FS) string {
	c := &run{fsys: fsys}
	if !c.isDir(".") || c.isDir("results") {
		return "."
	}
	var cands []string
	for _, e := range c.readDirSorted(".") {
		if e.dir && c.isDir(path.Join(e.name, "results")) {
			cands = append(cands, e.name)
		}
	}
	if len(cands) == 1 {
		return cands[0]
	}
	return "."
}

// run is one judgement of a tree. Its paths are names in fsys, whose root is
// the submission root ("."), or for a part (CheckPart) a folder above the
// system folder judged.
type run struct {
	fsys  fs.FS
	label string // names the root in messages
	root  string // "."
	// part is the folder standing for results/ when a bare system folder is
	// judged (CheckPart); "" for a submission root.
	part string
	d    *Data
	out  []Finding
}

// emit records a finding at path (a name in fsys), its scope derived from the path.
func (c *run) emit(rule string, sev Severity, lvl Level, p, reason string) {
	virt := p
	if c.part != "" && p != "" {
		if r, ok := inside(c.part, p); ok {
			virt = path.Join("results", r)
		}
	}
	rel, scope, point := c.scopeOf(virt, p)
	c.out = append(c.out, Finding{Rule: rule, Severity: sev, Level: lvl, Scope: scope, Point: point, Path: rel, Reason: reason})
}

// inside returns p relative to the folder dir ("." for dir itself); ok is false
// when p is not in dir.
func inside(dir, p string) (string, bool) {
	switch {
	case dir == ".":
		return p, true
	case p == dir:
		return ".", true
	case strings.HasPrefix(p, dir+"/"):
		return p[len(dir)+1:], true
	}
	return "", false
}

// named is p as the checker's messages name it: relative to the root, or for a
// part to the folder standing for results/.
func (c *run) named(p string) string {
	if c.part != "" {
		if r, ok := inside(c.part, p); ok {
			return r
		}
	}
	return p
}

// rel names p relative to the root ("" for the root itself).
func (c *run) rel(p string) string {
	if p == "." {
		return ""
	}
	return p
}

var pointDirRE = regexp.MustCompile(`^r(\d+)$`)

// scopeOf returns name (standing for real in fsys: a part's folder is named as
// if it lay under results/) relative to the root, the folder it judges (the
// path itself when it is a folder, else its parent), cut at the point folder
// (results/<system>/<model>/r<N>) and "" outside results/, and the point's name.
func (c *run) scopeOf(name, real string) (rel, scope, point string) {
	if name == "" {
		return "", "", ""
	}
	rel = c.rel(name)
	dir := rel
	if !c.isDir(real) {
		dir = path.Dir(rel)
	}
	parts := strings.Split(dir, "/")
	if parts[0] != "results" {
		return rel, "", ""
	}
	if len(parts) > 4 {
		parts = parts[:4]
	}
	if len(parts) == 4 && pointDirRE.MatchString(parts[3]) {
		point = parts[3]
	}
	return rel, strings.Join(parts, "/"), point
}

type dirEntry struct {
	name string
	dir  bool
}

// readDirSorted lists a folder, following links to folders as os.Stat does.
func (c *run) readDirSorted(p string) []dirEntry {
	es, err := fs.ReadDir(c.fsys, p)
	if err != nil {
		return nil
	}
	out := make([]dirEntry, 0, len(es))
	for _, e := range es {
		out = append(out, dirEntry{e.Name(), c.isDir(path.Join(p, e.Name()))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func (c *run) isDir(p string) bool {
	st, err := fs.Stat(c.fsys, p)
	return err == nil && st.IsDir()
}

func (c *run) isFile(p string) bool {
	st, err := fs.Stat(c.fsys, p)
	return err == nil && st.Mode().IsRegular()
}

func (c *run) exists(p string) bool {
	_, err := fs.Stat(c.fsys, p)
	return err == nil
}

// maxFileBytes bounds a file the rules read (a summary, a config, a system
// description: small files; a huge one is not read into memory).
const maxFileBytes = 64 << 20

// readFile reads a whole file of the tree, at most maxFileBytes.
func (c *run) readFile(p string) ([]byte, error) {
	f, err := c.fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("read %q: more than the %d bytes a file may have", p, maxFileBytes)
	}
	return b, nil
}

// listPoints lists a model folder's r<N> folders by concurrency.
func (c *run) listPoints(model string) []string {
	type pd struct {
		c    int64
		name string
	}
	var ps []pd
	for _, e := range c.readDirSorted(model) {
		if !e.dir {
			continue
		}
		if m := pointDirRE.FindStringSubmatch(e.name); m != nil {
			c, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				continue
			}
			ps = append(ps, pd{c, e.name})
		}
	}
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].c != ps[j].c {
			return ps[i].c < ps[j].c
		}
		return ps[i].name < ps[j].name
	})
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = path.Join(model, p.name)
	}
	return out
}

func parsePointDir(name string) (int64, bool) {
	m := pointDirRE.FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	c, err := strconv.ParseInt(m[1], 10, 64)
	return c, err == nil
}

func fmtList(items []string) string { return strings.Join(items, ", ") }

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
