package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runManifest is the part of a run's manifest.json these tests read.
type runManifest struct {
	State  string         `json:"state"`
	Counts map[string]int `json:"counts"`
	Error  string         `json:"error"`
}

func readRunManifest(t *testing.T, run string) runManifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "manifest.json"))
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	var m runManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("manifest %s: %v\n%s", run, err, b)
	}
	return m
}

// logStatuses dumps a run's log (`log dump --columns status`) and counts its rows
// by status; warned tells whether log dump warned (a cut log).
func logStatuses(t *testing.T, h *harness, run string) (counts map[string]int, warned bool) {
	t.Helper()
	d := h.run(spec{budget: small}, minute, "agentrace", "log", "dump", run, "--columns", "status")
	d.expectExit(0)
	counts = map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(d.stdout.String()), "\n") {
		if l == "" {
			continue
		}
		var row struct{ Status string }
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatalf("log dump line %q: %v", l, err)
		}
		counts[row.Status]++
	}
	return counts, strings.Contains(d.stderr.String(), "warning")
}

func total(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// TestChaosCrash: a killed run and a full disk as a user meets them, the run's command
// under a memory limit: a replay killed with SIGKILL mid-run keeps the rows it
// flushed (log dump prints them and exits 0; the manifest says running), and a
// replay whose disk fills (RLIMIT_FSIZE: a write past it fails with EFBIG, as
// ENOSPC would) stops issuing at once, exits non-zero, and leaves a log whose rows
// are exactly what its manifest ("failed") counts.
func TestChaosCrash(t *testing.T) {
	h := chaos(t)
	root := t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	sim, replay := h.longRun(root)
	defer sim.stop()

	t.Run("kill -9", func(t *testing.T) {
		h := &harness{t: t}
		run := p("killed")
		r := h.start(spec{budget: small}, replay(run)...)
		// Killed once at least one batch (flushed every second) is on disk.
		waitBatch(t, r, run, "killed")
		time.Sleep(1500 * time.Millisecond)
		r.kill()
		r.wait(minute)
		r.expectExit(128 + int(syscall.SIGKILL))
		counts, _ := logStatuses(t, h, run)
		if total(counts) == 0 {
			t.Fatal("the killed run's log gave no rows")
		}
		m := readRunManifest(t, run)
		if m.State != "running" {
			t.Errorf("killed run's manifest state %q, want running", m.State)
		}
		t.Logf("killed run: %d rows recovered %v, manifest %q", total(counts), counts, m.State)
		// score and report read what was recovered, or refuse it saying why; never
		// a crash.
		s := h.run(spec{budget: small}, minute, "agentrace", "score", run)
		s.expectExit(0, 1, 2) // a verdict (0, 1), or the run refused (2)
		staleLock(t, filepath.Join(root, ".killed.agentrace-lock"))
		noTemps(t, root)
	})

	t.Run("disk full", func(t *testing.T) {
		h := &harness{t: t}
		run := p("full")
		// The first batches fit, then every write past 512 KB fails.
		r := h.run(spec{budget: small, fsize: 512 << 10}, minute, replay(run)...)
		if r.exitCode == 0 {
			t.Fatalf("replay on a full disk exited 0:\n%s", tail(r.stderr.String()))
		}
		r.expectExit(3) // a run that is not whole
		m := readRunManifest(t, run)
		if m.State != "failed" {
			t.Errorf("manifest state %q, want failed", m.State)
		}
		counts, warned := logStatuses(t, h, run)
		if warned {
			t.Error("the log of a run on a full disk is not whole")
		}
		if total(counts) == 0 {
			t.Error("no rows kept")
		}
		for k, v := range m.Counts {
			if counts[k] != v {
				t.Errorf("manifest counts %s=%d, the log holds %d", k, v, counts[k])
			}
		}
		if total(counts) != total(m.Counts) {
			t.Errorf("the log holds %d rows %v, the manifest counts %d %v", total(counts), counts, total(m.Counts), m.Counts)
		}
		t.Logf("full disk: exit %d after %v, %d rows kept %v, manifest %q: %s", r.exitCode, r.elapsed.Round(time.Millisecond), total(counts), counts, m.State, m.Error)
		noTemps(t, root)
	})
}

// TestChaosHostileRuns: hostile inputs and unreadable turn logs through the CLI, under a memory
// limit: rescore of an archive holding a good run beside runs whose manifest is a
// FIFO, whose dataset is /dev/zero, whose turn log is empty or random bytes ends
// promptly, with an error row for each hostile run (exit 1) and the good run scored.
func TestChaosHostileRuns(t *testing.T) {
	h := chaos(t)
	root := t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	h.workflowDataset(root, "0.05")
	sim, endpoint := h.sim(small, "--speedup", "20000", "--output-mean", "64")
	good := p("archive/good")
	h.run(spec{budget: small}, minute, "agentrace", "replay", "--dataset", p("wf"), "--endpoint", endpoint, "--concurrency", "8",
		"--no-delays", "--out", good).expectExit(0)
	sim.stop()
	manifest, err := os.ReadFile(filepath.Join(good, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	logBytes, err := os.ReadFile(filepath.Join(good, "turns.arrows"))
	if err != nil {
		t.Fatal(err)
	}
	mkrun := func(name string, manifest, log []byte) string {
		dir := p("archive/" + name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if manifest != nil {
			if err := os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "turns.arrows"), log, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	fifo := mkrun("fifo", nil, logBytes)
	if err := syscall.Mkfifo(filepath.Join(fifo, "manifest.json"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatal(err)
	}
	cfg := m["config"].(map[string]any)
	cfg["dataset"], cfg["dataset_abs"] = "/dev/zero", "/dev/zero"
	zero, _ := json.Marshal(m)
	mkrun("devzero", zero, logBytes)
	mkrun("empty", manifest, nil)
	random := make([]byte, 1<<20)
	for i := range random {
		random[i] = byte(i*7919 + i>>8)
	}
	mkrun("random", manifest, random)

	r := h.run(spec{budget: small}, minute, "agentrace", "rescore", "--out", p("r.parquet"), p("archive"))
	r.expectExit(1)
	if r.elapsed > 20*time.Second {
		t.Errorf("rescore of the hostile archive took %v", r.elapsed)
	}
	for _, name := range []string{"fifo", "devzero", "empty", "random"} {
		if !strings.Contains(r.stderr.String()+r.stdout.String(), name) {
			t.Errorf("rescore says nothing of run %q:\n%s", name, tail(r.stderr.String()+r.stdout.String()))
		}
	}
	if st, err := os.Stat(p("r.parquet")); err != nil || st.Size() == 0 {
		t.Errorf("rescore wrote no table: %v", err)
	}
	t.Logf("rescore of 1 good and 4 hostile runs: exit %d in %v\n%s", r.exitCode, r.elapsed.Round(time.Millisecond), tail(r.stderr.String()))
}
