package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/infile"
)

// A FIFO named as the dataset (by --dataset or a config's dataset path) is
// refused at once, as every input that is not a regular file, never opened
// blocking.
func TestDatasetFIFORefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := datasetDir(context.Background(), fifo, io.Discard); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, infile.ErrNotRegular) {
			t.Errorf("a FIFO dataset: %v, want it refused as not a regular file", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("datasetDir blocks on a FIFO")
	}
}
