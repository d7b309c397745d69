package runlog

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// writeTestRun writes a run folder with recs and a manifest.
func writeTestRun(t *testing.T, dir string, recs []schemas.TurnRecord, m schemas.RunManifest) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Create(filepath.Join(dir, schemas.TurnLogFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := f.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
		if i == len(recs)/2 {
			if err := f.Flush(); err != nil { // two batches
				t.Fatal(err)
			}
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

// readTable reads a Parquet file into rows of name -> value (nil for null).
func readTable(t *testing.T, path string) (cols []string, rows []map[string]any, pf *parquet.File) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, _ := f.Stat()
	pf, err = parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pf.Schema().Fields() {
		cols = append(cols, c.Name())
	}
	r := parquet.NewGenericReader[any](f, pf.Schema())
	defer r.Close()
	buf := make([]parquet.Row, 64)
	for {
		n, err := r.ReadRows(buf)
		for _, row := range buf[:n] {
			m := map[string]any{}
			for _, v := range row {
				name := cols[v.Column()]
				if v.IsNull() {
					if _, ok := m[name]; !ok {
						m[name] = nil
					}
					continue
				}
				var x any
				switch v.Kind() {
				case parquet.ByteArray:
					x = string(v.ByteArray())
				case parquet.Int32:
					x = v.Int32()
				case parquet.Int64:
					x = v.Int64()
				case parquet.Double:
					x = v.Double()
				case parquet.Boolean:
					x = v.Boolean()
				}
				if name == "chunk_times" {
					l, _ := m[name].([]int64)
					m[name] = append(l, x.(int64))
					continue
				}
				m[name] = x
			}
			rows = append(rows, m)
		}
		if err != nil {
			break
		}
	}
	return cols, rows, pf
}

func TestWriteTable(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "runs", "c4")
	recs := sampleRecords(12)
	recs[1].HTTPStatus, recs[1].Error = 503, "HTTP 503: overloaded"
	recs[2].FirstTokenNs = 0 // a timeout without a first token
	m := schemas.RunManifest{SchemaVersion: schemas.Version, StartedUnixNs: 1_700_000_000_000_000_000,
		Config: schemas.RunConfig{Concurrency: 4}}
	writeTestRun(t, run, recs, m)
	expected := func(conv string, turn int32) (int32, bool) { return turn + 1, conv == "conv1" }
	out := filepath.Join(root, "turns.parquet")
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	info, err := WriteTable(context.Background(), out, []TableRun{{Dir: run, Expected: expected}}, TableOptions{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	if info.Rows != len(recs) || len(info.Warnings) != 0 {
		t.Fatalf("info %+v", info)
	}
	cols, rows, pf := readTable(t, out)
	// the log's columns in their order, with the table's additions at their places
	want := []string{"concurrency", "session_id", "conversation_id", "repeat", "trajectory", "client_turn", "expected_turn",
		"client_index", "domain", "status", "issued", "error", "error_kind", "http_status", "warnings",
		"scheduled_ns", "scheduled_at", "issued_ns", "issued_at", "headers_ns", "headers_at", "first_token_ns", "first_token_at",
		"completed_ns", "completed_at", "lag_ms", "ttft_ms", "latency_ms", "decode_ms", "delay_ns", "delay_ms", "chunk_times"}
	if !slices.Equal(cols[:len(want)], want) {
		t.Errorf("columns\n%v\nwant a prefix\n%v", cols, want)
	}
	if slices.Contains(cols, "turn") {
		t.Error("the ambiguous turn column is still there")
	}
	if len(rows) != len(recs) {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		rec := recs[i]
		check := func(col string, got, want any) {
			t.Helper()
			if got != want {
				t.Errorf("row %d %s = %v (%T), want %v (%T)", i, col, got, got, want, want)
			}
		}
		check("concurrency", r["concurrency"], int32(4))
		check("client_turn", r["client_turn"], rec.Turn)
		check("expected_turn", r["expected_turn"], rec.Turn+1)
		check("status", r["status"], rec.Status)
		check("issued", r["issued"], schemas.Issued(rec.Status) && rec.IssuedNs > 0)
		check("issued_at", r["issued_at"], m.StartedUnixNs+rec.IssuedNs)
		check("latency_ms", r["latency_ms"], float64(rec.CompletedNs-rec.IssuedNs)/1e6)
		check("lag_ms", r["lag_ms"], float64(rec.IssuedNs-rec.ScheduledNs)/1e6)
		check("delay_ms", r["delay_ms"], float64(rec.DelayNs)/1e6)
		check("output_content", r["output_content"], rec.OutputContent)
		if rec.FirstTokenNs == 0 {
			check("ttft_ms", r["ttft_ms"], nil)
			check("first_token_at", r["first_token_at"], nil)
		} else {
			check("ttft_ms", r["ttft_ms"], float64(rec.FirstTokenNs-rec.IssuedNs)/1e6)
		}
		wantKind := map[string]any{schemas.StatusOK: nil, schemas.StatusTimeout: ErrTimeout, schemas.StatusAborted: ErrAborted,
			schemas.StatusCancelled: ErrCancelled, schemas.StatusNotIssued: ErrNotIssued}[rec.Status]
		if rec.Status == schemas.StatusError {
			wantKind = ErrHTTP5xx
			if rec.HTTPStatus < 500 {
				wantKind = ErrHTTPOther // 2xx other than 200
			}
		}
		check("error_kind", r["error_kind"], wantKind)
		if len(rec.ChunkTimesNs) > 0 {
			if got, _ := r["chunk_times"].([]int64); !slices.Equal(got, rec.ChunkTimesNs) {
				t.Errorf("row %d chunk_times %v, want %v", i, r["chunk_times"], rec.ChunkTimesNs)
			}
		} else if r["chunk_times"] != nil {
			t.Errorf("row %d chunk_times %v, want empty", i, r["chunk_times"])
		}
	}
	// dictionary encoding where promised, the kind marked, the Arrow schema stored
	for _, rg := range pf.RowGroups() {
		for k, cc := range rg.ColumnChunks() {
			name := cols[k]
			dict := false
			for _, e := range pf.Metadata().RowGroups[0].Columns[k].MetaData.Encoding {
				if e.String() == "RLE_DICTIONARY" {
					dict = true
				}
			}
			if dictColumns[name] != dict && name != "run" && name != "system" {
				t.Errorf("column %s: dictionary-encoded %t", name, dict)
			}
			_ = cc
		}
	}
	if v, _ := pf.Lookup(outguard.ParquetKey); v != TableKind {
		t.Errorf("kind %q", v)
	}
	raw, _ := pf.Lookup("ARROW:schema")
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := ipc.NewReader(bytes.NewReader(append(b, eos...)))
	if err != nil {
		t.Fatalf("stored Arrow schema: %v", err)
	}
	as := rd.Schema()
	rd.Release()
	if as.NumFields() != len(cols) {
		t.Fatalf("Arrow schema has %d fields, the table %d", as.NumFields(), len(cols))
	}
	for i, f := range as.Fields() {
		if f.Name != cols[i] {
			t.Errorf("Arrow field %d %q, column %q", i, f.Name, cols[i])
		}
		if dictColumns[f.Name] && f.Type.ID() != arrow.DICTIONARY {
			t.Errorf("Arrow field %s is %s", f.Name, f.Type)
		}
	}
	if f, _ := as.FieldsByName("issued_at"); len(f) != 1 || !arrow.TypeEqual(f[0].Type, timestampType) {
		t.Errorf("issued_at is %v", f)
	}
	_ = array.NewInt32Builder
}

// Two runs in one table, one log with a column this version does not know (as a
// newer writer's): the union of their columns, the missing ones null; expected_turn from the run's dataset, null with a warning when
// the dataset is gone.
func TestWriteTableRuns(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "c1"), filepath.Join(root, "c2")
	recs := sampleRecords(5)
	writeTestRun(t, a, recs, schemas.RunManifest{Config: schemas.RunConfig{Concurrency: 1, Dataset: "../no-such-dataset"}})
	// run b: a log written with an extra column
	if err := os.MkdirAll(b, 0o755); err != nil {
		t.Fatal(err)
	}
	fields := append(slices.Clone(schemas.TurnLogSchema().Fields()), arrow.Field{Name: "extra_note", Type: arrow.BinaryTypes.String})
	md := schemas.TurnLogSchema().Metadata()
	sc := arrow.NewSchema(fields, &md)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	for i, f := range sc.Fields() {
		fb := bld.Field(i)
		switch f.Name {
		case "status":
			fb.(*array.StringBuilder).Append("error")
		case "error":
			fb.(*array.StringBuilder).Append("read stream: connection reset by peer")
		case "extra_note":
			fb.(*array.StringBuilder).Append("hello")
		default:
			fb.AppendEmptyValue()
		}
	}
	rec := bld.NewRecordBatch()
	os.WriteFile(filepath.Join(b, schemas.TurnLogFile), ipcStream(t, rec), 0o644)
	rec.Release()
	bld.Release()
	WriteManifest(b, schemas.RunManifest{Config: schemas.RunConfig{Concurrency: 2}})

	out := filepath.Join(root, "sweep.parquet")
	info, err := WriteTable(context.Background(), out, []TableRun{{Dir: a, Run: "c1", System: "s"}, {Dir: b, Run: "c2", System: "s"}}, TableOptions{RunColumns: true})
	if err != nil {
		t.Fatal(err)
	}
	if info.Rows != 6 || len(info.Warnings) != 2 || !strings.Contains(info.Warnings[0], "expected_turn left null") {
		t.Errorf("info %+v", info)
	}
	cols, rows, _ := readTable(t, out)
	if cols[0] != "concurrency" || cols[1] != "run" || cols[2] != "system" || cols[len(cols)-1] != "extra_note" {
		t.Errorf("columns %v", cols)
	}
	if rows[0]["extra_note"] != nil || rows[5]["extra_note"] != "hello" || rows[5]["run"] != "c2" || rows[5]["concurrency"] != int32(2) {
		t.Errorf("rows %v / %v", rows[0], rows[5])
	}
	if rows[0]["expected_turn"] != nil || rows[5]["error_kind"] != ErrStreamCut {
		t.Errorf("expected_turn %v, error_kind %v", rows[0]["expected_turn"], rows[5]["error_kind"])
	}
}

func TestErrorKind(t *testing.T) {
	tests := []struct {
		status string
		http   int32
		err    string
		want   string
	}{
		{"ok", 200, "", ""},
		{"error", 429, "HTTP 429: slow down", ErrHTTP429},
		{"error", 404, "HTTP 404: no model", ErrHTTP4xx},
		{"error", 502, "HTTP 502: bad gateway", ErrHTTP5xx},
		{"error", 200, "server error in stream: boom", ErrServerError},
		{"error", 200, "malformed response: chunk \"x\": invalid JSON", ErrMalformed},
		{"error", 200, "frame too large: an event of more than 8 bytes (--max-output-bytes sets the limit)", ErrOversized},
		{"error", 200, "stream ended before a finish reason or [DONE]: unexpected EOF", ErrStreamCut},
		{"error", 0, `Post "http://x/v1/chat/completions": dial tcp 127.0.0.1:1: connect: connection refused`, ErrConnection},
		{"error", 0, "something else", ErrOther},
		{"timeout", 200, "turn timeout 1s", ErrTimeout},
		{"cancelled", 0, "cancelled: grace", ErrCancelled},
		{"aborted", 0, "turn 3 failed", ErrAborted},
		{"not_issued", 0, "not issued", ErrNotIssued},
	}
	for _, tt := range tests {
		if got := ErrorKind(tt.status, tt.http, tt.err); got != tt.want {
			t.Errorf("ErrorKind(%q, %d, %q) = %q, want %q", tt.status, tt.http, tt.err, got, tt.want)
		}
	}
}

// A table of more rows than a row group holds: two row groups, the rows in the
// log's order (an Extra column numbers them), every data page of a
// dictionary-encoded column dictionary-encoded in each row group (one dictionary
// per column chunk), and the checked allocator back to 0.
func TestWriteTableRowGroups(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	n := tableRowGroupRows + 1000
	recs := make([]schemas.TurnRecord, n)
	ordinals := make([]float64, n)
	for i := range recs {
		recs[i] = schemas.TurnRecord{SessionID: fmt.Sprintf("s%d", i%50), ConversationID: "c", Turn: int32(i), Status: schemas.StatusOK,
			IssuedNs: int64(i + 1), CompletedNs: int64(i + 2)}
		ordinals[i] = float64(i)
	}
	writeTestRun(t, run, recs, schemas.RunManifest{Config: schemas.RunConfig{Concurrency: 2}})
	out := filepath.Join(root, "turns.parquet")
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	info, err := WriteTable(context.Background(), out, []TableRun{{Dir: run, Expected: func(string, int32) (int32, bool) { return 0, false },
		Extra: []ExtraColumn{{Name: "ordinal", Values: ordinals}}}}, TableOptions{Mem: mem})
	if err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	if info.Rows != n {
		t.Fatalf("%d rows, want %d", info.Rows, n)
	}
	type row struct {
		SessionID  *string  `parquet:"session_id,optional"`
		ClientTurn *int32   `parquet:"client_turn,optional"`
		Ordinal    *float64 `parquet:"ordinal,optional"`
	}
	rows, err := parquet.ReadFile[row](out)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if r.SessionID == nil || *r.SessionID != recs[i].SessionID || r.ClientTurn == nil || *r.ClientTurn != int32(i) || r.Ordinal == nil || *r.Ordinal != float64(i) {
			t.Fatalf("row %d: %+v", i, r)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	groups := pf.Metadata().RowGroups
	if len(groups) != 2 || groups[0].NumRows != tableRowGroupRows {
		t.Fatalf("%d row groups, the first of %d rows", len(groups), groups[0].NumRows)
	}
	for g, rg := range groups {
		for _, c := range rg.Columns {
			if !dictColumns[c.MetaData.PathInSchema[0]] {
				continue
			}
			pages := 0
			for _, s := range c.MetaData.EncodingStats {
				if s.PageType == format.DataPage || s.PageType == format.DataPageV2 {
					pages++
					if s.Encoding != format.RLEDictionary {
						t.Errorf("row group %d column %s: a data page in %s", g, c.MetaData.PathInSchema[0], s.Encoding)
					}
				}
			}
			if pages == 0 {
				t.Errorf("row group %d column %s: no data page in its encoding stats", g, c.MetaData.PathInSchema[0])
			}
		}
	}
}

// Runs written from goroutines in any order: a run's row groups, and its
// close, wait for the runs before it (an empty run's too), so the table is
// WriteTable's byte for byte; a run that fails releases the run waiting for
// it, and no table is left.
func TestTableWriterRunsInTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		root := t.TempDir()
		dirs := []string{filepath.Join(root, "c1"), filepath.Join(root, "c2"), filepath.Join(root, "c3")}
		for i, n := range []int{5, 3, 0} {
			writeTestRun(t, dirs[i], sampleRecords(n), schemas.RunManifest{Config: schemas.RunConfig{Concurrency: i + 1}})
		}
		none := func(string, int32) (int32, bool) { return 0, false }
		runs := func() []TableRun {
			var rs []TableRun
			for _, d := range dirs {
				rs = append(rs, TableRun{Dir: d, Run: filepath.Base(d), System: "s", Expected: none})
			}
			return rs
		}
		want := filepath.Join(root, "want.parquet")
		if _, err := WriteTable(ctx, want, runs(), TableOptions{RunColumns: true}); err != nil {
			t.Fatal(err)
		}
		feed := func(rt *RunTable, dir string) error {
			f, err := os.Open(filepath.Join(dir, schemas.TurnLogFile))
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := ScanRun(ctx, f, SizeOf(f), nil, memory.DefaultAllocator, func(b arrow.RecordBatch) error { return rt.Write(b) }); err != nil {
				return err
			}
			return rt.Close("")
		}

		got := filepath.Join(root, "got.parquet")
		tw, err := NewTableWriter(ctx, got, runs(), TableOptions{RunColumns: true})
		if err != nil {
			t.Fatal(err)
		}
		later := make(chan error, 2)
		for i := 2; i >= 1; i-- {
			go func() { later <- feed(tw.Run(i), dirs[i]) }()
		}
		synctest.Wait()
		select {
		case err := <-later:
			t.Fatalf("a run was closed before the first: %v", err)
		default:
		}
		if err := feed(tw.Run(0), dirs[0]); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := <-later; err != nil {
				t.Fatal(err)
			}
		}
		info, err := tw.Close()
		if err != nil || info.Rows != 8 {
			t.Fatalf("info %+v, %v", info, err)
		}
		wb, _ := os.ReadFile(want)
		gb, _ := os.ReadFile(got)
		if !bytes.Equal(wb, gb) {
			t.Errorf("the table written in turn (%d bytes) differs from WriteTable's (%d bytes)", len(gb), len(wb))
		}

		failed := filepath.Join(root, "failed.parquet")
		if tw, err = NewTableWriter(ctx, failed, runs(), TableOptions{RunColumns: true}); err != nil {
			t.Fatal(err)
		}
		go func() { later <- feed(tw.Run(1), dirs[1]) }()
		synctest.Wait()
		tw.Fail(errors.New("run c1: unreadable"))
		if err := <-later; !errors.Is(err, ErrTableStopped) {
			t.Errorf("the run waiting for a failed one got %v", err)
		}
		if _, err := tw.Close(); err == nil || !strings.Contains(err.Error(), "unreadable") {
			t.Errorf("a failed table was closed with %v", err)
		}
		if left, _ := filepath.Glob(filepath.Join(root, "*failed.parquet*")); len(left) > 0 {
			t.Errorf("a failed table left %v", left)
		}
	})
}
