package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// TestMaxDuration: at --max-duration no turn is issued any more, a trajectory
// asleep in an absurd delay (1e308 s) stops waiting, and the
// turns in flight are cancelled at once, as the reference's max_duration_ms
// ends its performance phase. The run ends at the cap, complete, and the
// manifest and summary say it was cut.
func TestMaxDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// a: turn 1, then a delay of 1e308 s before turn 2. b: turn 2 never ends.
		a := chat("a", 3, 0, 1e308)
		d := makeDataset(t, a, chat("b", 3), chat("c", 2))
		tr := &memTransport{answer: func(s string, msgs int) script {
			if s == "b" && msgs == 4 {
				return script{wait: time.Hour}
			}
			return script{wait: time.Second, chunks: 1}
		}}
		dir := t.TempDir()
		o := memOptions(d, dir, tr)
		o.Concurrency = 2
		o.MaxDuration = 10 * time.Second
		var progress strings.Builder
		o.Progress, o.Events, o.ProgressEvery = &progress, eventLines(&progress), time.Hour
		start := time.Now()
		sum, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 10*time.Second {
			t.Fatalf("run ended after %v, want the 10s cap", got)
		}
		m, err := runlog.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		us := int64(time.Microsecond)
		if m.State != schemas.RunComplete || m.StopCause != schemas.StopMaxDuration || m.StoppedNs != us+int64(10*time.Second) ||
			m.Config.MaxDurationSeconds != 10 || m.WindowEndNs != 0 {
			t.Fatalf("manifest: state %s stop %s at %d, max %v, window end %d", m.State, m.StopCause, m.StoppedNs, m.Config.MaxDurationSeconds, m.WindowEndNs)
		}
		rows := byKey(t, readLog(t, dir))
		want := map[string]string{
			"a#1": schemas.StatusOK, "a#3": schemas.StatusNotIssued, "a#5": schemas.StatusNotIssued,
			"b#1": schemas.StatusOK, "b#3": schemas.StatusCancelled, "b#5": schemas.StatusNotIssued,
		}
		if len(rows) != len(want) {
			t.Fatalf("%d rows, want %d (c never started)", len(rows), len(want))
		}
		for k, st := range want {
			if rows[k].Status != st {
				t.Fatalf("%s: %+v, want %s", k, rows[k], st)
			}
		}
		if r := rows["a#3"]; r.Error != "not issued: the run reached its max duration, 10s" || r.DelayNs != 0 {
			t.Fatalf("turn asleep at the cap: %+v", r)
		}
		if r := rows["b#3"]; !strings.HasPrefix(r.Error, "cancelled: the max duration, 10s, was reached: ") || r.CompletedNs != us+int64(10*time.Second) {
			t.Fatalf("turn in flight at the cap: %+v", r)
		}
		s := sum.String()
		for _, w := range []string{"0/3 trajectories finished, 2 cut short (2 started)", "issuing stopped at 10s: the run reached its max duration, 10s",
			"not official: the performance window never closed"} {
			if !strings.Contains(s, w) {
				t.Fatalf("summary lacks %q:\n%s", w, s)
			}
		}
		if !strings.Contains(progress.String(), `warning [max-duration]: conversation "a" turn 3 sleeps delay_seconds 1e+308`) {
			t.Fatalf("no warning about the absurd delay:\n%s", progress.String())
		}
	})
}

// TestSecondInterrupt: after an interrupt, Force (the second Ctrl-C) cancels
// the turns in flight at once instead of at the end of the grace.
func TestSecondInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := makeDataset(t, chat("a", 3), chat("b", 3))
		tr := &memTransport{answer: func(s string, msgs int) script {
			if msgs == 4 {
				return script{wait: time.Hour}
			}
			return script{wait: time.Second, chunks: 1}
		}}
		dir := t.TempDir()
		o := memOptions(d, dir, tr)
		o.Concurrency = 2
		o.Grace = time.Minute
		force := make(chan struct{})
		o.Force = force
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(1500*time.Millisecond, cancel)
		time.AfterFunc(2*time.Second, func() { close(force) })
		start := time.Now()
		sum, err := Run(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Fatalf("run ended after %v, want 2s (the second interrupt)", got)
		}
		if sum.State != schemas.RunInterrupted || sum.StopCause != schemas.StopInterrupt {
			t.Fatalf("state %s, stop %s", sum.State, sum.StopCause)
		}
		rows := byKey(t, readLog(t, dir))
		for _, s := range []string{"a", "b"} {
			if r := rows[s+"#3"]; r.Status != schemas.StatusCancelled || !strings.Contains(r.Error, "a second interrupt") {
				t.Fatalf("%s#3: %+v", s, r)
			}
			if r := rows[s+"#5"]; r.Status != schemas.StatusNotIssued {
				t.Fatalf("%s#5: %+v", s, r)
			}
		}
	})
}

