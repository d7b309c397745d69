package score

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/relpath"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/runread"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
)

// fixtureTruth ingests the reference-run fixture's dataset.
func fixtureTruth(t *testing.T) (string, *Truth) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ds")
	if err := ingest.Files(context.Background(), dir, filepath.Join(fixtureDir(t), "dataset.jsonl")); err != nil {
		t.Fatal(err)
	}
	truth, err := LoadTruth(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, truth
}

// writeRun writes an agentrace run directory with the records and a manifest
// naming the dataset.
func writeRun(t *testing.T, dir, dataset, hash string, recs []schemas.TurnRecord) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	f, err := runlog.Create(filepath.Join(dir, schemas.TurnLogFile), mem)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := f.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)
	m := schemas.RunManifest{SchemaVersion: schemas.Version, DatasetHash: hash,
		Config: schemas.RunConfig{Dataset: dataset, Model: "Qwen/Qwen3.6-35B-A3B", Concurrency: 8}}
	if err := runlog.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

// recordsFromReference turns the fixture's reference run into turn-log records
// telling the same story: completed turns ok, the failed one an error, the aborted
// one aborted.
func recordsFromReference(t *testing.T, truth *Truth) []schemas.TurnRecord {
	ref, err := ReadReferenceEvents(t.Context(), filepath.Join(fixtureDir(t), archive.EventsFile), truth)
	if err != nil {
		t.Fatal(err)
	}
	var recs []schemas.TurnRecord
	for _, a := range ref.Attempts {
		r := schemas.TurnRecord{SessionID: a.SessionID, ConversationID: a.ConversationID, Repeat: int32(a.Repeat),
			Turn: a.Turn, Domain: ReferenceDomain(a.ConversationID), Status: schemas.StatusError, InWindow: a.InWindow,
			UsageCompletionTokens: -1, UsagePromptTokens: -1, UsageCachedTokens: -1}
		if a.Output != nil {
			r.Status = schemas.StatusOK
			r.OutputContent, r.OutputReasoning, r.OutputToolCalls = a.Output.Content, a.Output.Reasoning, string(a.Output.ToolCalls)
			r.UsageCompletionTokens = int32(100 + 10*len(recs))
		}
		recs = append(recs, r)
	}
	recs = append(recs, schemas.TurnRecord{SessionID: "astropy__astropy-12907", ConversationID: "astropy__astropy-12907",
		Repeat: 1, Turn: 9, Status: schemas.StatusAborted, UsageCompletionTokens: -1})
	return recs
}

