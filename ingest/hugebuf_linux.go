package ingest

import "syscall"

// allocBlock returns a zeroed buffer of n bytes outside the Go heap, in memory the
// kernel is asked to back with transparent huge pages: on this kind of machine a
// page fault costs as much as parsing several kilobytes, and a buffer of 2 MiB
// or more takes one huge-page fault per 2 MiB instead of 512 small ones. (A
// smaller one takes its small faults once: the chunk pool reuses it for the whole
// run.) freeBlock returns it; nothing may point into it afterwards.
func allocBlock(n int) ([]byte, bool) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, false
	}
	_ = syscall.Madvise(b, 14) // MADV_HUGEPAGE; best effort
	return b, true
}

func freeBlock(b []byte) { _ = syscall.Munmap(b) }
