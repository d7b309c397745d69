package score

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentrace/agentrace/schemas"
)

func TestAccuracySpecRunVectors(t *testing.T) {
	truth := NewTruth(specRunDataset(t))
	pytest := &Output{ToolCalls: bashCall("python test.py")}
	intent := &Output{Content: "intent: I042"}

	// One repeat, both right: 1.0.
	acc := ScoreAccuracy(truth, []Attempt{
		{ConversationID: "code1", Repeat: 1, Turn: 1, Output: pytest},
		{ConversationID: "sim_1", Repeat: 1, Turn: 1, Output: intent},
	})
	if acc.Score != 1.0 || acc.Turns != (schemas.TurnCounts{Issued: 2, Expected: 2, Observed: 2, Missing: 0, Scored: 2}) {
		t.Errorf("one repeat: score %v turns %+v, want 1.0 and 2 of everything", acc.Score, acc.Turns)
	}

	// code1 = 1, sim_1 completed without output = 0, code1__repeat_2 = 1: 0.6667.
	acc = ScoreAccuracy(truth, []Attempt{
		{ConversationID: "code1", Repeat: 1, Turn: 1, Output: pytest},
		{ConversationID: "sim_1", Repeat: 1, Turn: 1, Output: nil},
		{ConversationID: "code1", Repeat: 2, Turn: 1, Output: pytest},
	})
	want := schemas.TurnCounts{Issued: 3, Expected: 3, Observed: 2, Missing: 1, Scored: 3}
	if acc.Score != 0.6667 || acc.Turns != want {
		t.Errorf("two repeats: score %v turns %+v, want 0.6667 and %+v", acc.Score, acc.Turns, want)
	}
	if got := acc.Domains; got["coding"] != (schemas.DomainScore{Score: 1, Scored: 2}) || got["workflow"] != (schemas.DomainScore{Score: 0, Scored: 1}) {
		t.Errorf("domains %+v", got)
	}
	// per_turn is ordered by (conversation, repeat, turn) and reports the expected
	// assistant turn.
	var keys []string
	for _, p := range acc.PerTurn {
		keys = append(keys, p.ConversationID+"/"+itoa(int(p.Repeat))+"/"+itoa(int(p.Turn)))
	}
	if !reflect.DeepEqual(keys, []string{"code1/1/2", "code1/2/2", "sim_1/1/2"}) {
		t.Errorf("per_turn order %v", keys)
	}
	if p := acc.PerTurn[2]; !p.Missing || p.ModelIntent != nil || p.Score != 0 {
		t.Errorf("missing workflow turn %+v", p)
	}
}

func TestAccuracyExcludedAndIgnored(t *testing.T) {
	d := buildDataset(t, []conv{
		{"repo__x-1", []row{
			{role: "user", content: "task"},
			{role: "assistant", content: "thinking", toolCalls: `[{"function":{"name":"str_replace_editor","arguments":"{}"}}]`},
			{role: "tool", content: "done"},
			{role: "assistant", toolCalls: string(bashCall("git diff; cat a b"))},
			{role: "tool", content: "diff"},
		}},
		{"sim_7", []row{
			{role: "user", content: "hi"},
			{role: "assistant", content: "x", intents: `[null, ""]`},
		}},
	})
	truth := NewTruth(d)
	if truth.Len() != 3 {
		t.Fatalf("expected turns %d, want 3", truth.Len())
	}
	acc := ScoreAccuracy(truth, []Attempt{
		{ConversationID: "repo__x-1", Repeat: 1, Turn: 1, Output: &Output{}},
		{ConversationID: "repo__x-1", Repeat: 1, Turn: 3, Output: &Output{ToolCalls: bashCall("cat a && git status")}},
		{ConversationID: "repo__x-1", Repeat: 1, Turn: 5, Output: &Output{}}, // no expectation: ignored
		{ConversationID: "other", Repeat: 1, Turn: 1, Output: &Output{}},     // unknown: ignored
		{ConversationID: "sim_7", Repeat: 1, Turn: 1, Output: &Output{Content: "I001"}},
	})
	// Issued counts expected turns (scorable or not); scored only scorable ones.
	if acc.Turns != (schemas.TurnCounts{Issued: 3, Expected: 1, Observed: 1, Missing: 0, Scored: 1}) {
		t.Errorf("turns %+v", acc.Turns)
	}
	// gt [git, cat], model [cat, git]: Jaccard 1 ... with multiset counts equal.
	if acc.Score != 1 {
		t.Errorf("score %v, want 1", acc.Score)
	}
	wantExcl := []schemas.ExcludedTurn{
		{ConversationID: "repo__x-1", Turn: 2, Domain: "coding", Reason: "no ground truth"},
		{ConversationID: "sim_7", Turn: 2, Domain: "workflow", Reason: "no ground truth"},
	}
	if !reflect.DeepEqual(acc.Excluded, wantExcl) {
		t.Errorf("excluded %+v", acc.Excluded)
	}
}

func TestAccuracyNoScorableTurnIsNull(t *testing.T) {
	truth := NewTruth(specRunDataset(t))
	acc := ScoreAccuracy(truth, nil)
	s := schemas.Scores{Score: acc.Score, Turns: acc.Turns, Domains: acc.Domains}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if string(m["score"]) != "null" || string(m["domains"]) != "{}" {
		t.Errorf("score %s domains %s, want null and {}", m["score"], m["domains"])
	}
}

