package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// OpenPath opens what a path names: a directory, an archive, or a folder inside
// an archive written as the archive's path followed by the folder
// (sub.tgz/acme/sys/model/r8, as Run.Label writes it). inner is the folder inside
// the source ("" for its root).
func OpenPath(p string, lim Limits) (src *Source, inner string, err error) {
	if _, err := os.Stat(p); err == nil {
		s, err := Open(p, lim)
		return s, "", err
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return nil, "", fmt.Errorf("open %q: %w", p, err)
	}
	// Walk up to an archive file; the rest is the folder inside it.
	clean := filepath.Clean(p)
	for cur := clean; ; {
		parent := filepath.Dir(cur)
		if parent == cur {
			break
		}
		if st, err := os.Stat(parent); err == nil {
			if st.Mode().IsRegular() && ArchiveKind(parent) != "" {
				rest, _ := filepath.Rel(parent, clean)
				s, err := Open(parent, lim)
				if err != nil {
					return nil, "", err
				}
				inner := path.Clean(filepath.ToSlash(rest))
				if !s.IsDir(inner) {
					s.Close()
					return nil, "", fmt.Errorf("open %q: no folder %q in archive %q", p, inner, parent)
				}
				return s, inner, nil
			}
			break
		}
		cur = parent
	}
	return nil, "", fmt.Errorf("open %q: %w", p, fs.ErrNotExist)
}

// Under keeps the runs whose folder is inner or lies under it.
func Under(runs []*Run, inner string) []*Run {
	if inner == "" {
		return runs
	}
	var out []*Run
	for _, r := range runs {
		if r.Dir == inner || strings.HasPrefix(r.Dir, inner+"/") {
			out = append(out, r)
		}
	}
	return out
}

// OpenRun opens the one run a path names: a run folder, an archive holding one
// run, or a run folder inside an archive. A folder that holds its one run deeper,
// beside other things, is not that run (Whole: a *NotARunError). The caller
// closes run.Source.
func OpenRun(p string, lim Limits) (*Run, error) {
	s, inner, err := OpenPath(p, lim)
	if err != nil {
		return nil, err
	}
	runs := Under(Find(s), inner)
	var ok []*Run
	for _, r := range runs {
		if r.Kind != "" {
			ok = append(ok, r)
		}
	}
	switch {
	case len(ok) == 1:
		if err := Whole(s, inner, p, ok); err != nil {
			s.Close()
			return nil, err
		}
		return ok[0], nil
	case len(ok) == 0:
		s.Close()
		if len(runs) > 0 && runs[0].Err != nil {
			return nil, runs[0].Err
		}
		return nil, fmt.Errorf("%q holds no run (a folder with %s, %s, or a submission point r<N>/ with %s)",
			p, TurnLogFile, EventsFile, PointFile)
	}
	var names []string
	for i, r := range ok {
		if i == 5 {
			names = append(names, fmt.Sprintf("... (%d in all)", len(ok)))
			break
		}
		names = append(names, r.Label)
	}
	s.Close()
	return nil, fmt.Errorf("%q holds %d runs (%s): name one, or use rescore or report for all", p, len(ok), strings.Join(names, ", "))
}
