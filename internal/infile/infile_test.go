//go:build unix

package infile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "manifest.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	if fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0); err == nil {
		defer syscall.Close(fd)
		_ = syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock})
	}
	for _, tc := range []struct{ path, kind string }{
		{fifo, "FIFO"},
		{link, "FIFO"},
		{"/dev/zero", "character device"},
		{"/dev/null", "character device"},
		{dir, "folder"},
		{sock, "socket"},
		{"/proc/self/environ", "/proc entry"},
		{"/sys/kernel/mm/transparent_hugepage/enabled", "/sys entry"},
	} {
		if _, err := os.Lstat(tc.path); err != nil {
			continue
		}
		for name, call := range map[string]func() error{
			"Open":      func() error { f, err := Open(tc.path); f.Close(); return err },
			"ReadFile":  func() error { _, err := ReadFile(t.Context(), tc.path, SmallFile); return err },
			"ReadSmall": func() error { _, err := ReadSmall(tc.path, SmallFile); return err },
			"Check":     func() error { return Check(tc.path) },
		} {
			done := make(chan error, 1)
			go func() { done <- call() }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrNotRegular) {
					t.Errorf("%s(%s) = %v, want ErrNotRegular", name, tc.path, err)
				} else if !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.kind) {
					t.Errorf("%s(%s): error %q does not name the path and %q", name, tc.path, err, tc.kind)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s(%s) blocked", name, tc.path)
			}
		}
	}
}

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(t.Context(), p, 10); err != nil || string(b) != "0123456789" {
		t.Fatalf("ReadFile at the limit = %q, %v", b, err)
	}
	if _, err := ReadFile(t.Context(), p, 9); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadFile over the limit: %v, want ErrTooLarge", err)
	}
	if b, err := ReadSmall(p, 10); err != nil || string(b) != "0123456789" {
		t.Fatalf("ReadSmall at the limit = %q, %v", b, err)
	}
	if _, err := ReadSmall(p, 9); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadSmall over the limit: %v, want ErrTooLarge", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := ReadFile(ctx, p, 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadFile after its context is done: %v, want context.Canceled", err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4)
	if n, err := f.Read(buf); n != 4 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	if _, err := ReadFile(t.Context(), filepath.Join(dir, "missing"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
