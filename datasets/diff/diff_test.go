package diff

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/diff/difftest"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
)

func ingestFile(t *testing.T, dir, file string) string {
	t.Helper()
	if err := ingest.Files(context.Background(), dir, file); err != nil {
		t.Fatalf("ingest %s: %v", file, err)
	}
	return dir
}

// The shared sample against a copy with four known changes, built here.
func TestDiffSampleWithKnownChanges(t *testing.T) {
	sample := testenv.SampleFlat(t)
	tmp := t.TempDir()
	mutated := filepath.Join(tmp, "mutated.jsonl")
	m, err := difftest.Mutate(sample, mutated, "added__conversation-1")
	if err != nil {
		t.Fatal(err)
	}
	a := ingestFile(t, filepath.Join(tmp, "a"), sample)
	b := ingestFile(t, filepath.Join(tmp, "b"), mutated)
	r, err := Compare(context.Background(), a, b)
	if err != nil {
		t.Fatal(err)
	}
	if r.Same || r.Added != 1 || r.Removed != 1 || r.Changed != 2 || r.Unchanged != 17 || r.Order.Changed || len(r.Warnings) > 0 {
		t.Fatalf("same %v, %d added, %d removed, %d changed, %d unchanged, order %+v, warnings %v; want 1, 1, 2, 17",
			r.Same, r.Added, r.Removed, r.Changed, r.Unchanged, r.Order, r.Warnings)
	}
	da, err := datasets.Open(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	from, _ := da.Conversation(m.AddedFrom)
	removed, _ := da.Conversation(m.Removed)
	if got := r.AddedConversations[0]; got.ConversationID != m.Added || got.ClientTurns != int(from.ClientTurns) || got.Index != 19 {
		t.Errorf("added %+v, want %s with %d client turns at index 19", got, m.Added, from.ClientTurns)
	}
	if got := r.RemovedConversations[0]; got.ConversationID != m.Removed || got.ClientTurns != int(removed.ClientTurns) || got.Index != 0 {
		t.Errorf("removed %+v, want %s", got, m.Removed)
	}
	byID := map[string]Change{}
	for _, c := range r.Changes {
		byID[c.ConversationID] = c
	}
	tr, ok := byID[m.ToolResult]
	if !ok {
		t.Fatalf("%s (changed tool result) not among the changes %v", m.ToolResult, r.Changes)
	}
	f := tr.First
	if f == nil || !slices.Equal(f.Fields, []string{"content"}) || f.Role != [2]string{"tool", "tool"} ||
		f.Turn != [2]int{m.ToolResultTurn, m.ToolResultTurn} || f.Part != [2]int{0, 0} || f.Field != "content" ||
		!strings.HasSuffix(f.Excerpt[1], difftest.Suffix) || strings.HasSuffix(f.Excerpt[0], difftest.Suffix) {
		t.Errorf("changed tool result: first difference %+v, want content of the tool message of turn %d", f, m.ToolResultTurn)
	}
	if tr.DifferingMessages != 1 || tr.DelayChanges != 0 || len(tr.Conversation) != 0 || tr.HistoryBytes[1]-tr.HistoryBytes[0] != int64(len(difftest.Suffix)) {
		t.Errorf("changed tool result: %+v", tr)
	}
	dl, ok := byID[m.Delay]
	if !ok {
		t.Fatalf("%s (changed delay) not among the changes", m.Delay)
	}
	if f := dl.First; f == nil || !slices.Equal(f.Fields, []string{"delay_seconds"}) || f.Turn[1] != m.DelayTurn || f.Role[1] != "tool" {
		t.Errorf("changed delay: first difference %+v, want delay_seconds of turn %d", dl.First, m.DelayTurn)
	}
	if dl.DifferingMessages != 1 || dl.DelayChanges != 1 || len(dl.Delays) != 1 ||
		dl.Delays[0] != (DelayChange{Turn: m.DelayTurn, A: m.DelayFrom, B: m.DelayTo}) {
		t.Errorf("changed delay: %+v, want turn %d %v -> %v", dl, m.DelayTurn, m.DelayFrom, m.DelayTo)
	}
	// Per domain: only coding in the sample, and the total.
	if len(r.Domains) != 2 || r.Domains[0].Domain != schemas.DomainCoding || r.Domains[1].Domain != "total" {
		t.Fatalf("domains %+v", r.Domains)
	}
	d := r.Domains[0]
	wantTurns := [2]int{1007, 1007 - int(removed.ClientTurns) + int(from.ClientTurns)}
	// The changed tool result adds len(Suffix) bytes to its conversation's last request.
	wantHist := [2]int64{d.HistoryBytes[0], d.HistoryBytes[0] - removed.HistoryBytes + from.HistoryBytes + int64(len(difftest.Suffix))}
	if d.Trajectories != [2]int{20, 20} || d.ClientTurns != wantTurns || d.HistoryBytes != wantHist {
		t.Errorf("coding: %+v, want client turns %v, history bytes %v", d, wantTurns, wantHist)
	}
	wantDelay := d.DelaySeconds[0] - removed.DelaySeconds + from.DelaySeconds + m.DelayTo - m.DelayFrom
	if diff := d.DelaySeconds[1] - wantDelay; diff > 1e-6 || diff < -1e-6 {
		t.Errorf("coding delay %v, want %v", d.DelaySeconds[1], wantDelay)
	}
	if d.ISL[0] != nil || d.ISL[1] != nil {
		t.Errorf("ISL without a tokenizer: %v", d.ISL)
	}

	var text bytes.Buffer
	if err := WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"different: 1 added, 1 removed, 2 changed, 17 unchanged; order unchanged",
		"- removed  " + m.Removed, "+ added    " + m.Added, "~ changed  " + m.ToolResult, "~ changed  " + m.Delay,
		"1 delay(s) changed", "delay_seconds",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(js, &back); err != nil || back.Changed != 2 || back.Changes[0].First == nil {
		t.Errorf("JSON round trip: %v %+v", err, back)
	}

	// A dataset against itself, and against a re-ingest of the same file.
	same := ingestFile(t, filepath.Join(tmp, "a2"), sample)
	for _, other := range []string{a, same} {
		r, err := Compare(context.Background(), a, other)
		if err != nil || !r.Same || r.Unchanged != 20 || r.Changed+r.Added+r.Removed != 0 {
			t.Errorf("A against %s: %v %+v", other, err, r)
		}
	}
}

// Workflow conversations: a changed intent code, a changed system prompt, and a new
// order of the same conversations.
const workflowA = `{"conversation_id": "sim_000001", "turn": 1, "role": "user", "content": "My card was charged twice.", "system": "You route customer requests.", "delay_seconds": 1.5}
{"conversation_id": "sim_000001", "turn": 2, "role": "assistant", "content": "I will open a billing dispute.", "intent_codes": ["I042"]}
{"conversation_id": "sim_000001", "turn": 3, "role": "user", "content": "Also change my address.", "delay_seconds": 2.0}
{"conversation_id": "sim_000001", "turn": 4, "role": "assistant", "content": "Updating the address.", "intent_codes": ["I007", "I008"]}
{"conversation_id": "sim_000002", "turn": 1, "role": "user", "content": "Where is my parcel?", "system": "You route customer requests."}
{"conversation_id": "sim_000002", "turn": 2, "role": "assistant", "content": "Let me check.", "intent_codes": ["I010"]}
{"conversation_id": "repo__task-1", "turn": 1, "role": "user", "content": "Fix the bug.", "system": "You are a coder."}
{"conversation_id": "repo__task-1", "turn": 2, "role": "assistant", "content": "Done."}
`

func TestDiffWorkflowAndOrder(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(tmp, name+".jsonl")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return ingestFile(t, filepath.Join(tmp, name), p)
	}
	a := write("a", workflowA)
	lines := strings.SplitAfter(workflowA, "\n")
	// B: sim_000001's second intent changed, sim_000002's system prompt changed, and
	// the coding conversation moved first.
	b := strings.Join(lines[6:8], "") + strings.Join(lines[:3], "") +
		strings.Replace(lines[3], `["I007", "I008"]`, `["I007", "I009"]`, 1) +
		strings.Replace(lines[4], "You route", "You triage", 1) + lines[5]
	r, err := Compare(context.Background(), a, write("b", b))
	if err != nil {
		t.Fatal(err)
	}
	if r.Same || r.Changed != 2 || r.Added+r.Removed != 0 || !r.Order.Changed || r.Order.FirstPosition != 0 ||
		r.Order.A != "sim_000001" || r.Order.B != "repo__task-1" {
		t.Fatalf("%+v", r)
	}
	c1, c2 := r.Changes[0], r.Changes[1]
	if c1.ConversationID != "sim_000001" || c1.First == nil || c1.First.Seq != 3 ||
		!slices.Equal(c1.First.Fields, []string{"intent_codes"}) || c1.First.Excerpt != [2]string{`["I007","I008"]`, `["I007","I009"]`} {
		t.Errorf("intent change: %+v %+v", c1, c1.First)
	}
	if c2.ConversationID != "sim_000002" || !slices.Equal(c2.Conversation, []string{"system"}) || c2.First != nil || c2.DifferingMessages != 0 {
		t.Errorf("system prompt change: %+v", c2)
	}
	if len(r.Domains) != 3 || r.Domains[1].Domain != schemas.DomainWorkflow || r.Domains[1].ClientTurns != [2]int{3, 3} {
		t.Errorf("domains %+v", r.Domains)
	}
	// Only the order changed: not the same, nothing changed.
	r, err = Compare(context.Background(), a, write("c", strings.Join(lines[6:8], "")+strings.Join(lines[:6], "")))
	if err != nil || r.Same || r.Changed != 0 || !r.Order.Changed {
		t.Errorf("reordered: %v %+v", err, r)
	}
}

