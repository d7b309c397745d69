package score

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/python"
	"github.com/agentrace/agentrace/schemas"
	"github.com/parquet-go/parquet-go"
	"github.com/sourcegraph/conc/pool"
)

// Expectation is the ground truth of one client turn: the assistant row that
// immediately follows it in the dataset.
type Expectation struct {
	ConversationID string
	// ClientTurn is the dataset turn number of the user or tool row (the turn that
	// is issued); AssistantTurn that of the assistant row that answers it.
	ClientTurn    int32
	AssistantTurn int32
	Domain        string
	// Intents are the expected intent codes (workflow), Actions the expected bash
	// actions (coding). The turn is scorable when its domain's list is not empty.
	Intents []string
	Actions []string
}

// Scorable tells whether the turn has ground truth for its domain.
func (e *Expectation) Scorable() bool {
	if e.Domain == schemas.DomainWorkflow {
		return len(e.Intents) > 0
	}
	return len(e.Actions) > 0
}

type turnKey struct {
	conv string
	turn int32
}

// Truth is the ground truth of a dataset: an Expectation for every client row that
// is immediately followed by an assistant row. It is read-only once built and safe
// for concurrent use.
type Truth struct {
	byKey map[turnKey]*Expectation
	// sorted holds every expectation ordered by (conversation id, client turn).
	sorted []*Expectation
	// Hash is the dataset's content hash, "" when unknown.
	Hash string
	// Size is the number of conversations of the dataset (0 when unknown).
	Size int
}

// Len is the number of expected turns.
func (t *Truth) Len() int { return len(t.sorted) }

// Lookup returns the expectation of a conversation's client turn.
func (t *Truth) Lookup(conversationID string, clientTurn int32) (*Expectation, bool) {
	e, ok := t.byKey[turnKey{conversationID, clientTurn}]
	return e, ok
}

// truthMessage is the part of a messages.parquet row that ground truth needs.
type truthMessage struct {
	ConversationID  string
	Seq             int32
	Turn            int32
	Role            string
	ToolCalls       string
	IntentCodesJSON string
}

// readTruthMessages reads the truthMessage of every row of a messages table,
// column by column (infile.ReadColumns): a conversation's id and a role are one
// string for all their rows.
func readTruthMessages(ctx context.Context, path string) ([]truthMessage, error) {
	var rows []truthMessage
	roles := map[string]string{}
	columns := []string{"conversation_id", "seq", "turn", "role", "tool_calls", "intent_codes"} // truthMessage's fields
	// tool_calls and intent_codes are null when absent (version 3).
	err := infile.ReadColumns(ctx, path, columns, true, func(n int64) { rows = make([]truthMessage, n) }, func(col int, row int64, v parquet.Value) error {
		m := &rows[row]
		switch col {
		case 0:
			if id := v.ByteArray(); row > 0 && rows[row-1].ConversationID == string(id) {
				m.ConversationID = rows[row-1].ConversationID
			} else {
				m.ConversationID = string(id)
			}
		case 1:
			m.Seq = v.Int32()
		case 2:
			m.Turn = v.Int32()
		case 3:
			role, ok := roles[string(v.ByteArray())]
			if !ok {
				role = string(v.ByteArray())
				roles[role] = role
			}
			m.Role = role
		case 4:
			m.ToolCalls = string(v.ByteArray())
		case 5:
			m.IntentCodesJSON = string(v.ByteArray())
		}
		return nil
	})
	return rows, err
}

// NewTruth builds the ground truth of a dataset from its wire messages: each user
// or tool row immediately followed (in turn order) by an assistant row expects that
// assistant row (spec §8).
func NewTruth(d *datasets.Dataset) *Truth {
	convs := make([][]truthMessage, len(d.Conversations))
	for ci := range d.Conversations {
		msgs := d.Messages(ci)
		tm := make([]truthMessage, len(msgs))
		for k := range msgs {
			m := &msgs[k]
			tm[k] = truthMessage{m.ConversationID, m.Seq, m.Turn, m.Role, m.ToolCalls, m.IntentCodesJSON}
		}
		convs[ci] = tm
	}
	return newTruth(convs, d.Manifest.ContentHash)
}

