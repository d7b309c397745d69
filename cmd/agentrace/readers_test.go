package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/scoretest"
)

// readersFixture replays a small dataset against the simulated server and
// returns the dataset folder and the complete run.
func readersFixture(t *testing.T) (root, ds, run string) {
	t.Helper()
	root = t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	if out, err := runApp(t, "synth", "--scale", "0.01", "--domain", "workflow", "--seed", "5", "--out", p("traces.jsonl")); err != nil {
		t.Fatalf("synth: %v\n%s", err, out)
	}
	if out, err := runApp(t, "ingest", "--out", p("ds"), p("traces.jsonl")); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	endpoint := simServer(t)
	if out, err := runApp(t, "replay", "--dataset", p("ds"), "--endpoint", endpoint+"/v1",
		"--concurrency", "2", "--no-delays", "--out", p("run")); err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	return root, p("ds"), p("run")
}

// copyRun copies run folder src to dst (its files, not the lock or marker of
// any output claim).
func copyRun(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// cutLog rewrites run's turn log as a run killed by SIGKILL leaves it: its first
// keep rows in whole batches, then a batch cut short and no end-of-stream
// marker; its manifest says running. It returns the rows kept.
func cutLog(t *testing.T, run string, keep int) []schemas.TurnRecord {
	t.Helper()
	p := filepath.Join(run, schemas.TurnLogFile)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := runlog.Read(context.Background(), f, nil)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if keep >= len(recs) {
		t.Fatalf("the run has %d rows, fewer than the %d to keep and a batch to cut", len(recs), keep)
	}
	scoretest.WriteLog(t, p, recs, keep)
	whole, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, whole[:len(whole)-40], 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := runlog.ReadManifest(run)
	if err != nil {
		t.Fatal(err)
	}
	m.State, m.Counts, m.Error = schemas.RunRunning, nil, ""
	if err := runlog.WriteManifest(run, m); err != nil {
		t.Fatal(err)
	}
	return recs[:keep]
}

// TestEveryReaderChecksTheRun: score, rescore, report, audit, publish and log
// export check a run alike (runlog.ScanRun). A run whose manifest says it
// completed but whose log holds other rows is refused by each, naming the
// disagreement; a run killed by SIGKILL (manifest running, log cut inside a
// batch) is read by each up to its last whole batch, with a warning.
func TestEveryReaderChecksTheRun(t *testing.T) {
	root, ds, run := readersFixture(t)
	p := func(s string) string { return filepath.Join(root, s) }

	disagree := p("disagree")
	copyRun(t, run, disagree)
	m, err := runlog.ReadManifest(disagree)
	if err != nil {
		t.Fatal(err)
	}
	m.Counts[schemas.StatusOK] += 5
	if err := runlog.WriteManifest(disagree, m); err != nil {
		t.Fatal(err)
	}
	killed := p("killed")
	copyRun(t, run, killed)
	kept := cutLog(t, killed, 5)
	// killed a minute ago: its log no longer changes
	ago := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(killed, schemas.TurnLogFile), ago, ago); err != nil {
		t.Fatal(err)
	}
	// being written: its log changed just now
	live := p("live")
	copyRun(t, run, live)
	cutLog(t, live, 5)

	type reader struct {
		name string
		args func(run, out string) []string
		// killedOK tells that the command reads a killed run (audit re-derives
		// a published summary, which a killed run has none of)
		killedOK bool
	}
	readers := []reader{
		{"score", func(run, _ string) []string { return []string{"score", run} }, true},
		{"rescore", func(run, out string) []string {
			return []string{"rescore", "--dataset", ds, "--out", out + ".parquet", run}
		}, true},
		{"report", func(run, out string) []string { return []string{"report", "--out", out, run} }, true},
		{"audit", func(run, out string) []string { return []string{"audit", "--out", out, run} }, false},
		{"publish", func(run, _ string) []string { return []string{"publish", run} }, false},
		{"submit", func(run, out string) []string { return []string{"submit", "--out", out, run} }, false},
		{"log export", func(run, out string) []string { return []string{"log", "export", "--out", out + ".parquet", run} }, true},
	}
	for _, r := range readers {
		t.Run(r.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			text, err := runApp(t, r.args(disagree, out)...)
			msg := text
			if err != nil {
				msg += err.Error()
			}
			if err == nil && r.name != "audit" && r.name != "rescore" {
				t.Errorf("%s accepted a run whose log and manifest disagree:\n%s", r.name, msg)
			}
			if !strings.Contains(msg, "turn log and manifest disagree") {
				t.Errorf("%s does not say the log and manifest disagree:\n%s", r.name, msg)
			}
			if r.name == "audit" || r.name == "rescore" {
				// both print a table with an error row, and exit 1
				if err == nil {
					t.Errorf("%s exited 0 on a disagreeing run:\n%s", r.name, msg)
				}
			}
			if !r.killedOK {
				return
			}
			// a cut log is read as it is, with a warning saying which kind of cut it is
			for _, cut := range []struct{ run, out, what, warning, warns string }{
				{killed, "killed-out", "a killed run", "did not end", "it did not end"},
				{live, "live-out", "a run being written", "still being written", "it reads it as it is now"},
			} {
				text, err := runApp(t, r.args(cut.run, filepath.Join(t.TempDir(), cut.out))...)
				if !doneWithVerdict(err) {
					t.Fatalf("%s of %s: %v\n%s", r.name, cut.what, err, text)
				}
				if !strings.Contains(text, cut.warning) && r.name != "rescore" {
					t.Errorf("%s of %s does not warn that %s:\n%s", r.name, cut.what, cut.warns, text)
				}
			}
		})
	}
	// What was read of the killed run: its whole batches, no more, no fewer.
	b, err := os.ReadFile(filepath.Join(killed, schemas.ScoresFile))
	if err != nil {
		t.Fatal(err)
	}
	var sc schemas.Scores
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	if sc.Run.TurnLog == nil || sc.Run.TurnLog.Rows != len(kept) {
		t.Errorf("scores.json of the killed run records log %+v, want %d rows", sc.Run.TurnLog, len(kept))
	}
}

