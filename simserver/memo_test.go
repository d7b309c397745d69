package simserver

import (
	"slices"
	"strings"
	"testing"
)

func TestTokenMemoGenerations(t *testing.T) {
	m := newTokenMemo(4)
	m.put(1, []uint64{1, 1, 1})
	m.put(2, []uint64{2, 2}) // over budget: 1 moves to the previous generation
	if _, ok := m.get(1); !ok {
		t.Fatal("entry of the previous generation lost")
	}
	// The get promoted 1 into the current generation (3 + 2 > 4: a new one).
	m.put(3, []uint64{3, 3, 3, 3}) // rolls again: 2 is dropped, 1 kept in prev
	if _, ok := m.get(2); ok {
		t.Error("entry two generations old still there")
	}
	if got, ok := m.get(3); !ok || !slices.Equal(got, []uint64{3, 3, 3, 3}) {
		t.Errorf("get(3) = %v, %v", got, ok)
	}
}

// TestPromptMemo checks that remembered messages give the tokens a fresh server
// computes, and that the first message is remembered together with the tools.
func TestPromptMemo(t *testing.T) {
	s, err := New(tinyConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	parse := func(body string) *chatRequest {
		req, err := decodeRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	history := `{"role":"system","content":"be brief"},{"role":"user","content":"list the files"},` +
		`{"role":"assistant","content":null,"reasoning_content":"look","tool_calls":[{"id":"c","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},` +
		`{"role":"tool","tool_call_id":"c","content":"a.py"}`
	body := `{"tools":` + bashTools + `,"messages":[` + history + `]}`
	first, bad := s.promptTokens(nil, parse(body))
	again, bad2 := s.promptTokens(nil, parse(body))
	if bad != "" || bad2 != "" || !slices.Equal(first, again) {
		t.Fatalf("remembered prompt differs: %d vs %d tokens (%s%s)", len(first), len(again), bad, bad2)
	}
	fresh, err := New(tinyConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if got, _ := fresh.promptTokens(nil, parse(body)); !slices.Equal(got, first) {
		t.Error("a fresh server tokenizes the prompt differently")
	}
	other := strings.Replace(bashTools, "run a command", "run a shell command", 1)
	otherTools, _ := s.promptTokens(nil, parse(`{"tools":`+other+`,"messages":[`+history+`]}`))
	if slices.Equal(otherTools, first) {
		t.Error("other tools, same first tokens: the first message was remembered without its tools")
	}
}
