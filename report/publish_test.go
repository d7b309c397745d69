package report

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/submission"
)

// TestPublishLaysRunsOutAsTheReference publishes a sweep: each run folder gets
// performance/result_summary.json, accuracy/accuracy_results.json and point.yaml,
// the sweep sweep_summary.csv, and the archive reader reads the run folders back
// with their published files where it finds a reference run's. A second publish
// replaces its own files; a file agentrace did not write is never replaced.
func TestPublishLaysRunsOutAsTheReference(t *testing.T) {
	sweep := writeFakeSweep(t, filepath.Join(t.TempDir(), "sweep"), defaultFake())
	for _, c := range fakeSweepConcurrencies() {
		sc := schemas.Scores{SchemaVersion: "1", Score: 0.625, Turns: schemas.TurnCounts{Issued: 40 + c, Scored: 40},
			Verdict: schemas.Verdict{Ruleset: "qwen-readme-2026-08", Pass: true}}
		if c == 64 {
			sc.SWEBench = &schemas.SWEBenchResult{Score: 0.705, Submitted: 200, Resolved: 141, Evaluated: 200}
		}
		writeScores(t, filepath.Join(sweep, "c"+itoa(c)), sc)
	}
	systems, err := submission.Publish(context.Background(), submission.PublishOptions{Runs: []string{sweep}, CMax: 128})
	if err != nil {
		t.Fatal(err)
	}
	if len(systems) != 1 || len(systems[0].Points) != 8 {
		t.Fatalf("systems %+v", systems)
	}
	src, err := archive.Open(sweep, archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	runs := archive.Find(src)
	if len(runs) != 8 {
		t.Fatalf("%d runs found in the published sweep", len(runs))
	}
	for _, r := range runs {
		if r.Kind != archive.KindAgentrace || r.SummaryName() != archive.PerfSummaryFile || r.AccuracyName() != archive.AccuracyFile || !r.Has(archive.PointFile) {
			t.Errorf("%s: kind %s, summary %q, accuracy %q", r.Label, r.Kind, r.SummaryName(), r.AccuracyName())
		}
		pa, err := score.ReadPublishedAccuracy(r)
		if err != nil || pa.Inline == nil || *pa.Inline != 0.625 {
			t.Errorf("%s: published accuracy %+v, %v", r.Label, pa, err)
		}
		if r.Dir == "c64" && (pa.SWEBench == nil || *pa.SWEBench != 0.705) {
			t.Errorf("c64: swe_bench entry %+v", pa.SWEBench)
		}
		so, ok, err := score.ReadSummaryOSL(r)
		if err != nil || !ok || so.Mean <= 0 || !strings.Contains(so.Field, "output_sequence_lengths_full_run.output_sequence_lengths.avg") {
			t.Errorf("%s: the checker's OSL field: %+v %v %v", r.Label, so, ok, err)
		}
	}
	f, err := os.Open(filepath.Join(sweep, submission.PublishedSweep))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(recs) != 9 || recs[0][0] != "concurrency" || recs[8][0] != "128" {
		t.Fatalf("sweep_summary.csv: %v %v", recs, err)
	}
	// Publish again: its own files are replaced.
	if _, err := submission.Publish(context.Background(), submission.PublishOptions{Runs: []string{sweep}, CMax: 128}); err != nil {
		t.Fatalf("second publish: %v", err)
	}
	// A point.yaml the submitter wrote is never replaced.
	mine := filepath.Join(sweep, "c8", "point.yaml")
	os.WriteFile(mine, []byte("concurrency: 8\nregion: med_concurrency\n"), 0o644)
	_, err = submission.Publish(context.Background(), submission.PublishOptions{Runs: []string{sweep}, CMax: 128})
	if !errors.Is(err, outguard.ErrNotOurs) {
		t.Errorf("publish over a submitter's point.yaml: %v", err)
	}
	if b, _ := os.ReadFile(mine); string(b) != "concurrency: 8\nregion: med_concurrency\n" {
		t.Errorf("the submitter's point.yaml was changed: %q", b)
	}
}

// TestPublishStandIn: a sweep published with a tokenizer that is not the model's
// own says so in its log and in each point's result_summary.json.
func TestPublishStandIn(t *testing.T) {
	sweep := writeFakeSweep(t, filepath.Join(t.TempDir(), "sweep"), defaultFake())
	var warned []string
	events := func(e notice.Event) {
		if e.Kind == notice.Warning {
			warned = append(warned, e.Text)
		}
	}
	if _, err := submission.Publish(context.Background(), submission.PublishOptions{Runs: []string{sweep}, CMax: 128, TokenizerDir: testenv.Tokenizer(t), Events: events}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(warned, "\n"), schemas.StandInLabel) {
		t.Errorf("publish warnings lack %q: %q", schemas.StandInLabel, warned)
	}
	data, err := os.ReadFile(filepath.Join(sweep, "c1", archive.PerfSummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Agentrace struct {
			Unofficial bool                  `json:"unofficial"`
			Tokenizer  *schemas.TokenizerUse `json:"tokenizer"`
		} `json:"agentrace"`
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	if a := sum.Agentrace; !a.Unofficial || a.Tokenizer == nil || !a.Tokenizer.StandIn || len(a.Tokenizer.TokenizerSHA256) != 64 {
		t.Errorf("result_summary.json agentrace block: %+v", a)
	}
}
