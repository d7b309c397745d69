package runlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow"
)

// TestScanRun: the one check every reader of a run makes. A log that agrees with
// a finished run's manifest is read whole and identified by its rows, size and
// SHA-256; one that does not is refused (ErrDisagree); a killed run's (manifest
// running, log cut inside a batch) is read to its last whole batch, its note
// saying the run did not end, or, its log changed just now, that it is still
// being written; a log without a row is refused whatever the manifest.
func TestScanRun(t *testing.T) {
	recs := sampleRecords(12)
	counts := map[string]int{}
	for _, r := range recs {
		counts[r.Status]++
	}
	whole := writeLog(t, nil, recs, 4, true)
	cut := whole[:len(whole)-40] // inside the last batch, no end-of-stream marker
	// inside the first batch: the schema (and the empty batch that writes it) whole
	noRow := whole[:len(writeLog(t, nil, nil, 4, false))+100]
	done := &schemas.RunManifest{State: schemas.RunComplete, Counts: counts, TurnLogVersion: schemas.TurnLogVersion}
	running := &schemas.RunManifest{State: schemas.RunRunning}
	more := map[string]int{}
	for k, v := range counts {
		more[k] = v
	}
	more[schemas.StatusOK]++
	disagree := &schemas.RunManifest{State: schemas.RunComplete, Counts: more, TurnLogVersion: schemas.TurnLogVersion}
	for _, tc := range []struct {
		name    string
		log     []byte
		m       *schemas.RunManifest
		age     time.Duration // of the log file
		rows    int
		err     error
		note    string
		cutNote bool
	}{
		{name: "whole, agreeing", log: whole, m: done, rows: 12},
		{name: "whole, no manifest", log: whole, rows: 12},
		{name: "whole, disagreeing", log: whole, m: disagree, err: ErrDisagree},
		{name: "cut, manifest complete", log: cut, m: done, err: ErrDisagree},
		{name: "killed", log: cut, m: running, age: time.Minute, rows: 8, note: "did not end (its manifest still says running"},
		{name: "being written", log: cut, m: running, rows: 8, note: "is still being written"},
		{name: "cut, no manifest", log: cut, rows: 8, note: "cut short"},
		{name: "no row, running", log: noRow, m: running, err: ErrNoRows},
		{name: "no row, complete", log: noRow, m: done, err: ErrDisagree},
		{name: "empty", log: nil, m: running, err: ErrUnreadable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), schemas.TurnLogFile)
			if err := os.WriteFile(p, tc.log, 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.age > 0 {
				at := time.Now().Add(-tc.age)
				if err := os.Chtimes(p, at, at); err != nil {
					t.Fatal(err)
				}
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			batches := 0
			lr, err := ScanRun(context.Background(), f, SizeOf(f), tc.m, nil, func(arrow.RecordBatch) error { batches++; return nil })
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(tc.log)
			want := schemas.TurnLogIdentity{Rows: tc.rows, Bytes: int64(len(tc.log)), SHA256: hex.EncodeToString(sum[:])}
			if lr.Log != want || batches == 0 {
				t.Errorf("log %+v after %d batches, want %+v", lr.Log, batches, want)
			}
			if (lr.Truncated != nil) != (len(tc.log) != len(whole)) {
				t.Errorf("truncated %v", lr.Truncated)
			}
			if tc.note == "" && lr.Note != "" || !strings.Contains(lr.Note, tc.note) {
				t.Errorf("note %q, want %q", lr.Note, tc.note)
			}
		})
	}
}

// TestCheckScored: a scores.json is of the log as it is only when it scored the
// same rows of the same bytes; one that does not say is stale too.
func TestCheckScored(t *testing.T) {
	now := schemas.TurnLogIdentity{Rows: 863, Bytes: 1 << 20, SHA256: strings.Repeat("ab", 32)}
	mid := schemas.TurnLogIdentity{Rows: 227, Bytes: 300 << 10, SHA256: strings.Repeat("cd", 32)}
	same := now
	for _, tc := range []struct {
		name   string
		scored *schemas.TurnLogIdentity
		stale  bool
		says   string
	}{
		{"same log", &same, false, ""},
		{"scored mid-run", &mid, true, "it scored 227 rows"},
		{"same rows, other bytes", &schemas.TurnLogIdentity{Rows: 863, Bytes: 1 << 20, SHA256: strings.Repeat("ef", 32)}, true, "now holds 863 rows"},
		{"no record", nil, true, "does not record which turn log"},
	} {
		err := CheckScored(tc.scored, now)
		if errors.Is(err, ErrStale) != tc.stale || (tc.stale && !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestWriteTableTakesTheRowsReadBefore: a table of a run still being written
// takes as many rows as the reader that read it before (TableRun.Rows), so the
// report's tables and figures are of one state of the log.
func TestWriteTableTakesTheRowsReadBefore(t *testing.T) {
	dir := t.TempDir()
	recs := sampleRecords(12)
	log := writeLog(t, nil, recs, 4, false)
	if err := os.WriteFile(filepath.Join(dir, schemas.TurnLogFile), log, 0o644); err != nil {
		t.Fatal(err)
	}
	m := schemas.RunManifest{State: schemas.RunRunning}
	out := filepath.Join(dir, "t.parquet")
	info, err := WriteTable(context.Background(), out, []TableRun{{Dir: dir, Manifest: &m, Rows: 8,
		Expected: func(string, int32) (int32, bool) { return 0, false }}}, TableOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Rows != 8 || !strings.Contains(strings.Join(info.Warnings, " "), "the table holds the first 8") {
		t.Errorf("%d rows, warnings %q", info.Rows, info.Warnings)
	}
}
