// Package difftest builds a mutated copy of a flat JSONL trace file with known
// changes, for the diff tests and the diff benchmark: one conversation removed,
// one added (a copy of another under a new id), one tool result changed and one
// delay changed. Lines of untouched conversations are copied byte for byte.
package difftest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// Mutations says what Mutate changed.
type Mutations struct {
	// Removed is the id of the conversation left out.
	Removed string
	// Added is the id of the conversation added, a copy of AddedFrom.
	Added, AddedFrom string
	// ToolResult is the conversation whose tool result changed: the first tool
	// row with a turn above 10, its first result's content with Suffix appended.
	ToolResult     string
	ToolResultTurn int
	// Delay is the conversation whose delay changed: the first tool row with a
	// turn above 20, delay_seconds from DelayFrom to DelayTo.
	Delay              string
	DelayTurn          int
	DelayFrom, DelayTo float64
}

// Suffix is appended to the changed tool result.
const Suffix = " (changed)"

// Mutate writes to out the trace file in with the Mutations: the first
// conversation removed, the second's tool result and the third's delay changed,
// and the fourth copied as NewID, appended at the end.
func Mutate(in, out, newID string) (Mutations, error) {
	data, err := os.ReadFile(in)
	if err != nil {
		return Mutations{}, err
	}
	lines := bytes.Split(data, []byte{'\n'})
	var ids []string
	idOf := make([]string, len(lines))
	seen := map[string]bool{}
	for i, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var row struct {
			ID string `json:"conversation_id"`
		}
		if err := json.Unmarshal(l, &row); err != nil {
			return Mutations{}, fmt.Errorf("%s line %d: %w", in, i+1, err)
		}
		idOf[i] = row.ID
		if row.ID != "" && !seen[row.ID] {
			seen[row.ID] = true
			ids = append(ids, row.ID)
		}
	}
	if len(ids) < 4 {
		return Mutations{}, fmt.Errorf("%s: %d conversations, need at least 4", in, len(ids))
	}
	m := Mutations{Removed: ids[0], ToolResult: ids[1], Delay: ids[2], AddedFrom: ids[3], Added: newID, DelayTo: 5}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	var added [][]byte
	for i, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		switch idOf[i] {
		case m.Removed:
			continue
		case m.AddedFrom:
			row, err := edit(l, func(r map[string]json.RawMessage) error {
				r["conversation_id"], _ = json.Marshal(newID)
				return nil
			})
			if err != nil {
				return m, err
			}
			added = append(added, row)
		case m.ToolResult:
			if m.ToolResultTurn == 0 {
				if turn, ok := toolTurn(l, 10); ok {
					row, err := edit(l, func(r map[string]json.RawMessage) error {
						var results []map[string]json.RawMessage
						if err := json.Unmarshal(r["tool_results"], &results); err != nil {
							return err
						}
						var content string
						if err := json.Unmarshal(results[0]["content"], &content); err != nil {
							return err
						}
						results[0]["content"], _ = json.Marshal(content + Suffix)
						b, err := json.Marshal(results)
						r["tool_results"] = b
						return err
					})
					if err != nil {
						return m, err
					}
					l, m.ToolResultTurn = row, turn
				}
			}
		case m.Delay:
			if m.DelayTurn == 0 {
				if turn, ok := toolTurn(l, 20); ok {
					row, err := edit(l, func(r map[string]json.RawMessage) error {
						if d, ok := r["delay_seconds"]; ok {
							if err := json.Unmarshal(d, &m.DelayFrom); err != nil {
								return err
							}
						}
						r["delay_seconds"], _ = json.Marshal(m.DelayTo)
						return nil
					})
					if err != nil {
						return m, err
					}
					l, m.DelayTurn = row, turn
				}
			}
		}
		w.Write(l)
		w.WriteByte('\n')
	}
	for _, l := range added {
		w.Write(l)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return m, err
	}
	if m.ToolResultTurn == 0 || m.DelayTurn == 0 {
		return m, fmt.Errorf("%s: no tool row to change in %s or %s", in, m.ToolResult, m.Delay)
	}
	return m, os.WriteFile(out, buf.Bytes(), 0o644)
}

// toolTurn returns the turn of a tool row with one result or more whose turn is
// above after.
func toolTurn(line []byte, after int) (int, bool) {
	var row struct {
		Role    string            `json:"role"`
		Turn    int               `json:"turn"`
		Results []json.RawMessage `json:"tool_results"`
	}
	if json.Unmarshal(line, &row) != nil || row.Role != "tool" || row.Turn <= after || len(row.Results) == 0 {
		return 0, false
	}
	return row.Turn, true
}

// edit decodes a row with its values kept raw, lets f change it, and encodes it
// again.
func edit(line []byte, f func(map[string]json.RawMessage) error) ([]byte, error) {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, err
	}
	if err := f(r); err != nil {
		return nil, err
	}
	return json.Marshal(r)
}
