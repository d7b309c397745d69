package ingest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/datasets"
)

// TestTurnMaxTokensIsWhatIsSent checks that turns.parquet's max_tokens is the
// max_completion_tokens each row's request sends (datasets.AppendBody, the
// reference loader's order), not the row's own value: a first user row's
// max_new_tokens passes on to later rows and wins over their own
// max_completion_tokens. Without any value the column is 0 and the run's
// setting is sent.
func TestTurnMaxTokensIsWhatIsSent(t *testing.T) {
	for _, tc := range []struct {
		name       string
		user, tool string // the rows' generation parameters, as JSON members
		// want is the tool row's max_tokens column; sent its request's value with
		// the run's default (datasets.DefaultRunMaxTokens).
		want, sent int
	}{
		{"inherited max_new_tokens wins over own max_completion_tokens", `"max_new_tokens": 256`, `"max_completion_tokens": 100`, 256, 256},
		{"own max_new_tokens wins over the inherited one", `"max_new_tokens": 256`, `"max_new_tokens": 64`, 64, 64},
		{"own max_completion_tokens without max_new_tokens", `"max_completion_tokens": 300`, `"max_completion_tokens": 100`, 100, 100},
		{"an inherited max_completion_tokens yields to the run's", `"max_completion_tokens": 300`, ``, 0, datasets.DefaultRunMaxTokens},
		{"own max_new_tokens 0 is not truthy: own max_completion_tokens", `"max_new_tokens": 256`, `"max_new_tokens": 0, "max_completion_tokens": 100`, 100, 100},
		{"nothing: the run's setting", ``, ``, 0, datasets.DefaultRunMaxTokens},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sep := func(s string) string {
				if s == "" {
					return ""
				}
				return ", " + s
			}
			lines := fmt.Sprintf(`{"conversation_id": "sim_000001", "turn": 1, "role": "user", "content": "hi", "system": "s"%s}
{"conversation_id": "sim_000001", "turn": 2, "role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
{"conversation_id": "sim_000001", "turn": 3, "role": "tool", "tool_results": [{"tool_call_id": "c1", "content": "ok"}]%s}
{"conversation_id": "sim_000001", "turn": 4, "role": "assistant", "content": "I001"}
`, sep(tc.user), sep(tc.tool))
			file := filepath.Join(t.TempDir(), "trace.jsonl")
			if err := os.WriteFile(file, []byte(lines), 0o644); err != nil {
				t.Fatal(err)
			}
			d := ingestFiles(t, file)
			c, _ := d.Conversation("sim_000001")
			ts := d.ConversationTurns(int(c.Index))
			if len(ts) != 2 {
				t.Fatalf("%d client turns", len(ts))
			}
			tool := ts[1]
			var body struct {
				MaxCompletionTokens int `json:"max_completion_tokens"`
			}
			if err := json.Unmarshal(d.AppendBody(nil, &tool, datasets.BodyOptions{}), &body); err != nil {
				t.Fatal(err)
			}
			if int(tool.MaxTokens) != tc.want || body.MaxCompletionTokens != tc.sent {
				t.Errorf("tool row: max_tokens column %d, request sends %d; want %d and %d", tool.MaxTokens, body.MaxCompletionTokens, tc.want, tc.sent)
			}
			if tool.MaxTokens != 0 && int(tool.MaxTokens) != body.MaxCompletionTokens {
				t.Errorf("max_tokens %d is not what the request sends (%d)", tool.MaxTokens, body.MaxCompletionTokens)
			}
		})
	}
}
