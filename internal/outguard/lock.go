package outguard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/redact"
)

// The names a claim gives its own files beside an output X (in X's folder):
// .X.agentrace-lock, the lock; .X.agentrace-new-*, the new output while it is
// built; .X.agentrace-old-*, the earlier output while it is swapped out where the
// file system cannot exchange two folders at once.
const (
	lockSuffix = ".agentrace-lock"
	newInfix   = ".agentrace-new-"
	oldInfix   = ".agentrace-old-"
)

// errLocked: the lock is held by another process.
var errLocked = errors.New("locked")

func lockPath(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+lockSuffix)
}

// holder is the content of a lock file: who holds it.
type holder struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	Since   string `json:"since"`
}

// lock is an exclusive lock on one output, held by this process.
type lock struct {
	f    *os.File
	path string
}

// acquire takes the lock of the output path (an flock on its lock file), or
// returns an error wrapping ErrBusy that names the holder.
func acquire(path string) (*lock, error) {
	lp := lockPath(path)
	for range 20 {
		f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock output %q: %w", path, err)
		}
		if err := tryLock(f); err != nil {
			f.Close()
			if errors.Is(err, errLocked) {
				return nil, busy(path, lp)
			}
			return nil, fmt.Errorf("lock output %q: %w", path, err)
		}
		// Its last holder removes the file as it lets go: the file locked must
		// still be the one at lp.
		fi, err1 := f.Stat()
		pi, err2 := os.Stat(lp)
		if err1 != nil || err2 != nil || !os.SameFile(fi, pi) {
			f.Close()
			continue
		}
		b, _ := json.Marshal(holder{PID: os.Getpid(), Command: commandLine(os.Args), Since: time.Now().UTC().Format(time.RFC3339)})
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt(append(b, '\n'), 0)
		}
		return &lock{f: f, path: lp}, nil
	}
	return nil, fmt.Errorf("lock output %q: %s keeps being replaced", path, lp)
}

// release removes the lock file and lets go of the lock.
func (l *lock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = os.Remove(l.path)
	_ = l.f.Close()
	l.f = nil
}

// probe returns an error wrapping ErrBusy when another process holds the lock of
// the output path, nil otherwise; it takes nothing.
func probe(path string) error {
	lp := lockPath(path)
	f, err := os.Open(lp)
	if err != nil {
		return nil
	}
	defer f.Close()
	if err := tryLock(f); err != nil {
		if errors.Is(err, errLocked) {
			return busy(path, lp)
		}
		return nil
	}
	unlockFile(f)
	return nil
}

func busy(path, lp string) error {
	who := "another agentrace command"
	// The holder writes who it is right after it takes the lock: a command
	// refused in between waits a moment for that.
	for range 20 {
		var h holder
		if b, err := infile.ReadSmall(lp, 64<<10); err == nil && json.Unmarshal(b, &h) == nil && h.PID > 0 {
			who = fmt.Sprintf("pid %d (%s, since %s)", h.PID, h.Command, h.Since)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("output %q is being written by %s: wait for it to end, or choose another path (%w)", path, who, ErrBusy)
}

// commandLine is args as the lock file records them: the value of a flag whose
// name looks secret (and of --header) masked, URLs without their user
// information.
func commandLine(args []string) string {
	out := make([]string, 0, len(args))
	secretFlag := func(name string) bool {
		name = strings.TrimLeft(name, "-")
		return name == "header" || name == "H" || redact.SecretName(name)
	}
	maskNext := false
	for i, a := range args {
		switch {
		case i == 0:
			a = filepath.Base(a)
		case maskNext:
			a = redact.Mask
		case strings.HasPrefix(a, "-"):
			if name, _, ok := strings.Cut(a, "="); ok {
				if secretFlag(name) {
					a = name + "=" + redact.Mask
				}
			} else {
				maskNext = secretFlag(a)
				out = append(out, a)
				continue
			}
		}
		maskNext = false
		if strings.Contains(a, "://") {
			if u, err := url.Parse(a); err == nil && u.User != nil {
				a = redact.URL(a)
			}
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}
