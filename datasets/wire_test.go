package datasets

import (
	"testing"

	"github.com/agentrace/agentrace/schemas"
)

func TestAppendWireKeyOrder(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		m    schemas.Message
		want string
	}{
		{schemas.Message{Role: "user", Content: s("hi"), Name: s("n")}, `{"role":"user","content":"hi","name":"n"}`},
		{schemas.Message{Role: "assistant", ToolCalls: `[{"id":"1"}]`, ReasoningContent: s("r")}, `{"role":"assistant","tool_calls":[{"id":"1"}],"reasoning_content":"r"}`},
		{schemas.Message{Role: "tool", Content: s(`{"a":1}`), ContentJSON: true, ToolCallID: s("1")}, `{"role":"tool","content":{"a":1},"tool_call_id":"1"}`},
		{schemas.Message{Role: "assistant", Content: s(""), Name: s("a"), ToolCalls: `[]`, ToolCallID: s("x"), ReasoningContent: s("")},
			`{"role":"assistant","content":"","name":"a","tool_calls":[],"tool_call_id":"x","reasoning_content":""}`},
	} {
		if got := AppendWire(nil, &tc.m); string(got) != tc.want {
			t.Errorf("AppendWire = %s, want %s", got, tc.want)
		}
	}
}

// TestAppendPyFloat checks the float form of msgspec's write_f64 (msgspec/ryu.h):
// the expected strings were printed by orjson 3.8.3, whose float formatting is the
// same ryu algorithm with the same layout rules, for the Python floats listed.
