package simserver

import (
	"encoding/json"
	"sync"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/schemas"
)

// recordedIndex finds a dataset's recorded assistant message for a request: the
// conversation from the session id (repeat suffix stripped), the client turn from
// the request's message count.
type recordedIndex struct {
	d *datasets.Dataset
	// turns maps a conversation id to its request message counts, each to the Seq
	// of the assistant message recorded right after that client turn.
	turns map[string]map[int]int
	// parsed holds the recorded messages read so far, by conversation index and
	// message Seq ([2]int): a message is decoded once, not on every request that
	// replays it. At most one entry per assistant message of the dataset.
	parsed sync.Map
}

func newRecordedIndex(d *datasets.Dataset) *recordedIndex {
	x := &recordedIndex{d: d, turns: make(map[string]map[int]int, len(d.Conversations))}
	for ci := range d.Conversations {
		c := &d.Conversations[ci]
		msgs := d.Messages(ci)
		m := make(map[int]int)
		for _, t := range d.ConversationTurns(ci) {
			if t.ExpectedTurn == 0 || int(t.MsgEnd) >= len(msgs) {
				continue
			}
			next := &msgs[t.MsgEnd]
			if next.Role != schemas.RoleAssistant || next.Turn != t.ExpectedTurn {
				continue
			}
			n := int(t.MsgEnd)
			if c.HasSystem {
				n++
			}
			m[n] = int(t.MsgEnd)
		}
		x.turns[c.ConversationID] = m
	}
	return x
}

// lookup returns the assistant message recorded after the client turn of session
// whose request carries n messages. Its ToolCalls are shared: copy them to
// change them.
func (x *recordedIndex) lookup(session string, n int) (Recorded, bool) {
	id, _ := datasets.ParseSessionID(session)
	seq, ok := x.turns[id][n]
	if !ok {
		return Recorded{}, false
	}
	c, _ := x.d.Conversation(id)
	key := [2]int{int(c.Index), seq}
	if rec, ok := x.parsed.Load(key); ok {
		return rec.(Recorded), true
	}
	m := &x.d.Messages(int(c.Index))[seq]
	var w message
	if err := json.Unmarshal(m.Wire, &w); err != nil {
		return Recorded{}, false
	}
	rec := Recorded{Content: contentText(w.Content)}
	if w.ReasoningContent != nil {
		rec.Reasoning = *w.ReasoningContent
	}
	for _, tc := range w.ToolCalls {
		rec.ToolCalls = append(rec.ToolCalls, answerCall{ID: tc.ID, Name: tc.Function.Name, Arguments: schemas.ArgumentsText(tc.Function.Arguments)})
	}
	x.parsed.Store(key, rec)
	return rec, true
}
