package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChaosKilledRunReaders: the readers of a run take a run killed by SIGKILL,
// and one still being written, as far as its log's whole batches go, saying so,
// as docs/safety.md promises. While the replay runs, report and log export read it
// as it is then, with a warning that it is still being written; once it is
// killed (its manifest says running, its log lacks its end), report, log export
// and score read the rows log dump reads, with a warning that it did not end.
// Before, report and log export stopped with "no complete row".
func TestChaosKilledRunReaders(t *testing.T) {
	h := chaos(t)
	root := t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	sim, replay := h.longRun(root)
	defer sim.stop()
	run := p("run")
	r := h.start(spec{budget: small}, replay(run)...)
	waitBatch(t, r, run, "read")

	// Being written: read as it is now.
	live := h.run(spec{budget: small}, minute, "agentrace", "report", "--out", p("rep-live"), run)
	select {
	case <-r.done:
		t.Logf("the replay ended while report read it: the live case is not checked (exit %d)", r.exitCode)
	default:
		live.expectExit(0, 1) // done, with the curve's verdict
		if !strings.Contains(live.stderr.String()+live.stdout.String(), "still being written") {
			t.Errorf("report of a run being written does not say so:\n%s", tail(live.stderr.String()))
		}
	}

	r.kill()
	r.wait(minute)
	r.expectExit(128 + int(syscall.SIGKILL))
	if m := readRunManifest(t, run); m.State != "running" {
		t.Fatalf("killed run's manifest state %q, want running", m.State)
	}
	// Killed a minute ago: its log no longer changes.
	ago := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(run, "turns.arrows"), ago, ago); err != nil {
		t.Fatal(err)
	}
	counts, _ := logStatuses(t, h, run)
	rows := total(counts)
	if rows == 0 {
		t.Fatal("the killed run's log gave no rows")
	}
	want := fmt.Sprintf("up to its last whole batch, %d rows", rows)
	for _, argv := range [][]string{
		{"report", "--out", p("rep"), run},
		{"log", "export", "--out", p("turns.parquet"), run},
		{"score", run},
	} {
		c := h.run(spec{budget: small}, minute, append([]string{"agentrace"}, argv...)...)
		c.expectExit(0, 1) // done (score and report: with a verdict that may say no)
		msg := c.stderr.String() + c.stdout.String()
		if !strings.Contains(msg, "did not end") || !strings.Contains(msg, want) {
			t.Errorf("%s of a killed run (%d rows by log dump) does not warn %q:\n%s", argv[0], rows, want, tail(msg))
		}
	}
	t.Logf("killed run: %d rows read by log dump, report, log export and score", rows)
	staleLock(t, filepath.Join(root, ".run.agentrace-lock"))
	noTemps(t, root)
}
