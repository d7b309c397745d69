// Package progress shows the state of long work: a live line, redrawn in place, on
// a terminal, and plain periodic lines otherwise (logs, CI).
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Line prints a status line produced by a callback. Start it with Run; Stop prints
// the final state and a newline.
type Line struct {
	w        io.Writer
	tty      bool
	every    time.Duration
	status   func() string
	stop     chan struct{}
	done     sync.WaitGroup
	lastLen  int
	stopOnce sync.Once
	mu       sync.Mutex // one print at a time: the ticker's and Note's
}

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// New returns a Line writing to w. On a terminal (tty true) it redraws every 200 ms;
// otherwise it prints a plain line every `plain` (nothing periodic when plain is 0).
func New(w io.Writer, tty bool, plain time.Duration, status func() string) *Line {
	every := plain
	if tty {
		every = 200 * time.Millisecond
	}
	return &Line{w: w, tty: tty, every: every, status: status, stop: make(chan struct{})}
}

// Start begins printing in the background.
func (l *Line) Start() *Line {
	if l.every <= 0 {
		return l
	}
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		t := time.NewTicker(l.every)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				l.print(false)
			}
		}
	}()
	return l
}

// Over runs f, which writes lines of its own to the line's writer, with the
// status line taken off the terminal first: the next redraw puts it back below
// what f wrote.
func (l *Line) Over(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tty && l.lastLen > 0 {
		fmt.Fprintf(l.w, "\r%*s\r", l.lastLen, "")
		l.lastLen = 0
	}
	f()
}

func (l *Line) print(final bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.status()
	if l.tty {
		pad := ""
		if n := l.lastLen - len(s); n > 0 {
			pad = fmt.Sprintf("%*s", n, "")
		}
		fmt.Fprintf(l.w, "\r%s%s", s, pad)
		l.lastLen = len(s)
		if final {
			fmt.Fprintln(l.w)
		}
		return
	}
	fmt.Fprintln(l.w, s)
}

// Stop ends the background printing and prints the final status once.
func (l *Line) Stop() {
	l.stopOnce.Do(func() {
		close(l.stop)
		l.done.Wait()
		l.print(true)
	})
}

// ETA estimates the time left of work done at a steady pace: "about 4m10s left"
// when done of total units took elapsed, "" before any unit is done or once all
// are. Under a minute it says seconds (under a second, "under 1s left"); under an hour, tens of seconds; beyond,
// minutes.
func ETA(done, total int64, elapsed time.Duration) string {
	if done <= 0 || done >= total || elapsed <= 0 {
		return ""
	}
	left := time.Duration(float64(elapsed) * float64(total-done) / float64(done))
	switch {
	case left < time.Second:
		return "under 1s left"
	case left < time.Minute:
		left = left.Round(time.Second)
	case left < time.Hour:
		left = left.Round(10 * time.Second)
	default:
		left = left.Round(time.Minute)
	}
	return "about " + left.String() + " left"
}
