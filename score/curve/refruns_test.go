package curve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/official"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/runread"
	"github.com/agentrace/agentrace/tokens"
)

// TestResultSummaryMatchesReferenceRuns re-derives result_summary.json from the
// events of every genuine reference run folder in testdata/refruns (seven sweep
// points and one with injected faults: HTTP 500s, skipped turns) and compares it
// with the summary the reference client wrote: every count, the duration, qps,
// tps, finish_reason_counts and every figure of the TTFT, TPOT, latency and OSL
// blocks (percentiles, early-stopping estimates, histogram counts) exactly, the
// histogram edges to within an ulp. Not compared: input_sequence_lengths (the
// reference counts ISL from the prompt its events carry; agentrace counts it from
// the dataset, which these runs name by a path of the machine that ran them),
// run_config's random seeds (agentrace draws none), version and git_sha.
func TestResultSummaryMatchesReferenceRuns(t *testing.T) {
	tk, err := tokens.Load(context.Background(), testenv.Tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(testenv.RepoRoot(t), "testdata", "refruns")
	dirs, err := filepath.Glob(filepath.Join(root, "c*"))
	if err != nil || len(dirs) < 8 {
		t.Fatalf("testdata/refruns holds %d run folders (%v), want 8", len(dirs), err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			run, err := archive.OpenRun(dir, archive.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			defer run.Source.Close()
			p, err := LoadRun(context.Background(), run, tk, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			gotB, err := json.Marshal(p.Summary)
			if err != nil {
				t.Fatal(err)
			}
			wantB, err := os.ReadFile(filepath.Join(dir, "performance", "result_summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var got, want map[string]any
			if err := json.Unmarshal(gotB, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(wantB, &want); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"version", "git_sha", "run_config"} {
				delete(want, k)
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					delete(got, k) // agentrace's additions: the agentic fields, its notes
				}
			}
			testenv.CompareJSON(t, "result_summary", got, want)
		})
	}
}

// TestReferenceSampleWithoutComplete: a reference run whose event log ends with a
// sample issued and never completed (the request in flight when the run ended,
// for which the reference publishes no complete and no error event). The turn
// reads as cancelled (issued, cut); result_summary counts it as the reference's
// aggregator does: issued, neither completed nor failed; the inline accuracy
// keeps it in the denominator (issued) and scores it 0.
func TestReferenceSampleWithoutComplete(t *testing.T) {
	tk, err := tokens.Load(context.Background(), testenv.Tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(testenv.RepoRoot(t), "testdata", "refruns", "c004")
	dir := filepath.Join(t.TempDir(), "c004-cut")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	evPath := filepath.Join(dir, "events.jsonl")
	data, err := os.ReadFile(evPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	// Drop the first complete event of a sample that completed ok (issued in the
	// performance window: the run issues past the window only at its end).
	cut, cutUUID := -1, ""
	for i := 0; i < len(lines) && cut < 0; i++ {
		var e struct {
			Type string          `json:"event_type"`
			UUID string          `json:"sample_uuid"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(lines[i]), &e) == nil && e.Type == "sample.complete" && string(e.Data) != "null" {
			cut, cutUUID = i, e.UUID
		}
	}
	if cut < 0 {
		t.Fatal("no completed sample in the event log")
	}
	lines = append(lines[:cut:cut], lines[cut+1:]...)
	if err := os.WriteFile(evPath, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	run, err := archive.OpenRun(dir, archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Source.Close()
	statuses := map[string]int{}
	var cutRec schemas.TurnRecord
	if _, err := runread.ScanTurns(context.Background(), run, func(rec *schemas.TurnRecord) error {
		statuses[rec.Status]++
		if rec.Status == schemas.StatusCancelled {
			cutRec = *rec
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if statuses[schemas.StatusCancelled] != 1 || !schemas.Issued(cutRec.Status) || cutRec.CompletedNs != 0 || !strings.Contains(cutRec.Error, "no complete event") {
		t.Fatalf("the sample without a complete event (%s): statuses %v, record %+v", cutUUID, statuses, cutRec)
	}

	var pub struct {
		Issued    int `json:"n_samples_issued"`
		Completed int `json:"n_samples_completed"`
		Failed    int `json:"n_samples_failed"`
	}
	b, err := os.ReadFile(filepath.Join(src, "performance", "result_summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pub); err != nil {
		t.Fatal(err)
	}
	p, err := LoadRun(context.Background(), run, tk, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	s := p.Summary
	if s.NSamplesIssued != pub.Issued || s.NSamplesCompleted != pub.Completed-1 || s.NSamplesFailed != pub.Failed {
		t.Errorf("issued/completed/failed %d/%d/%d, want %d/%d/%d (the published counts less one completion)",
			s.NSamplesIssued, s.NSamplesCompleted, s.NSamplesFailed, pub.Issued, pub.Completed-1, pub.Failed)
	}

	ds := filepath.Join(testenv.RepoRoot(t), "testdata", "refruns", "dataset.jsonl")
	full, err := score.ScoreRun(context.Background(), score.Options{Run: src, Dataset: ds, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	cutSc, err := score.ScoreRun(context.Background(), score.Options{Run: dir, Dataset: ds, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if cutSc.Turns.Issued != full.Turns.Issued {
		t.Errorf("inline accuracy over %d issued turns, the whole run's %d: the cut turn must stay in the denominator", cutSc.Turns.Issued, full.Turns.Issued)
	}
}

// TestOfficialSettingsOfReferenceRun: a reference run's official settings are
// what its config.yaml records, a setting it leaves out being the reference's
// default (its config schema: enable_salt, inject_tool_delay and
// stop_issuing_on_first_user_complete default to false). The genuine run records
// all three as official; each one dropped makes the check fail with its reason,
// as score's official gate says for the same run.
func TestOfficialSettingsOfReferenceRun(t *testing.T) {
	src := filepath.Join(testenv.RepoRoot(t), "testdata", "refruns", "c004")
	cfg, err := os.ReadFile(filepath.Join(src, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, drop, want string
	}{
		{name: "as recorded"},
		{name: "no enable_salt", drop: "    enable_salt: true\n", want: "cache salting off"},
		{name: "no inject_tool_delay", drop: "    inject_tool_delay: true\n", want: "inter-turn delays off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.drop != "" && !strings.Contains(string(cfg), tc.drop) {
				t.Fatalf("config.yaml has no line %q", tc.drop)
			}
			dir := filepath.Join(t.TempDir(), "c004")
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(strings.Replace(string(cfg), tc.drop, "", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			run, err := archive.OpenRun(dir, archive.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			defer run.Source.Close()
			p, err := LoadRunWith(context.Background(), run, LoadOptions{NoScores: true})
			if err != nil {
				t.Fatal(err)
			}
			c := officialSettings(NewSystem("ref", []*Point{p}, 0))[0]
			if tc.want == "" {
				if c.Status != CheckPass {
					t.Fatalf("official settings: %s (%s), want pass", c.Status, c.Reason)
				}
				return
			}
			if c.Status != CheckFail || !strings.Contains(c.Reason, tc.want) {
				t.Fatalf("official settings: %s (%s), want fail naming %q", c.Status, c.Reason, tc.want)
			}
			facts, err := run.Facts()
			if err != nil {
				t.Fatal(err)
			}
			if why := strings.Join(official.Reasons(runread.Conditions(facts, 0)), "; "); !strings.Contains(why, tc.want) {
				t.Fatalf("runread.Conditions gives reasons %q, want %q", why, tc.want)
			}
		})
	}
}
