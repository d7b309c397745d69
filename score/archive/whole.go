package archive

import (
	"fmt"
	"path"
	"strings"
)

// NotARunError is a folder given as runs that is none of what a command reads
// as a whole (Whole): it holds runs deeper inside, beside other things (a
// dataset, traces). Runs names them (their labels, which commands accept back as
// paths).
type NotARunError struct {
	Path string
	Runs []string
}

func (e *NotARunError) Error() string {
	names := e.Runs
	more := ""
	if len(names) > 5 {
		names, more = names[:5], fmt.Sprintf(", ... (%d in all)", len(e.Runs))
	}
	return fmt.Sprintf("%q is not a run, a folder of runs or a submission tree: it holds the %s %s%s deeper inside; name a run instead",
		e.Path, plural(len(e.Runs), "run", "runs"), strings.Join(names, ", "), more)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Whole checks that runs, the runs of s found under inner (Under(Find(s),
// inner)), are what the folder p names is as a whole: the run at inner; a folder
// of runs, every folder directly in it a run (a sweep's c<N>/); or a submission
// tree, every run a submission point. An archive whose root holds one folder is
// judged by that folder. Otherwise it is a *NotARunError naming the runs inside.
// No run at all is not its business (nil).
func Whole(s *Source, inner, p string, runs []*Run) error {
	var ok []*Run
	for _, r := range runs {
		if r.Kind != "" {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	if inner == "" && s.Kind != SourceDir {
		if kids := visibleDirs(s, ""); len(kids) == 1 && !hasRunAt(ok, "") {
			inner = kids[0]
		}
	}
	if hasRunAt(ok, inner) {
		return nil
	}
	points := true
	for _, r := range ok {
		points = points && r.Kind == KindSubmission
	}
	if points {
		return nil
	}
	folderOfRuns := true
	for _, r := range ok {
		folderOfRuns = folderOfRuns && parentDir(r.Dir) == inner
	}
	for _, k := range visibleDirs(s, inner) {
		folderOfRuns = folderOfRuns && hasRunAt(ok, k)
	}
	if folderOfRuns {
		return nil
	}
	e := &NotARunError{Path: p}
	for _, r := range ok {
		e.Runs = append(e.Runs, r.Label)
	}
	return e
}

func hasRunAt(runs []*Run, dir string) bool {
	for _, r := range runs {
		if r.Dir == dir {
			return true
		}
	}
	return false
}

func parentDir(dir string) string {
	d := path.Dir(dir)
	if d == "." {
		return ""
	}
	return d
}

// visibleDirs lists the folders directly in dir, but hidden ones (.agentrace
// bookkeeping and the like).
func visibleDirs(s *Source, dir string) []string {
	var out []string
	for _, n := range s.Children(dir) {
		if s.IsDir(n) && !strings.HasPrefix(path.Base(n), ".") {
			out = append(out, n)
		}
	}
	return out
}

// RunsIn lists the labels of every run under the path p (a folder, an archive,
// a folder inside one), at any depth: what a command reads when asked to
// descend. Labels are accepted back as paths.
func RunsIn(p string, lim Limits) ([]string, error) {
	s, inner, err := OpenPath(p, lim)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out []string
	for _, r := range Under(Find(s), inner) {
		if r.Kind == "" {
			return nil, r.Err
		}
		out = append(out, r.Label)
	}
	return out, nil
}
