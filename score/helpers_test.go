package score

import (
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/schemas"
)

// row is one flat dataset row for building test datasets.
type row struct {
	role      string
	content   string
	toolCalls string // JSON array, "" when none
	intents   string // JSON, "" when absent
}

// conv is one test conversation: its rows get turns 1..N.
type conv struct {
	id   string
	rows []row
}

// buildDataset makes an in-memory dataset from flat rows (tool rows become one
// message each).
func buildDataset(t testing.TB, convs []conv) *datasets.Dataset {
	t.Helper()
	var cs []schemas.Conversation
	var msgs []schemas.Message
	var turns []schemas.Turn
	for ci, c := range convs {
		sc := schemas.Conversation{ConversationID: c.id, Index: int32(ci), Domain: datasets.Domain(c.id), Rows: int32(len(c.rows))}
		var cmsgs []schemas.Message
		var cturns []schemas.Turn
		for i, r := range c.rows {
			turn := int32(i + 1)
			m := schemas.Message{ConversationID: c.id, Seq: int32(len(cmsgs)), Turn: turn, Role: r.role,
				ToolCalls: r.toolCalls, IntentCodesJSON: r.intents}
			if r.role == schemas.RoleTool {
				id := "call"
				m.ToolCallID = &id
			}
			content := r.content
			m.Content = &content
			if r.role != schemas.RoleAssistant {
				ct := schemas.Turn{ConversationID: c.id, ConvIndex: int32(ci), Domain: sc.Domain, Turn: turn,
					ClientIndex: int32(len(cturns)), Role: r.role, MsgStart: int32(len(cmsgs)), MsgEnd: int32(len(cmsgs) + 1)}
				if i+1 < len(c.rows) && c.rows[i+1].role == schemas.RoleAssistant {
					ct.ExpectedTurn = turn + 1
				}
				cturns = append(cturns, ct)
				sc.ClientTurns++
			} else {
				sc.AssistantTurns++
			}
			m.Wire = []byte(`{}`)
			cmsgs = append(cmsgs, m)
		}
		sc.Messages = int32(len(cmsgs))
		cs = append(cs, sc)
		msgs = append(msgs, cmsgs...)
		turns = append(turns, cturns...)
	}
	d, err := datasets.New(schemas.DatasetManifest{SchemaVersion: schemas.DatasetVersion, ContentHash: "test"}, cs, msgs, turns)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// specRunDataset is the dataset of the spec's run vectors: code1 expects
// `python -m pytest`, sim_1 expects intent I042.
func specRunDataset(t testing.TB) *datasets.Dataset {
	return buildDataset(t, []conv{
		{"code1", []row{
			{role: "user", content: "fix it"},
			{role: "assistant", content: "", toolCalls: string(bashCall("python -m pytest"))},
		}},
		{"sim_1", []row{
			{role: "user", content: "route me"},
			{role: "assistant", content: "ok", intents: `["I042"]`},
		}},
	})
}
