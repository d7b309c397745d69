package interrupt

import (
	"context"
	"syscall"
	"testing"
	"time"
)

func waitClosed(t *testing.T, what string, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not closed", what)
	}
}

// waitExit waits for the exit that what causes, with the code want.
func waitExit(t *testing.T, what string, exited <-chan int, want int) {
	t.Helper()
	select {
	case code := <-exited:
		if code != want {
			t.Fatalf("exit code %d at %s, want %d", code, what, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no exit at %s", what)
	}
}

// TestStages sends the process three signals: the first cancels the context,
// the second closes Force (claimed), the third exits with 128 + the first
// signal's number.
func TestStages(t *testing.T) {
	exited := make(chan int, 1)
	ctx, h, stop := notify(context.Background(), func(code int) { exited <- code })
	defer stop()
	if FromContext(ctx) != h {
		t.Fatal("the context does not carry the handler")
	}
	force := h.Force()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, "context after the first signal", ctx.Done())
	select {
	case <-force:
		t.Fatal("force closed by the first signal")
	default:
	}
	if !h.Signalled() || h.ExitCode() != 130 {
		t.Fatalf("signalled %v, exit code %d", h.Signalled(), h.ExitCode())
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	waitClosed(t, "force after the second signal", force)
	select {
	case code := <-exited:
		t.Fatalf("exited (%d) at the second signal of a command that handles it", code)
	case <-time.After(50 * time.Millisecond):
	}
	syscall.Kill(syscall.Getpid(), syscall.SIGINT)
	waitExit(t, "the third signal (the first was SIGINT)", exited, 130)
}

// TestUnclaimedSecondSignalExits: a command that never asked for Force exits
// at the second signal.
func TestUnclaimedSecondSignalExits(t *testing.T) {
	exited := make(chan int, 1)
	ctx, _, stop := notify(context.Background(), func(code int) { exited <- code })
	defer stop()
	syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	waitClosed(t, "context", ctx.Done())
	syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
	waitExit(t, "the second signal", exited, 143)
}
