package score

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/schemas"
	"github.com/parquet-go/parquet-go"
)

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

func TestRescoreArchive(t *testing.T) {
	ds, truth := fixtureTruth(t)
	recs := recordsFromReference(t, truth)
	root := t.TempDir()
	archive := filepath.Join(root, "archive")
	outside := filepath.Join(root, "outside")

	// Good runs of both kinds, one nested in a sweep folder.
	writeRun(t, filepath.Join(archive, "sweep", "c8"), ds, truth.Hash, recs)
	copyDir(t, fixtureDir(t), filepath.Join(archive, "ref", "qwen"))
	// A broken turn log.
	os.MkdirAll(filepath.Join(archive, "broken"), 0o755)
	os.WriteFile(filepath.Join(archive, "broken", schemas.TurnLogFile), []byte("not arrow"), 0o644)
	// A run naming a dataset that does not exist.
	writeRun(t, filepath.Join(archive, "lost"), filepath.Join(root, "no-such-dataset"), truth.Hash, recs[:2])
	// A run whose turn log is a symlink out of the archive: never read.
	writeRun(t, outside, ds, truth.Hash, recs)
	os.MkdirAll(filepath.Join(archive, "escape"), 0o755)
	if err := os.Symlink(filepath.Join(outside, schemas.TurnLogFile), filepath.Join(archive, "escape", schemas.TurnLogFile)); err != nil {
		t.Fatal(err)
	}
	// A symlinked folder pointing out of the archive: not entered.
	if err := os.Symlink(outside, filepath.Join(archive, "linked")); err != nil {
		t.Fatal(err)
	}
	// A symlink inside the archive is fine.
	os.MkdirAll(filepath.Join(archive, "inner"), 0o755)
	writeRun(t, filepath.Join(archive, "inner"), ds, truth.Hash, recs[:4])
	os.Rename(filepath.Join(archive, "inner", schemas.TurnLogFile), filepath.Join(archive, "inner", "log.arrows"))
	os.Symlink("log.arrows", filepath.Join(archive, "inner", schemas.TurnLogFile))

	out := filepath.Join(root, "results.parquet")
	var progress bytes.Buffer
	rows, err := Rescore(context.Background(), RescoreOptions{Archives: []string{archive}, Out: out, Jobs: 3, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	byDir := map[string]schemas.RescoreRow{}
	for _, r := range rows {
		rel, _ := filepath.Rel(archive, r.Path)
		byDir[rel] = r
	}
	if len(rows) != 7 {
		t.Errorf("%d rows: %v", len(rows), byDir)
	}
	if r := byDir["sweep/c8"]; r.Error != "" || r.Kind != KindAgentrace || fv(r.Score) != 0.6212 || r.Model != "Qwen/Qwen3.6-35B-A3B" ||
		r.Concurrency != 8 || r.Ruleset != "checker-2026-10-qwen3.6" || !bv(r.AccuracyPass) || !bv(r.OSLUnofficial) || iv(r.ScoredTurns) != 11 {
		t.Errorf("sweep/c8: %+v", r)
	}
	// No OSL count for a reference run without a tokenizer or summary: the OSL
	// gate and the verdict are null, not false.
	if r := byDir["ref/qwen"]; r.Error != "" || r.Kind != KindReference || fv(r.Score) != 0.6212 || r.Concurrency != 4 ||
		r.OSLPass != nil || r.OSLMean != nil || r.Pass != nil || r.SWEBenchScore != nil {
		t.Errorf("ref/qwen: %+v", r)
	}
	// A run that could not be scored: every value null.
	if r := byDir["broken"]; r.Error == "" || r.Pass != nil || r.Score != nil || r.ScoredTurns != nil || r.AccuracyPass != nil {
		t.Errorf("broken: %+v", r)
	}
	if r := byDir["lost"]; !strings.Contains(r.Error, "no-such-dataset") {
		t.Errorf("lost: %+v", r)
	}
	// The link out of the tree is refused and named: its folder holds no run it
	// may read, so the refused file is its own error row.
	if r := byDir["escape/turns.arrows"]; !strings.Contains(r.Error, "leading out of the tree") || !strings.Contains(r.Error, "turns.arrows") {
		t.Errorf("escape: %+v", r)
	}
	if r := byDir["inner"]; r.Error != "" || iv(r.ScoredTurns) == 0 {
		t.Errorf("inner: %+v", r)
	}
	if r := byDir["linked"]; !strings.Contains(r.Error, "leading out of the tree") || r.Kind != "" {
		t.Errorf("a symlinked folder out of the tree: %+v", r)
	}
	back, err := parquet.ReadFile[schemas.RescoreRow](out)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(rows) || back[0].Path != rows[0].Path || back[0].Error != rows[0].Error {
		t.Errorf("results table: %d rows", len(back))
	}
	if !strings.Contains(progress.String(), "7/7 runs scored, 4 errors") {
		t.Errorf("progress %q", progress.String())
	}

	// --dataset overrides, and jobs do not change the rows.
	rows1, err := Rescore(context.Background(), RescoreOptions{Archives: []string{filepath.Join(archive, "sweep")}, Dataset: ds, Jobs: 1})
	if err != nil || len(rows1) != 1 || fv(rows1[0].Score) != 0.6212 || rows1[0].Dataset != ds {
		t.Errorf("with --dataset: %+v %v", rows1, err)
	}
	// An archive root given as a symbolic link is entered.
	if err := os.Symlink(filepath.Join(archive, "sweep"), filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	if rows, err := Rescore(context.Background(), RescoreOptions{Archives: []string{filepath.Join(root, "alias")}}); err != nil || len(rows) != 1 || rows[0].Error != "" {
		t.Errorf("symlinked root: %+v %v", rows, err)
	}
	if _, err := Rescore(context.Background(), RescoreOptions{Archives: []string{filepath.Join(root, "none")}}); err == nil {
		t.Error("a missing archive root is not an error")
	}
}

func fv(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

func iv(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}

func bv(p *bool) bool { return p != nil && *p }

// TestRescoreRecycledEqualsAlone: runs scored in one rescore, which hands each
// run's buffers and slices to the next, get the rows they get scored one by one,
// with one job and with two, whatever order and size the runs come in (a
// recycled slice larger than the next run needs must hold nothing stale).
func TestRescoreRecycledEqualsAlone(t *testing.T) {
	ds, truth := fixtureTruth(t)
	recs := recordsFromReference(t, truth)
	archive := filepath.Join(t.TempDir(), "archive")
	sizes := []int{len(recs), 3, len(recs) - 1, 1, len(recs) / 2, len(recs)}
	for i, n := range sizes {
		run := append([]schemas.TurnRecord(nil), recs[:n]...)
		for k := range run {
			// Each run answers some turns differently, so that a stale answer shows.
			if (k+i)%3 == 0 {
				run[k].OutputToolCalls = `[{"type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls -la\"}"}}]`
				run[k].OutputContent = fmt.Sprintf("run %d", i)
			}
		}
		writeRun(t, filepath.Join(archive, fmt.Sprintf("r%d", i)), ds, truth.Hash, run)
	}
	alone := map[string]schemas.RescoreRow{}
	for i := range sizes {
		dir := filepath.Join(archive, fmt.Sprintf("r%d", i))
		rows, err := Rescore(context.Background(), RescoreOptions{Archives: []string{dir}, Jobs: 1})
		if err != nil || len(rows) != 1 || rows[0].Error != "" {
			t.Fatalf("%s alone: %+v %v", dir, rows, err)
		}
		alone[rows[0].Path] = rows[0]
	}
	scores := map[float64]bool{}
	for _, r := range alone {
		scores[fv(r.Score)] = true
	}
	if len(scores) < 3 {
		t.Fatalf("the runs score alike (%v): the test would not see a stale answer", scores)
	}
	for _, jobs := range []int{1, 2} {
		rows, err := Rescore(context.Background(), RescoreOptions{Archives: []string{archive}, Jobs: jobs})
		if err != nil || len(rows) != len(sizes) {
			t.Fatalf("jobs %d: %d rows, %v", jobs, len(rows), err)
		}
		for _, r := range rows {
			want := alone[r.Path]
			r.DurationSeconds, want.DurationSeconds = 0, 0
			if !reflect.DeepEqual(r, want) {
				t.Errorf("jobs %d, %s:\n got %+v\nwant %+v", jobs, r.Path, r, want)
			}
		}
	}
}

// An interrupted rescore counts what it scored, not the runs it never reached as
// scored with errors.
func TestRescoreInterruptedCounts(t *testing.T) {
	ds, truth := fixtureTruth(t)
	recs := recordsFromReference(t, truth)
	archive := t.TempDir()
	for _, c := range []string{"c1", "c2", "c4"} {
		writeRun(t, filepath.Join(archive, c), ds, truth.Hash, recs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var progress bytes.Buffer
	if _, err := Rescore(ctx, RescoreOptions{Archives: []string{archive}, Jobs: 1, Progress: &progress}); err == nil {
		t.Fatal("no error after the interrupt")
	}
	if !strings.Contains(progress.String(), "0/3 runs scored, 0 errors") || !strings.Contains(progress.String(), "interrupted: 3 not scored") {
		t.Errorf("progress %q", progress.String())
	}
}

func TestRescoreStatus(t *testing.T) {
	for _, tc := range []struct {
		done, failed, stopped, total int64
		took                         time.Duration
		want                         string
	}{
		{0, 0, 0, 210, time.Second, "rescore: 0/210 runs scored, 0 errors, 1.0s"},
		{70, 1, 0, 210, 7 * time.Second, "rescore: 70/210 runs scored, 1 error, 7.0s; about 14s left"},
		{210, 2, 0, 210, 21 * time.Second, "rescore: 210/210 runs scored, 2 errors, 21.0s"},
		{77, 0, 133, 210, 9 * time.Second, "rescore: 77/210 runs scored, 0 errors, 9.0s; interrupted: 133 not scored"},
	} {
		if got := rescoreStatus(tc.done, tc.failed, tc.stopped, tc.total, tc.took); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
