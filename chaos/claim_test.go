package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
)

// The claim cases: two commands writing one output at once, and an interrupt
// while an earlier output is being replaced. Each asserts that the earlier
// output survives byte for byte until a new one is whole, that the second
// writer is refused at once naming the first, and that nothing is left beside.

// replayArgs replays ds against endpoint into out, at concurrency 8 without
// delays.
func replayArgs(ds, endpoint, out string, extra ...string) []string {
	return append([]string{"agentrace", "replay", "--dataset", ds, "--endpoint", endpoint, "--concurrency", "8",
		"--no-delays", "--grace", "100ms", "--out", out}, extra...)
}

// holderRe matches the refusal of a second writer and captures the holder's pid.
var holderRe = regexp.MustCompile(`is being written by pid (\d+) \(agentrace (\w+)`)

// TestChaosClaimSecondWriterRefused: two `replay --overwrite` into one run a
// second apart, and two `report --out R` at once: the second is refused at once,
// naming the first's pid and command; the first completes; the output is whole.
func TestChaosClaimSecondWriterRefused(t *testing.T) {
	h := chaos(t)
	root := t.TempDir()
	_, ds := h.dataset(root)
	_, endpoint := h.sim(small, "--speedup", "20", "--output-mean", "64")
	run := filepath.Join(root, "sweep", "c8")
	h.run(spec{budget: small}, minute, replayArgs(ds, endpoint, run)...).expectExit(0)

	first := h.start(spec{budget: small}, replayArgs(ds, endpoint, run, "--overwrite")...)
	time.Sleep(time.Second)
	second := h.run(spec{budget: small}, 10*time.Second, replayArgs(ds, endpoint, run, "--overwrite")...)
	second.expectExit(2) // nothing done: an output that may not be written now
	if second.elapsed > 5*time.Second {
		t.Errorf("the second replay took %v to be refused", second.elapsed)
	}
	m := holderRe.FindStringSubmatch(second.stderr.String())
	if m == nil || m[1] != strconv.Itoa(first.cmd.Process.Pid) || m[2] != "replay" {
		t.Errorf("the refusal does not name the first replay (pid %d):\n%s", first.cmd.Process.Pid, tail(second.stderr.String()))
	}
	first.wait(2 * minute)
	first.expectExit(0)
	if st := readRunManifest(t, run).State; st != "complete" {
		t.Errorf("run state %q after the first replay, want complete", st)
	}
	counts, _ := logStatuses(t, h, run)
	if total(counts) == 0 {
		t.Error("the run's log holds no row")
	}
	noTemps(t, root)

	// Two reports at once into one folder, without --overwrite.
	rep := filepath.Join(root, "rep")
	a := h.start(spec{budget: small}, "agentrace", "report", "--out", rep, filepath.Join(root, "sweep"))
	b := h.start(spec{budget: small}, "agentrace", "report", "--out", rep, filepath.Join(root, "sweep"))
	a.wait(minute)
	b.wait(minute)
	// the one that wrote exits 0 or 1 (its curve's verdict), the other 2 (refused)
	wrote := func(p *proc) bool { return p.exitCode == 0 || p.exitCode == 1 }
	if wrote(a) == wrote(b) || (a.exitCode != 2 && b.exitCode != 2) {
		t.Fatalf("two reports into one folder: exits %d and %d, want one that wrote (0 or 1) and one refused (2)\n%s\n%s", a.exitCode, b.exitCode,
			tail(a.stderr.String()), tail(b.stderr.String()))
	}
	loser := b
	if wrote(b) {
		loser = a
	}
	// the holder named, or (when the second came before the first wrote who it
	// is) the output said to be being written by another command
	if msg := loser.stderr.String(); !holderRe.MatchString(msg) && !strings.Contains(msg, "already holds a report") &&
		!strings.Contains(msg, "is being written by another agentrace command") {
		t.Errorf("the second report's refusal:\n%s", tail(msg))
	}
	if _, err := os.Stat(filepath.Join(rep, "report.html")); err != nil {
		t.Error(err)
	}
	noTemps(t, root)
}

