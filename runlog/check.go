package runlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// LiveWindow is how recently a turn log must have changed, its manifest saying
// the run is running, for a reader to take the run as still being written
// rather than killed: replay ends a batch at least once a second.
const LiveWindow = 10 * time.Second

// LogRead is what ScanRun found reading a run's turn log.
type LogRead struct {
	// Counts are the rows read by status.
	Counts map[string]int
	// Log identifies the log as read: its complete rows, its bytes and their
	// SHA-256 (the whole file as it was when read, to its last byte).
	Log schemas.TurnLogIdentity
	// Truncated is set when the log did not end properly: the rows of its complete
	// batches were read.
	Truncated error
	// Note says what a reader must tell of a log it read but that is not a finished
	// run's (a run killed or still being written); "" for a run that ended.
	Note string
}

// ErrStale reports a scores.json that does not score the turn log as it is now:
// the run went on (or was replayed again) after it was scored.
var ErrStale = errors.New("scores.json is stale")

// ScanRun reads a run's turn log from r (size bytes, < 0 when unknown) batch by
// batch through fn, as Scan does, and checks it as every reader of a run
// must (score, rescore, report, publish, audit, log export):
//
//   - a log from which no row can be read is an error (ErrUnreadable, ErrNoRows);
//   - with a manifest m, the log must agree with it (CheckAgreement): a run whose
//     manifest says it ended is refused when its log does not hold the rows it
//     counts;
//   - a log cut short is read to its last complete batch (Truncated). For a
//     manifest still "running" the Note says whether the run is being written
//     now (its log changed within LiveWindow: the rows are those of this moment)
//     or was killed.
//
// The log is hashed as it is read, its remainder to the end after the last
// batch, so LogRead.Log identifies exactly the log that was read: what
// scores.json records, and what CheckScored compares.
func ScanRun(ctx context.Context, r io.Reader, size int64, m *schemas.RunManifest, mem memory.Allocator, fn func(arrow.RecordBatch) error) (LogRead, error) {
	lr := LogRead{Counts: map[string]int{}}
	h := &hashReader{r: r, h: sha256.New()}
	err := Scan(ctx, h, size, mem, func(b arrow.RecordBatch) error {
		countStatuses(lr.Counts, b)
		lr.Log.Rows += int(b.NumRows())
		if fn == nil {
			return nil
		}
		return fn(b)
	})
	if err == nil || (errors.Is(err, ErrTruncated) && ctx.Err() == nil) {
		if _, derr := io.Copy(io.Discard, h); derr != nil {
			return lr, fmt.Errorf("read to its end: %w", derr)
		}
	}
	if err != nil && !errors.Is(err, ErrTruncated) {
		return lr, err
	}
	// A manifest that says the run ended is checked first: a log it does not
	// match is refused as such, even when not a row of it is left.
	if m != nil {
		if aerr := CheckAgreement(*m, lr.Counts, err); aerr != nil {
			return lr, aerr
		}
	}
	if err = CheckRecovered(err, lr.Log.Rows); errors.Is(err, ErrNoRows) {
		return lr, err
	}
	lr.Truncated = err
	lr.Log.Bytes = h.n
	lr.Log.SHA256 = hex.EncodeToString(h.h.Sum(nil))
	switch {
	case m != nil && m.State == schemas.RunRunning:
		how := "did not end (its manifest still says running: the run was killed, or its machine stopped): read up to its last whole batch"
		if age, ok := modAge(r); ok && age < LiveWindow {
			how = fmt.Sprintf("is still being written (its manifest says running and its log changed %s ago): read as it is now, up to its last whole batch", age.Round(time.Second))
		}
		lr.Note = fmt.Sprintf("the run %s, %d rows", how, lr.Log.Rows)
		if err != nil {
			lr.Note += fmt.Sprintf(" (%v)", err)
		}
	case err != nil:
		lr.Note = fmt.Sprintf("the turn log is cut short (%v): read its %d complete rows", err, lr.Log.Rows)
	}
	return lr, nil
}

// CheckScored tells whether scored (what a scores.json says it scored) is the
// log as a reader found it now (LogRead.Log); an error matching ErrStale says
// how they differ. A scores.json that does not say which log it scored cannot
// be trusted either.
func CheckScored(scored *schemas.TurnLogIdentity, now schemas.TurnLogIdentity) error {
	switch {
	case scored == nil:
		return fmt.Errorf("%w: it does not record which turn log it scored (written by an earlier agentrace); the log now holds %d rows", ErrStale, now.Rows)
	case *scored != now:
		return fmt.Errorf("%w: it scored %d rows (%d bytes, sha256 %.12s), the turn log now holds %d rows (%d bytes, sha256 %.12s)",
			ErrStale, scored.Rows, scored.Bytes, scored.SHA256, now.Rows, now.Bytes, now.SHA256)
	}
	return nil
}

// countStatuses adds the statuses of batch b's rows to counts.
func countStatuses(counts map[string]int, b arrow.RecordBatch) {
	schema := b.Schema()
	col := func(name string) *array.String {
		if idx := schema.FieldIndices(name); len(idx) > 0 {
			a, _ := b.Column(idx[0]).(*array.String)
			return a
		}
		return nil
	}
	status := col("status")
	if status == nil {
		return
	}
	// The values point into the batch's buffers, which a pooled allocator hands
	// to the next batch: the counts keep copies of the few distinct statuses (a
	// map assignment stores the key given, so every key is a copy).
	batch := map[string]int{}
	for i := range int(b.NumRows()) {
		batch[status.Value(i)]++
	}
	for k, n := range batch {
		counts[strings.Clone(k)] += n
	}
}

// modAge is how long ago the file r reads was last changed, when r is one.
func modAge(r io.Reader) (time.Duration, bool) {
	f, ok := r.(interface{ Stat() (fs.FileInfo, error) })
	if !ok {
		return 0, false
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0, false
	}
	return max(time.Since(st.ModTime()), 0), true
}

// hashReader hashes and counts what is read through it.
type hashReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (t *hashReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.h.Write(p[:n])
	t.n += int64(n)
	return n, err
}
