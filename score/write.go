package score

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentrace/agentrace/internal/atomicfile"
	"github.com/agentrace/agentrace/schemas"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"
)

// WriteScores writes RUNDIR/scores.json and RUNDIR/scores.parquet (one row per
// scored turn), each atomically.
func WriteScores(runDir string, s *schemas.Scores) error {
	data, err := marshalScores(s)
	if err != nil {
		return fmt.Errorf("encode scores of %q: %w", runDir, err)
	}
	if err := atomicfile.WriteBytes(filepath.Join(runDir, schemas.ScoresFile), data); err != nil {
		return fmt.Errorf("write scores: %w", err)
	}
	if err := WriteTurnScores(filepath.Join(runDir, schemas.ScoresTable), s.PerTurn); err != nil {
		return fmt.Errorf("write scores: %w", err)
	}
	return nil
}

// WriteTurnScores writes scored turns as a Parquet table, atomically.
func WriteTurnScores(path string, rows []schemas.TurnScore) error {
	return writeParquet(path, rows)
}

// WriteRescoreRows writes rescore's results table, atomically.
func WriteRescoreRows(path string, rows []schemas.RescoreRow) error {
	return writeParquet(path, rows)
}

func writeParquet[T any](path string, rows []T) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		pw := parquet.NewGenericWriter[T](w, parquet.Compression(&snappy.Codec{}),
			parquet.CreatedBy("agentrace", schemas.ToolVersion, ""))
		if _, err := pw.Write(rows); err != nil {
			return fmt.Errorf("write %q: %w", path, err)
		}
		if err := pw.Close(); err != nil {
			return fmt.Errorf("close %q: %w", path, err)
		}
		return nil
	})
}

// ScoreAndWrite scores a run (ScoreRun) and writes its scores.json and
// scores.parquet into the run directory (WriteScores): `agentrace score`.
func ScoreAndWrite(ctx context.Context, opts Options) (*schemas.Scores, error) {
	s, err := ScoreRun(ctx, opts)
	if err != nil {
		return nil, err
	}
	// The scores go beside the run: into its folder when that is a folder on disk.
	// A run read from an archive is never written into.
	if st, err := os.Stat(s.Run.Path); err != nil || !st.IsDir() {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%s is inside an archive: scores.json and scores.parquet not written (rescore writes a table for archived runs)", s.Run.Path))
		return s, nil
	}
	if err := WriteScores(s.Run.Path, s); err != nil {
		return nil, err
	}
	return s, nil
}
