// Package relpath records a path that one output names (a run's dataset, a dataset's
// input files) so that the output can be moved or archived and still find it: the
// path relative to the output's folder, with the absolute path beside it, and
// resolves such a record back.
//
// A moved run folder whose dataset moved with it (a whole demo or sweep tree copied
// elsewhere) finds it by the relative path; a run folder moved alone finds it by the
// absolute path. Relative paths are stored with forward slashes.
package relpath

import (
	"os"
	"path/filepath"
)

// Record returns target relative to the folder base (forward slashes) and target's
// absolute path. Both are "" when target is "". When no relative path exists (other
// volumes), rel is the absolute path.
func Record(base, target string) (rel, abs string) {
	if target == "" {
		return "", ""
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return filepath.ToSlash(target), target
	}
	absBase, err := filepath.Abs(base)
	if err != nil {
		return filepath.ToSlash(abs), abs
	}
	r, err := filepath.Rel(absBase, abs)
	if err != nil {
		return filepath.ToSlash(abs), abs
	}
	return filepath.ToSlash(r), abs
}

// Resolve finds a path recorded by Record for the folder base: rel joined to base when
// it exists, else abs when it exists. When neither exists it returns rel joined to
// base (or abs when rel is ""), so that an error names where the path was looked for.
func Resolve(base, rel, abs string) string {
	var p string
	if rel != "" {
		p = filepath.FromSlash(rel)
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		if exists(p) {
			return p
		}
	}
	if abs != "" && (p == "" || exists(abs)) {
		return abs
	}
	return p
}

// ResolveUnrooted finds a path recorded relative to the working directory of the
// program that wrote it, which is unknown (a reference client config's dataset
// path). It tries p as given
// (relative to the current directory), then p relative to base and to each folder
// above base (the writer's working directory was one of them when the output sits
// below it, e.g. demo-out/runs/c8 naming demo-out/dataset). It returns p when nothing
// matches.
func ResolveUnrooted(base, p string) string {
	if p == "" || filepath.IsAbs(p) || exists(p) {
		return p
	}
	dir, err := filepath.Abs(base)
	if err != nil {
		return p
	}
	for {
		if q := filepath.Join(dir, p); exists(q) {
			return q
		}
		up := filepath.Dir(dir)
		if up == dir {
			return p
		}
		dir = up
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
