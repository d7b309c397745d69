package score

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// secondPass returns the rows of recs that have an output, as a second pass
// (repeat 2) with the given status and no output.
func secondPass(recs []schemas.TurnRecord, status string) []schemas.TurnRecord {
	var out []schemas.TurnRecord
	for _, r := range recs {
		if r.Status != schemas.StatusOK {
			continue
		}
		r.Repeat, r.SessionID = 2, datasets.SessionID(r.ConversationID, 2)
		r.Status, r.Error = status, "never sent"
		r.OutputContent, r.OutputReasoning, r.OutputToolCalls = "", "", ""
		r.IssuedNs, r.CompletedNs = 0, 0
		out = append(out, r)
	}
	return out
}

// TestNotIssuedLeftOut: turns never sent because issuing
// stopped (not_issued) are not in the inline-accuracy denominator, as the
// reference publishes no event for them; turns skipped after a failure
// (aborted) are, scoring 0, as the reference's register_skipped publishes them
// issued. A version 1 log (before not_issued existed) is refused, naming its
// version.
func TestNotIssuedLeftOut(t *testing.T) {
	ds, truth := fixtureTruth(t)
	base := recordsFromReference(t, truth)
	score := func(recs []schemas.TurnRecord) *schemas.Scores {
		t.Helper()
		run := filepath.Join(t.TempDir(), "run")
		writeRun(t, run, ds, truth.Hash, recs)
		s, err := ScoreRun(context.Background(), Options{Run: run})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := score(base)
	notIssued := secondPass(base, schemas.StatusNotIssued)
	got := score(append(append([]schemas.TurnRecord(nil), base...), notIssued...))
	if got.Turns != want.Turns || got.Score != want.Score {
		t.Fatalf("not_issued rows changed the score: %+v %v, want %+v %v", got.Turns, got.Score, want.Turns, want.Score)
	}
	if !strings.Contains(strings.Join(got.Warnings, "\n"), "never issued (not_issued") {
		t.Fatalf("no warning about the not_issued rows: %q", got.Warnings)
	}
	aborted := score(append(append([]schemas.TurnRecord(nil), base...), secondPass(base, schemas.StatusAborted)...))
	if aborted.Turns.Issued <= want.Turns.Issued || aborted.Turns.Missing <= want.Turns.Missing || aborted.Score >= want.Score {
		t.Fatalf("aborted rows not counted: %+v %v, without them %+v %v", aborted.Turns, aborted.Score, want.Turns, want.Score)
	}

	// A version 1 log (written before not_issued existed) says "not issued" in
	// the error of an aborted row.
	run := filepath.Join(t.TempDir(), "v1run")
	writeRun(t, run, ds, truth.Hash, base)
	v1 := append(append([]schemas.TurnRecord(nil), base...), secondPass(base, schemas.StatusAborted)...)
	for i := len(base); i < len(v1); i++ {
		v1[i].Error = "not issued: the run was interrupted"
	}
	writeV1Log(t, filepath.Join(run, schemas.TurnLogFile), v1)
	if _, err := ScoreRun(context.Background(), Options{Run: run}); !errors.Is(err, runlog.ErrVersion) || !strings.Contains(err.Error(), "version 1") {
		t.Fatalf("version 1 log: %v, want it refused naming its version", err)
	}
}

// writeV1Log writes recs as a version 1 turn log: no turn_log_version key, and
// only the columns scoring reads that version 1 had.
func writeV1Log(t *testing.T, path string, recs []schemas.TurnRecord) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "session_id", Type: arrow.BinaryTypes.String},
		{Name: "conversation_id", Type: arrow.BinaryTypes.String},
		{Name: "repeat", Type: arrow.PrimitiveTypes.Int32},
		{Name: "turn", Type: arrow.PrimitiveTypes.Int32},
		{Name: "status", Type: arrow.BinaryTypes.String},
		{Name: "error", Type: arrow.BinaryTypes.String},
		{Name: "in_window", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "output_content", Type: arrow.BinaryTypes.String},
		{Name: "output_reasoning", Type: arrow.BinaryTypes.String},
		{Name: "output_tool_calls", Type: arrow.BinaryTypes.String},
		{Name: "usage_completion_tokens", Type: arrow.PrimitiveTypes.Int32},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, r := range recs {
		b.Field(0).(*array.StringBuilder).Append(r.SessionID)
		b.Field(1).(*array.StringBuilder).Append(r.ConversationID)
		b.Field(2).(*array.Int32Builder).Append(r.Repeat)
		b.Field(3).(*array.Int32Builder).Append(r.Turn)
		b.Field(4).(*array.StringBuilder).Append(r.Status)
		b.Field(5).(*array.StringBuilder).Append(r.Error)
		b.Field(6).(*array.BooleanBuilder).Append(r.InWindow)
		b.Field(7).(*array.StringBuilder).Append(r.OutputContent)
		b.Field(8).(*array.StringBuilder).Append(r.OutputReasoning)
		b.Field(9).(*array.StringBuilder).Append(r.OutputToolCalls)
		b.Field(10).(*array.Int32Builder).Append(r.UsageCompletionTokens)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := ipc.NewWriter(f, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLogManifestDisagree: a run whose manifest says it ended
// with rows its log does not hold (the log lost, cut, or rewritten) is refused
// with a clear error, not scored as a failing run.
func TestLogManifestDisagree(t *testing.T) {
	ds, truth := fixtureTruth(t)
	recs := recordsFromReference(t, truth)
	run := filepath.Join(t.TempDir(), "run")
	writeRun(t, run, ds, truth.Hash, recs)
	m, err := runlog.ReadManifest(run)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, r := range recs {
		counts[r.Status]++
	}
	m.State, m.Counts, m.TurnLogVersion = schemas.RunComplete, counts, schemas.TurnLogVersion
	if err := runlog.WriteManifest(run, m); err != nil {
		t.Fatal(err)
	}
	if _, err := ScoreRun(context.Background(), Options{Run: run}); err != nil {
		t.Fatalf("agreeing run refused: %v", err)
	}
	// The log cut short (rows lost) while the manifest says the run ended.
	p := filepath.Join(run, schemas.TurnLogFile)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, st.Size()-100); err != nil {
		t.Fatal(err)
	}
	_, err = ScoreRun(context.Background(), Options{Run: run})
	if err == nil || !strings.Contains(err.Error(), "turn log and manifest disagree") || !strings.Contains(err.Error(), "the manifest (state complete) counts rows") {
		t.Fatalf("lost log: %v", err)
	}
}
