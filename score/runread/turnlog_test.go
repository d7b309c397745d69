package runread

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestReadTurnLogPooledAgreesWithManifest reads a log of many batches through the
// recycling pool, its batches released as they are read (clone), as rescore
// reads a run a tokenizer counts: the statuses counted for the manifest check
// outlive the buffers they were read from, so the run still agrees with its
// manifest, log after log, readers sharing the pool.
func TestReadTurnLogPooledAgreesWithManifest(t *testing.T) {
	path := filepath.Join(t.TempDir(), schemas.TurnLogFile)
	w, err := runlog.Create(path, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	const batches, perBatch = 8, 16
	for b := range batches {
		for i := range perBatch {
			status := schemas.StatusOK
			if i == 0 {
				status = schemas.StatusError
			}
			rec := schemas.TurnRecord{SessionID: "s", ConversationID: "c", Repeat: 1, Turn: int32(b*perBatch + i),
				Status: status, OutputContent: strings.Repeat("some output of the turn ", 100), InWindow: true}
			if err := w.Write(&rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	m := &schemas.RunManifest{State: schemas.RunComplete,
		Counts: map[string]int{schemas.StatusOK: batches * (perBatch - 1), schemas.StatusError: batches}}
	pool := NewBufferPool()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for round := range 8 {
				f, err := os.Open(path)
				if err != nil {
					t.Error(err)
					return
				}
				tr := NewTurnLogRows(true, nil)
				_, err = ScanTurnLog(context.Background(), f, m, ScanOptions{Allocator: pool, Batches: tr.Add})
				f.Close()
				rows := tr.Rows
				if err != nil {
					t.Errorf("reader %d round %d: %v", g, round, err)
					return
				}
				if len(rows) != batches*perBatch {
					t.Errorf("reader %d round %d: %d rows", g, round, len(rows))
				}
				tr.Release()
			}
		})
	}
	wg.Wait()

	// What the read returns outlives the buffers it was read from: the pool's
	// buffers, reused and overwritten, leave the status counts as they were.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := NewTurnLogRows(true, nil)
	lr, err := ScanTurnLog(context.Background(), f, m, ScanOptions{Allocator: pool, Batches: tr.Add})
	if err != nil {
		t.Fatal(err)
	}
	tr.Release()
	for class, list := range pool.free {
		for range list {
			b := pool.Allocate(class)
			for i := range b {
				b[i] = 0xC8
			}
		}
	}
	if err := runlog.CheckAgreement(*m, lr.Counts, nil); err != nil {
		t.Errorf("after the buffers were reused: %v", err)
	}
}
