package runlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// fullDisk passes writes through until limit bytes have been written, then
// fails every write as a full disk does (a short write, then ENOSPC).
type fullDisk struct {
	w     io.Writer
	limit int64
	n     int64
}

func (d *fullDisk) Write(p []byte) (int, error) {
	room := d.limit - d.n
	if room <= 0 {
		return 0, &os.PathError{Op: "write", Path: "turns.arrows", Err: syscall.ENOSPC}
	}
	if int64(len(p)) > room {
		n, _ := d.w.Write(p[:room])
		d.n += int64(n)
		return n, &os.PathError{Op: "write", Path: "turns.arrows", Err: syscall.ENOSPC}
	}
	n, err := d.w.Write(p)
	d.n += int64(n)
	return n, err
}

// TestAbortKeepsFlushedRows: when the disk fills up in the middle of a batch,
// Abort cuts the file back to its last complete batch and ends the stream
// there: every row flushed before the failure reads back, without error.
func TestAbortKeepsFlushedRows(t *testing.T) {
	recs := sampleRecords(60)
	for _, limit := range []int64{0, 4000, 9000, 20000, 30000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), schemas.TurnLogFile)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			var disk *fullDisk
			f, err := CreateWrapped(p, mem, func(w io.Writer) io.Writer {
				// The schema always fits: the limit counts from after it.
				disk = &fullDisk{w: w, limit: 1 << 40}
				return disk
			})
			if err != nil {
				t.Fatal(err)
			}
			disk.limit = disk.n + limit
			flushed := 0
			var werr error
			for i := range recs {
				if werr = f.Write(&recs[i]); werr != nil {
					break
				}
				if i%10 == 9 {
					if werr = f.Flush(); werr != nil {
						break
					}
					flushed = i + 1
				}
			}
			if werr == nil {
				werr = f.Flush()
			}
			if werr == nil {
				t.Fatalf("no write error with %d bytes of room", limit)
			}
			if !errors.Is(werr, syscall.ENOSPC) {
				t.Fatalf("write error %v, want ENOSPC", werr)
			}
			if err := f.Abort(); err != nil {
				t.Fatal(err)
			}
			got, err := ReadFile(context.Background(), p)
			if err != nil {
				t.Fatalf("after Abort: %v", err)
			}
			if len(got) != flushed {
				t.Fatalf("%d rows read back, %d were flushed before the failure", len(got), flushed)
			}
			for i := range got {
				if got[i].SessionID != recs[i].SessionID || got[i].OutputContent != recs[i].OutputContent {
					t.Fatalf("row %d differs", i)
				}
			}
		})
	}
}

// TestBatchBytes: rows with large outputs end batches by size, so no batch
// nears the 2 GiB a string column's offsets can address.
func TestBatchBytes(t *testing.T) {
	var buf strings.Builder
	w, err := NewWriter(&buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.max = 1 << 20
	r := sampleRecords(1)[0]
	r.OutputContent = strings.Repeat("y", 300<<10)
	for i := 0; i < 20; i++ {
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
		if w.bytes >= w.max {
			t.Fatalf("%d bytes buffered", w.bytes)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	batches, rows := 0, 0
	err = Scan(t.Context(), strings.NewReader(buf.String()), -1, nil, func(b arrow.RecordBatch) error {
		if b.NumRows() > 0 { // the first batch, empty, carries the schema
			batches++
		}
		rows += int(b.NumRows())
		return nil
	})
	if err != nil || rows != 20 || batches != 5 {
		t.Fatalf("%d rows in %d batches (%v)", rows, batches, err)
	}
}

// TestOldLogVersionRefused: a log of a version before this one (1: no version
// key; 2) is refused with an error naming its version, not read under today's
// statuses.
func TestOldLogVersionRefused(t *testing.T) {
	for _, version := range []string{"1", "2"} {
		var md *arrow.Metadata
		if version != "1" {
			m := arrow.NewMetadata([]string{schemas.TurnLogVersionKey}, []string{version})
			md = &m
		}
		schema := arrow.NewSchema([]arrow.Field{
			{Name: "session_id", Type: arrow.BinaryTypes.String},
			{Name: "status", Type: arrow.BinaryTypes.String},
			{Name: "error", Type: arrow.BinaryTypes.String},
		}, md)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i, v := range []string{"b", "aborted", "not issued: the run was interrupted"} {
			b.Field(i).(*array.StringBuilder).Append(v)
		}
		rec := b.NewRecordBatch()
		stream := ipcStream(t, rec)
		rec.Release()
		b.Release()
		_, err := Read(context.Background(), bytes.NewReader(stream), nil)
		if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "version "+version+", this agentrace reads version "+schemas.TurnLogVersion) {
			t.Fatalf("version %s log: %v, want it refused naming its version", version, err)
		}
	}
	if v := Version(schemas.TurnLogSchema()); v != schemas.TurnLogVersion {
		t.Fatalf("schema version %q", v)
	}
}

func TestCheckAgreement(t *testing.T) {
	trunc := fmt.Errorf("%w: no end-of-stream marker", ErrTruncated)
	v2 := func(state string, counts map[string]int) schemas.RunManifest {
		return schemas.RunManifest{State: state, Counts: counts, TurnLogVersion: schemas.TurnLogVersion}
	}
	for _, tc := range []struct {
		name    string
		m       schemas.RunManifest
		log     map[string]int
		readErr error
		ok      bool
	}{
		{"same", v2("complete", map[string]int{"ok": 3, "aborted": 1}), map[string]int{"ok": 3, "aborted": 1}, nil, true},
		{"zero counts ignored", v2("complete", map[string]int{"ok": 3}), map[string]int{"ok": 3, "error": 0}, nil, true},
		{"log lost", v2("complete", map[string]int{"ok": 58}), map[string]int{}, trunc, false},
		{"fewer rows", v2("interrupted", map[string]int{"ok": 3}), map[string]int{"ok": 2}, nil, false},
		{"extra status", v2("complete", map[string]int{"ok": 3}), map[string]int{"ok": 3, "error": 1}, nil, false},
		{"complete but truncated", v2("complete", map[string]int{"ok": 3}), map[string]int{"ok": 3}, trunc, false},
		{"failed may lack its end marker", v2("failed", map[string]int{"ok": 3}), map[string]int{"ok": 3}, trunc, true},
		{"running promises nothing", v2("running", nil), map[string]int{"ok": 1}, trunc, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckAgreement(tc.m, tc.log, tc.readErr)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckAgreement: %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrDisagree) {
				t.Fatalf("error %v does not match ErrDisagree", err)
			}
		})
	}
}

