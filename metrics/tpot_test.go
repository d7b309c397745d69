package metrics

import (
	"testing"

	"github.com/agentrace/agentrace/schemas"
)

// argsCounter counts one token per byte of content, reasoning and tool-call
// arguments, for OSL and TPOT alike.
type argsCounter struct{}

func (argsCounter) Name() string { return "bytes+args" }
func (argsCounter) CountOSL(r schemas.Response) (int, error) {
	return argsCounter{}.CountTPOTSuffix(r, true)
}
func (argsCounter) CountTPOTSuffix(r schemas.Response, _ bool) (int, error) {
	n := len(r.Content) + len(r.Reasoning)
	for _, c := range r.ToolCalls {
		n += len(c.Function.Arguments)
	}
	return n, nil
}

// TestTPOTFirstToolCallChunk: for an answer of tool calls
// alone, TPOT counts the tool calls merged without their first chunk, as the
// reference's text_after_first_chunk does; when nothing is left the sample is
// dropped (samples <= 0 are). With reasoning, the first reasoning chunk is
// dropped and all content counted.
func TestTPOTFirstToolCallChunk(t *testing.T) {
	ms := int64(1e6)
	row := func(traj int32, content, reasoning, calls, tpotCalls string, firstC, firstR int32) schemas.TurnRecord {
		return schemas.TurnRecord{SessionID: "s", Trajectory: traj, Domain: "coding", Status: "ok", InWindow: true,
			IssuedNs: 1 * ms, FirstTokenNs: 11 * ms, CompletedNs: 111 * ms,
			OutputContent: content, OutputReasoning: reasoning, OutputToolCalls: calls, TPOTToolCalls: tpotCalls,
			FirstContentBytes: firstC, FirstReasoningBytes: firstR,
			UsagePromptTokens: -1, UsageCompletionTokens: -1, UsageCachedTokens: -1}
	}
	const calls = `[{"index":0,"id":"c","type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"ls\"}"}}]`
	for _, tc := range []struct {
		name   string
		rec    schemas.TurnRecord
		tokens int // 0: no TPOT sample
	}{
		// 100 ms after the first chunk over the tokens after it.
		{"tool calls, first chunk dropped", row(0, "", "", calls, `[{"index":0,"type":"function","function":{"name":"","arguments":"\"ls\"}"}}]`, 0, 0), 5},
		{"one whole tool-call chunk: dropped sample", row(1, "", "", calls, `[]`, 0, 0), 0},
		{"version 1 row (no tpot_tool_calls): nothing dropped", row(2, "", "", calls, "", 0, 0), 12},
		{"reasoning: first reasoning chunk dropped, all content", row(3, "Done", "think more", "", "", 4, 5), 4 + 5},
		{"content: first content chunk dropped", row(4, "Hello world", "", "", "", 5, 0), 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := schemas.RunManifest{Config: schemas.RunConfig{Stream: true}, State: schemas.RunComplete}
			p, err := FoldRun(m, []schemas.TurnRecord{tc.rec}, argsCounter{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.tokens == 0 {
				if p.TPOTP50Ms.Valid() {
					t.Fatalf("TPOT %v ms, want no sample", p.TPOTP50Ms)
				}
				return
			}
			if want := 100.0 / float64(tc.tokens); !near(float64(p.TPOTP50Ms), want) {
				t.Fatalf("TPOT %v ms, want %v (%d tokens)", p.TPOTP50Ms, want, tc.tokens)
			}
		})
	}
}
