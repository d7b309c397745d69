// Package diff compares two dataset directories, as a maintainer does between two
// versions of the benchmark's dataset: which conversations were added, removed or
// changed, judged by each conversation's content digest (the unit of the
// manifest's content hash, datasets.ConversationDigest); for a changed one, the
// first message that differs and what differs in it (content, reasoning, tool
// calls, tool results, intent codes, the client turn's delay, tools or parameters);
// every changed delay; and, per domain, how client turns, history bytes and ISL
// moved.
//
// Compare reads both datasets at once and hashes their conversations in parallel.
// Both must have the schema version this agentrace reads: a dataset of another
// version is refused with the way to re-ingest it, never half-compared.
package diff

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/schemas"
	"github.com/sourcegraph/conc/pool"
)

// Version is the version of Result's JSON form.
const Version = "1"

// Result is the comparison of dataset A (old) with dataset B (new).
type Result struct {
	Version string `json:"diff_version"`
	A       Side   `json:"a"`
	B       Side   `json:"b"`
	// Same is true when both datasets have the same conversations with the same
	// content, in the same order.
	Same      bool `json:"same"`
	Added     int  `json:"added"`
	Removed   int  `json:"removed"`
	Changed   int  `json:"changed"`
	Unchanged int  `json:"unchanged"`
	// Order tells whether the conversations common to both keep their relative
	// order (replay's start order shuffles conversation indices, so a new order
	// is a different benchmark even with the same content hash).
	Order OrderChange `json:"order"`
	// AddedConversations are in B's order, RemovedConversations in A's, Changes in
	// B's.
	AddedConversations   []Conversation `json:"added_conversations"`
	RemovedConversations []Conversation `json:"removed_conversations"`
	Changes              []Change       `json:"changed_conversations"`
	// Domains are the per-domain figures of A and B, then the total.
	Domains  []DomainDelta `json:"domains"`
	Warnings []string      `json:"warnings,omitempty"`
}

// Side describes one of the datasets compared.
type Side struct {
	Path          string `json:"path"`
	SchemaVersion string `json:"schema_version"`
	ToolVersion   string `json:"tool_version"`
	CreatedAt     string `json:"created_at"`
	ContentHash   string `json:"content_hash"`
	Conversations int    `json:"conversations"`
	Tokenizer     string `json:"tokenizer,omitempty"`
}

// OrderChange says whether the common conversations moved relative to each other,
// and the first position (among them, 0-based) where they differ.
type OrderChange struct {
	Changed bool `json:"changed"`
	// FirstPosition, A and B: at this position among the common conversations, A
	// has conversation A and B has conversation B.
	FirstPosition int    `json:"first_position,omitempty"`
	A             string `json:"a,omitempty"`
	B             string `json:"b,omitempty"`
}

// Conversation is an added or removed conversation.
type Conversation struct {
	ConversationID string `json:"conversation_id"`
	Domain         string `json:"domain"`
	// Index is its position in its dataset.
	Index          int    `json:"index"`
	ClientTurns    int    `json:"client_turns"`
	AssistantTurns int    `json:"assistant_turns"`
	HistoryBytes   int64  `json:"history_bytes"`
	Digest         string `json:"digest"`
}

// Change is a conversation present in both datasets with different content.
type Change struct {
	ConversationID string `json:"conversation_id"`
	Domain         string `json:"domain"`
	DigestA        string `json:"digest_a"`
	DigestB        string `json:"digest_b"`
	// Conversation lists what differs at the conversation level: "system" (the
	// system prompt), "messages" (their number), "client_turns" (their number).
	Conversation []string `json:"conversation,omitempty"`
	// First is the first message (by position in the history) that differs, nil
	// when only the conversation level does.
	First *MessageDiff `json:"first_difference,omitempty"`
	// DifferingMessages counts the positions whose message differs (positions
	// present in only one dataset included).
	DifferingMessages int `json:"differing_messages"`
	// Messages and ClientTurns are A's and B's counts.
	Messages    [2]int `json:"messages"`
	ClientTurns [2]int `json:"client_turns"`
	// HistoryBytes is A's and B's last-turn request size.
	HistoryBytes [2]int64 `json:"history_bytes"`
	// Delays lists the client turns (by dataset turn number) whose delay changed,
	// the first MaxDelays of them; DelayChanges counts them all.
	Delays       []DelayChange `json:"delays,omitempty"`
	DelayChanges int           `json:"delay_changes"`
}

// MaxDelays caps the delay changes a Change lists.
const MaxDelays = 20

