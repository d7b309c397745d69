// Package scoretest builds large scoring inputs for benchmarks and tests: a trace
// tiled to many conversations and synthetic run directories whose outputs match
// the dataset's ground truth with a given fidelity.
package scoretest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/relpath"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// isWorkflowID tells whether id matches ^sim_\d+$.
func isWorkflowID(id string) bool {
	digits, ok := strings.CutPrefix(id, "sim_")
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// TileTrace writes times copies of the flat JSONL trace src to dst, each copy's
// conversation ids made unique (C-tK, or sim_NK for workflow ids, which keeps them
// workflow ids). Metadata lines are copied once.
func TileTrace(src, dst string, times int) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("tile trace: %w", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	f, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("tile trace: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for k := 0; k < times; k++ {
		for i, line := range lines {
			var row map[string]json.RawMessage
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				f.Close()
				return fmt.Errorf("tile trace %q line %d: %w", src, i+1, err)
			}
			var id string
			if err := json.Unmarshal(row["conversation_id"], &id); err != nil {
				if k == 0 {
					w.WriteString(line + "\n") // a metadata line
				}
				continue
			}
			if isWorkflowID(id) {
				id = fmt.Sprintf("%s%03d", id, k)
			} else {
				id = fmt.Sprintf("%s-t%d", id, k)
			}
			row["conversation_id"], _ = json.Marshal(id)
			b, err := json.Marshal(row)
			if err != nil {
				f.Close()
				return err
			}
			w.Write(b)
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("tile trace: %w", err)
	}
	return f.Close()
}

// Ingest ingests the traces into the new dataset folder out and opens it; any
// error fails tb.
func Ingest(tb testing.TB, out string, traces ...string) *datasets.Dataset {
	tb.Helper()
	if err := ingest.Files(context.Background(), out, traces...); err != nil {
		tb.Fatal(err)
	}
	d, err := datasets.Open(context.Background(), out)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// WriteLog writes recs as the turn log at path, flushing a batch after the first
// flushAfter of them when that is above 0 (so that a log cut after it keeps them);
// any error fails tb.
func WriteLog(tb testing.TB, path string, recs []schemas.TurnRecord, flushAfter int) {
	tb.Helper()
	f, err := runlog.Create(path, memory.DefaultAllocator)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range recs {
		if err := f.Write(&recs[i]); err != nil {
			tb.Fatal(err)
		}
		if i == flushAfter-1 {
			if err := f.Flush(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// RunOptions shapes a synthetic run.
type RunOptions struct {
	// Repeats is the number of passes over the dataset (default 1).
	Repeats int
	// Fidelity is the probability that a turn's output is the dataset's expected
	// assistant message; otherwise it is a made-up answer.
	Fidelity float64
	// FailRate is the probability that a turn fails (its trajectory's later turns
	// are then aborted).
	FailRate float64
	Seed     uint64
	// Model and Concurrency go into the manifest.
	Model       string
	Concurrency int
}

// WriteRun writes a run directory for dataset d (opened from datasetDir): a
// turns.arrows with one record per client turn of every trajectory instance and a
// manifest naming the dataset. It returns the number of records.
func WriteRun(dir, datasetDir string, d *datasets.Dataset, o RunOptions) (int, error) {
	if o.Repeats <= 0 {
		o.Repeats = 1
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	r := rand.New(rand.NewPCG(o.Seed, 1))
	f, err := runlog.Create(filepath.Join(dir, schemas.TurnLogFile), memory.DefaultAllocator)
	if err != nil {
		return 0, err
	}
	n := 0
	counts := map[string]int{}
	var now int64
	for rep := 1; rep <= o.Repeats; rep++ {
		for ci := range d.Conversations {
			c := &d.Conversations[ci]
			msgs := d.Messages(ci)
			failed := false
			for _, t := range d.ConversationTurns(ci) {
				now += 1000
				rec := schemas.TurnRecord{SessionID: datasets.SessionID(c.ConversationID, rep), ConversationID: c.ConversationID,
					Repeat: int32(rep), Trajectory: int32((rep-1)*len(d.Conversations) + ci), Turn: t.Turn, ClientIndex: t.ClientIndex,
					Domain: c.Domain, IssuedNs: now, CompletedNs: now + 500, InWindow: true,
					UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1}
				switch {
				case failed:
					rec.Status, rec.IssuedNs, rec.CompletedNs = schemas.StatusAborted, 0, 0
				case r.Float64() < o.FailRate:
					rec.Status, rec.Error, failed = schemas.StatusError, "HTTP 500", true
				default:
					rec.Status = schemas.StatusOK
					fillOutput(&rec, r, msgs, t.ExpectedTurn, r.Float64() < o.Fidelity)
				}
				if err := f.Write(&rec); err != nil {
					f.Close()
					return n, err
				}
				counts[rec.Status]++
				n++
			}
		}
	}
	if err := f.Close(); err != nil {
		return n, err
	}
	m := schemas.RunManifest{SchemaVersion: schemas.Version, ToolVersion: schemas.ToolVersion, DatasetHash: d.Manifest.ContentHash,
		DatasetSize: len(d.Conversations), State: schemas.RunComplete, Counts: counts, TurnLogVersion: schemas.TurnLogVersion,
		Config: schemas.RunConfig{Model: o.Model, Concurrency: o.Concurrency, Trajectories: o.Repeats * len(d.Conversations)}}
	m.Config.Dataset, m.Config.DatasetAbs = relpath.Record(dir, datasetDir)
	return n, runlog.WriteManifest(dir, m)
}

// fillOutput sets a record's output: the expected assistant message (faithful), or
// a made-up answer.
func fillOutput(rec *schemas.TurnRecord, r *rand.Rand, msgs []schemas.Message, expected int32, faithful bool) {
	var m *schemas.Message
	for i := range msgs {
		if msgs[i].Turn == expected && msgs[i].Role == schemas.RoleAssistant {
			m = &msgs[i]
			break
		}
	}
	if faithful && m != nil {
		if m.Content != nil && !m.ContentJSON {
			rec.OutputContent = *m.Content
		}
		if m.ReasoningContent != nil {
			rec.OutputReasoning = *m.ReasoningContent
		}
		if m.ToolCalls != "" {
			rec.OutputToolCalls = mergedCalls(m.ToolCalls)
		}
		if codes := m.IntentCodesJSON; codes != "" {
			var list []any
			if json.Unmarshal([]byte(codes), &list) == nil {
				for _, v := range list {
					if s, ok := v.(string); ok && s != "" {
						rec.OutputContent += "\nintent: " + s
						break
					}
				}
			}
		}
	} else {
		cmds := []string{"ls -la", "cat README.md | head -5", "python -c 'print(1)'", "grep -rn foo src", "git status"}
		rec.OutputContent = fmt.Sprintf("Trying something else (I%03d).", r.IntN(1000))
		args, _ := json.Marshal(map[string]string{"command": cmds[r.IntN(len(cmds))]})
		calls, _ := json.Marshal([]schemas.ToolCall{{Index: 0, ID: "call_x", Type: "function",
			Function: schemas.ToolFunction{Name: "bash", Arguments: string(args)}}})
		rec.OutputToolCalls = string(calls)
	}
	rec.UsageCompletionTokens = int32((len(rec.OutputContent)+len(rec.OutputReasoning)+len(rec.OutputToolCalls))/4 + 1)
	rec.Chunks = 1
}

// mergedCalls turns a dataset message's tool_calls into the merged form a replay
// log holds (arguments as a string).
func mergedCalls(raw string) string {
	out, err := datasets.ToolCalls(raw)
	if err != nil {
		return ""
	}
	b, _ := json.Marshal(out)
	return string(b)
}
