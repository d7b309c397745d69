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
	"os"
	"path/filepath"
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

// Check judges the tree at root. root may be a submission root (holding
// results/), or an organisation folder with exactly one such child, as the
// checker's _resolve_submission_root takes it.
func Check(root string, d *Data) Report {
	root = resolveRoot(root)
	c := &run{root: root, d: d}
	c.tree()
	rep := Report{Root: root, Findings: c.out}
	if rep.Findings == nil {
		rep.Findings = []Finding{}
	}
	rep.Passed = rep.Errors() == 0
	return rep
}

func resolveRoot(p string) string {
	st, err := os.Stat(p)
	if err != nil || !st.IsDir() || isDir(filepath.Join(p, "results")) {
		return p
	}
	var cands []string
	for _, e := range readDirSorted(p) {
		if e.dir && isDir(filepath.Join(p, e.name, "results")) {
			cands = append(cands, filepath.Join(p, e.name))
		}
	}
	if len(cands) == 1 {
		return cands[0]
	}
	return p
}

type run struct {
	root string
	// part is the folder standing for results/ when a bare system folder is
	// judged (CheckPart); "" for a submission root.
	part string
	d    *Data
	out  []Finding
}

// emit records a finding at path (absolute), its scope derived from the path.
func (c *run) emit(rule string, sev Severity, lvl Level, path, reason string) {
	virt := path
	if c.part != "" && path != "" {
		if r, err := filepath.Rel(c.part, path); err == nil && !strings.HasPrefix(r, "..") {
			virt = filepath.Join(c.root, "results", r)
		}
	}
	rel, scope, point := scopeOf(c.root, virt, path)
	c.out = append(c.out, Finding{Rule: rule, Severity: sev, Level: lvl, Scope: scope, Point: point, Path: rel, Reason: reason})
}

var pointDirRE = regexp.MustCompile(`^r(\d+)$`)

// ScopeOf returns path relative to root, the folder it judges (the path itself
// when it is a folder, else its parent), cut at the point folder
// (results/<system>/<model>/r<N>) and "" outside results/, and the point's name.
func ScopeOf(root, path string) (rel, scope, point string) { return scopeOf(root, path, path) }

// scopeOf is ScopeOf for path standing for real on disk (a part's folder is
// named as if it lay under results/).
func scopeOf(root, path, real string) (rel, scope, point string) {
	if path == "" {
		return "", "", ""
	}
	r, err := filepath.Rel(root, path)
	if err != nil || strings.HasPrefix(r, "..") {
		return filepath.ToSlash(path), "", ""
	}
	rel = filepath.ToSlash(r)
	if rel == "." {
		rel = ""
	}
	dir := rel
	if !isDir(real) {
		dir = filepath.ToSlash(filepath.Dir(r))
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

func readDirSorted(p string) []dirEntry {
	es, err := os.ReadDir(p)
	if err != nil {
		return nil
	}
	out := make([]dirEntry, 0, len(es))
	for _, e := range es {
		out = append(out, dirEntry{e.Name(), isDir(filepath.Join(p, e.Name()))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// pointDirs lists a model folder's r<N> folders by concurrency.
func pointDirs(model string) []string {
	type pd struct {
		c    int64
		name string
	}
	var ps []pd
	for _, e := range readDirSorted(model) {
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
		out[i] = filepath.Join(model, p.name)
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
