// Package atomicfile writes outputs so that a reader never sees a half-written one:
// everything goes to a temporary file (or folder) beside the target, which is
// synced, closed and renamed into place only when the write succeeded.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write creates path atomically with the bytes fill writes. On any error the target
// is left as it was and the temporary file is removed.
func Write(path string, fill func(w io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temp for %q: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = fill(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return fmt.Errorf("write %q: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync %q: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %q: %w", path, err)
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("chmod %q: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %q: %w", path, err)
	}
	return nil
}

// WriteBytes creates path atomically with data.
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Dir builds the folder path atomically: fill populates a temporary folder beside
// it, which replaces path only when fill succeeded. An existing folder at path is
// replaced only when replace is true. On error nothing is left behind.
func Dir(path string, replace bool, fill func(tmpDir string) error) (err error) {
	if _, statErr := os.Stat(path); statErr == nil && !replace {
		return fmt.Errorf("create %q: already exists", path)
	}
	parent := filepath.Dir(path)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("create %q: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temp folder for %q: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	if err = fill(tmp); err != nil {
		return err
	}
	if err = os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("chmod %q: %w", tmp, err)
	}
	if replace {
		old := tmp + ".old"
		if _, statErr := os.Stat(path); statErr == nil {
			if err = os.Rename(path, old); err != nil {
				return fmt.Errorf("move old %q aside: %w", path, err)
			}
			defer os.RemoveAll(old)
		}
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename into %q: %w", path, err)
	}
	return nil
}