// newTruth builds the expectations of each conversation's messages (in Seq order),
// the conversations in parallel.
func newTruth(convs [][]truthMessage, hash string) *Truth {
	per := make([][]*Expectation, len(convs))
	p := pool.New().WithMaxGoroutines(runtime.GOMAXPROCS(0))
	const batch = 64
	for start := 0; start < len(convs); start += batch {
		end := min(start+batch, len(convs))
		p.Go(func() {
			for i := start; i < end; i++ {
				per[i] = conversationExpectations(convs[i])
			}
		})
	}
	p.Wait()
	t := &Truth{byKey: make(map[turnKey]*Expectation), Hash: hash}
	n := 0
	for _, es := range per {
		for _, e := range es {
			t.byKey[turnKey{e.ConversationID, e.ClientTurn}] = e
		}
		n += len(es)
	}
	// Ordered by (conversation id, client turn): the conversations sorted by id,
	// each one's expectations in the client-turn order they were found in.
	order := make([]int, 0, len(per))
	for i, es := range per {
		if len(es) > 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return per[order[a]][0].ConversationID < per[order[b]][0].ConversationID })
	t.sorted = make([]*Expectation, 0, n)
	for _, i := range order {
		for _, e := range per[i] {
			if t.byKey[turnKey{e.ConversationID, e.ClientTurn}] == e { // a key given twice counts once, as the map holds it
				t.sorted = append(t.sorted, e)
			}
		}
	}
	return t
}

// conversationExpectations walks one conversation's messages row by row (a row is
// the run of messages with one turn number).
func conversationExpectations(msgs []truthMessage) []*Expectation {
	if len(msgs) == 0 {
		return nil
	}
	id := msgs[0].ConversationID
	domain := ReferenceDomain(id)
	var out []*Expectation
	prevRole, prevTurn := "", int32(0)
	for k := 0; k < len(msgs); {
		m := &msgs[k]
		end := k + 1
		for end < len(msgs) && msgs[end].Turn == m.Turn {
			end++
		}
		if m.Role == schemas.RoleAssistant && (prevRole == schemas.RoleUser || prevRole == schemas.RoleTool) {
			e := &Expectation{ConversationID: id, ClientTurn: prevTurn, AssistantTurn: m.Turn, Domain: domain}
			if domain == schemas.DomainWorkflow {
				e.Intents = GroundTruthIntents([]byte(m.IntentCodesJSON))
			} else {
				e.Actions = ToolCallsActions([]byte(m.ToolCalls))
			}
			out = append(out, e)
		}
		prevRole, prevTurn = m.Role, m.Turn
		k = end
	}
	return out
}

// readTruthDir builds the ground truth of a dataset directory, reading only the
// columns of messages.parquet it needs.
func readTruthDir(ctx context.Context, dir string) (*Truth, error) {
	var m schemas.DatasetManifest
	data, err := infile.ReadFile(ctx, filepath.Join(dir, schemas.DatasetManifestFile), infile.SmallFile)
	if err != nil {
		return nil, fmt.Errorf("open dataset %q: %w", dir, err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("open dataset %q: parse manifest: %w", dir, err)
	}
	if !schemas.DatasetVersionRead(m.SchemaVersion) {
		return nil, fmt.Errorf("open dataset %q: schema version %q, this agentrace reads %q and %q", dir, m.SchemaVersion, schemas.DatasetVersion, schemas.DatasetVersionPrevious)
	}
	rows, err := readTruthMessages(ctx, filepath.Join(dir, schemas.MessagesFile))
	if err != nil {
		return nil, fmt.Errorf("open dataset %q: read %s: %w", dir, schemas.MessagesFile, err)
	}
	var convs [][]truthMessage
	seen := map[string]bool{}
	for start := 0; start < len(rows); {
		id := rows[start].ConversationID
		end := start
		for end < len(rows) && rows[end].ConversationID == id {
			if int(rows[end].Seq) != end-start {
				return nil, fmt.Errorf("open dataset %q: %s: conversation %q: message %d has seq %d", dir, schemas.MessagesFile, id, end-start, rows[end].Seq)
			}
			end++
		}
		if seen[id] {
			return nil, fmt.Errorf("open dataset %q: %s: messages of conversation %q are not contiguous", dir, schemas.MessagesFile, id)
		}
		seen[id] = true
		convs = append(convs, rows[start:end:end])
		start = end
	}
	t := newTruth(convs, m.ContentHash)
	t.Size = len(convs)
	return t, nil
}

// ReferenceDomain is the reference scorer's domain of a source conversation id:
// workflow when it matches ^sim_\d+$ (Python semantics: Unicode digits, and $ also
// matches before a final newline), coding otherwise.
func ReferenceDomain(conversationID string) string {
	s, ok := strings.CutPrefix(conversationID, "sim_")
	if !ok {
		return schemas.DomainCoding
	}
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return schemas.DomainCoding
	}
	for _, r := range s {
		if !python.IsDigit(r) {
			return schemas.DomainCoding
		}
	}
	return schemas.DomainWorkflow
}