// failingDisk passes the first limit bytes and then fails every write with
// ENOSPC, as a full disk does; it counts the bytes it let through.
type failingDisk struct {
	w     io.Writer
	limit int64
	n     atomic.Int64
}

func (d *failingDisk) Write(p []byte) (int, error) {
	room := d.limit - d.n.Load()
	if room < int64(len(p)) {
		if room > 0 {
			n, _ := d.w.Write(p[:room])
			d.n.Add(int64(n))
			return n, &os.PathError{Op: "write", Path: "turns.arrows", Err: syscall.ENOSPC}
		}
		return 0, &os.PathError{Op: "write", Path: "turns.arrows", Err: syscall.ENOSPC}
	}
	n, err := d.w.Write(p)
	d.n.Add(int64(n))
	return n, err
}

// TestLogWriteFailure: when the turn log cannot be written (a
// full disk), issuing stops at once and the turns in flight are cancelled; the
// log keeps every row flushed before the failure and reads without error; the
// manifest ends "failed", saying why, with counts that agree with the log; Run
// returns the error.
func TestLogWriteFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		convs := make([]tconv, 40)
		for i := range convs {
			convs[i] = chat(fmt.Sprintf("c%02d", i), 5)
		}
		d := makeDataset(t, convs...)
		tr := &memTransport{answer: func(s string, msgs int) script {
			return script{wait: 300 * time.Millisecond, chunks: 2, gap: 10 * time.Millisecond}
		}}
		dir := t.TempDir()
		o := memOptions(d, dir, tr)
		o.Concurrency = 4
		var disk *failingDisk
		o.wrapLog = func(w io.Writer) io.Writer {
			disk = &failingDisk{w: w, limit: 40 << 10}
			return disk
		}
		var progress strings.Builder
		o.Progress, o.Events, o.ProgressEvery = &progress, eventLines(&progress), time.Hour
		start := time.Now()
		sum, err := Run(context.Background(), o)
		if err == nil || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Run: %v, want the ENOSPC of the log", err)
		}
		failedAt := time.Duration(sum.Stopped)
		if sum.StopCause != schemas.StopLogFailure || failedAt == 0 || sum.Elapsed > failedAt+time.Second {
			t.Fatalf("stop %q at %v, run ended at %v: issuing did not stop at the failure", sum.StopCause, failedAt, sum.Elapsed)
		}
		m, merr := runlog.ReadManifest(dir)
		if merr != nil {
			t.Fatal(merr)
		}
		if m.State != schemas.RunFailed || !strings.Contains(m.Error, "no space left on device") || m.StopCause != schemas.StopLogFailure {
			t.Fatalf("manifest state %q error %q stop %q", m.State, m.Error, m.StopCause)
		}
		recs, rerr := runlog.ReadFile(context.Background(), dir+"/"+schemas.TurnLogFile)
		if rerr != nil {
			t.Fatalf("log after the failure: %v", rerr)
		}
		counts := map[string]int{}
		for _, r := range recs {
			counts[r.Status]++
		}
		if len(recs) == 0 || fmt.Sprint(counts) != fmt.Sprint(m.Counts) {
			t.Fatalf("log holds %v, manifest counts %v", counts, m.Counts)
		}
		if err := runlog.CheckAgreement(m, counts, rerr); err != nil {
			t.Fatal(err)
		}
		unlogged := 0
		for _, n := range m.Unlogged {
			unlogged += n
		}
		if unlogged == 0 || sum.Unlogged != unlogged || len(recs)+unlogged >= 200 {
			t.Fatalf("%d rows logged, %d unlogged of 200 turns: the run went on after the failure", len(recs), unlogged)
		}
		// Every request was sent before the failure, give or take the turns
		// already due at that instant.
		late := 0
		for _, q := range tr.requests() {
			if q.at.Sub(start) > failedAt {
				late++
			}
		}
		if late > 0 {
			t.Fatalf("%d requests sent after the log failed", late)
		}
		if s := sum.String(); !strings.Contains(s, "FAILED: replay: turn log") || !strings.Contains(s, "rows after the failure not logged") {
			t.Fatalf("summary:\n%s", s)
		}
	})
}
