package score

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/runread"
)

// readCount counts, per file of a source, how often it was opened and how many
// bytes were read from it (archive.Limits.Opened).
type readCount struct {
	mu    sync.Mutex
	opens map[string]int
	bytes map[string]int64
}

func newReadCount() *readCount { return &readCount{opens: map[string]int{}, bytes: map[string]int64{}} }

func (c *readCount) opened(name string, rc io.ReadCloser) io.ReadCloser {
	c.mu.Lock()
	c.opens[name]++
	c.mu.Unlock()
	return &countedReader{rc, name, c}
}

func (c *readCount) read(name string) (opens int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opens[name], c.bytes[name]
}

type countedReader struct {
	io.ReadCloser
	name string
	c    *readCount
}

func (r *countedReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.c.mu.Lock()
	r.c.bytes[r.name] += int64(n)
	r.c.mu.Unlock()
	return n, err
}

// notAtHand is a dataset that cannot be read.
func notAtHand(context.Context, string) (*Truth, error) {
	return nil, errors.New("dataset not at hand")
}

// openCounted opens the one run p names with its reads counted; a point of
// the submission tree fixture is named by its folder under the tree (point).
func openCounted(t *testing.T, p, point string) (*archive.Run, *readCount) {
	t.Helper()
	c := newReadCount()
	lim := archive.Limits{Opened: c.opened}
	if point == "" {
		run, err := archive.OpenRun(p, lim)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { run.Source.Close() })
		return run, c
	}
	src, err := archive.Open(p, lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	for _, r := range archive.Find(src) {
		if r.Dir == point {
			return r, c
		}
	}
	t.Fatalf("%s: no run %s", p, point)
	return nil, nil
}