// MessageDiff is the first differing message of a changed conversation.
type MessageDiff struct {
	// Seq is the message's 0-based position in the history (the system message
	// excluded).
	Seq int `json:"seq"`
	// Turn, Part and Role are A's and B's, "" / -1 when the position exists in
	// only one of them.
	Turn [2]int    `json:"turn"`
	Part [2]int    `json:"part"`
	Role [2]string `json:"role"`
	// Fields lists what differs: "missing_in_a", "missing_in_b", role, turn,
	// part, content, reasoning_content, name, tool_calls, tool_call_id,
	// intent_codes, extra, and for the first message of a client turn
	// delay_seconds, tools, params, max_tokens, expected_turn.
	Fields []string `json:"fields"`
	// Field is the first of Fields whose values are shown: Excerpt[0] is A's
	// value and Excerpt[1] B's, around where they start to differ.
	Field   string    `json:"field,omitempty"`
	Excerpt [2]string `json:"excerpt,omitempty"`
}

// DelayChange is one client turn whose delay_seconds changed.
type DelayChange struct {
	Turn int     `json:"turn"`
	A    float64 `json:"a"`
	B    float64 `json:"b"`
}

// DomainDelta compares one domain (or "total") across A and B. Pairs are [A, B].
type DomainDelta struct {
	Domain         string `json:"domain"`
	Trajectories   [2]int `json:"trajectories"`
	ClientTurns    [2]int `json:"client_turns"`
	AssistantTurns [2]int `json:"assistant_turns"`
	// HistoryBytes sums each trajectory's last-turn request size; RequestBytes sums
	// every client turn's (what one pass over the dataset sends, before salting).
	HistoryBytes [2]int64 `json:"history_bytes"`
	RequestBytes [2]int64 `json:"request_bytes"`
	// DelaySeconds sums every client turn's delay.
	DelaySeconds [2]float64 `json:"delay_seconds"`
	// ISL sums every client turn's input tokens, and ISLMean is its mean per
	// turn; nil for a dataset ingested without a tokenizer.
	ISL     [2]*int64   `json:"isl"`
	ISLMean [2]*float64 `json:"isl_mean"`
}

// side is one opened dataset with its conversations' digests.
type side struct {
	d       *datasets.Dataset
	digests [][sha256.Size]byte
}

// Compare compares dataset directory a (the old version) with b (the new one).
func Compare(ctx context.Context, a, b string) (*Result, error) {
	ma, err := readManifest(ctx, a)
	if err != nil {
		return nil, err
	}
	mb, err := readManifest(ctx, b)
	if err != nil {
		return nil, err
	}
	if err := checkVersions(a, ma, b, mb); err != nil {
		return nil, err
	}
	var sa, sb side
	var ea, eb error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); sa, ea = load(ctx, a) }()
	go func() { defer wg.Done(); sb, eb = load(ctx, b) }()
	wg.Wait()
	if err := errors.Join(ea, eb); err != nil {
		return nil, err
	}
	return compare(a, &sa, b, &sb), nil
}

