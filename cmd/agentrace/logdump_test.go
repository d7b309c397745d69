package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/scoretest"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// TestLogDumpOfACutLog: `log dump` of a log cut by kill -9
// prints the readable rows, warns and exits 0; it fails only when no row could be
// read.
func TestLogDumpOfACutLog(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, schemas.TurnLogFile)
	var recs []schemas.TurnRecord
	for i := range 5 {
		recs = append(recs, schemas.TurnRecord{SessionID: "s", ConversationID: "c", Turn: int32(i + 1), Status: schemas.StatusOK})
	}
	scoretest.WriteLog(t, p, recs, 3)
	whole, _ := os.ReadFile(p)
	dump := func(data []byte) (string, string, error) {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errw bytes.Buffer
		a := app()
		a.Writer, a.ErrWriter = &out, &errw
		err := a.Run(context.Background(), []string{"agentrace", "log", "dump", dir, "--columns", "turn"})
		return out.String(), errw.String(), err
	}
	out, warn, err := dump(whole)
	if err != nil || strings.Count(out, "\n") != 5 || warn != "" {
		t.Fatalf("whole log: %d rows, warning %q, %v", strings.Count(out, "\n"), warn, err)
	}
	// Cut in the last batch: the first batch's 3 rows, a warning, exit 0.
	out, warn, err = dump(whole[:len(whole)-40])
	if err != nil || strings.Count(out, "\n") != 3 || !strings.Contains(warn, "warning") || !strings.Contains(warn, "3 rows") {
		t.Fatalf("cut log: %d rows, warning %q, err %v", strings.Count(out, "\n"), warn, err)
	}
	// Nothing readable: an error.
	for name, data := range map[string][]byte{"empty": nil, "garbage": bytes.Repeat([]byte("not arrow "), 100), "header": whole[:9]} {
		out, _, err = dump(data)
		if err == nil || out != "" {
			t.Errorf("%s log: output %q, err %v; want an error", name, out, err)
		}
	}
}

// log dump takes a sweep folder as log export does: each run's rows in turn, each
// object led by its run folder.
func TestLogDumpOfASweep(t *testing.T) {
	sweep := t.TempDir()
	for _, c := range []int{1, 8} {
		writeRunDir(t, filepath.Join(sweep, fmt.Sprintf("c%d", c)), c)
	}
	out, err := runApp(t, "log", "dump", sweep, "--columns", "turn,status")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 3 rows of each of 2 runs:\n%s", len(lines), out)
	}
	for i, l := range lines {
		var row struct {
			Run    string `json:"run"`
			Turn   int    `json:"turn"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatalf("line %d %q: %v", i+1, l, err)
		}
		wantRun := filepath.ToSlash(filepath.Join(sweep, []string{"c1", "c8"}[i/3]))
		if row.Run != wantRun || row.Turn != 2*(i%3)+1 || row.Status != "ok" || !strings.HasPrefix(l, `{"run":`) {
			t.Errorf("line %d: %q, want run %s turn %d", i+1, l, wantRun, 2*(i%3)+1)
		}
	}
}

// log dump --columns takes every column of the run's analysis table
// (turns.parquet) too, error_kind among them, as well as the turn log's, one row
// per turn in the log's order.
func TestLogDumpTableColumns(t *testing.T) {
	_, _, run := readersFixture(t)
	logOut, err := runApp(t, "log", "dump", run, "--columns", "session_id,turn,status")
	if err != nil {
		t.Fatal(err)
	}
	logRows := strings.Split(strings.TrimSpace(logOut), "\n")
	pf, err := file.OpenParquetFile(filepath.Join(run, runlog.TableFile), false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range schema.Fields() {
		out, err := runApp(t, "log", "dump", run, "--columns", "session_id,turn,status,"+fd.Name)
		if err != nil {
			t.Errorf("--columns ...,%s: %v", fd.Name, err)
			continue
		}
		rows := strings.Split(strings.TrimSpace(out), "\n")
		if len(rows) != len(logRows) {
			t.Errorf("--columns ...,%s: %d rows, the log %d", fd.Name, len(rows), len(logRows))
			continue
		}
		for i, l := range rows {
			var row map[string]any
			if err := json.Unmarshal([]byte(l), &row); err != nil {
				t.Fatalf("--columns ...,%s line %d %q: %v", fd.Name, i+1, l, err)
			}
			if _, ok := row[fd.Name]; !ok || !strings.HasPrefix(l, logRows[i][:len(logRows[i])-1]) {
				t.Errorf("--columns ...,%s line %d %q, the log's %q", fd.Name, i+1, l, logRows[i])
				break
			}
		}
	}
	if _, err := runApp(t, "log", "dump", run, "--columns", "no_such_column"); err == nil || !strings.Contains(err.Error(), "unknown column no_such_column") {
		t.Errorf("an unknown column: %v", err)
	}
}
