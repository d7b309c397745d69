package testenv

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Scaling tells how many times the CPU time of a job of size 4n exceeds that of
// size n: about 4 for work linear in the input, 16 for quadratic. prepare(n)
// builds the job outside the measure. Each size is timed as the best of five
// rounds that alternate the two, each after a collection, in the CPU time (user
// and system) of the thread that runs it, locked to it for the measure: a loaded
// machine's waiting does not inflate it as it does wall time, nor do the tests
// running in parallel in the same process. It logs both times and the load
// average.
func Scaling(t testing.TB, n int, prepare func(n int) func()) float64 {
	t.Helper()
	jobs := [2]func(){prepare(n), prepare(4 * n)}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
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
