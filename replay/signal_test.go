package replay

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/interrupt"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/runlog"
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
	ctx, h, stop := interrupt.Notify(context.Background()) // as cmd/agentrace's main
	defer stop()
	convs := make([]tconv, 8)
	for i := range convs {
		convs[i] = chat(fmt.Sprintf("c%d", i), 10)
	}
	f := newFake(t)
	f.hold = func(s seen) {
		select {
		case <-time.After(700 * time.Millisecond):
		case <-s.ctx.Done():
		}
	}
	sum, err := Run(ctx, Options{Data: makeDataset(t, convs...), Endpoint: f.srv.URL, Out: dir, Concurrency: 4, NoDelays: true,
		Grace: 20 * time.Second, Force: h.Force(), Progress: os.Stdout, Events: eventLines(os.Stdout), ProgressEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(sum)
}

// TestCtrlC interrupts a replay process once (it says what happens, stops
// issuing, finishes the in-flight turns, closes the log and says
// "interrupted") and twice (the second press cancels the in-flight turns at
// once; the log is still closed and the manifest says "interrupted").
func TestCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, twice := range []bool{false, true} {
		t.Run(fmt.Sprintf("twice=%v", twice), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			cmd := exec.Command(os.Args[0], "-test.run=^TestSignalChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+dir)
			out := &testenv.SyncBuffer{}
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
				before, _ = runlog.ReadFile(context.Background(), filepath.Join(dir, schemas.TurnLogFile))
			}
			cmd.Process.Signal(os.Interrupt)
			start := time.Now()
			if twice {
				time.Sleep(100 * time.Millisecond)
				cmd.Process.Signal(os.Interrupt)
			}
			err := cmd.Wait()
			took := time.Since(start)
			recs, rerr := runlog.ReadFile(context.Background(), filepath.Join(dir, schemas.TurnLogFile))
			m, merr := runlog.ReadManifest(dir)
			if merr != nil {
				t.Fatal(merr)
			}
			if err != nil {
				t.Fatalf("after the interrupt: %v; output:\n%s", err, out.String())
			}
			if rerr != nil || m.State != schemas.RunInterrupted || m.StopCause != schemas.StopInterrupt {
				t.Fatalf("log %v, state %q, stop cause %q", rerr, m.State, m.StopCause)
			}
			if len(recs) < len(before) {
				t.Fatalf("log has %d rows, %d were on disk before", len(recs), len(before))
			}
			if !strings.Contains(out.String(), "note [grace]: interrupt: no new turns are issued;") || !strings.Contains(out.String(), "Press Ctrl-C again to cancel them now") {
				t.Fatalf("the first press said nothing; output:\n%s", out.String())
			}
			counts := map[string]int{}
			for _, r := range recs {
				counts[r.Status]++
				switch r.Status {
				case schemas.StatusOK:
				case schemas.StatusNotIssued:
					if r.Error != notIssuedInterrupt {
						t.Fatalf("row %+v", r)
					}
				case schemas.StatusCancelled:
					if !twice || !strings.Contains(r.Error, "a second interrupt") {
						t.Fatalf("row %+v", r)
					}
				default:
					t.Fatalf("row %+v", r)
				}
			}
			// Every client turn of the started trajectories has its row, and the
			// manifest counts exactly the log's rows.
			if len(recs)%10 != 0 || counts[schemas.StatusNotIssued] == 0 || fmt.Sprint(counts) != fmt.Sprint(m.Counts) {
				t.Fatalf("%d rows: %v; manifest counts %v", len(recs), counts, m.Counts)
			}
			if tc := m.Trajectories; tc.Finished != 0 || tc.Cut != tc.Started || tc.Started != 4 {
				t.Fatalf("trajectories %+v", *tc)
			}
			if twice {
				// The in-flight turns were cancelled at the second press, not after the 20 s grace.
				if counts[schemas.StatusCancelled] == 0 || took > 10*time.Second {
					t.Fatalf("second press: %d cancelled, exit after %v", counts[schemas.StatusCancelled], took)
				}
				if !strings.Contains(out.String(), "note: second interrupt: cancelling") {
					t.Fatalf("the second press said nothing; output:\n%s", out.String())
				}
			} else if counts[schemas.StatusCancelled] != 0 {
				t.Fatalf("in-flight turns cancelled within the grace: %v", counts)
			}
			if !strings.Contains(out.String(), "0/8 trajectories finished, 4 cut short (4 started)") ||
				!strings.Contains(out.String(), "not official: the performance window never closed") {
				t.Fatalf("summary not truthful; output:\n%s", out.String())
			}
		})
	}
}
