// Package toolcall merges a response's tool calls as the reference client does
// (merge_tool_calls in inference_endpoint/core/types.py at mlcommons/endpoints):
// the deltas of a streamed response are merged by index, a new call starting as
// {"type": "function"} with empty arguments, a later non-empty id, type or name
// replacing the earlier one, arguments concatenated, and the calls ordered by
// index. It is the one home of that rule: replay merges the deltas it streams
// with it, and score the deltas a reference event log records.
//
// A List merges the deltas of one response; a Budget lets its owner bound what is
// kept (replay's output limit). Decoding the deltas is the caller's: each reads
// its own input (a chat.completion.chunk, an event log's TextModelOutput) and
// says what is malformed in it.
package toolcall

import (
	"sort"

	"github.com/agentrace/agentrace/schemas"
)

// Delta is one tool-call delta of a streamed response, or one whole call of a
// response not streamed, decoded. An empty string field carries nothing.
type Delta struct {
	// Index is the call the delta belongs to: the delta's index, 0 when it has
	// none (the reference's partial.get("index", 0)).
	Index int
	// Key, when not empty, is an index that is not an integer (its JSON text): such
	// calls are kept apart from the integer ones, ordered after them by Key, and
	// Index is ignored.
	Key       string
	ID        string
	Type      string
	Name      string
	Arguments string
}

// Budget bounds what a List keeps of the deltas merged into it. Each method is
// asked before the List keeps something and may refuse it (or, for arguments,
// keep a prefix).
type Budget interface {
	// NewCall tells whether a new call, started by d, may be kept; a refused
	// delta is dropped whole.
	NewCall(d *Delta) bool
	// Replace tells whether a field (id, type or name) holding old may be
	// replaced by v; a refused field keeps old.
	Replace(old, v string) bool
	// Arguments returns the part of s kept.
	Arguments(s string) string
}

type key struct {
	index int
	str   string
}

// List is one response's tool calls merged by index: the calls in order of
// first appearance, an index to position map, and each call's arguments as they
// grow. Merging a delta costs the same however many calls and deltas came before
// it: no search, and no copy of what was kept. The zero List is empty.
type List struct {
	calls []schemas.ToolCall
	keys  []string
	at    map[key]int
	args  [][]byte
}

// Len returns the number of calls.
func (l *List) Len() int { return len(l.calls) }

// Reset empties l for the next response, keeping its memory unless it held more
// than max calls.
func (l *List) Reset(max int) {
	if len(l.calls) > max {
		*l = List{}
		return
	}
	l.calls = l.calls[:0]
	l.keys = l.keys[:0]
	l.args = l.args[:0]
	clear(l.at)
}

// Merge merges d into the call of its index, as the rule says, asking b (nil:
// keep everything) before keeping anything. It returns what of d was kept: an
// id, type or name that the call now holds (else ""), and the arguments b let
// in; ok is false when b refused a new call (nothing of d was kept).
func (l *List) Merge(d Delta, b Budget) (kept Delta, ok bool) {
	k := key{index: d.Index, str: d.Key}
	if d.Key != "" {
		k.index = 0
	}
	pos, found := l.at[k]
	if !found {
		if b != nil && !b.NewCall(&d) {
			return Delta{}, false
		}
		if l.at == nil {
			l.at = map[key]int{}
		}
		pos = len(l.calls)
		l.at[k] = pos
		l.calls = append(l.calls, schemas.ToolCall{Index: k.index, Type: "function"})
		l.keys = append(l.keys, k.str)
		if pos < cap(l.args) { // reuse an earlier response's buffer
			l.args = l.args[:pos+1]
			l.args[pos] = l.args[pos][:0]
		} else {
			l.args = append(l.args, nil)
		}
	}
	tc := &l.calls[pos]
	set := func(field *string, v string) string {
		if v != "" && v != *field && (b == nil || b.Replace(*field, v)) {
			*field = v
		}
		if v == *field {
			return v
		}
		return ""
	}
	kept = Delta{Index: d.Index, Key: d.Key}
	kept.ID = set(&tc.ID, d.ID)
	kept.Type = set(&tc.Type, d.Type)
	kept.Name = set(&tc.Function.Name, d.Name)
	kept.Arguments = d.Arguments
	if b != nil {
		kept.Arguments = b.Arguments(d.Arguments)
	}
	l.args[pos] = append(l.args[pos], kept.Arguments...)
	return kept, true
}

// Calls returns the merged calls ordered by index (calls of a non-integer index
// last, by their index's text), each with its arguments; nil when there are
// none. The calls are l's own copy: later merges do not change them.
func (l *List) Calls() []schemas.ToolCall {
	if len(l.calls) == 0 {
		return nil
	}
	order := make([]int, len(l.calls))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		ka, kb := l.keys[a], l.keys[b]
		if (ka == "") != (kb == "") {
			return ka == ""
		}
		if ka != "" {
			return ka < kb
		}
		return l.calls[a].Index < l.calls[b].Index
	})
	calls := make([]schemas.ToolCall, len(order))
	for i, p := range order {
		calls[i] = l.calls[p]
		calls[i].Function.Arguments = string(l.args[p])
	}
	return calls
}
