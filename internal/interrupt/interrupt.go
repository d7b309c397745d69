// Package interrupt stages a command's stop on SIGINT and SIGTERM, so that
// Ctrl-C never costs a user the work already done:
//
//   - the first signal cancels the command's context: it stops starting work
//     and finishes cleanly (replay: no new turns, in-flight turns get a grace
//     period, then the log and manifest are written);
//   - the second signal closes the channel Force returns, when the command
//     asked for one: it then cuts its work in flight at once and still writes
//     its outputs (replay: the in-flight turns are cancelled, the log closed,
//     the manifest says "interrupted"). A command that never asked exits at
//     once, as before;
//   - the third signal exits at once, whatever the command does.
//
// The exit status after a signal is 128 + its number (130 for SIGINT, 143 for
// SIGTERM), as shells report it. A Handler travels in the context, so a command
// finds it with FromContext.
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Handler is the signal handling of one process.
type Handler struct {
	sigs   chan os.Signal
	cancel context.CancelFunc
	exit   func(int)

	mu      sync.Mutex
	first   os.Signal // the first signal received, nil before
	force   chan struct{}
	claimed bool
	done    chan struct{}
}

type key struct{}

// Notify starts handling SIGINT and SIGTERM. The returned context is parent's
// child, cancelled by the first signal, and carries the Handler; stop ends the
// handling (default behaviour comes back).
func Notify(parent context.Context) (ctx context.Context, h *Handler, stop func()) {
	return notify(parent, os.Exit)
}

func notify(parent context.Context, exit func(int)) (context.Context, *Handler, func()) {
	h := &Handler{sigs: make(chan os.Signal, 4), force: make(chan struct{}), exit: exit, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(parent)
	h.cancel = cancel
	ctx = context.WithValue(ctx, key{}, h)
	signal.Notify(h.sigs, os.Interrupt, syscall.SIGTERM)
	go h.run()
	var once sync.Once
	return ctx, h, func() {
		once.Do(func() {
			signal.Stop(h.sigs)
			close(h.done)
			cancel()
		})
	}
}

func (h *Handler) run() {
	n := 0
	for {
		select {
		case <-h.done:
			return
		case sig := <-h.sigs:
			n++
			h.mu.Lock()
			if h.first == nil {
				h.first = sig
			}
			claimed := h.claimed
			h.mu.Unlock()
			switch {
			case n == 1:
				h.cancel()
			case n == 2 && claimed:
				close(h.force)
			default:
				h.exit(h.ExitCode())
				return
			}
		}
	}
}

// FromContext returns the Handler ctx carries, nil when none.
func FromContext(ctx context.Context) *Handler {
	h, _ := ctx.Value(key{}).(*Handler)
	return h
}

// Force returns a channel closed by the second signal; asking for it means the
// command handles that signal itself (cuts its work in flight and writes its
// outputs) instead of the process exiting. A nil Handler returns nil, a
// channel that never closes.
func (h *Handler) Force() <-chan struct{} {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.claimed = true
	return h.force
}

// Signalled tells whether a signal was received.
func (h *Handler) Signalled() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.first != nil
}

// ExitCode is 128 + the number of the first signal received (130 for SIGINT,
// 143 for SIGTERM), 0 when none was.
func (h *Handler) ExitCode() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.first.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 0
}
