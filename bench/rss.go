package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
)

// A child's peak RSS as the kernel counts it for the parent (wait4's ru_maxrss)
// is at least the parent's own peak when the child started: Go starts a child
// with vfork, and exec records the shared memory's high-water mark as the
// child's. So a child of this binary writes its own peak (VmHWM of
// /proc/self/status, which exec starts afresh) into the file peakRSSEnv names,
// and the parent reads that; ru_maxrss is the figure only where there is no
// /proc (then it may be the parent's).
const peakRSSEnv = "AGENTRACE_BENCH_PEAK_RSS_FILE"

// reportPeakRSS is a child's last step: its own peak RSS into the parent's file.
func reportPeakRSS() {
	if path := os.Getenv(peakRSSEnv); path != "" {
		_ = os.WriteFile(path, []byte(strconv.FormatInt(testenv.PeakRSS("/proc/self/status"), 10)), 0o644)
	}
}

// clientUsage is what one child process used: CPU time as the kernel counts it,
// and its own peak RSS.
type clientUsage struct {
	cpu   time.Duration
	rssMB float64
	took  time.Duration
}

// runChild runs this bench binary again with args (a row's child process) in
// the repository root and returns its standard output (with its standard error
// too when combined) and what it used.
func runChild(env Env, combined bool, args ...string) (string, clientUsage, error) {
	self, err := os.Executable()
	if err != nil {
		return "", clientUsage{}, err
	}
	rssFile := filepath.Join(env.Work, "child-peak-rss")
	_ = os.Remove(rssFile)
	cmd := exec.Command(self, args...)
	cmd.Dir = env.Root
	cmd.Env = append(os.Environ(), peakRSSEnv+"="+rssFile)
	var b []byte
	start := time.Now()
	if combined {
		b, err = cmd.CombinedOutput()
	} else {
		cmd.Stderr = os.Stderr
		b, err = cmd.Output()
	}
	if err != nil {
		return "", clientUsage{}, fmt.Errorf("child: %v: %s", err, b)
	}
	use := clientUsage{took: time.Since(start)}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return "", clientUsage{}, errors.New("no rusage for the child")
	}
	use.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	use.rssMB = float64(ru.Maxrss) / 1024 // KiB on Linux
	if own, err := os.ReadFile(rssFile); err == nil {
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(own)), 10, 64); err == nil && n > 0 {
			use.rssMB = float64(n) / (1 << 20)
		}
	}
	return string(b), use, nil
}
