package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/scoretest"
)

// bytesRead is what this process has read so far by read(2) and its kin: rchar of
// /proc/self/io (Linux).
func bytesRead(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("counts the bytes the process reads from /proc/self/io, which this system lacks: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "rchar: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("/proc/self/io has no rchar line")
	return 0
}

// TestCommandsReadALogOnce: report, audit, rescore and score read each run's turn
// log or event log once, and so do publish and submit an agentrace run's turn log. The same run is written twice, with 1 and with 4 passes over the
// dataset, and each command runs in this process on each; what the process read
// grows by what the log grew, within 5%: every other input (the dataset, the
// run's small files) is the same in both, so the growth counts the log's reads.
// audit and rescore are given the dataset, so that every kind is scored from
// its log; report finds each run's own (a submission point's is not in the
// tree: its gates are judged on its published figures, its metrics folded from
// its log).
func TestCommandsReadALogOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("writes runs of several MB")
	}
	sample := testenv.SampleFlat(t)
	bytesRead(t) // skips where there is no /proc/self/io
	dsDir := filepath.Join(t.TempDir(), "ds")
	d := scoretest.Ingest(t, dsDir, sample)
	opts := func(repeats int) scoretest.RunOptions {
		return scoretest.RunOptions{Repeats: repeats, Fidelity: 0.9, FailRate: 0.01, Seed: 7,
			Model: "Qwen/Qwen3.6-35B-A3B", Concurrency: 8}
	}
	kinds := []struct {
		name, log string
		write     func(dir string, repeats int) error
	}{
		{"an agentrace run", schemas.TurnLogFile, func(dir string, repeats int) error {
			_, err := scoretest.WriteRun(dir, dsDir, d, opts(repeats))
			return err
		}},
		{"a reference run folder", "events.jsonl", func(dir string, repeats int) error {
			_, err := scoretest.WriteReferenceRun(dir, d, scoretest.ReferenceOptions{RunOptions: opts(repeats), DatasetPath: sample})
			return err
		}},
		// A submission tree (testdata/submission-tree) whose point r100 ships the
		// generated run's event log; the command reads the whole tree.
		{"a submission point", "h200-sim/qwen3_6-35b-a3b/r100/mlperf_endpoints_log_detail.json", func(dir string, repeats int) error {
			if err := os.CopyFS(dir, os.DirFS(filepath.Join(testenv.RepoRoot(t), "testdata", "submission-tree"))); err != nil {
				return err
			}
			gen := filepath.Join(t.TempDir(), "gen")
			if _, err := scoretest.WriteReferenceRun(gen, d, scoretest.ReferenceOptions{RunOptions: opts(repeats), DatasetPath: sample}); err != nil {
				return err
			}
			events, err := os.ReadFile(filepath.Join(gen, "events.jsonl"))
			if err != nil {
				return err
			}
			detail, err := scoretest.EventsAsArray(events)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "h200-sim/qwen3_6-35b-a3b/r100/mlperf_endpoints_log_detail.json"), detail, 0o644)
		}},
	}
	commands := []struct {
		name string
		args func(run, out string) []string
		// agentraceOnly: the command takes agentrace runs alone.
		agentraceOnly bool
	}{
		{"report", func(run, out string) []string { return []string{"report", "--out", out, run} }, false},
		{"audit", func(run, out string) []string { return []string{"audit", "--dataset", dsDir, run} }, false},
		{"rescore", func(run, out string) []string {
			return []string{"rescore", "--dataset", dsDir, "--out", out + ".parquet", run}
		}, false},
		// publish writes the reference's files beside the run; submit a tree
		// (exit 1: no submitter file). Both also write an event log from the
		// turns they read.
		{"publish", func(run, out string) []string { return []string{"publish", run} }, true},
		{"submit", func(run, out string) []string { return []string{"submit", "--out", out, run} }, true},
		// Last: the scores.json it writes into the run would be read by the
		// commands after it. A tree's point is named (score takes one run).
		{"score", func(run, out string) []string {
			if point := filepath.Join(run, "h200-sim/qwen3_6-35b-a3b/r100"); isDir(point) {
				run = point
			}
			return []string{"score", "--dataset", dsDir, "--overwrite", run}
		}, false},
	}
	for _, k := range kinds {
		runs := map[int]string{}
		sizes := map[int]int64{}
		for _, r := range []int{1, 4} {
			dir := filepath.Join(t.TempDir(), fmt.Sprintf("run-x%d", r))
			if err := k.write(dir, r); err != nil {
				t.Fatalf("%s: %v", k.name, err)
			}
			fi, err := os.Stat(filepath.Join(dir, k.log))
			if err != nil {
				t.Fatal(err)
			}
			runs[r], sizes[r] = dir, fi.Size()
		}
		grown := sizes[4] - sizes[1]
		for _, c := range commands {
			if c.agentraceOnly && k.log != schemas.TurnLogFile {
				continue
			}
			t.Run(k.name+"/"+c.name, func(t *testing.T) {
				read := map[int]int64{}
				for _, r := range []int{1, 4} {
					runtime.GC()
					out := filepath.Join(t.TempDir(), "out")
					before := bytesRead(t)
					text, err := runApp(t, c.args(runs[r], out)...)
					read[r] = bytesRead(t) - before
					if err != nil && !doneWithVerdict(err) {
						t.Fatalf("%s on %s: %v\n%s", c.name, runs[r], err, text)
					}
				}
				ratio := float64(read[4]-read[1]) / float64(grown)
				t.Logf("%s of %s: the log grew by %d bytes (%d to %d), the bytes read by %d (%d to %d): %.3f reads of the log",
					c.name, k.name, grown, sizes[1], sizes[4], read[4]-read[1], read[1], read[4], ratio)
				if ratio < 0.95 || ratio > 1.05 {
					t.Errorf("%s read %s's %s %.2f times; want once (within 5%%)", c.name, k.name, k.log, ratio)
				}
			})
		}
	}
}

// isDir tells whether path is a folder.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
