//go:build !linux

package replay

import "time"

// preciseSleep sleeps about d (at most issueMargin); callers check the clock and
// sleep again if it returned early.
func preciseSleep(d time.Duration) { time.Sleep(d) }
