package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/metrics/metricstest"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/curve"
)

// TestFullRunOSLCounters: the full-run OSL block counts every turn issued, in the
// window or after it, as the reference's compute_full_run_osl does: an ok turn
// with output in the block, an empty output and a failed or skipped turn (a
// COMPLETE without output) as empty, a turn cut in flight as missing (which makes
// the block partial), a turn never issued nowhere. The summary writes the
// counters; a reader of a partial block never gives its mean to the OSL gate.
func TestFullRunOSLCounters(t *testing.T) {
	m, recs := metricstest.Run(metricstest.RunOptions{Concurrency: 4, Trajectories: 8, DatasetSize: 8, FailEvery: 4, Model: "Qwen/Qwen3.6-35B-A3B"})
	var want metrics.FullRunCounts
	var okTurns []int
	for i := range recs {
		switch recs[i].Status {
		case schemas.StatusOK:
			okTurns = append(okTurns, i)
		case schemas.StatusError, schemas.StatusAborted:
			want.Empty++
		}
	}
	empty, cut, never := okTurns[0], okTurns[1], okTurns[len(okTurns)-1]
	recs[empty].OutputContent, recs[empty].FirstContentBytes = "", 0
	recs[cut].Status, recs[cut].CompletedNs, recs[cut].FinishReason = schemas.StatusCancelled, 0, ""
	recs[cut].OutputContent, recs[cut].ChunkTimesNs, recs[cut].Chunks = "", nil, 0
	recs[never] = schemas.TurnRecord{SessionID: recs[never].SessionID, ConversationID: recs[never].ConversationID, Repeat: recs[never].Repeat,
		Trajectory: recs[never].Trajectory, Turn: recs[never].Turn, ClientIndex: recs[never].ClientIndex, Domain: recs[never].Domain,
		Status: schemas.StatusNotIssued, UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1}
	want.Empty++
	want.Missing = 1
	want.Counted = len(okTurns) - 3
	m.Counts = map[string]int{}
	for _, r := range recs {
		m.Counts[r.Status]++
	}
	dir := filepath.Join(t.TempDir(), "c4")
	writeRun(t, dir, m, recs)
	p, err := curve.LoadPoint(context.Background(), dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Summary.FullRun
	got.Counted = p.Summary.OSLFullRun.Count
	if got != want || !got.Partial() {
		t.Fatalf("full-run counters %+v (partial %t), want %+v, partial", got, got.Partial(), want)
	}
	b, err := json.Marshal(p.Summary)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		GitSHA  *string `json:"git_sha"`
		FullRun struct {
			Lengths     map[string]any `json:"output_sequence_lengths"`
			Counted     int            `json:"n_turns_counted"`
			Empty       int            `json:"n_empty"`
			Errors      int            `json:"n_errors"`
			Undecodable int            `json:"n_undecodable"`
			Missing     int            `json:"n_missing"`
			Partial     bool           `json:"partial"`
		} `json:"output_sequence_lengths_full_run"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	f := d.FullRun
	if (metrics.FullRunCounts{Counted: f.Counted, Empty: f.Empty, Errors: f.Errors, Undecodable: f.Undecodable, Missing: f.Missing}) != want || !f.Partial || f.Lengths["avg"] == nil {
		t.Errorf("written block %+v, want %+v partial", f, want)
	}
	// A test binary records no revision: git_sha is null, as the reference writes
	// it outside a checkout.
	if (d.GitSHA == nil) != (schemas.GitSHA() == "") {
		t.Errorf("git_sha %v, build revision %q", d.GitSHA, schemas.GitSHA())
	}

	// Read back as a submission point's summary: partial, so not the gate's input.
	point := filepath.Join(t.TempDir(), "sys", "qwen3_6-35b-a3b", "r4")
	if err := os.MkdirAll(point, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{archive.SummaryFile: b, archive.PointFile: []byte("concurrency: 4\n")} {
		if err := os.WriteFile(filepath.Join(point, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := archive.Open(filepath.Dir(filepath.Dir(point)), archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	runs := archive.Find(src)
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	so, ok, err := score.ReadSummaryOSL(runs[0])
	if err != nil || ok || so.Checker || so.Problem == nil || so.Problem.Severity != schemas.SeverityWarning {
		t.Errorf("a partial block: %+v ok %t %v; want no gate input and a warning", so, ok, err)
	}
}
