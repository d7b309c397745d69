package replay

import (
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleep blocks the calling thread for about d (at most issueMargin) in
// nanosleep, which the kernel ends within the thread's timer slack; it may
// return early (a signal), so callers check the clock and sleep again.
func preciseSleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil)
}
