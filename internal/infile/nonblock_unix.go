//go:build unix

package infile

import (
	"os"
	"syscall"
)

// nonblock makes opening a FIFO without a writer return at once.
const nonblock = syscall.O_NONBLOCK

func clearNonblock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
