package runlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func sampleRecords(n int) []schemas.TurnRecord {
	out := make([]schemas.TurnRecord, n)
	for i := range out {
		r := &out[i]
		r.SessionID = "conv1"
		if i%3 == 1 {
			r.SessionID = "conv1__repeat_2"
			r.Repeat = 2
		} else {
			r.Repeat = 1
		}
		r.ConversationID = "conv1"
		r.Trajectory = int32(i / 4)
		r.Turn = int32(2*(i%4) + 1)
		r.ClientIndex = int32(i % 4)
		r.Domain = schemas.DomainCoding
		r.Status = []string{schemas.StatusOK, schemas.StatusError, schemas.StatusTimeout, schemas.StatusAborted,
			schemas.StatusCancelled, schemas.StatusNotIssued}[i%6]
		if r.Status != schemas.StatusOK {
			r.Error = "boom \"quoted\" ünïcode"
		}
		r.HTTPStatus = int32(200 + i)
		r.ScheduledNs = int64(i) * 1000
		r.IssuedNs = r.ScheduledNs + 7
		r.HeadersNs = r.IssuedNs + 100
		r.FirstTokenNs = r.HeadersNs + 50
		r.CompletedNs = r.FirstTokenNs + 999
		r.DelayNs = int64(i) * 3
		if i%2 == 0 {
			r.ChunkTimesNs = []int64{0, int64(i), int64(2 * i)}
		}
		r.InWindow = i%5 != 0
		r.OutputContent = strings.Repeat("x", i)
		r.OutputReasoning = "think"
		r.OutputToolCalls = `[{"index":0,"function":{"name":"f","arguments":"{}"}}]`
		r.FinishReason = "stop"
		r.FirstContentBytes = 3
		r.FirstReasoningBytes = 4
		r.Chunks = 5
		r.UsagePromptTokens = -1
		r.UsageCompletionTokens = int32(i)
		r.UsageCachedTokens = 12
		r.RequestBytes = int64(1 << 20)
		if i%3 == 2 {
			r.Warnings = "malformed_frame x2 (first: \"{\\\"cho\"); no [DONE]"
			r.TPOTToolCalls = `[{"index":0,"type":"function","function":{"arguments":"{\"a\":1}"}}]`
			r.OutputTruncatedBytes = int64(i) << 30
		}
	}
	return out
}

// writeLog writes recs in batches of batch rows and returns the stream; closed
// tells whether the writer is closed (end-of-stream marker written).
func writeLog(t *testing.T, mem memory.Allocator, recs []schemas.TurnRecord, batch int, closed bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, mem)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
		if (i+1)%batch == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if closed {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		w.b.Release() // what a killed process leaves: no end-of-stream marker
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		batch int
	}{
		{"empty", 0, 1},
		{"one", 1, 1},
		{"single batch", 17, 100},
		{"many batches", 40, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			want := sampleRecords(tc.n)
			data := writeLog(t, mem, want, tc.batch, true)
			got, err := Read(context.Background(), bytes.NewReader(data), mem)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				want = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestAutoBatch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, mem)
	if err != nil {
		t.Fatal(err)
	}
	recs := sampleRecords(MaxBatchRows + 3)
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if w.Buffered() != 3 {
		t.Fatalf("buffered = %d after %d rows, want 3", w.Buffered(), len(recs))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	batches := 0
	if err := Scan(t.Context(), bytes.NewReader(buf.Bytes()), -1, mem, func(arrow.RecordBatch) error { batches++; return nil }); err != nil {
		t.Fatal(err)
	}
	// The schema-only batch at the start, one full batch, the remainder.
	if batches != 3 {
		t.Fatalf("batches = %d, want 3", batches)
	}
}

// TestTruncated cuts a stream at every byte offset: the reader returns exactly the
// rows of the batches completed before the cut, plus ErrTruncated.
func TestTruncated(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	recs := sampleRecords(12)
	const batch = 4
	full := writeLog(t, mem, recs, batch, true)
	// Batch boundaries: offsets at which each batch's stream prefix ends.
	var ends []int
	for k := 0; k <= len(recs)/batch; k++ {
		ends = append(ends, len(writeLog(t, mem, recs[:k*batch], batch, false)))
	}
	// Every byte near a batch boundary or the end, every 211th elsewhere.
	near := func(cut int) bool {
		for _, e := range append(ends, len(full)) {
			if cut > e-12 && cut < e+12 {
				return true
			}
		}
		return cut < 64 || cut%211 == 0
	}
	for cut := 0; cut < len(full); cut++ {
		if !near(cut) {
			continue
		}
		got, err := Read(context.Background(), bytes.NewReader(full[:cut]), mem)
		complete := 0
		for k, e := range ends {
			if cut >= e {
				complete = k * batch
			}
		}
		// Cut inside the schema, nothing is a turn log yet: unreadable.
		if !errors.Is(err, ErrTruncated) && !(complete == 0 && errors.Is(err, ErrUnreadable)) {
			t.Fatalf("cut at %d of %d: err = %v, want ErrTruncated", cut, len(full), err)
		}
		if len(got) != complete {
			t.Fatalf("cut at %d: %d rows, want %d", cut, len(got), complete)
		}
		if complete > 0 && !reflect.DeepEqual(got, recs[:complete]) {
			t.Fatalf("cut at %d: rows differ", cut)
		}
	}
}

// TestUnclosed is a process killed after a flush: all flushed rows read back, and
// the missing end-of-stream marker is reported.
func TestUnclosed(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	recs := sampleRecords(9)
	data := writeLog(t, mem, recs, 4, false)
	got, err := Read(context.Background(), bytes.NewReader(data), mem)
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %v, want ErrTruncated", err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatalf("got %d rows, want all %d", len(got), len(recs))
	}
}

