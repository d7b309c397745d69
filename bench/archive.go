package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/runread"
)

// scanChild, when set, makes this process the child of the RSS row: it scans the
// event log of the run folder named and exits (see benchEventsRSS).
var scanChild = flag.String("scan-child", "", "internal: scan this run folder's events.jsonl as the RSS row's child process")

// fixtureDatasetPath is the dataset the synthetic event logs refer to, from the
// repository root (where a row's child process runs).
const fixtureDatasetPath = "testdata/reference-run/dataset.jsonl"

// fixtureDataset is fixtureDatasetPath in env's repository root.
func fixtureDataset(env Env) string {
	return filepath.Join(env.Root, fixtureDatasetPath)
}

// eventLogRun writes an event log of about size bytes (writeEventLog) as the one
// file of the run folder env.Work/name and returns the folder (remove it when
// done) and the bytes written.
func eventLogRun(env Env, name string, size int64) (dir string, written int64, err error) {
	dir = filepath.Join(env.Work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, err
	}
	written, err = writeEventLog(filepath.Join(dir, archive.EventsFile), size)
	return dir, written, err
}

// writeEventLog writes a reference-shaped events.jsonl of about size bytes: per
// sample an issued event whose prompt grows with the trajectory's history (as the
// reference writes whole prompts), eight recv events and a complete event with
// streamed output, reasoning and a tool call; sessions over the fixture's
// conversations, repeat after repeat.
func writeEventLog(path string, size int64) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	convs := []struct {
		id    string
		turns []int
	}{{"astropy__astropy-12907", []int{1, 3, 5, 7}}, {"django__django-11099", []int{1, 3}}, {"sim_000001", []int{1, 3, 5}}, {"sim_000002", []int{1, 3}}}
	line := "Traceback (most recent call last):\n  File \"astropy/modeling/separable.py\", line 42, in _separable\n    return \"quoted\" \\\\ and a tab\there\n"
	var written int64
	ts := int64(1_000_000_000)
	emit := func(s string) {
		n, _ := w.WriteString(s)
		written += int64(n)
	}
	emit(`{"event_type": "session.started", "timestamp_ns": 1000000000, "sample_uuid": "", "conversation_id": "", "turn": null, "data": null}` + "\n")
	emit(`{"event_type": "session.start_performance_tracking", "timestamp_ns": 1000000000, "sample_uuid": "", "conversation_id": "", "turn": null, "data": null}` + "\n")
	u := 0
	for rep := 1; written < size; rep++ {
		for _, c := range convs {
			sess := c.id
			if rep > 1 {
				sess = fmt.Sprintf("%s__repeat_%d", c.id, rep)
			}
			history := []map[string]string{{"role": "system", "content": strings.Repeat("You are a careful engineer. ", 300)}}
			for _, t := range c.turns {
				u++
				history = append(history, map[string]string{"role": "user", "content": strings.Repeat(line, 100+u%50)})
				msgs, _ := json.Marshal(history)
				uuid := fmt.Sprintf("%032x", u)
				ts += 1000
				emit(fmt.Sprintf(`{"event_type": "sample.issued", "timestamp_ns": %d, "sample_uuid": "%s", "conversation_id": "%s", "turn": %d, "data": ["PromptData", null, null, %s, null, null, null, null]}`+"\n", ts, uuid, sess, t, msgs))
				for k := 0; k < 8; k++ {
					typ := "sample.recv_non_first"
					if k == 0 {
						typ = "sample.recv_first"
					}
					ts += 1000
					emit(fmt.Sprintf(`{"event_type": "%s", "timestamp_ns": %d, "sample_uuid": "%s", "conversation_id": "%s", "turn": %d, "data": null}`+"\n", typ, ts, uuid, sess, t))
				}
				ts += 1000
				out, _ := json.Marshal([]string{"Let me look ", "at the failing test. intent: I042 ", strings.Repeat("Now the fix. ", 60)})
				emit(fmt.Sprintf(`{"event_type": "sample.complete", "timestamp_ns": %d, "sample_uuid": "%s", "conversation_id": "%s", "turn": %d, "data": ["TextModelOutput", %s, ["Think ", "first."], [[{"index": 0, "id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"python -m "}}], [{"index": 0, "function": {"arguments": "pytest -x\"}"}}]]], "finish_reason": "tool_calls"}`+"\n", ts, uuid, sess, t, out))
				history = append(history, map[string]string{"role": "assistant", "content": "ok"})
			}
		}
	}
	emit(fmt.Sprintf(`{"event_type": "session.stop_performance_tracking", "timestamp_ns": %d, "sample_uuid": "", "conversation_id": "", "turn": null, "data": null}`+"\n", ts))
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return written, f.Close()
}

// scanBoth runs both streaming scans of a run folder's event log: score's pairing
// of issued turns with outputs (inline accuracy) and the turn records report and
// audit fold.
func scanBoth(dir string, truth *score.Truth) (attempts, records int, err error) {
	ref, err := score.ReadReferenceEvents(context.Background(), filepath.Join(dir, archive.EventsFile), truth)
	if err != nil {
		return 0, 0, err
	}
	records, err = countTurns(dir)
	return len(ref.Attempts), records, err
}

// countTurns counts the turn records of the run folder dir (runread.ScanTurns:
// what report and audit fold).
func countTurns(dir string) (int, error) {
	run, err := archive.OpenRun(dir, archive.Limits{})
	if err != nil {
		return 0, err
	}
	defer run.Source.Close()
	n := 0
	_, err = runread.ScanTurns(context.Background(), run, func(*schemas.TurnRecord) error { n++; return nil })
	return n, err
}