// TestManifestInPlace: the final manifest replaces a running one in place when
// the atomic rewrite fails, and a running manifest keeps room for it.
func TestManifestInPlace(t *testing.T) {
	dir := t.TempDir()
	m := schemas.RunManifest{State: schemas.RunRunning, Config: schemas.RunConfig{Dataset: "ds"}}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, schemas.RunManifestFile)
	st, _ := os.Stat(p)
	if st.Size() < manifestReserve {
		t.Fatalf("running manifest of %d bytes keeps no room", st.Size())
	}
	if got, err := ReadManifest(dir); err != nil || got.State != schemas.RunRunning {
		t.Fatalf("read running manifest: %v %q", err, got.State)
	}
	m.State, m.Error = schemas.RunFailed, strings.Repeat("no space left on device ", 100)
	m.Counts = map[string]int{"ok": 7}
	data := []byte(`{"state":"failed","counts":{"ok":7}}` + "\n")
	if err := writeInPlace(p, data); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadManifest(dir); err != nil || got.State != schemas.RunFailed || got.Counts["ok"] != 7 {
		t.Fatalf("after in-place write: %v %+v", err, got)
	}
	if err := writeInPlace(p, make([]byte, 1<<20)); err == nil {
		t.Fatal("in-place write of more than the file holds succeeded")
	}
}

const fullDiskEnv = "AGENTRACE_RUNLOG_FULL_DISK"

// TestManifestOnFullDisk writes a running manifest and a turn log on a real
// 256 KiB tmpfs, fills it up, and checks that the final manifest still lands
// (in place) and the log still reads its flushed rows. It needs a private mount
// namespace (unshare -rm), and skips where there is none.
func TestManifestOnFullDisk(t *testing.T) {
	if dir := os.Getenv(fullDiskEnv); dir != "" {
		fullDiskChild(t, dir)
		return
	}
	if testing.Short() {
		t.Skip("mounts a tmpfs in a child process")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1): cannot mount a small tmpfs")
	}
	mnt := t.TempDir()
	script := fmt.Sprintf("mount -t tmpfs -o size=256k tmpfs %q && exec env %s=%q %q -test.run='^TestManifestOnFullDisk$' -test.count=1 -test.v",
		mnt, fullDiskEnv, mnt, os.Args[0])
	cmd := exec.Command(unshare, "-rm", "sh", "-c", script)
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "unshare:") || err != nil && strings.Contains(string(out), "mount:") {
		t.Skipf("no private tmpfs here: %s", strings.TrimSpace(string(out)))
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestManifestOnFullDisk") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func fullDiskChild(t *testing.T, dir string) {
	m := schemas.RunManifest{State: schemas.RunRunning, Config: schemas.RunConfig{Dataset: "ds"}}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	f, err := Create(filepath.Join(dir, schemas.TurnLogFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := sampleRecords(40)
	for i := range recs {
		recs[i].OutputContent = strings.Repeat("z", 4000)
	}
	flushed := 0
	var werr error
	for i := 0; werr == nil; i++ {
		r := recs[i%len(recs)]
		if werr = f.Write(&r); werr == nil && i%5 == 4 {
			if werr = f.Flush(); werr == nil {
				flushed = i + 1
			}
		}
	}
	if !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("log write error %v, want ENOSPC", werr)
	}
	if err := f.Abort(); err != nil {
		t.Logf("abort: %v", err)
	}
	// The disk is full: an atomic rewrite has no room for its temporary copy.
	if err := os.WriteFile(filepath.Join(dir, "probe"), make([]byte, 64<<10), 0o644); err == nil {
		t.Fatal("the tmpfs still has room after the log filled it")
	}
	m.State, m.Error, m.Counts = schemas.RunFailed, "write turn log: "+werr.Error(), map[string]int{"ok": flushed}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(dir)
	if err != nil || got.State != schemas.RunFailed {
		t.Fatalf("manifest on a full disk: %v, state %q", err, got.State)
	}
	rows, err := ReadFile(context.Background(), filepath.Join(dir, schemas.TurnLogFile))
	if len(rows) != flushed || (err != nil && !errors.Is(err, ErrTruncated)) {
		t.Fatalf("log on a full disk: %d rows (%v), %d flushed", len(rows), err, flushed)
	}
	t.Logf("full disk: %d rows flushed and read back (%v); manifest state %s", flushed, err, got.State)
}

// ipcStream is rec written as an Arrow IPC stream of its own schema.
func ipcStream(t *testing.T, rec arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
