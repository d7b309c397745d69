package infile

import (
	"os"
	"syscall"
)

// Magic numbers of the kernel's pseudo file systems (statfs(2)).
const (
	procMagic  = 0x9fa0
	sysfsMagic = 0x62656572
)

// pseudoFile names what the opened f is when it lives in /proc or /sys: files
// there say they are regular and empty, yet hold what the kernel writes when
// read (/proc/self/environ: every environment variable, secrets included).
func pseudoFile(f *os.File) (string, bool) {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &st); err != nil {
		return "", false
	}
	return pseudoKind(st.Type)
}

// pseudoPath is pseudoFile of the file at path, without opening it.
func pseudoPath(path string) (string, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return "", false
	}
	return pseudoKind(st.Type)
}

func pseudoKind(t int64) (string, bool) {
	switch t {
	case procMagic:
		return "a /proc entry", true
	case sysfsMagic:
		return "a /sys entry", true
	}
	return "", false
}
