package testenv

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTime is the calling thread's CPU time so far (CLOCK_THREAD_CPUTIME_ID,
// exact to the nanosecond, where getrusage's thread figure moves in scheduler
// ticks).
func cpuTime(t testing.TB) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		t.Fatalf("clock_gettime: %v", err)
	}
	return time.Duration(ts.Nano())
}