func TestFileAndDump(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, schemas.TurnLogFile)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	f, err := Create(p, mem)
	if err != nil {
		t.Fatal(err)
	}
	recs := sampleRecords(5)
	for i := range recs {
		if err := f.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(context.Background(), p)
	if err != nil || !reflect.DeepEqual(got, recs) {
		t.Fatalf("ReadFile: err %v, %d rows", err, len(got))
	}

	var out bytes.Buffer
	if n, err := Dump(context.Background(), &out, p, []string{"status", "chunk_times", "turn"}); err != nil || n != len(recs) {
		t.Fatalf("Dump: %d rows, %v", n, err)
	}
	sc := bufio.NewScanner(&out)
	i := 0
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, `{"status":`) {
			t.Fatalf("line %d not in column order: %s", i, line)
		}
		var row struct {
			Status     string  `json:"status"`
			ChunkTimes []int64 `json:"chunk_times"`
			Turn       int32   `json:"turn"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatal(err)
		}
		if row.Status != recs[i].Status || row.Turn != recs[i].Turn || !reflect.DeepEqual(row.ChunkTimes, nilIfEmpty(recs[i].ChunkTimesNs)) {
			t.Fatalf("row %d = %+v, want %+v", i, row, recs[i])
		}
		i++
	}
	if i != len(recs) {
		t.Fatalf("dumped %d rows, want %d", i, len(recs))
	}
	out.Reset()
	if _, err := Dump(context.Background(), &out, p, nil); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	var all map[string]any
	if err := json.Unmarshal([]byte(first), &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != len(ColumnNames()) {
		t.Fatalf("full dump has %d keys, want %d", len(all), len(ColumnNames()))
	}
	if _, err := Dump(context.Background(), &out, p, []string{"nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown column: err = %v", err)
	}

	// A truncated file still dumps its complete rows, then reports the truncation.
	data, _ := os.ReadFile(p)
	if err := os.WriteFile(p, data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if n, err := Dump(context.Background(), &out, p, []string{"turn"}); !errors.Is(err, ErrTruncated) || errors.Is(err, ErrNoRows) || n != len(recs) {
		t.Fatalf("%d rows, err = %v, want %d and ErrTruncated", n, err, len(recs))
	}
	if n := strings.Count(out.String(), "\n"); n != len(recs) {
		t.Fatalf("truncated dump: %d rows, want %d", n, len(recs))
	}
}

func nilIfEmpty(v []int64) []int64 {
	if len(v) == 0 {
		return []int64{}
	}
	return v
}

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := schemas.RunManifest{
		SchemaVersion: schemas.Version, ToolVersion: schemas.ToolVersion,
		Config:      schemas.RunConfig{Dataset: "ds", Endpoint: "http://127.0.0.1:1", Concurrency: 4, RoutingHeaders: []string{"X-Session-ID"}, Official: false, NonOfficial: []string{"delay scale 0.5"}},
		DatasetHash: "abc", DatasetSize: 20, StartedAt: "2026-01-01T00:00:00Z",
		Counts: map[string]int{"ok": 3}, State: schemas.RunInterrupted,
	}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("got %+v\nwant %+v", got, m)
	}
	if _, err := ReadManifest(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("want an error for a missing manifest")
	}
}

// TestColumnsDocumented: every turn-log column has a meaning in schemas, in
// schema order.
func TestColumnsDocumented(t *testing.T) {
	docs := schemas.TurnLogColumns()
	names := ColumnNames()
	if len(docs) != len(names) {
		t.Fatalf("%d documented columns, schema has %d", len(docs), len(names))
	}
	for i, c := range docs {
		if c.Name != names[i] || c.Meaning == "" {
			t.Fatalf("column %d: documented %q, schema %q", i, c.Name, names[i])
		}
	}
}

// TestUnreadableLogs: an empty or random-bytes
// turns.arrows is not a turn log (ErrUnreadable), a log cut before its first
// complete batch has no row (ErrNoRows), and a log cut after some batches yields
// them (ErrTruncated only).
func TestUnreadableLogs(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, schemas.TurnLogFile)
	recs := sampleRecords(3)
	whole := writeLog(t, nil, recs, len(recs), true)
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(i*7919 + i>>3)
	}
	// The schema message alone: the length of its first IPC message.
	schemaLen := 8 + int(whole[4]) | int(whole[5])<<8 | int(whole[6])<<16
	for _, tc := range []struct {
		name string
		data []byte
		want []error
		rows int
	}{
		{"empty", nil, []error{ErrUnreadable}, 0},
		{"random bytes", random, []error{ErrUnreadable}, 0},
		{"a few bytes", whole[:5], []error{ErrUnreadable}, 0},
		{"schema only", whole[:schemaLen], []error{ErrTruncated, ErrNoRows}, 0},
		{"cut in the end marker", whole[:len(whole)-3], []error{ErrTruncated}, len(recs)},
		{"whole", whole, nil, len(recs)},
	} {
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		n, err := Dump(context.Background(), &out, p, nil)
		got, rerr := ReadFile(context.Background(), p)
		for _, e := range []error{err, rerr} {
			if tc.want == nil && e != nil {
				t.Errorf("%s: %v", tc.name, e)
			}
			for _, w := range tc.want {
				if !errors.Is(e, w) {
					t.Errorf("%s: err %v, want %v", tc.name, e, w)
				}
			}
		}
		if n != tc.rows || len(got) != tc.rows || strings.Count(out.String(), "\n") != tc.rows {
			t.Errorf("%s: dumped %d rows (%d lines), read %d, want %d", tc.name, n, strings.Count(out.String(), "\n"), len(got), tc.rows)
		}
	}
}

// TestDocumentedColumns: the turn-log table of docs/layouts.md lists every
// column, in schema order, with the meaning schemas.TurnLogColumns gives it.
func TestDocumentedColumns(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "layouts.md"))
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	want.WriteString("| column | meaning |\n|---|---|\n")
	for _, c := range schemas.TurnLogColumns() {
		fmt.Fprintf(&want, "| %s | %s |\n", c.Name, strings.ReplaceAll(c.Meaning, "|", "\\|"))
	}
	if !strings.Contains(string(data), want.String()) {
		t.Fatalf("docs/layouts.md's turn-log table is not schemas.TurnLogColumns; it should read:\n%s", want.String())
	}
}

// TestGarbageLengthsAllocateNothing: the lengths in a turn log's IPC framing come
// from the file; a garbage one (a metadata or body length near 2 GiB) is refused
// against the file's size, never allocated (arrow's ipc.NewReader applies no
// limit).
func TestGarbageLengthsAllocateNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), schemas.TurnLogFile)
	whole := writeLog(t, nil, sampleRecords(2), 2, true)
	schemaLen := 8 + int(whole[4]) | int(whole[5])<<8 | int(whole[6])<<16
	// A metadata length of 2 GiB - 16 at the start; a batch whose metadata claims
	// a 1.9 GB body after a valid schema.
	hugeMeta := append([]byte{0xff, 0xff, 0xff, 0xff, 0xf0, 0xff, 0xff, 0x7f}, make([]byte, 1024)...)
	for name, data := range map[string][]byte{"metadata": hugeMeta, "legacy length": {0xf0, 0xff, 0xff, 0x7f, 1, 2, 3, 4}, "body": append(append([]byte(nil), whole[:schemaLen]...), hugeMeta...)} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadFile(context.Background(), p)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%s: read", name)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 16<<20 {
			t.Errorf("%s: %d MiB allocated reading a %d-byte file", name, d>>20, len(data))
		}
	}
}