// scanPass is one timed pass of a scan row over its event log.
type scanPass struct {
	name string
	run  func() error
}

// bestPerCore runs the passes in order, three rounds, each pass after a garbage
// collection, and gives each pass's best MB per CPU-second over a log of mb MB
// (per core, so that a busy machine does not change the figure much).
func bestPerCore(mb float64, passes []scanPass) (map[string]float64, error) {
	best := map[string]float64{}
	for range 3 {
		for _, p := range passes {
			runtime.GC()
			c0 := cpuTime()
			if err := p.run(); err != nil {
				return nil, err
			}
			best[p.name] = max(best[p.name], mb/(cpuTime()-c0).Seconds())
		}
	}
	return best, nil
}

// readPass is the pass beside which a scan row's figures stand: reading the log at
// path to nothing.
func readPass(path string) scanPass {
	return scanPass{"read", func() error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(io.Discard, f)
		return err
	}}
}

// benchEventsScan measures the event-log scans in MB per CPU-second, beside
// reading the same file to nothing.
func benchEventsScan(env Env) (Row, error) {
	row := Row{Name: "events.jsonl scan (score's pairing, and the turn records report/audit fold), 512 MB", Goal: ">= 300 MB/s per core each"}
	dir, size, err := eventLogRun(env, "events-scan", 512<<20)
	if err != nil {
		return row, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, archive.EventsFile)
	truth, err := score.LoadTruth(context.Background(), fixtureDataset(env))
	if err != nil {
		return row, err
	}
	mb := float64(size) / 1e6
	best, err := bestPerCore(mb, []scanPass{
		readPass(path),
		{"pair", func() error {
			ref, err := score.ReadReferenceEvents(context.Background(), path, truth)
			if err == nil && len(ref.Attempts) == 0 {
				err = errors.New("the pairing found no attempts")
			}
			return err
		}},
		{"turns", func() error {
			n, err := countTurns(dir)
			if err == nil && n == 0 {
				err = errors.New("the scan found no turn records")
			}
			return err
		}},
	})
	if err != nil {
		return row, err
	}
	row.Measured = fmt.Sprintf("%.0f MB: pairing %.0f MB/s per core, turn records %.0f MB/s per core; reading the file to nothing %.0f MB/s per core (CPU time; load average %s)",
		mb, best["pair"], best["turns"], best["read"], loadAverage())
	low := min(best["pair"], best["turns"])
	row.Ratio = fmt.Sprintf("%.2fx", low/300)
	row.Met = low >= 300
	return row, nil
}

// benchEventsRSS scans a 2 GB event log in a child process (both scans) and reads
// its peak RSS from the kernel.
func benchEventsRSS(env Env) (Row, error) {
	return eventLogRSS(env, "events.jsonl of 2 GB scanned (both scans, in a child process): peak RSS", "events-rss", "-scan-child", "scanned")
}

// eventLogRSS is a peak-RSS row: a 2 GB event log written into the run folder
// env.Work/sub, which this binary's child process (childFlag) reads whole, and
// the child's own peak RSS (runChild) against 500 MB; did says what the
// child did ("scanned").
func eventLogRSS(env Env, name, sub, childFlag, did string) (Row, error) {
	row := Row{Name: name, Goal: "< 500 MB"}
	dir, size, err := eventLogRun(env, sub, 2<<30)
	if err != nil {
		return row, err
	}
	defer os.RemoveAll(dir)
	out, use, err := runChild(env, true, childFlag, dir)
	if err != nil {
		return row, err
	}
	out, rssMB, took := strings.TrimSpace(out), use.rssMB, use.took
	row.Measured = fmt.Sprintf("%.2f GB %s in %.1f s (%s): peak RSS %.0f MB", float64(size)/1e9, did, took.Seconds(), out, rssMB)
	row.Ratio = fmt.Sprintf("%.2fx", 500/rssMB)
	row.Met = rssMB < 500
	return row, nil
}

// runScanChild is the RSS row's child: both scans of one run folder's event log.
func runScanChild(dir string) int {
	truth, err := score.LoadTruth(context.Background(), fixtureDatasetPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	a, n, err := scanBoth(dir, truth)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%d scored attempts, %d turn records", a, n)
	return 0
}

// benchRescoreTree times rescore over a submission tree of 20 points (each an r<N>/
// folder with point.yaml, a summary and a 24 MB events.jsonl) with 1 job and with
// 2, alternating five times and keeping each side's best.
func benchRescoreTree(env Env) (Row, error) {
	row := Row{Name: "rescore: a submission tree of 20 points (24 MB event log each), 2 jobs vs 1", Goal: ">= 1.8x (1-job time / 2-job time)"}
	curve := filepath.Join(env.Work, "tree", "sys", "model")
	for i := range 20 {
		pt := filepath.Join(curve, fmt.Sprintf("r%d", i+1))
		if err := os.MkdirAll(pt, 0o755); err != nil {
			return row, err
		}
		if _, err := writeEventLog(filepath.Join(pt, archive.EventsFile), 24<<20); err != nil {
			return row, err
		}
		os.WriteFile(filepath.Join(pt, archive.PointFile), fmt.Appendf(nil, "concurrency: %d\nmodel_name: model\n", i+1), 0o644)
		os.WriteFile(filepath.Join(pt, archive.LogSummaryFile), []byte(`{"n_samples_completed": 1, "duration_ns": 1, "output_sequence_lengths_full_run": {"output_sequence_lengths": {"avg": 380}}}`), 0o644)
	}
	return rescoreScaling(row, 5, score.RescoreOptions{Archives: []string{filepath.Join(env.Work, "tree")}, Dataset: fixtureDataset(env)}, " over 480 MB of event logs")
}