// A dataset of another schema version is refused, naming both versions and the way
// out; tables that no longer hash to the manifest's content hash are a warning.
func TestDiffSchemaVersionAndTamper(t *testing.T) {
	tmp := t.TempDir()
	p := filepath.Join(tmp, "t.jsonl")
	if err := os.WriteFile(p, []byte(workflowA), 0o644); err != nil {
		t.Fatal(err)
	}
	a := ingestFile(t, filepath.Join(tmp, "a"), p)
	b := ingestFile(t, filepath.Join(tmp, "b"), p)
	edit := func(dir, from, to string) {
		mp := filepath.Join(dir, schemas.DatasetManifestFile)
		data, err := os.ReadFile(mp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(from)) {
			t.Fatalf("manifest has no %s", from)
		}
		if err := os.WriteFile(mp, bytes.Replace(data, []byte(from), []byte(to), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var m schemas.DatasetManifest
	data, _ := os.ReadFile(filepath.Join(b, schemas.DatasetManifestFile))
	_ = json.Unmarshal(data, &m)
	edit(b, m.ContentHash, strings.Repeat("0", 64))
	r, err := Compare(context.Background(), a, b)
	if err != nil || !r.Same || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "dataset B's tables hash to") {
		t.Errorf("tampered manifest: %v, same %v, warnings %v", err, r != nil && r.Same, r.Warnings)
	}
	edit(b, `"schema_version": "`+schemas.DatasetVersion+`"`, `"schema_version": "0"`)
	_, err = Compare(context.Background(), a, b)
	if err == nil || !strings.Contains(err.Error(), `B (`+b+`) has schema version "0"`) || !strings.Contains(err.Error(), "re-ingest") {
		t.Errorf("other schema version: %v", err)
	}
	if _, err := Compare(context.Background(), a, p); err == nil || !strings.Contains(err.Error(), "not a dataset directory") {
		t.Errorf("a trace file given: %v", err)
	}
	if _, err := Compare(context.Background(), a, filepath.Join(tmp, "none")); err == nil {
		t.Error("a missing dataset: no error")
	}
}

func TestExcerpts(t *testing.T) {
	a := strings.Repeat("x", 100) + "abc" + strings.Repeat("y", 200)
	b := strings.Repeat("x", 100) + "abd" + strings.Repeat("y", 200)
	ea, eb := Excerpts(a, b)
	if !strings.HasPrefix(ea, "…") || !strings.HasSuffix(ea, "…") || !strings.Contains(ea, "abc") || !strings.Contains(eb, "abd") {
		t.Errorf("%q %q", ea, eb)
	}
	// Never cut inside a UTF-8 sequence.
	ea, _ = Excerpts(strings.Repeat("é", 60)+"a", strings.Repeat("é", 60)+"b")
	if !strings.HasPrefix(ea, "…é") || strings.ContainsRune(ea, '\uFFFD') {
		t.Errorf("%q", ea)
	}
	if ea, eb := Excerpts("short", "shore"); ea != "short" || eb != "shore" {
		t.Errorf("%q %q", ea, eb)
	}
}
