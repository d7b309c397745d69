package ingest

import "syscall"

// allocBlock returns a zeroed buffer of n bytes outside the Go heap, in memory the
// kernel is asked to back with transparent huge pages: on this kind of machine a
// page fault costs as much as parsing several kilobytes, and a 4 MiB chunk
// buffer takes 2 huge-page faults instead of 1024 small ones. freeBlock returns
// it; nothing may point into it afterwards.
func allocBlock(n int) ([]byte, bool) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, false
	}
	_ = syscall.Madvise(b, 14) // MADV_HUGEPAGE; best effort
	return b, true
}

func freeBlock(b []byte) { _ = syscall.Munmap(b) }
