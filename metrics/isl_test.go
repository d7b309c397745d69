package metrics

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/metrics/metricstest"
	"github.com/agentrace/agentrace/schemas"
)

// TestISLFromDataset checks that, without a tokenizer, a run's ISL comes from the
// counts ingest stored in its dataset (ingest --tokenizer): each turn's ISL is the
// dataset's own count of it, and the point's ISL is tokenizer-sourced even though
// the server reported no usage.
func TestISLFromDataset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	_, err := ingest.Run(context.Background(), ingest.Options{Out: dir, Inputs: []string{testenv.SampleFlat(t)}, Tokenizer: testenv.Tokenizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	d, err := datasets.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var recs []schemas.TurnRecord
	want := map[[2]int32]float64{}
	clock := int64(1e6)
	for ci := range 3 {
		for _, tn := range d.ConversationTurns(ci) {
			if tn.ISL == nil {
				t.Fatalf("turn %d of %s: the dataset stores no ISL", tn.Turn, tn.ConversationID)
			}
			want[[2]int32{int32(ci), tn.Turn}] = float64(*tn.ISL)
			recs = append(recs, schemas.TurnRecord{SessionID: tn.ConversationID, ConversationID: tn.ConversationID, Repeat: 1,
				Trajectory: int32(ci), Turn: tn.Turn, ClientIndex: tn.ClientIndex, Domain: tn.Domain, Status: schemas.StatusOK,
				InWindow: true, ScheduledNs: clock, IssuedNs: clock + 1, FirstTokenNs: clock + 1e6, CompletedNs: clock + 2e6,
				OutputContent: "ok", UsagePromptTokens: -1, UsageCompletionTokens: 5, UsageCachedTokens: -1})
			clock += 3e6
		}
	}
	m := schemas.RunManifest{Config: schemas.RunConfig{Dataset: dir, Concurrency: 1, Salt: true, Stream: true}, State: schemas.RunComplete}
	isl, err := newISLSource(t.Context(), nil).forRun(m)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAccumulator(m, nil, isl)
	for i := range recs {
		a.Add(&recs[i])
	}
	p, err := a.Close()
	if err != nil {
		t.Fatal(err)
	}
	if p.ISLSource != "tokenizer" || p.ISL == nil || p.ISL.Count != len(recs) {
		t.Fatalf("ISL source %q, stats %+v, want %d dataset counts", p.ISLSource, p.ISL, len(recs))
	}
	for i, s := range p.Samples {
		r := recs[i]
		if w := want[[2]int32{r.Trajectory, r.Turn}]; s.ISL != w {
			t.Errorf("turn %d of %s: ISL %v, want the stored %v", r.Turn, r.ConversationID, s.ISL, w)
		}
	}
	// A dataset that cannot be opened leaves ISL to server usage, with a note.
	m.Config.Dataset = filepath.Join(t.TempDir(), "missing")
	if _, err := newISLSource(t.Context(), nil).forRun(m); err == nil {
		t.Error("a missing dataset should be reported")
	}
}

// TestCountFailuresFallBack checks that a tokenizer failure on some turns does not
// stop the report: those turns use server usage and the point is marked.
func TestCountFailuresFallBack(t *testing.T) {
	m, recs := metricstest.HandRun()
	isl := func(rec *schemas.TurnRecord) (int, bool, error) {
		if rec.ClientIndex == 1 {
			return 0, false, errors.New("render chat template: boom")
		}
		return 7, true, nil
	}
	p, err := FoldRun(m, recs, failingCounter{}, isl)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Unofficial || !strings.Contains(p.TokenSource, "+server_usage") || p.ISLSource != "tokenizer+server_usage" {
		t.Errorf("sources %q / %q unofficial %v", p.TokenSource, p.ISLSource, p.Unofficial)
	}
	if !strings.Contains(p.ISLNote, "boom") || !strings.Contains(p.TokenNote, "tokenizer failed on") {
		t.Errorf("notes %q / %q", p.ISLNote, p.TokenNote)
	}
	if p.OutputTokensPerTurnTotal != 152 { // both turns fell back to usage: 101 + 51
		t.Errorf("output tokens %d, want 152", p.OutputTokensPerTurnTotal)
	}
}

type failingCounter struct{}

func (failingCounter) Name() string { return "failing" }
func (failingCounter) CountOSL(schemas.Response) (int, error) {
	return 0, errors.New("content.lstrip is not callable")
}
func (failingCounter) CountTPOTSuffix(schemas.Response, bool) (int, error) {
	return 0, errors.New("content.lstrip is not callable")
}
