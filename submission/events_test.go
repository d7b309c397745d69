package submission

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/agentrace/agentrace/score/scoretest"
	"github.com/agentrace/agentrace/tokens"
)

// TestEventLogRoundTrip: a turn log written as the reference's event log folds,
// by the readers of reference runs, into the summary the turn log folds into:
// the same counts, window, latency, TTFT, OSL (the outputs, reasoning and tool
// calls as the reference carries them), finish reasons and full-run counters,
// for turns ok, failed, skipped after a failure, cut in flight, never issued and
// issued after the window.
func TestEventLogRoundTrip(t *testing.T) {
	tk, err := tokens.Load(context.Background(), testenv.Tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	ms := int64(1_000_000)
	ok := func(conv string, turn int32, issued, first, done int64, content, reasoning, calls, finish string) schemas.TurnRecord {
		return schemas.TurnRecord{SessionID: conv, ConversationID: conv, Repeat: 1, Turn: turn, Domain: schemas.DomainWorkflow,
			Status: schemas.StatusOK, HTTPStatus: 200, IssuedNs: issued, ScheduledNs: issued, HeadersNs: first, FirstTokenNs: first, CompletedNs: done,
			ChunkTimesNs: []int64{0, 3 * ms, 9 * ms}, Chunks: 3, InWindow: true, OutputContent: content, OutputReasoning: reasoning,
			OutputToolCalls: calls, FinishReason: finish, FirstContentBytes: int32(min(len(content), 5)), FirstReasoningBytes: int32(min(len(reasoning), 4)),
			UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1}
	}
	recs := []schemas.TurnRecord{
		ok("sim_000001", 1, 1*ms, 20*ms, 60*ms, "The order is on its way.", "Look it up first.", "", "stop"),
		ok("sim_000001", 3, 70*ms, 90*ms, 140*ms, "", "Call the tool.", `[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"id\": 7}"}}]`, "tool_calls"),
		ok("sim_000002", 1, 2*ms, 25*ms, 80*ms, "Hello there, how can I help?", "", "", "stop"),
		{SessionID: "sim_000002", ConversationID: "sim_000002", Repeat: 1, Turn: 3, Domain: schemas.DomainWorkflow, Status: schemas.StatusError,
			Error: "HTTP 500: boom", HTTPStatus: 500, IssuedNs: 90 * ms, ScheduledNs: 90 * ms, CompletedNs: 95 * ms, InWindow: true,
			UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1},
		{SessionID: "sim_000002", ConversationID: "sim_000002", Repeat: 1, Turn: 5, Domain: schemas.DomainWorkflow, Status: schemas.StatusAborted,
			Error: "aborted after an earlier failure", InWindow: true, UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1},
		ok("sim_000003", 1, 3*ms, 30*ms, 100*ms, "A third answer, longer than the others by a few words.", "", "", "length"),
		ok("sim_000003", 3, 150*ms, 160*ms, 200*ms, "After the window.", "", "", "stop"),
		{SessionID: "sim_000003", ConversationID: "sim_000003", Repeat: 1, Turn: 5, Domain: schemas.DomainWorkflow, Status: statusCancelledForTest,
			Error: "cancelled", IssuedNs: 210 * ms, ScheduledNs: 210 * ms, UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1},
		{SessionID: "sim_000004", ConversationID: "sim_000004", Repeat: 1, Turn: 1, Domain: schemas.DomainWorkflow, Status: schemas.StatusNotIssued,
			UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1},
	}
	recs[6].InWindow = false
	counts := map[string]int{}
	for _, r := range recs {
		counts[r.Status]++
	}
	m := schemas.RunManifest{SchemaVersion: schemas.Version, ToolVersion: schemas.ToolVersion, TurnLogVersion: schemas.TurnLogVersion,
		Config:      schemas.RunConfig{Dataset: "ds", Model: "Qwen/Qwen3.6-35B-A3B", Concurrency: 3, Trajectories: 4, Salt: true, Delays: true, DelayScale: 1, Stream: true},
		DatasetHash: "sha256:0", DatasetSize: 4, WindowEndNs: 145 * ms, LastTrackedDoneNs: 140 * ms, EndedNs: 210 * ms, Counts: counts, State: schemas.RunInterrupted}
	root := t.TempDir()
	runDir := filepath.Join(root, "run")
	os.MkdirAll(runDir, 0o755)
	scoretest.WriteLog(t, filepath.Join(runDir, schemas.TurnLogFile), recs, 0)
	if err := runlog.WriteManifest(runDir, m); err != nil {
		t.Fatal(err)
	}

	load := func(dir string, onRecord func(*archive.Run) func(*schemas.TurnRecord) error) *curve.Point {
		t.Helper()
		pts, _, src, err := LoadAgentraceRuns(context.Background(), dir, curve.LoadOptions{Tokenizer: tk}, onRecord)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		return pts[0]
	}
	l := &eventLog{}
	own := load(runDir, func(*archive.Run) func(*schemas.TurnRecord) error { return l.add })
	var b bytes.Buffer
	if err := l.write(&b, m.WindowEndNs); err != nil {
		t.Fatal(err)
	}
	evDir := filepath.Join(root, "events")
	os.MkdirAll(evDir, 0o755)
	os.WriteFile(filepath.Join(evDir, EventsFile), b.Bytes(), 0o644)
	src, err := archive.Open(evDir, archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	runs := archive.Find(src)
	if len(runs) != 1 || runs[0].Kind != archive.KindReference {
		t.Fatalf("the event log reads as %d runs (%v)", len(runs), runs)
	}
	back, err := curve.LoadRun(context.Background(), runs[0], tk, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	a, z := own.Summary, back.Summary
	if a.NSamplesIssued != z.NSamplesIssued || a.NSamplesCompleted != z.NSamplesCompleted || a.NSamplesFailed != z.NSamplesFailed ||
		a.DurationNs != z.DurationNs || a.FullRun != z.FullRun {
		t.Errorf("counts: turn log %d/%d/%d %d ns %+v, event log %d/%d/%d %d ns %+v", a.NSamplesIssued, a.NSamplesCompleted, a.NSamplesFailed, a.DurationNs, a.FullRun,
			z.NSamplesIssued, z.NSamplesCompleted, z.NSamplesFailed, z.DurationNs, z.FullRun)
	}
	for _, blk := range []struct {
		name string
		x, y *metrics.StatBlock
	}{{"latency", a.Latency, z.Latency}, {"ttft", a.TTFT, z.TTFT}, {"osl", a.OSL, z.OSL}, {"osl full run", a.OSLFullRun, z.OSLFullRun}, {"tpot", a.TPOT, z.TPOT}} {
		if (blk.x == nil) != (blk.y == nil) || blk.x != nil && (blk.x.Count != blk.y.Count || blk.x.Total != blk.y.Total) {
			t.Errorf("%s: turn log %+v, event log %+v", blk.name, blk.x, blk.y)
		}
	}
	for k, v := range a.FinishReasonCounts {
		if z.FinishReasonCounts[k] != v {
			t.Errorf("finish reason %s: %d, event log %d", k, v, z.FinishReasonCounts[k])
		}
	}
}

// statusCancelledForTest is the turn log's status of a turn cut in flight.
const statusCancelledForTest = "cancelled"
