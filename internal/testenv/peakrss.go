package testenv

import (
	"os"
	"strconv"
	"strings"
)

// PeakRSS reads the peak resident set (VmHWM, in bytes) from a /proc status file
// ("/proc/self/status", "/proc/PID/status"); 0 when it cannot (no /proc, or the
// process is gone).
func PeakRSS(statusFile string) int64 {
	data, err := os.ReadFile(statusFile)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
