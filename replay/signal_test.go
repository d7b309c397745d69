package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentrace/agentrace/datasets/runlog"
	"github.com/agentrace/agentrace/schemas"
)

const childEnv = "AGENTRACE_REPLAY_SIGNAL_CHILD"

// TestSignalChild is the child process of TestCtrlC: it replays against a slow
// fake endpoint with the signal handling of cmd/agentrace's main.
func TestSignalChild(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		t.Skip("run by TestCtrlC as a child process")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // as main does: a second interrupt kills the process
	}()
	convs := make([]tconv, 8)
	for i := range convs {
		convs[i] = chat(fmt.Sprintf("c%d", i), 10)
	}
	f := newFake(t)
	f.hold = func(seen) { time.Sleep(700 * time.Millisecond) }
	_, err := Run(ctx, Options{Data: makeDataset(t, convs...), Endpoint: f.srv.URL, Out: dir, Concurrency: 4, NoDelays: true, Grace: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCtrlC interrupts a replay process once (it stops issuing, finishes the
// in-flight turns, closes the log and says "interrupted") and twice (it dies at
// once; the log still reads up to its last flush).
func TestCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, twice := range []bool{false, true} {
		t.Run(fmt.Sprintf("twice=%v", twice), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			cmd := exec.Command(os.Args[0], "-test.run=^TestSignalChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+dir)
			out := &lockedBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until a batch of rows is on disk.
			var before []schemas.TurnRecord
			deadline := time.Now().Add(30 * time.Second)
			for len(before) == 0 {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("no rows flushed within 30 s; child output:\n%s", out.String())
				}
				time.Sleep(50 * time.Millisecond)
				before, _ = runlog.ReadFile(filepath.Join(dir, schemas.TurnLogFile))
			}
			cmd.Process.Signal(os.Interrupt)
			if twice {
				time.Sleep(100 * time.Millisecond)
				cmd.Process.Signal(os.Interrupt)
			}
			err := cmd.Wait()
			recs, rerr := runlog.ReadFile(filepath.Join(dir, schemas.TurnLogFile))
			m, merr := runlog.ReadManifest(dir)
			if merr != nil {
				t.Fatal(merr)
			}
			if twice {
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Success() {
					t.Fatalf("after two interrupts: %v; output:\n%s", err, out.String())
				}
				if rerr != nil && !errors.Is(rerr, runlog.ErrTruncated) {
					t.Fatalf("log unreadable after a kill: %v", rerr)
				}
				if len(recs) < len(before) {
					t.Fatalf("log has %d rows, %d were on disk before", len(recs), len(before))
				}
				if m.State != RunRunning {
					t.Fatalf("state %q after a kill", m.State)
				}
				return
			}
			if err != nil {
				t.Fatalf("after one interrupt: %v; output:\n%s", err, out.String())
			}
			if rerr != nil || m.State != schemas.RunInterrupted {
				t.Fatalf("log %v, state %q", rerr, m.State)
			}
			ok, notIssued := 0, 0
			for _, r := range recs {
				switch {
				case r.Status == schemas.StatusOK:
					ok++
				case r.Error == notIssuedInterrupt:
					notIssued++
				default:
					t.Fatalf("row %+v", r)
				}
			}
			// Every client turn of the started trajectories has its row; the in-flight
			// turns finished within the grace period.
			if ok+notIssued != len(recs) || len(recs)%10 != 0 || notIssued == 0 || m.Counts[schemas.StatusOK] != ok {
				t.Fatalf("%d rows: %d ok, %d not issued; counts %v", len(recs), ok, notIssued, m.Counts)
			}
		})
	}
}