func TestAgentraceRunMatchesReferenceRun(t *testing.T) {
	ds, truth := fixtureTruth(t)
	run := filepath.Join(t.TempDir(), "run")
	recs := recordsFromReference(t, truth)
	writeRun(t, run, ds, truth.Hash, recs)

	ours, err := ScoreRun(context.Background(), Options{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ScoreRun(context.Background(), Options{Run: fixtureDir(t), Truth: truth})
	if err != nil {
		t.Fatal(err)
	}
	if ours.Score != ref.Score || ours.Turns != ref.Turns || !reflect.DeepEqual(ours.Domains, ref.Domains) ||
		!reflect.DeepEqual(ours.ExcludedTurns, ref.ExcludedTurns) || len(ours.PerTurn) != len(ref.PerTurn) {
		t.Fatalf("agentrace run %v %+v, reference run %v %+v", ours.Score, ours.Turns, ref.Score, ref.Turns)
	}
	for i := range ours.PerTurn {
		o, r := ours.PerTurn[i], ref.PerTurn[i]
		o.OSL, r.OSL = nil, nil
		if !reflect.DeepEqual(o, r) {
			t.Errorf("per_turn %d: %+v vs %+v", i, o, r)
		}
	}
	// Without a tokenizer the OSL comes from server usage, unofficially, over the
	// completed turns only.
	var total int64
	n := 0
	for _, r := range recs {
		if r.Status == schemas.StatusOK {
			total += int64(r.UsageCompletionTokens)
			n++
		}
	}
	if o := ours.OSL; o == nil || !o.Unofficial || o.Source != OSLSourceUsage || o.Turns != n || o.Total != total || o.Mean != float64(total)/float64(n) {
		t.Errorf("osl %+v, want %d turns, total %d", ours.OSL, n, total)
	}
	if g := ours.Verdict.Gates[1]; g.Name != GateOSL || !strings.Contains(g.Note, "unofficial") {
		t.Errorf("osl gate %+v", g)
	}
	if ours.Run.Model != "Qwen/Qwen3.6-35B-A3B" || ours.Run.Concurrency != 8 || ours.Run.Kind != KindAgentrace {
		t.Errorf("run %+v", ours.Run)
	}

	// The written files: scores.json reads back, scores.parquet has a row per turn.
	if err := WriteScores(context.Background(), run, ours); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.ReadFile[schemas.TurnScore](filepath.Join(run, schemas.ScoresTable))
	if err != nil {
		t.Fatal(err)
	}
	norm := func(ts []schemas.TurnScore) []schemas.TurnScore {
		out := append([]schemas.TurnScore(nil), ts...)
		for i := range out {
			for _, l := range []*[]string{&out[i].GTIntents, &out[i].GTActions, &out[i].ModelActions} {
				if len(*l) == 0 {
					*l = nil
				}
			}
		}
		return out
	}
	if !reflect.DeepEqual(norm(rows), norm(ours.PerTurn)) {
		t.Errorf("scores.parquet rows differ:\n%+v\n%+v", rows[0], ours.PerTurn[0])
	}

	// A run replayed from another dataset is refused.
	other := filepath.Join(t.TempDir(), "run2")
	writeRun(t, other, ds, "0123456789abcdef", recs[:1])
	if _, err := ScoreRun(context.Background(), Options{Run: other}); err == nil || !strings.Contains(err.Error(), "replayed from dataset") {
		t.Errorf("dataset mismatch: %v", err)
	}
}

func TestScoreRunSWEBenchAndVerdict(t *testing.T) {
	ds, truth := fixtureTruth(t)
	run := filepath.Join(t.TempDir(), "run")
	writeRun(t, run, ds, truth.Hash, recordsFromReference(t, truth))
	report := filepath.Join(t.TempDir(), "report.json")
	os.WriteFile(report, []byte(`{"submitted_instances":200,"resolved_instances":140,"resolved_ids":[]}`), 0o644)
	s, err := ScoreRun(context.Background(), Options{Run: run, SWEBench: report, Ruleset: "checker-2026-10-kimi-k3"})
	if err != nil {
		t.Fatal(err)
	}
	// 0.6212 >= 0.5832 passes, 0.70 < 0.935 fails, and the model is not Kimi.
	gates := map[string]bool{}
	for _, g := range s.Verdict.Gates {
		gates[g.Name] = g.Pass
	}
	if !gates[GateAccuracy] || gates[GateSWEBench] || s.Verdict.Pass || s.SWEBench.Score != 0.7 {
		t.Errorf("verdict %+v swebench %+v", s.Verdict, s.SWEBench)
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "ruleset checker-2026-10-kimi-k3 is for") {
		t.Errorf("warnings %q", s.Warnings)
	}
	var b strings.Builder
	if err := WriteVerdict(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"inline_accuracy  0.6212", ">= 0.5832", "swebench", "FAIL", "unofficial"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("verdict table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestOSLGateVectors runs the rules' OSL vectors through the whole scoring path:
// the full-run mean of server usage counts against each checker window.
func TestOSLGateVectors(t *testing.T) {
	ds, truth := fixtureTruth(t)
	base := recordsFromReference(t, truth)
	// Keep ten completed turns, so that means in tenths are integer totals.
	var ok []int
	for i, r := range base {
		if r.Status == schemas.StatusOK {
			if len(ok) == 10 {
				base[i].Status = schemas.StatusError
				continue
			}
			ok = append(ok, i)
		}
	}
	n := len(ok)
	for _, tt := range []struct {
		ruleset string
		mean10  int // the mean times 10
		pass    bool
	}{
		{"checker-2026-10-kimi-k3", 4720, true}, {"checker-2026-10-kimi-k3", 4240, false}, {"checker-2026-10-kimi-k3", 5210, false},
		{"checker-2026-10-qwen3.6", 3439, false}, {"checker-2026-10-qwen3.6", 3440, true},
	} {
		recs := append([]schemas.TurnRecord(nil), base...)
		// Usage counts summing to mean*n: n-1 turns of mean rounded down, the rest
		// on the last one.
		total := tt.mean10 * n / 10
		if tt.mean10*n%10 != 0 {
			t.Fatalf("mean %d/10 over %d turns is not an integer total", tt.mean10, n)
		}
		for k, i := range ok {
			v := total / n
			if k == n-1 {
				v = total - (n-1)*(total/n)
			}
			recs[i].UsageCompletionTokens = int32(v)
		}
		run := filepath.Join(t.TempDir(), "run")
		writeRun(t, run, ds, truth.Hash, recs)
		s, err := ScoreRun(context.Background(), Options{Run: run, Ruleset: tt.ruleset})
		if err != nil {
			t.Fatal(err)
		}
		g := s.Verdict.Gates[1]
		if g.Name != GateOSL || g.Pass != tt.pass || s.OSL.Mean != float64(tt.mean10)/10 {
			t.Errorf("%s mean %v: gate %+v", tt.ruleset, float64(tt.mean10)/10, g)
		}
	}
}

// TestScoresParquetDuckDB reads scores.parquet with DuckDB (an independent
// Parquet reader) and compares its figures with the Go values.
func TestScoresParquetDuckDB(t *testing.T) {
	js, node := testenv.JS(t)
	_, truth := fixtureTruth(t)
	s, err := ScoreRun(context.Background(), Options{Run: fixtureDir(t), Truth: truth})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), schemas.ScoresTable)
	if err := WriteTurnScores(path, s.PerTurn); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(js, "duckdb-score.mjs"), path)
	cmd.Dir = js
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("duckdb-score.mjs: %v", err)
	}
	var got struct {
		Rows, Missing, GTActions, ModelActions, NullIntents int
		ScoreSum                                            float64
		FirstGT                                             string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var want struct {
		Rows, Missing, GTActions, ModelActions, NullIntents int
		ScoreSum                                            float64
		FirstGT                                             string
	}
	want.Rows = len(s.PerTurn)
	for _, p := range s.PerTurn {
		want.ScoreSum += p.Score
		want.GTActions += len(p.GTActions)
		want.ModelActions += len(p.ModelActions)
		if p.Missing {
			want.Missing++
		}
		if p.Domain == schemas.DomainWorkflow && p.ModelIntent == nil {
			want.NullIntents++
		}
		if want.FirstGT == "" && p.Domain == schemas.DomainCoding {
			want.FirstGT = strings.Join(p.GTActions, " ")
		}
	}
	if math.Abs(got.ScoreSum-want.ScoreSum) > 1e-9 {
		t.Errorf("score sum: DuckDB %v, Go %v", got.ScoreSum, want.ScoreSum)
	}
	got.ScoreSum = want.ScoreSum
	if got != want {
		t.Errorf("DuckDB %+v\nGo     %+v", got, want)
	}
}

// TestReadTurnLogPooled: reading turn logs through the recycling buffer pool gives
// the rows runlog.ReadFile gives, run after run, in the row slice of the run
// before.
func TestReadTurnLogPooled(t *testing.T) {
	ds, truth := fixtureTruth(t)
	recs := recordsFromReference(t, truth)
	pool := runread.NewBufferPool()
	var rows []runread.TurnLogRow
	for round := 0; round < 3; round++ {
		run := filepath.Join(t.TempDir(), "run")
		// Vary the contents so that a stale reused buffer would show.
		for i := range recs {
			recs[i].OutputContent += fmt.Sprintf(" r%d", round)
		}
		writeRun(t, run, ds, truth.Hash, recs)
		want, err := runlog.ReadFile(context.Background(), filepath.Join(run, schemas.TurnLogFile))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(run, schemas.TurnLogFile)
		f, err := infile.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		tr := runread.NewTurnLogRows(false, rows)
		lr, err := runread.ScanTurnLog(context.Background(), f, nil, runread.ScanOptions{Allocator: pool, Batches: tr.Add})
		f.Close()
		got := tr.Rows
		if err == nil && lr.Truncated != nil {
			err = lr.Truncated
		}
		if err != nil {
			t.Fatal(err)
		}

		if len(got) != len(want) {
			t.Fatalf("%d rows, want %d", len(got), len(want))
		}
		for i, w := range want {
			g := got[i]
			content, reasoning, calls := w.OutputContent, w.OutputReasoning, w.OutputToolCalls
			if w.Status != schemas.StatusOK {
				content, reasoning, calls = "", "", ""
			}
			if g.Session != w.SessionID || g.Conv != w.ConversationID || g.Status != w.Status || g.Repeat != w.Repeat ||
				g.Turn != w.Turn || g.Usage != w.UsageCompletionTokens || g.InWindow != w.InWindow ||
				g.Content != content || g.Reasoning != reasoning || g.Calls != calls {
				t.Errorf("round %d row %d: %+v, want %+v", round, i, g, w)
			}
		}
		if round > 0 && &got[0] != &rows[:1][0] {
			t.Errorf("round %d: the rows are a new slice, not the one given", round)
		}
		rows = got
		tr.Release() // the next round reuses the buffers and the rows
	}
}

// A run records its dataset relative to the run folder with the absolute path beside
// it: scored from another directory, after the whole tree moved, and after the run
// alone moved, it still finds its dataset; a manifest from before (the path as given
// to replay, relative to where it ran) is found from inside the tree it sits in.
func TestMovedRunFindsItsDataset(t *testing.T) {
	ds0, truth := fixtureTruth(t)
	recs := recordsFromReference(t, truth)
	root := t.TempDir()
	tree := filepath.Join(root, "demo-out")
	if err := os.CopyFS(filepath.Join(tree, "dataset"), os.DirFS(ds0)); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	run := filepath.Join("demo-out", "runs", "c8")
	writeRun(t, run, "", truth.Hash, recs)
	m, err := runlog.ReadManifest(run)
	if err != nil {
		t.Fatal(err)
	}
	m.Config.Dataset, m.Config.DatasetAbs = relpath.Record(run, "demo-out/dataset")
	if m.Config.Dataset != "../../dataset" || m.Config.DatasetAbs != filepath.Join(tree, "dataset") {
		t.Fatalf("recorded %q, %q", m.Config.Dataset, m.Config.DatasetAbs)
	}
	if err := runlog.WriteManifest(run, m); err != nil {
		t.Fatal(err)
	}
	scoreFrom := func(what, cwd, run string) {
		t.Helper()
		t.Chdir(cwd)
		s, err := ScoreRun(context.Background(), Options{Run: run})
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if s.Score != 0.6212 {
			t.Errorf("%s: score %v, want 0.6212", what, s.Score)
		}
	}
	scoreFrom("from inside the tree, as the README does", tree, "runs/c8")
	scoreFrom("from the run folder", filepath.Join(tree, "runs", "c8"), ".")
	// the whole tree moved: found by the relative path
	moved := filepath.Join(root, "archive", "2026", "demo-out")
	os.MkdirAll(filepath.Dir(moved), 0o755)
	if err := os.Rename(tree, moved); err != nil {
		t.Fatal(err)
	}
	scoreFrom("tree moved", filepath.Join(root, "archive"), "2026/demo-out/runs/c8")
	// the run alone moved (the dataset back where it was): found by the absolute path
	if err := os.Rename(moved, tree); err != nil {
		t.Fatal(err)
	}
	alone := filepath.Join(root, "elsewhere", "c8")
	os.MkdirAll(filepath.Dir(alone), 0o755)
	if err := os.Rename(filepath.Join(tree, "runs", "c8"), alone); err != nil {
		t.Fatal(err)
	}
	scoreFrom("run moved alone", t.TempDir(), alone)
	// neither found: the error names where it looked
	os.Rename(filepath.Join(tree, "dataset"), filepath.Join(root, "gone"))
	t.Chdir(root)
	if _, err := ScoreRun(context.Background(), Options{Run: alone}); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "dataset")) {
		t.Errorf("missing dataset: %v", err)
	}
	os.Rename(filepath.Join(root, "gone"), filepath.Join(tree, "dataset"))
}

// TestScoreRunInArchive scores the reference fixture packed in a .tar.gz, named
// by the archive path and the folder inside it: the same scores as the folder.
func TestScoreRunInArchive(t *testing.T) {
	ds, truth := fixtureTruth(t)
	want, err := ScoreRun(context.Background(), Options{Run: fixtureDir(t), Truth: truth})
	if err != nil {
		t.Fatal(err)
	}
	tgz := filepath.Join(t.TempDir(), "refs.tar.gz")
	testenv.TarDir(t, fixtureDir(t), "archive/qwen-c4", tgz, nil)
	got, err := ScoreRun(context.Background(), Options{Run: tgz + "/archive/qwen-c4", Dataset: ds})
	if err != nil {
		t.Fatal(err)
	}
	if got.Score != want.Score || got.Turns != want.Turns || got.Run.Kind != KindReference || got.Run.Concurrency != 4 {
		t.Errorf("in the archive %+v %+v, in the folder %+v %+v", got.Score, got.Turns, want.Score, want.Turns)
	}
	// The whole archive holds one run: it may be named alone.
	if got, err := ScoreRun(context.Background(), Options{Run: tgz, Dataset: ds}); err != nil || got.Score != want.Score {
		t.Errorf("the archive alone: %v", err)
	}
}