// TestEvaluateReadsTheLogOnce: one evaluation with a fold attached opens a run's
// log once and reads it once (at most 5% over its size), for an agentrace run
// (turns.arrows, scored, then judged on its recorded scores.json), a reference
// run folder (events.jsonl) and a submission point
// (mlperf_endpoints_log_detail.json); the fold gets the records a scan of its
// own gives, the scores are those of an evaluation without a fold, and the
// basis is said. A point without an event log is judged on its published figures.
func TestEvaluateReadsTheLogOnce(t *testing.T) {
	ds, truth := fixtureTruth(t)
	agent := filepath.Join(t.TempDir(), "run")
	writeRun(t, agent, ds, truth.Hash, recordsFromReference(t, truth))
	repo := testenv.RepoRoot(t)
	tree := filepath.Join(repo, "testdata", "submission-tree")
	const curve = "h200-sim/qwen3_6-35b-a3b/"
	ctx := context.Background()

	for _, tc := range []struct {
		name, run, point string
		o                EvalOptions
		basis            Basis
		log              string
	}{
		{"agentrace run", agent, "", EvalOptions{}, BasisEvents, schemas.TurnLogFile},
		{"reference run folder", filepath.Join(repo, "testdata", "reference-runfolder"), "", EvalOptions{Truth: truth}, BasisEvents, archive.EventsFile},
		{"submission point", tree, curve + "r64", EvalOptions{Truth: truth}, BasisEvents, "mlperf_endpoints_log_detail.json"},
		{"submission point, published only", tree, curve + "r64", EvalOptions{PublishedOnly: true}, BasisPublished, "mlperf_endpoints_log_detail.json"},
		{"submission point, no dataset at hand", tree, curve + "r64", EvalOptions{OrPublished: true, TruthOf: notAtHand}, BasisPublished, "mlperf_endpoints_log_detail.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, c := openCounted(t, tc.run, tc.point)
			var folded []schemas.TurnRecord
			o := tc.o
			o.Fold = func(rec *schemas.TurnRecord, _ runread.TurnExtra) error {
				r := *rec
				r.ChunkTimesNs = slices.Clone(r.ChunkTimesNs)
				folded = append(folded, r)
				return nil
			}
			ev, err := Evaluate(ctx, run, o)
			if err != nil || ev.ScoreErr != nil {
				t.Fatalf("%v %v", err, ev.ScoreErr)
			}
			if ev.Basis != tc.basis || ev.BasisWhy == "" || ev.Scores == nil || len(folded) == 0 || ev.Scan.File != tc.log {
				t.Fatalf("basis %q (%s), scores %v, %d records folded, log %q", ev.Basis, ev.BasisWhy, ev.Scores != nil, len(folded), ev.Scan.File)
			}
			name := path.Join(run.Dir, tc.log)
			size := run.Source.Size(name)
			opens, n := c.read(name)
			t.Logf("%s: %s opened %d times, %d bytes read of %d (%.3fx)", tc.name, tc.log, opens, n, size, float64(n)/float64(size))
			if opens != 1 || n < size || float64(n) > 1.05*float64(size) {
				t.Errorf("%s opened %d times, %d bytes read, size %d: want one read of the whole log", tc.log, opens, n, size)
			}
			// The fold got what a scan of its own gives, and the scores are those
			// of an evaluation without a fold.
			var alone []schemas.TurnRecord
			if _, err := runread.ScanTurns(ctx, run, func(rec *schemas.TurnRecord) error {
				r := *rec
				r.ChunkTimesNs = slices.Clone(r.ChunkTimesNs)
				alone = append(alone, r)
				return nil
			}); err != nil || !reflect.DeepEqual(folded, alone) {
				t.Errorf("folded %d records, a scan alone gives %d (%v)", len(folded), len(alone), err)
			}
			o.Fold = nil
			if bare, err := Evaluate(ctx, run, o); err != nil || !reflect.DeepEqual(bare.Scores, ev.Scores) {
				t.Errorf("scores with a fold %+v, without %+v (%v)", ev.Scores, bare.Scores, err)
			}
		})
	}

	// Its scores.json written, the agentrace run is judged on it: the log is
	// still read once (for the fold, and to tell that the scores are of it).
	if _, err := ScoreAndWrite(ctx, Options{Run: agent}); err != nil {
		t.Fatal(err)
	}
	run, c := openCounted(t, agent, "")
	ev, err := Evaluate(ctx, run, EvalOptions{Recorded: true, Fold: func(*schemas.TurnRecord, runread.TurnExtra) error { return nil }})
	if err != nil || ev.Basis != BasisRecorded || ev.Scores == nil {
		t.Fatalf("recorded: %+v %v", ev, err)
	}
	name := path.Join(run.Dir, schemas.TurnLogFile)
	if opens, n := c.read(name); opens != 1 || n != run.Source.Size(name) {
		t.Errorf("recorded: the turn log opened %d times, %d bytes read of %d", opens, n, run.Source.Size(name))
	}

	// A scores.json of another state of the log is never used: the run is scored
	// again from the same single read.
	scoresPath := filepath.Join(agent, schemas.ScoresFile)
	data, err := os.ReadFile(scoresPath)
	if err != nil {
		t.Fatal(err)
	}
	var sc schemas.Scores
	if err := json.Unmarshal(data, &sc); err != nil || sc.Run.TurnLog == nil {
		t.Fatalf("scores.json: %v", err)
	}
	data = bytes.ReplaceAll(data, []byte(sc.Run.TurnLog.SHA256), []byte(strings.Repeat("0", 64)))
	if err := os.WriteFile(scoresPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	run, c = openCounted(t, agent, "")
	ev, err = Evaluate(ctx, run, EvalOptions{Recorded: true, Fold: func(*schemas.TurnRecord, runread.TurnExtra) error { return nil }})
	if err != nil || ev.Basis != BasisEvents || !strings.Contains(ev.BasisWhy, "scored again") || ev.Scores == nil || ev.Scores.Run.TurnLog.SHA256 != sc.Run.TurnLog.SHA256 {
		t.Fatalf("stale scores.json: %+v %v", ev, err)
	}
	if opens, n := c.read(name); opens != 1 || n != run.Source.Size(name) {
		t.Errorf("stale scores.json: the turn log opened %d times, %d bytes read of %d", opens, n, run.Source.Size(name))
	}

	// A point that ships no event log (r200: a "{}" detail log): judged on its
	// published figures, its log read for the fold only.
	run, _ = openCounted(t, tree, curve+"r200")
	ev, err = Evaluate(ctx, run, EvalOptions{Truth: truth, Fold: func(*schemas.TurnRecord, runread.TurnExtra) error { return nil }})
	if err != nil || ev.Basis != BasisPublished || ev.BasisWhy != "the point ships no event log" || ev.Scores == nil {
		t.Fatalf("no event log: %+v %v", ev, err)
	}
}

// TestRescoreReadsEachLogOnce: rescoring a submission tree reads each point's
// event log once, whole.
func TestRescoreReadsEachLogOnce(t *testing.T) {
	repo := testenv.RepoRoot(t)
	tree := filepath.Join(repo, "testdata", "submission-tree")
	c := newReadCount()
	rows, err := Rescore(context.Background(), RescoreOptions{Archives: []string{tree},
		Dataset: filepath.Join(repo, "testdata", "reference-run", "dataset.jsonl"), Jobs: 2, Opened: c.opened})
	if err != nil {
		t.Fatal(err)
	}
	src, err := archive.Open(tree, archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	logs := 0
	for i, run := range archive.Find(src) {
		if rows[i].Error != "" {
			t.Errorf("%s: %s", run.Label, rows[i].Error)
		}
		name, _ := run.EventsName()
		if name == "" {
			continue
		}
		logs++
		name = path.Join(run.Dir, name)
		if opens, n := c.read(name); opens != 1 || n != src.Size(name) {
			t.Errorf("%s: opened %d times, %d bytes read of %d", name, opens, n, src.Size(name))
		}
	}
	if logs == 0 {
		t.Fatal("no event log in the tree")
	}
}