// readManifest reads a dataset directory's manifest.json.
func readManifest(ctx context.Context, dir string) (schemas.DatasetManifest, error) {
	var m schemas.DatasetManifest
	st, err := os.Stat(dir)
	if err != nil {
		return m, fmt.Errorf("dataset %q: %w", dir, err)
	}
	if !st.IsDir() {
		return m, fmt.Errorf("dataset %q is not a dataset directory (ingest a trace file into one first)", dir)
	}
	data, err := infile.ReadFile(ctx, filepath.Join(dir, schemas.DatasetManifestFile), infile.SmallFile)
	if err != nil {
		return m, fmt.Errorf("dataset %q: %w", dir, err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("dataset %q: parse %s: %w", dir, schemas.DatasetManifestFile, err)
	}
	return m, nil
}

// checkVersions refuses datasets whose schema version this agentrace does not read.
func checkVersions(a string, ma schemas.DatasetManifest, b string, mb schemas.DatasetManifest) error {
	var bad []string
	for _, s := range []struct {
		name, dir string
		m         schemas.DatasetManifest
	}{{"A", a, ma}, {"B", b, mb}} {
		if !schemas.DatasetVersionRead(s.m.SchemaVersion) {
			bad = append(bad, fmt.Sprintf("%s (%s) has schema version %q", s.name, s.dir, s.m.SchemaVersion))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("cannot compare: dataset %s, and this agentrace reads schema versions %q and %q only; "+
		"re-ingest it from the inputs its manifest.json lists and compare the new directory",
		joinAnd(bad), schemas.DatasetVersion, schemas.DatasetVersionPrevious)
}

func joinAnd(s []string) string {
	if len(s) == 2 {
		return s[0] + " and " + s[1]
	}
	return s[0]
}

// load opens a dataset and digests its conversations in parallel.
func load(ctx context.Context, dir string) (side, error) {
	d, err := datasets.Open(ctx, dir)
	if err != nil {
		return side{}, err
	}
	s := side{d: d, digests: make([][sha256.Size]byte, len(d.Conversations))}
	p := pool.New().WithContext(ctx).WithMaxGoroutines(runtime.GOMAXPROCS(0))
	const chunk = 16
	for start := 0; start < len(d.Conversations); start += chunk {
		end := min(start+chunk, len(d.Conversations))
		p.Go(func(ctx context.Context) error {
			for i := start; i < end; i++ {
				if err := ctx.Err(); err != nil {
					return err
				}
				s.digests[i] = datasets.ConversationDigest(&d.Conversations[i], d.Messages(i), d.ConversationTurns(i))
			}
			return nil
		})
	}
	if err := p.Wait(); err != nil {
		return side{}, err
	}
	return s, nil
}

func describe(path string, s *side) Side {
	m := s.d.Manifest
	return Side{Path: path, SchemaVersion: m.SchemaVersion, ToolVersion: m.ToolVersion, CreatedAt: m.CreatedAt,
		ContentHash: m.ContentHash, Conversations: len(s.d.Conversations), Tokenizer: m.Tokenizer}
}

func compare(pa string, a *side, pb string, b *side) *Result {
	r := &Result{Version: Version, A: describe(pa, a), B: describe(pb, b),
		AddedConversations: []Conversation{}, RemovedConversations: []Conversation{}, Changes: []Change{}}
	for _, s := range []struct {
		name string
		s    *side
	}{{"A", a}, {"B", b}} {
		ids := make([]string, len(s.s.d.Conversations))
		for i := range ids {
			ids[i] = s.s.d.Conversations[i].ConversationID
		}
		if got := datasets.ContentHash(ids, s.s.digests); got != s.s.d.Manifest.ContentHash {
			r.Warnings = append(r.Warnings, fmt.Sprintf("dataset %s's tables hash to %s, its manifest says %s: "+
				"it was changed after ingest or written by another agentrace version; the comparison uses the tables",
				s.name, short(got), short(s.s.d.Manifest.ContentHash)))
		}
	}
	inB := make(map[string]int, len(b.d.Conversations))
	for i := range b.d.Conversations {
		inB[b.d.Conversations[i].ConversationID] = i
	}
	inA := make(map[string]int, len(a.d.Conversations))
	var commonA []string // common conversations in A's order
	for i := range a.d.Conversations {
		id := a.d.Conversations[i].ConversationID
		inA[id] = i
		if _, ok := inB[id]; ok {
			commonA = append(commonA, id)
		} else {
			r.RemovedConversations = append(r.RemovedConversations, summary(a, i))
		}
	}
	pos := 0
	for j := range b.d.Conversations {
		id := b.d.Conversations[j].ConversationID
		i, ok := inA[id]
		if !ok {
			r.AddedConversations = append(r.AddedConversations, summary(b, j))
			continue
		}
		if !r.Order.Changed && commonA[pos] != id {
			r.Order = OrderChange{Changed: true, FirstPosition: pos, A: commonA[pos], B: id}
		}
		pos++
		if a.digests[i] == b.digests[j] {
			r.Unchanged++
			continue
		}
		r.Changes = append(r.Changes, changeOf(a, i, b, j))
	}
	r.Added, r.Removed, r.Changed = len(r.AddedConversations), len(r.RemovedConversations), len(r.Changes)
	r.Same = r.Added == 0 && r.Removed == 0 && r.Changed == 0 && !r.Order.Changed
	r.Domains = domains(a, b)
	return r
}

func summary(s *side, i int) Conversation {
	c := &s.d.Conversations[i]
	return Conversation{ConversationID: c.ConversationID, Domain: c.Domain, Index: i, ClientTurns: int(c.ClientTurns),
		AssistantTurns: int(c.AssistantTurns), HistoryBytes: c.HistoryBytes, Digest: hex.EncodeToString(s.digests[i][:])}
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// changeOf describes how conversation i of a differs from conversation j of b.
func changeOf(a *side, i int, b *side, j int) Change {
	ca, cb := &a.d.Conversations[i], &b.d.Conversations[j]
	ma, mb := a.d.Messages(i), b.d.Messages(j)
	ta, tb := a.d.ConversationTurns(i), b.d.ConversationTurns(j)
	ch := Change{ConversationID: ca.ConversationID, Domain: cb.Domain,
		DigestA: hex.EncodeToString(a.digests[i][:]), DigestB: hex.EncodeToString(b.digests[j][:]),
		Messages: [2]int{len(ma), len(mb)}, ClientTurns: [2]int{len(ta), len(tb)},
		HistoryBytes: [2]int64{ca.HistoryBytes, cb.HistoryBytes}}
	if ca.HasSystem != cb.HasSystem || ca.System != cb.System {
		ch.Conversation = append(ch.Conversation, "system")
	}
	if len(ma) != len(mb) {
		ch.Conversation = append(ch.Conversation, "messages")
	}
	if len(ta) != len(tb) {
		ch.Conversation = append(ch.Conversation, "client_turns")
	}
	// The client turn starting at each message position.
	startA, startB := turnStarts(ta), turnStarts(tb)
	for k := 0; k < max(len(ma), len(mb)); k++ {
		var fields []string
		var field string
		var ex [2]string
		switch {
		case k >= len(ma):
			fields = []string{"missing_in_a"}
		case k >= len(mb):
			fields = []string{"missing_in_b"}
		default:
			fields, field, ex = messageFields(&ma[k], &mb[k])
			tf, tfield, tex := turnFields(startA[int32(k)], startB[int32(k)])
			fields = append(fields, tf...)
			if field == "" {
				field, ex = tfield, tex
			}
		}
		if len(fields) == 0 {
			continue
		}
		ch.DifferingMessages++
		if ch.First != nil {
			continue
		}
		md := &MessageDiff{Seq: k, Turn: [2]int{-1, -1}, Part: [2]int{-1, -1}, Fields: fields, Field: field, Excerpt: ex}
		if k < len(ma) {
			md.Turn[0], md.Part[0], md.Role[0] = int(ma[k].Turn), int(ma[k].Part), ma[k].Role
		}
		if k < len(mb) {
			md.Turn[1], md.Part[1], md.Role[1] = int(mb[k].Turn), int(mb[k].Part), mb[k].Role
		}
		ch.First = md
	}
	// Delays, by dataset turn number.
	delayA := make(map[int32]float64, len(ta))
	for k := range ta {
		delayA[ta[k].Turn] = ta[k].DelaySeconds
	}
	for k := range tb {
		if d, ok := delayA[tb[k].Turn]; ok && d != tb[k].DelaySeconds {
			ch.DelayChanges++
			if len(ch.Delays) < MaxDelays {
				ch.Delays = append(ch.Delays, DelayChange{Turn: int(tb[k].Turn), A: d, B: tb[k].DelaySeconds})
			}
		}
	}
	return ch
}

func turnStarts(ts []schemas.Turn) map[int32]*schemas.Turn {
	m := make(map[int32]*schemas.Turn, len(ts))
	for k := range ts {
		m[ts[k].MsgStart] = &ts[k]
	}
	return m
}

func ptrStr(p *string) (string, bool) {
	if p == nil {
		return "", false
	}
	return *p, true
}

// messageFields lists the fields in which two messages at the same position
// differ, and excerpts of the first one that is text.
func messageFields(x, y *schemas.Message) (fields []string, field string, ex [2]string) {
	add := func(name, a, b string, show bool) {
		fields = append(fields, name)
		if field == "" && show {
			field = name
			ex[0], ex[1] = Excerpts(a, b)
		}
	}
	if x.Role != y.Role {
		add("role", x.Role, y.Role, true)
	}
	if x.Turn != y.Turn {
		add("turn", fmt.Sprint(x.Turn), fmt.Sprint(y.Turn), false)
	}
	if x.Part != y.Part {
		add("part", fmt.Sprint(x.Part), fmt.Sprint(y.Part), false)
	}
	optional := func(name string, p, q *string) {
		a, okA := ptrStr(p)
		b, okB := ptrStr(q)
		if a != b || okA != okB {
			if !okA {
				a = "(absent)"
			}
			if !okB {
				b = "(absent)"
			}
			add(name, a, b, true)
		}
	}
	if x.ContentJSON != y.ContentJSON {
		add("content", "", "", false)
	} else {
		optional("content", x.Content, y.Content)
	}
	optional("reasoning_content", x.ReasoningContent, y.ReasoningContent)
	optional("name", x.Name, y.Name)
	if x.ToolCalls != y.ToolCalls {
		add("tool_calls", x.ToolCalls, y.ToolCalls, true)
	}
	optional("tool_call_id", x.ToolCallID, y.ToolCallID)
	if x.IntentCodesJSON != y.IntentCodesJSON {
		add("intent_codes", x.IntentCodesJSON, y.IntentCodesJSON, true)
	}
	if x.Extra != y.Extra {
		add("extra", x.Extra, y.Extra, true)
	}
	if len(fields) == 0 && string(x.Wire) != string(y.Wire) {
		// Same fields, different wire bytes (another encoder): say so.
		add("wire", string(x.Wire), string(y.Wire), true)
	}
	return fields, field, ex
}

// turnFields lists how the client turns starting at one position differ.
func turnFields(x, y *schemas.Turn) (fields []string, field string, ex [2]string) {
	if x == nil && y == nil {
		return nil, "", ex
	}
	if x == nil || y == nil {
		return []string{"client_turn_start"}, "", ex
	}
	add := func(name, a, b string) {
		fields = append(fields, name)
		if field == "" {
			field = name
			ex[0], ex[1] = Excerpts(a, b)
		}
	}
	if x.DelaySeconds != y.DelaySeconds {
		add("delay_seconds", fmt.Sprint(x.DelaySeconds), fmt.Sprint(y.DelaySeconds))
	}
	if x.Tools != y.Tools {
		add("tools", x.Tools, y.Tools)
	}
	if x.Params != y.Params {
		add("params", x.Params, y.Params)
	}
	if x.MaxTokens != y.MaxTokens {
		add("max_tokens", fmt.Sprint(x.MaxTokens), fmt.Sprint(y.MaxTokens))
	}
	if x.ExpectedTurn != y.ExpectedTurn {
		add("expected_turn", fmt.Sprint(x.ExpectedTurn), fmt.Sprint(y.ExpectedTurn))
	}
	if x.MsgEnd != y.MsgEnd {
		add("turn_messages", fmt.Sprint(x.MsgEnd-x.MsgStart), fmt.Sprint(y.MsgEnd-y.MsgStart))
	}
	return fields, field, ex
}

// ExcerptBytes is how much of each value an excerpt shows after the first
// difference; ExcerptContext how much before it.
const (
	ExcerptBytes   = 80
	ExcerptContext = 24
)

// Excerpts returns short windows of a and b starting a little before their first
// differing byte, cut at UTF-8 boundaries and marked with "…" where cut.
func Excerpts(a, b string) (string, string) {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	start := max(0, n-ExcerptContext)
	return window(a, start), window(b, start)
}

func window(s string, start int) string {
	if start > len(s) {
		start = len(s)
	}
	for start > 0 && start < len(s) && s[start]&0xC0 == 0x80 {
		start--
	}
	end := min(len(s), start+ExcerptContext+ExcerptBytes)
	for end < len(s) && s[end]&0xC0 == 0x80 {
		end--
	}
	out := s[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(s) {
		out += "…"
	}
	return out
}

// domains computes the per-domain figures of both datasets.
func domains(a, b *side) []DomainDelta {
	names := []string{schemas.DomainCoding, schemas.DomainWorkflow}
	var out []DomainDelta
	for _, name := range append(names, "total") {
		dd := DomainDelta{Domain: name}
		any := false
		for k, s := range []*side{a, b} {
			var isl int64
			islTurns, turns := 0, 0
			for i := range s.d.Conversations {
				c := &s.d.Conversations[i]
				if name != "total" && c.Domain != name {
					continue
				}
				any = true
				dd.Trajectories[k]++
				dd.ClientTurns[k] += int(c.ClientTurns)
				dd.AssistantTurns[k] += int(c.AssistantTurns)
				dd.HistoryBytes[k] += c.HistoryBytes
				ts := s.d.ConversationTurns(i)
				for t := range ts {
					turns++
					dd.RequestBytes[k] += ts[t].HistoryBytes
					dd.DelaySeconds[k] += ts[t].DelaySeconds
					if ts[t].ISL != nil {
						isl += int64(*ts[t].ISL)
						islTurns++
					}
				}
			}
			if turns > 0 && islTurns == turns {
				mean := float64(isl) / float64(turns)
				dd.ISL[k], dd.ISLMean[k] = &isl, &mean
			}
		}
		if any {
			out = append(out, dd)
		}
	}
	return out
}
