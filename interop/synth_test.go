package interop

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/schemas"
)

// TestSynthStatsMatchPublished ingests a scale-1 synth output and checks that
// `agentrace stats` (ingest.ComputeStats) lands within 10% of the published dataset
// table: trajectories and client turns per domain, and each domain's turn-count
// shape (coding: dozens to hundreds per trajectory, right-skewed; workflow: about
// 8 to 9).
func TestSynthStatsMatchPublished(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests 90 MB")
	}
	ctx := context.Background()
	dir := t.TempDir()
	traces := filepath.Join(dir, "synth.jsonl")
	if _, err := synth.WriteFile(ctx, traces, synth.Options{Scale: 1, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest.Run(ctx, ingest.Options{Out: filepath.Join(dir, "ds"), Inputs: []string{traces}}); err != nil {
		t.Fatal(err)
	}
	d, err := datasets.Open(context.Background(), filepath.Join(dir, "ds"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := ingest.ComputeStats(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]ingest.DomainStats{}
	for _, s := range st.Domains {
		by[s.Domain] = s
	}
	coding, workflow := by[schemas.DomainCoding], by[schemas.DomainWorkflow]
	within := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.10*want {
			t.Errorf("%s: stats %.1f, published %.1f (more than 10%% off)", name, got, want)
		}
	}
	within("total trajectories", float64(st.Total.Trajectories), 613)
	within("coding trajectories", float64(coding.Trajectories), 113)
	within("workflow trajectories", float64(workflow.Trajectories), 500)
	within("coding client turns", float64(coding.ClientTurns), 15981)
	within("workflow client turns", float64(workflow.ClientTurns), 4316)
	within("coding mean turns per trajectory", coding.TurnsPerTrajectory.Mean, 15981.0/113)
	within("workflow mean turns per trajectory", workflow.TurnsPerTrajectory.Mean, 4316.0/500)
	if c := coding.TurnsPerTrajectory; c.Min < 20 || c.Max < 200 || c.Median < 100 || c.P90 < 1.5*c.Median {
		t.Errorf("coding turns per trajectory %+v: want dozens to hundreds, right-skewed", c)
	}
	if w := workflow.TurnsPerTrajectory; w.Median < 7 || w.Median > 10 || w.P90 > 14 {
		t.Errorf("workflow turns per trajectory %+v: want about 8 to 9", w)
	}
	if coding.AssistantTurns != coding.ClientTurns || workflow.AssistantTurns != workflow.ClientTurns {
		t.Errorf("every client turn has its recorded answer: %d/%d coding, %d/%d workflow",
			coding.AssistantTurns, coding.ClientTurns, workflow.AssistantTurns, workflow.ClientTurns)
	}
	if workflow.SystemPrompts != 1 || coding.SystemPrompts != 1 {
		t.Errorf("distinct system prompts: coding %d, workflow %d; want one shared prompt each", coding.SystemPrompts, workflow.SystemPrompts)
	}
	if m := coding.Delay.Median; m < 0.05 || m > 0.075 {
		t.Errorf("coding median delay %.3f s, want about 0.06 s", m)
	}
	t.Logf("coding: %d trajectories, %d client turns, turns/trajectory min %.0f median %.0f p90 %.0f max %.0f, history at last turn median %.0f KB",
		coding.Trajectories, coding.ClientTurns, coding.TurnsPerTrajectory.Min, coding.TurnsPerTrajectory.Median, coding.TurnsPerTrajectory.P90, coding.TurnsPerTrajectory.Max, coding.HistoryBytes.Median/1e3)
	t.Logf("workflow: %d trajectories, %d client turns, turns/trajectory min %.0f median %.0f p90 %.0f max %.0f, shared prefix %d bytes",
		workflow.Trajectories, workflow.ClientTurns, workflow.TurnsPerTrajectory.Min, workflow.TurnsPerTrajectory.Median, workflow.TurnsPerTrajectory.P90, workflow.TurnsPerTrajectory.Max, workflow.SharedPrefixBytes)
}
