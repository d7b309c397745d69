package toolcall

import (
	"reflect"
	"testing"

	"github.com/agentrace/agentrace/schemas"
)

// TestMerge: the reference's merge_tool_calls, case by case. The wanted calls are
// what merge_tool_calls (mlcommons/endpoints, inference_endpoint/core/types.py)
// returns for the same deltas, read off its code: setdefault by index with
// {"type": "function", "function": {"arguments": ""}}, truthy id, type and name
// replacing, truthy arguments appended, sorted(merged).
func TestMerge(t *testing.T) {
	call := func(index int, id, typ, name, args string) schemas.ToolCall {
		return schemas.ToolCall{Index: index, ID: id, Type: typ, Function: schemas.ToolFunction{Name: name, Arguments: args}}
	}
	tests := []struct {
		name   string
		deltas []Delta
		want   []schemas.ToolCall
	}{
		{"none", nil, nil},
		{"one call in pieces",
			[]Delta{{ID: "a", Type: "function", Name: "bash", Arguments: `{"cmd":`}, {Arguments: `"ls"}`}},
			[]schemas.ToolCall{call(0, "a", "function", "bash", `{"cmd":"ls"}`)}},
		{"a new call is a function with empty arguments",
			[]Delta{{Index: 2}},
			[]schemas.ToolCall{call(2, "", "function", "", "")}},
		{"ordered by index, not by first appearance",
			[]Delta{{Index: 1, ID: "b", Name: "bash", Arguments: `{"a":`}, {Index: 0, ID: "a", Name: "x", Arguments: "{}"}, {Index: 1, Arguments: "1}"}},
			[]schemas.ToolCall{call(0, "a", "function", "x", "{}"), call(1, "b", "function", "bash", `{"a":1}`)}},
		{"empty values do not replace, later non-empty ones do",
			[]Delta{{ID: "a", Type: "function", Name: "bash", Arguments: "x"}, {ID: "", Name: "", Arguments: "y"}, {ID: "a2", Type: "custom", Name: "sh"}},
			[]schemas.ToolCall{call(0, "a2", "custom", "sh", "xy")}},
		{"a non-integer index is kept apart, after the integer ones",
			[]Delta{{Key: `"x"`, Name: "late"}, {Index: 3, Name: "three"}, {Key: `"a"`, Name: "early"}, {Key: `"x"`, Arguments: "1"}},
			[]schemas.ToolCall{call(3, "", "function", "three", ""), call(0, "", "function", "early", ""), call(0, "", "function", "late", "1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l List
			for _, d := range tt.deltas {
				if _, ok := l.Merge(d, nil); !ok {
					t.Fatalf("Merge(%+v) without a budget refused", d)
				}
			}
			if got := l.Calls(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			l.Reset(1 << 10)
			if l.Len() != 0 || l.Calls() != nil {
				t.Errorf("after Reset: %d calls", l.Len())
			}
		})
	}
}

// bytesBudget keeps at most n bytes: a new call costs cost, a replaced field its
// growth, arguments their length.
type bytesBudget struct{ n, cost int }

func (b *bytesBudget) take(n int) bool {
	if n > b.n {
		return false
	}
	b.n -= n
	return true
}
func (b *bytesBudget) NewCall(*Delta) bool        { return b.take(b.cost) }
func (b *bytesBudget) Replace(old, v string) bool { return b.take(max(len(v)-len(old), 0)) }
func (b *bytesBudget) Arguments(s string) string {
	n := min(len(s), b.n)
	b.n -= n
	return s[:n]
}

// TestMergeBudget: what a budget refuses is not kept, and Merge says what was.
func TestMergeBudget(t *testing.T) {
	var l List
	b := &bytesBudget{n: 12, cost: 4}
	kept, ok := l.Merge(Delta{ID: "abc", Name: "bash", Arguments: "12345"}, b) // 4 + 3 + 4, then 1 of 5
	if !ok || kept != (Delta{ID: "abc", Name: "bash", Arguments: "1"}) {
		t.Fatalf("first delta: kept %+v, %v", kept, ok)
	}
	kept, ok = l.Merge(Delta{Name: "python", Arguments: "6"}, b) // no room to grow the name
	if !ok || kept != (Delta{}) {
		t.Fatalf("second delta: kept %+v, %v", kept, ok)
	}
	if _, ok := l.Merge(Delta{Index: 1, Name: "x"}, b); ok {
		t.Fatal("a new call past the budget was kept")
	}
	want := []schemas.ToolCall{{Index: 0, ID: "abc", Type: "function", Function: schemas.ToolFunction{Name: "bash", Arguments: "1"}}}
	if got := l.Calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// TestResetKeepsNoHugeList: a list of more calls than Reset's max gives its
// memory back.
func TestResetKeepsNoHugeList(t *testing.T) {
	var l List
	for i := range 10 {
		l.Merge(Delta{Index: i, Arguments: "x"}, nil)
	}
	l.Reset(4)
	if l.at != nil || cap(l.calls) != 0 {
		t.Errorf("after Reset(4) of 10 calls: map %v, cap %d", l.at != nil, cap(l.calls))
	}
	l.Merge(Delta{Index: 1, Arguments: "y"}, nil)
	l.Reset(4)
	if l.at == nil || cap(l.args) == 0 {
		t.Error("Reset of a small list dropped its memory")
	}
}
