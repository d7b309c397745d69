package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/replay/swebench/swebenchtest"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// cliChildEnv carries the arguments (separated by \x1f) of the agentrace
// command TestCLIChild runs.
const cliChildEnv = "AGENTRACE_CLI_CHILD_ARGS"

// TestCLIChild is the child process of TestReplayCtrlC: it runs agentrace's
// main, signal handling and exit status included.
func TestCLIChild(t *testing.T) {
	args := os.Getenv(cliChildEnv)
	if args == "" {
		t.Skip("run by TestReplayCtrlC as a child process")
	}
	os.Args = append([]string{"agentrace"}, strings.Split(args, "\x1f")...)
	main()
}

// TestReplayCtrlC interrupts `agentrace replay` as a user
// does: the first Ctrl-C prints what happens (turns in flight, grace, how to
// force); a second one cancels the turns in flight at once; the log reads
// whole, the manifest says interrupted, the summary is truthful and the exit
// status is 130.
func TestReplayCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	dir := t.TempDir()
	traces, ds := filepath.Join(dir, "t.jsonl"), filepath.Join(dir, "ds")
	if _, err := runApp(t, "synth", "--scale", "0.02", "--out", traces); err != nil {
		t.Fatal(err)
	}
	if _, err := runApp(t, "ingest", "--out", ds, traces); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, `{"data":[]}`)
			return
		}
		io.Copy(io.Discard, r.Body)
		select {
		case <-time.After(600 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	for _, presses := range []int{1, 2} {
		t.Run(fmt.Sprintf("presses=%d", presses), func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			args := []string{"replay", "--dataset", ds, "--endpoint", srv.URL, "--concurrency", "3", "--out", run,
				"--no-delays", "--grace", "30s"}
			cmd := exec.Command(os.Args[0], "-test.run=^TestCLIChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), cliChildEnv+"="+strings.Join(args, "\x1f"))
			var stdout, stderr testenv.SyncBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				recs, _ := runlog.ReadFile(context.Background(), filepath.Join(run, schemas.TurnLogFile))
				if len(recs) > 0 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("no row flushed in 30 s; stderr:\n%s", stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			start := time.Now()
			cmd.Process.Signal(os.Interrupt)
			if presses == 2 {
				for !strings.Contains(stderr.String(), "interrupt: no new turns") && time.Since(start) < 10*time.Second {
					time.Sleep(20 * time.Millisecond)
				}
				cmd.Process.Signal(os.Interrupt)
			}
			err := cmd.Wait()
			took := time.Since(start)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Fatalf("exit %v, want status 130; stderr:\n%s", err, stderr.String())
			}
			if strings.Contains(stderr.String(), "context canceled") {
				t.Errorf("Go's cancellation leaks into the interrupt's messages:\n%s", stderr.String())
			}
			if !strings.Contains(stderr.String(), "in flight get") || !strings.Contains(stderr.String(), "up to 30s, the grace period,") || !strings.Contains(stderr.String(), "(--grace)") || !strings.Contains(stderr.String(), "Press Ctrl-C again") {
				t.Fatalf("the first Ctrl-C said nothing useful; stderr:\n%s", stderr.String())
			}
			recs, rerr := runlog.ReadFile(context.Background(), filepath.Join(run, schemas.TurnLogFile))
			m, merr := runlog.ReadManifest(run)
			if rerr != nil || merr != nil || m.State != schemas.RunInterrupted {
				t.Fatalf("log %v, manifest %v, state %q", rerr, merr, m.State)
			}
			counts := map[string]int{}
			for _, r := range recs {
				counts[r.Status]++
			}
			if fmt.Sprint(counts) != fmt.Sprint(m.Counts) || counts[schemas.StatusNotIssued] == 0 {
				t.Fatalf("log %v, manifest counts %v", counts, m.Counts)
			}
			out := stdout.String()
			tc := m.Trajectories
			if tc.Cut == 0 || tc.Finished+tc.Failed+tc.Cut != tc.Started ||
				!strings.Contains(out, fmt.Sprintf("%d/%d trajectories finished", tc.Finished, m.Config.Trajectories)) ||
				!strings.Contains(out, fmt.Sprintf("%d cut short (%d started)", tc.Cut, tc.Started)) ||
				!strings.Contains(out, "not official: the performance window never closed") {
				t.Fatalf("trajectories %+v; summary:\n%s", *tc, out)
			}
			if presses == 2 {
				if counts[schemas.StatusCancelled] == 0 || took > 10*time.Second {
					t.Fatalf("second Ctrl-C: %v after %v", counts, took)
				}
			} else if counts[schemas.StatusCancelled] != 0 {
				t.Fatalf("turns cancelled within the grace: %v", counts)
			}
		})
	}
}

// Every command stopped by an interrupt (its context cancelled, as main's is by
// the first Ctrl-C, before it starts work, and the demo's also in the middle of
// it; replay's mid-run Ctrl-C is TestReplayCtrlC) ends in an error that main prints, once,
// as "agentrace CMD: error: ... interrupted ...": never Go's "context canceled",
// neither in that line nor in what the command printed before it.
func TestEveryCommandInterruptSaysInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every long command")
	}
	root := t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	ds := smallDataset(t, root)
	simURL := simServer(t)
	if out, err := runApp(t, "replay", "--dataset", ds, "--no-delays", "--endpoint", simURL, "--concurrency", "2", "--out", p("run")); err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	svc := swebenchtest.New(t, "queued", "succeeded")
	t.Setenv("SB_TOKEN", svc.Token)
	if err := os.WriteFile(p("instances.jsonl"), []byte(`{"instance_id":"a"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd   string
		args  []string
		after time.Duration // when the interrupt comes: 0 before the command starts
	}{
		{"ingest", []string{"--out", p("ds2"), p("traces.jsonl")}, 0},
		{"replay", []string{"--dataset", ds, "--no-delays", "--endpoint", simURL, "--concurrency", "2", "--out", p("replay2")}, 0},
		{"sweep", []string{"--dataset", ds, "--no-delays", "--endpoint", simURL, "--concurrency", "1,2", "--out", p("sweep2")}, 0},
		{"report", []string{"--out", p("rep"), p("run")}, 0},
		{"rescore", []string{"--out", p("rescored.parquet"), p("run")}, 0},
		{"audit", []string{"--out", p("audit"), p("run")}, 0},
		{"submit", []string{"--out", p("tree"), p("run")}, 0},
		{"demo", []string{"--out", p("demo")}, 0},
		{"demo", []string{"--out", p("demo-mid")}, 1500 * time.Millisecond}, // in the middle of its work
		{"simulate", []string{"--dataset", ds, "--concurrency", "2"}, 0},
		{"swebench", []string{"--service", svc.URL(), "--auth-token-env", "SB_TOKEN", "--endpoint", simURL, "--model", "m",
			"--instances", p("instances.jsonl"), "--poll-interval", "1ms", "--out", p("sb")}, 0},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.after == 0 {
				cancel()
			} else {
				time.AfterFunc(tc.after, cancel)
			}
			var out bytes.Buffer
			a := app()
			a.Writer, a.ErrWriter = &out, &out
			err := a.Run(ctx, append([]string{"agentrace", tc.cmd}, tc.args...))
			if err == nil {
				t.Fatalf("an interrupted %s returned no error (exit 0); printed:\n%s", tc.cmd, out.String())
			}
			var line bytes.Buffer
			printError(&line, interrupted{err}) // as main does after a signal
			if !strings.HasPrefix(line.String(), "agentrace "+tc.cmd+": error: ") || strings.Count(line.String(), "interrupted") != 1 {
				t.Errorf("main prints %q; want \"agentrace %s: error: ...interrupted...\", interrupted said once", line.String(), tc.cmd)
			}
			t.Logf("%s", line.String())
			if all := out.String() + line.String(); strings.Contains(all, "context canceled") {
				t.Errorf("Go's cancellation leaks into the interrupt's messages:\n%s", all)
			}
		})
	}
}