// TestStaleScoresNeverReused: a scores.json written while the run was still
// going (its log then held fewer rows) is never taken for the completed run's:
// report scores the run again, saying so, and its gates are of the whole log;
// audit fails on it, naming it stale; a scores.json of the log as it is is used
// as it is.
func TestStaleScoresNeverReused(t *testing.T) {
	root, _, run := readersFixture(t)
	p := func(s string) string { return filepath.Join(root, s) }
	whole, err := os.ReadFile(filepath.Join(run, schemas.TurnLogFile))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(run, schemas.RunManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	// Scored mid-run: the log of its first rows, the manifest running.
	kept := cutLog(t, run, 5)
	if out, err := runApp(t, "score", run); !doneWithVerdict(err) {
		t.Fatalf("score mid-run: %v\n%s", err, out)
	}
	// The run completes.
	if err := os.WriteFile(filepath.Join(run, schemas.TurnLogFile), whole, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, schemas.RunManifestFile), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	text, err := runApp(t, "report", "--out", p("rep"), run)
	if !doneWithVerdict(err) {
		t.Fatalf("report: %v\n%s", err, text)
	}
	if !strings.Contains(text, "scores.json is stale") || !strings.Contains(text, "scored again here") {
		t.Errorf("report does not say it scored a stale scores.json again:\n%s", text)
	}
	var pts []struct {
		ScoresNote string `json:"scores_note"`
	}
	b, err := os.ReadFile(p("rep/points.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pts); err != nil {
		t.Fatal(err)
	}
	if len(pts) != 1 || !strings.Contains(pts[0].ScoresNote, "stale") {
		t.Errorf("points.json does not note the stale scores: %s", b)
	}
	text, err = runApp(t, "audit", run)
	if err == nil || !strings.Contains(text, "scores.json is stale") {
		t.Errorf("audit of a stale scores.json: %v\n%s", err, text)
	}
	// Scored again: fresh, used as it is.
	if out, err := runApp(t, "score", "--overwrite", run); !doneWithVerdict(err) {
		t.Fatalf("score: %v\n%s", err, out)
	}
	text, err = runApp(t, "report", "--out", p("rep2"), run)
	if !doneWithVerdict(err) || strings.Contains(text, "stale") {
		t.Errorf("report of a fresh scores.json: %v\n%s", err, text)
	}
	_ = kept
}