// TestChaosClaimInterruptKeepsEarlier: Ctrl-C half a second into `replay
// --overwrite` over a complete run (once, then twice), or a full disk while it
// runs, leaves the complete run byte for byte, as two Ctrl-C leave the dataset
// an `ingest --overwrite` was replacing; Ctrl-C during a second demo leaves the first demo's report and
// runs byte for byte.
func TestChaosClaimInterruptKeepsEarlier(t *testing.T) {
	h := chaos(t)
	root := t.TempDir()
	_, ds := h.dataset(root)
	_, endpoint := h.sim(small, "--speedup", "20", "--output-mean", "64")
	run := filepath.Join(root, "run")
	h.run(spec{budget: small}, minute, replayArgs(ds, endpoint, run)...).expectExit(0)
	before := testenv.Snapshot(t, root)
	for _, signals := range []int{1, 2} {
		p := h.start(spec{budget: small}, replayArgs(ds, endpoint, run, "--overwrite")...)
		time.Sleep(500 * time.Millisecond)
		for i := 0; i < signals; i++ {
			p.signal(syscall.SIGINT)
			time.Sleep(50 * time.Millisecond)
		}
		p.wait(promptExit + time.Second)
		p.expectExit(130)
		if !strings.Contains(p.stderr.String()+p.stdout.String(), "is kept as it was") {
			t.Errorf("%d Ctrl-C: the summary does not say the earlier run was kept:\n%s", signals, tail(p.stderr.String()+p.stdout.String()))
		}
		testenv.SameFiles(t, root, before)
		noTemps(t, root)
	}

	// A replacement that fails (its log hits a full disk: RLIMIT_FSIZE at half
	// the earlier log's size) is dropped too.
	st, err := os.Stat(filepath.Join(run, "turns.arrows"))
	if err != nil {
		t.Fatal(err)
	}
	full := h.run(spec{budget: small, fsize: st.Size() / 2}, minute, replayArgs(ds, endpoint, run, "--overwrite")...)
	full.expectExit(3) // a run that is not whole
	if !strings.Contains(full.stderr.String()+full.stdout.String(), "is kept as it was") {
		t.Errorf("full disk: the summary does not say the earlier run was kept:\n%s", tail(full.stderr.String()+full.stdout.String()))
	}
	testenv.SameFiles(t, root, before)
	noTemps(t, root)

	// A command that does not handle a second Ctrl-C itself (ingest) exits on
	// it at once: the earlier dataset is untouched, and what it left beside it
	// the next ingest into it removes.
	big := filepath.Join(root, "big.jsonl")
	h.run(spec{budget: small}, minute, "agentrace", "synth", "--scale", "0.6", "--seed", "5", "--out", big).expectExit(0)
	before = testenv.Snapshot(t, root)
	p := h.start(spec{budget: 1 << 30}, "agentrace", "ingest", "--overwrite", "--out", ds, big)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m, _ := filepath.Glob(filepath.Join(root, ".ds.agentrace-new-*")); len(m) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // reading its input
	p.signal(syscall.SIGINT)
	p.signal(syscall.SIGINT)
	p.wait(promptExit)
	p.expectExit(130)
	after := testenv.Snapshot(t, root)
	for f, sum := range before {
		if after[f] != sum {
			t.Errorf("ingest, 2 Ctrl-C: %s changed or vanished", f)
		}
	}
	h.run(spec{budget: 1 << 30}, minute, "agentrace", "ingest", "--overwrite", "--out", ds, big).expectExit(0)
	noTemps(t, root)
	before = testenv.Snapshot(t, root)

	demo := filepath.Join(root, "demo")
	demoArgs := func(speedup string) []string {
		return []string{"agentrace", "demo", "--out", demo, "--coding-scale", "0.01", "--workflow-scale", "0.02",
			"--concurrency", "1,2", "--speedup", speedup}
	}
	h.run(spec{budget: 1 << 30}, 2*minute, demoArgs("400")...).expectExit(0)
	before = testenv.Snapshot(t, root)
	for _, signals := range []int{1, 2} {
		p := h.start(spec{budget: 1 << 30}, demoArgs("1")...)
		p.waitFor(`sweep point 1/`, minute)
		time.Sleep(500 * time.Millisecond)
		for i := 0; i < signals; i++ {
			p.signal(syscall.SIGINT)
			time.Sleep(50 * time.Millisecond)
		}
		p.wait(promptExit + 10*time.Second)
		p.expectExit(130)
		testenv.SameFiles(t, root, before)
		noTemps(t, root)
	}
	var m struct{ Entries []string }
	b, _ := os.ReadFile(filepath.Join(demo, ".agentrace"))
	if json.Unmarshal(b, &m); strings.Join(m.Entries, ",") != "traces.jsonl,dataset,runs,report" {
		t.Errorf("the demo's marker lists %v", m.Entries)
	}
}
