package testenv

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Scaling tells how many times the CPU time of a job of size 4n exceeds that of
// size n: about 4 for work linear in the input, 16 for quadratic. prepare(n)
// builds the job outside the measure. Each size is timed as the best of five
// rounds that alternate the two, each after a collection, in process CPU time
// (user and system), which a loaded machine's waiting does not inflate as it
// does wall time. It logs both times and the load average.
func Scaling(t testing.TB, n int, prepare func(n int) func()) float64 {
	t.Helper()
	jobs := [2]func(){prepare(n), prepare(4 * n)}
	best := [2]time.Duration{1<<63 - 1, 1<<63 - 1}
	for range 5 {
		for i, job := range jobs {
			runtime.GC()
			start := cpuTime(t)
			job()
			best[i] = min(best[i], cpuTime(t)-start)
		}
	}
	ratio := float64(best[1]) / float64(max(best[0], time.Millisecond))
	load := "?"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil && len(strings.Fields(string(b))) > 0 {
		load = strings.Fields(string(b))[0]
	}
	t.Logf("CPU time at n=%d: %v, at 4n: %v, ratio %.2f (load average %s)", n, best[0], best[1], ratio, load)
	return ratio
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
