//go:build !linux

package testenv

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user and system CPU time so far (a thread's own is
// read on Linux only).
func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
