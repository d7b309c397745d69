package score

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
)

// TestScoresNeverReplaceOthersFiles: score replaces its own scores.json and
// scores.parquet only with Overwrite, never a file of that name it did not write (a
// reference scorer's scores.json in a reference run folder), and never an input.
func TestScoresNeverReplaceOthersFiles(t *testing.T) {
	ds, truth := fixtureTruth(t)
	recs := recordsFromReference(t, truth)
	run := filepath.Join(t.TempDir(), "run")
	writeRun(t, run, ds, truth.Hash, recs)
	opts := Options{Run: run, Dataset: ds}
	if _, err := ScoreAndWrite(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	// Again: its own scores are kept without Overwrite, replaced with it.
	before, err := os.ReadFile(filepath.Join(run, schemas.ScoresFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ScoreAndWrite(context.Background(), opts); !errors.Is(err, outguard.ErrExists) {
		t.Fatalf("re-score without Overwrite: %v, want ErrExists", err)
	}
	if after, _ := os.ReadFile(filepath.Join(run, schemas.ScoresFile)); string(after) != string(before) {
		t.Fatal("re-score without Overwrite changed scores.json")
	}
	opts.Overwrite = true
	if _, err := ScoreAndWrite(context.Background(), opts); err != nil {
		t.Fatalf("re-score with Overwrite: %v", err)
	}
	if k := outguard.FileKind(filepath.Join(run, schemas.ScoresTable)); k != ScoresKind.Name {
		t.Errorf("scores.parquet kind %q", k)
	}
	// The reference scorer's scores.json: never replaced.
	theirs := []byte(`{"score": 0.61, "turns": {}, "domains": {}, "per_turn": [], "excluded_turns": []}`)
	p := filepath.Join(run, schemas.ScoresFile)
	if err := os.WriteFile(p, theirs, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ScoreAndWrite(context.Background(), opts); !errors.Is(err, outguard.ErrNotOurs) {
		t.Errorf("score over the reference's scores.json: %v, want ErrNotOurs", err)
	}
	if b, _ := os.ReadFile(p); string(b) != string(theirs) {
		t.Fatal("the reference's scores.json changed")
	}
	// A dataset given as scores.json's path: an input, never written.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	opts.Dataset = p
	if err := os.WriteFile(p, []byte(`{"conversation_id":"x","turn":1,"role":"user","content":"x"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ScoreAndWrite(context.Background(), opts); !errors.Is(err, outguard.ErrOverlap) {
		t.Errorf("score with the dataset at scores.json: %v, want ErrOverlap", err)
	}
}

// TestRescoreOutput: the results table is never written into an archive it reads,
// replaces an earlier table only with Overwrite, and never a file agentrace did not
// write.
func TestRescoreOutput(t *testing.T) {
	ds, truth := fixtureTruth(t)
	recs := recordsFromReference(t, truth)
	root := t.TempDir()
	archive := filepath.Join(root, "archive")
	writeRun(t, filepath.Join(archive, "c8"), ds, truth.Hash, recs[:3])
	ctx := context.Background()
	for _, out := range []string{archive, filepath.Join(archive, "r.parquet"), filepath.Join(archive, "c8", schemas.TurnLogFile)} {
		if _, err := Rescore(ctx, RescoreOptions{Archives: []string{archive}, Out: out, Overwrite: true, Jobs: 1}); !errors.Is(err, outguard.ErrOverlap) {
			t.Errorf("rescore into %s: %v, want ErrOverlap", out, err)
		}
	}
	out := filepath.Join(root, "r.parquet")
	if _, err := Rescore(ctx, RescoreOptions{Archives: []string{archive}, Out: out, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Rescore(ctx, RescoreOptions{Archives: []string{archive}, Out: out, Jobs: 1}); !errors.Is(err, outguard.ErrExists) {
		t.Errorf("second rescore without overwrite: %v, want ErrExists", err)
	}
	if _, err := Rescore(ctx, RescoreOptions{Archives: []string{archive}, Out: out, Overwrite: true, Jobs: 1}); err != nil {
		t.Errorf("second rescore with overwrite: %v", err)
	}
	// scores.parquet is agentrace's, but not a results table.
	scores := filepath.Join(root, "scores.parquet")
	if err := WriteTurnScores(scores, nil); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(root, "mine.parquet")
	if err := os.WriteFile(mine, []byte("PAR1 my data"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{scores, mine} {
		if _, err := Rescore(ctx, RescoreOptions{Archives: []string{archive}, Out: p, Overwrite: true, Jobs: 1}); !errors.Is(err, outguard.ErrNotOurs) {
			t.Errorf("rescore over %s: %v, want ErrNotOurs", p, err)
		}
	}
}