func TestTurnScoreJSONShape(t *testing.T) {
	code := "I042"
	wf := schemas.TurnScore{ConversationID: "sim_1", Repeat: 1, Turn: 2, Domain: "workflow", GTIntents: []string{"I042"}, ModelIntent: &code, Score: 1}
	cd := schemas.TurnScore{ConversationID: "c", Repeat: 2, Turn: 4, Domain: "coding", Missing: true, GTActions: []string{"ls"}, Score: 0}
	nullIntent := schemas.TurnScore{ConversationID: "sim_2", Repeat: 1, Turn: 2, Domain: "workflow", GTIntents: []string{"I001"}, OSL: new(int32(0))}
	for _, tc := range []struct {
		ts   schemas.TurnScore
		want string
	}{
		{wf, `{"conversation_id":"sim_1","repeat":1,"turn":2,"domain":"workflow","gt_intents":["I042"],"model_intent":"I042","score":1,"session_id":"","client_turn":0,"in_window":false,"osl":null}`},
		{cd, `{"conversation_id":"c","repeat":2,"turn":4,"domain":"coding","missing":true,"gt_actions":["ls"],"model_actions":[],"score":0,"session_id":"","client_turn":0,"in_window":false,"osl":null}`},
		{nullIntent, `{"conversation_id":"sim_2","repeat":1,"turn":2,"domain":"workflow","gt_intents":["I001"],"model_intent":null,"score":0,"session_id":"","client_turn":0,"in_window":false,"osl":0}`},
	} {
		b, err := json.Marshal(tc.ts)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("got  %s\nwant %s", b, tc.want)
		}
		var back schemas.TurnScore
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if tc.ts.ModelActions == nil && back.ModelActions != nil && len(back.ModelActions) == 0 {
			back.ModelActions = nil
		}
		if !reflect.DeepEqual(back, tc.ts) {
			t.Errorf("round trip: got %+v, want %+v", back, tc.ts)
		}
	}
}

func TestAppendTurnScoreJSON(t *testing.T) {
	code := "I042"
	weird := "a\"b\\c\n\t\x01<>&\u2028\u2029é\xff日本"
	rows := []schemas.TurnScore{
		{ConversationID: "sim_1", Repeat: 1, Turn: 2, Domain: "workflow", GTIntents: []string{"I042"}, ModelIntent: &code, Score: 1, OSL: new(int32(12)), InWindow: true},
		{ConversationID: weird, Repeat: 3, Turn: 4, Domain: "coding", Missing: true, GTActions: []string{weird, "ls"}, Score: 0.3333, SessionID: weird},
		{ConversationID: "sim_2", Domain: "workflow", Score: 0.6667, ClientTurn: 7},
		{ConversationID: "c", Domain: "coding", ModelActions: []string{}, Score: 1e-7},
	}
	for _, r := range rows {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		// The wire encoding leaves U+2028 and U+2029 raw, as msgspec does.
		want = bytes.ReplaceAll(bytes.ReplaceAll(want, []byte(`\u2028`), []byte("\u2028")), []byte(`\u2029`), []byte("\u2029"))
		if got := appendTurnScoreJSON(nil, &r); string(got) != string(want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
	// The whole document decodes to the same value as encoding/json's.
	s := &schemas.Scores{SchemaVersion: "1", Score: 0.5, Turns: schemas.TurnCounts{Scored: 4}, PerTurn: rows,
		Domains: map[string]schemas.DomainScore{"coding": {Score: 0.5, Scored: 2}}}
	fast, err := marshalScores(s)
	if err != nil {
		t.Fatal(err)
	}
	slow, _ := json.Marshal(s)
	var a, b any
	if err := json.Unmarshal(fast, &a); err != nil {
		t.Fatalf("%v\n%s", err, fast)
	}
	json.Unmarshal(slow, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("documents differ:\n%s\n%s", fast, slow)
	}
}

func TestAccuracyDuplicateAttempts(t *testing.T) {
	truth := NewTruth(specRunDataset(t))
	right := &Output{Content: "intent: I042"}
	wrong := &Output{Content: "intent: I001"}
	for _, tt := range []struct {
		name     string
		attempts []*Output
		score    float64
		observed int
	}{
		{"output then none keeps the output", []*Output{right, nil}, 1, 1},
		{"none then output takes the output", []*Output{nil, right}, 1, 1},
		{"two outputs: the last", []*Output{right, wrong}, 0, 1},
		{"none twice", []*Output{nil, nil}, 0, 0},
	} {
		var as []Attempt
		for _, o := range tt.attempts {
			as = append(as, Attempt{ConversationID: "sim_1", Repeat: 1, Turn: 1, Output: o})
		}
		acc := ScoreAccuracy(truth, as)
		if acc.Turns.Issued != 1 || acc.Turns.Scored != 1 || acc.Score != tt.score || acc.Turns.Observed != tt.observed {
			t.Errorf("%s: score %v turns %+v", tt.name, acc.Score, acc.Turns)
		}
	}
}
