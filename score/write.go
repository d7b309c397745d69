package score

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/parquet-go/parquet-go/compress/snappy"
)

// ScoresKind is the kind of output of scores.json and scores.parquet
// (internal/outguard). Scores belong to their run: score replaces its own earlier
// scores without --overwrite, and never a file of that name it did not write (a
// reference scorer's scores.json in a reference run folder, say).
var ScoresKind = outguard.Kind{Name: "scores"}

// scoresOutputs are the outputs WriteScores writes into runDir; overwrite allows
// replacing earlier scores agentrace wrote there.
func scoresOutputs(ctx context.Context, runDir string, overwrite bool) []outguard.Output {
	return []outguard.Output{
		{Path: filepath.Join(runDir, schemas.ScoresFile), Kind: ScoresKind, Overwrite: overwrite, Ours: isScoresJSON(ctx)},
		{Path: filepath.Join(runDir, schemas.ScoresTable), Kind: ScoresKind, Overwrite: overwrite},
	}
}

// isScoresJSON recognizes, reading under ctx, a scores.json agentrace wrote, a
// JSON file having no footer for a mark: a JSON object with agentrace's own
// members schema_version, verdict and run beside the reference scorer's.
func isScoresJSON(ctx context.Context) func(path string) bool {
	return func(path string) bool { return isScoresFile(ctx, path) }
}

func isScoresFile(ctx context.Context, path string) bool {
	b, err := infile.ReadFile(ctx, path, infile.LargeFile)
	if err != nil {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	for _, k := range []string{"schema_version", "verdict", "run", "score"} {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// WriteScores writes RUNDIR/scores.json and RUNDIR/scores.parquet (one row per
// scored turn), each atomically, replacing only scores agentrace wrote (whether
// earlier scores may be replaced at all is the caller's to check first, as
// ScoreAndWrite does with Options.Overwrite).
func WriteScores(ctx context.Context, runDir string, s *schemas.Scores) error {
	for _, o := range scoresOutputs(ctx, runDir, true) {
		claim, err := outguard.Take(o)
		if err != nil {
			return fmt.Errorf("write scores: %w", err)
		}
		defer claim.Release()
	}
	data, err := marshalScores(s)
	if err != nil {
		return fmt.Errorf("encode scores of %q: %w", runDir, err)
	}
	if err := outguard.AtomicWriteBytes(filepath.Join(runDir, schemas.ScoresFile), data); err != nil {
		return fmt.Errorf("write scores: %w", err)
	}
	if err := WriteTurnScores(filepath.Join(runDir, schemas.ScoresTable), s.PerTurn); err != nil {
		return fmt.Errorf("write scores: %w", err)
	}
	return nil
}

// WriteTurnScores writes scored turns as a Parquet table, atomically.
func WriteTurnScores(path string, rows []schemas.TurnScore) error {
	return outguard.WriteParquet(path, ScoresKind, rows, &snappy.Codec{})
}

// WriteRescoreRows writes rescore's results table, atomically.
func WriteRescoreRows(path string, rows []schemas.RescoreRow) error {
	return outguard.WriteParquet(path, outguard.Rescore, rows, &snappy.Codec{})
}

// ScoreAndWrite scores a run (ScoreRun) and writes its scores.json and
// scores.parquet into the run directory (WriteScores): `agentrace score`. A run
// read from an archive (the archive itself, or a folder inside one) is scored and
// never written into: its scores are in the returned Scores (the verdict table),
// and a warning says so.
func ScoreAndWrite(ctx context.Context, opts Options) (*schemas.Scores, error) {
	// The scores go into the run folder, beside the files scored: they may be none
	// of the inputs, nor inside an input folder (internal/outguard). Checked before
	// scoring when the run is a folder on disk, so that a refusal costs nothing; a
	// run inside an archive has no output to check.
	if isDir(opts.Run) {
		if err := checkScoresOutputs(ctx, opts.Run, opts); err != nil {
			return nil, err
		}
	}
	s, err := ScoreRun(ctx, opts)
	if err != nil {
		return nil, err
	}
	// The scores go beside the run: into its folder when that is a folder on disk.
	// A run read from an archive is never written into.
	if !isDir(s.Run.Path) {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s is inside an archive: scores.json and scores.parquet not written (a rescore writes the scores of archived runs to a table)", s.Run.Path))
		return s, nil
	}
	if err := checkScoresOutputs(ctx, s.Run.Path, opts); err != nil {
		return nil, err
	}
	// A signal that came while the run was scored stops the command before it
	// writes: the earlier scores stay as they were.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := WriteScores(ctx, s.Run.Path, s); err != nil {
		return nil, err
	}
	return s, nil
}

// isDir reports whether path names a directory on disk (not a path into an
// archive, whose first existing ancestor is a regular file).
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// checkScoresOutputs checks runDir's scores outputs against score's inputs.
func checkScoresOutputs(ctx context.Context, runDir string, opts Options) error {
	inputs := []string{opts.Dataset, opts.Tokenizer, opts.SWEBench, opts.Ruleset}
	for _, f := range []string{schemas.TurnLogFile, schemas.RunManifestFile, archive.EventsFile, ReferenceConfigFile} {
		inputs = append(inputs, filepath.Join(runDir, f))
	}
	for _, o := range scoresOutputs(ctx, runDir, opts.Overwrite) {
		if err := o.Check(inputs...); err != nil {
			return fmt.Errorf("score %q: %w", opts.Run, err)
		}
	}
	return nil
}
