package ingest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/datasets"
)

// snapshot is one line of a snapshot file: a checkpoint of one conversation.
type snapshot struct {
	line   int64
	id     string
	idx    int64
	raw    []byte // the whole line
	source string
}

// parseSnapshotHead parses a snapshot line far enough to know its conversation and
// checkpoint index; the line is converted to rows only if it is the latest.
func parseSnapshotHead(line []byte, lineNo int64) (*snapshot, *row, error) {
	s := &snapshot{line: lineNo, idx: -1}
	var idRaw, idxRaw, msgs, typ []byte
	err := parseObject(line, func(k, v []byte) {
		switch keyString(k) {
		case "conversation_id":
			idRaw = v
		case "conversation_idx":
			idxRaw = v
		case "messages":
			msgs = v
		case "_type":
			typ = v
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if t, ok := datasets.DecodeString(typ); ok && t == "dataset_metadata" {
		return nil, &row{line: lineNo, metadata: true}, nil
	}
	// Reuse the flat id checks.
	r := &row{line: lineNo, idRaw: idRaw}
	r.checkID()
	s.id = r.convID
	if idxRaw != nil {
		n, err := strconv.ParseInt(string(idxRaw), 10, 64)
		if err != nil {
			r.problemf("conversation_idx %s is not an integer", orMissing(idxRaw))
		}
		s.idx = n
	}
	if kind(msgs) != "array" {
		r.problemf("messages is %s, not a list", orMissing(msgs))
	}
	s.raw = line
	return s, r, nil
}

// snapshotRows converts the latest snapshot of a conversation into flat rows
// (spec §2): the system message is taken out; consecutive user messages are merged
// with "\n\n" and trimmed; consecutive tool messages become one tool row whose
// delay_seconds is the batch's first; turns are numbered 1..; system goes on the
// first user row and tools on every client row. Unlike the reference converter it
// keeps reasoning_content, delay_seconds, intent_codes and unknown fields. It
// returns the snapshot's metadata object too.
func snapshotRows(s *snapshot) (rows []*row, metadata []byte, problems []string) {
	var msgs, tools []byte
	var top []field
	eachMember(s.raw, func(k, v []byte) {
		switch key := keyString(k); key {
		case "conversation_id", "conversation_idx":
		case "messages":
			msgs = v
		case "tools":
			tools = v
		case "metadata":
			metadata = v
		default:
			top = append(top, field{key, v})
		}
	})
	idRaw := datasets.AppendString(nil, s.id)
	var system []byte
	newRow := func(role string) *row {
		r := &row{line: s.line, chunk: -1, convID: s.id, hasID: true, idRaw: idRaw, role: role,
			roleRaw: datasets.AppendString(nil, role), turn: int32(len(rows) + 1), turnOK: true, turnSeen: true}
		rows = append(rows, r)
		return r
	}
	var userParts []string
	var userRow *row
	flushUser := func() {
		if userRow != nil && len(userParts) > 1 {
			userRow.content = datasets.AppendString(nil, strings.TrimSpace(strings.Join(userParts, "\n\n")))
		}
		userParts, userRow = nil, nil
	}
	var toolRow *row
	err := eachElement(msgs, func(k int, m []byte) error {
		if kind(m) != "object" {
			problems = append(problems, fmt.Sprintf("messages[%d] is a JSON %s, not an object", k, kind(m)))
			return nil
		}
		var role string
		var fs []field
		eachMember(m, func(key, val []byte) {
			ks := keyString(key)
			if ks == "role" {
				role, _ = datasets.DecodeString(val)
				return
			}
			fs = setField(fs, ks, val)
		})
		get := func(key string) []byte {
			for _, f := range fs {
				if f.key == key {
					return f.val
				}
			}
			return nil
		}
		if role != "user" {
			flushUser()
		}
		if role != "tool" {
			toolRow = nil
		}
		switch role {
		case "system":
			c := get("content")
			if system == nil && kind(c) == "string" && string(c) != `""` {
				system = c
			} else {
				problems = append(problems, fmt.Sprintf("messages[%d]: a second (or empty) system message", k))
			}
		case "user":
			c := get("content")
			if userRow == nil {
				userRow = newRow("user")
				userRow.content = c
			}
			for _, f := range fs {
				switch {
				case f.key == "content":
				case f.key == "name" && userRow.name == nil:
					userRow.name = f.val
				case f.key == "delay_seconds" && userRow.delay == nil:
					userRow.delay = f.val
				case f.key == "reasoning_content" && userRow.reasoning == nil:
					userRow.reasoning = f.val
				default:
					userRow.extra = append(userRow.extra, f)
				}
			}
			if s, ok := datasets.DecodeString(c); ok {
				userParts = append(userParts, s)
			} else if userRow.content != nil && len(userParts) > 0 {
				problems = append(problems, fmt.Sprintf("messages[%d]: consecutive user messages with structured content cannot be merged", k))
			}
		case "assistant":
			r := newRow("assistant")
			for _, f := range fs {
				switch f.key {
				case "content":
					if !isNull(f.val) {
						r.content = f.val
					}
				case "tool_calls":
					r.toolCalls = f.val
				case "reasoning_content":
					r.reasoning = f.val
				case "name":
					r.name = f.val
				case "intent_codes":
					r.intentCodes = f.val
				case "delay_seconds":
					r.delay = f.val
				default:
					r.extra = append(r.extra, f)
				}
			}
		case "tool":
			if toolRow == nil {
				toolRow = newRow("tool")
				toolRow.results = []toolResult{}
				toolRow.tools = tools
				toolRow.delay = get("delay_seconds")
			}
			res := toolResult{content: get("content")}
			if id, ok := datasets.DecodeString(get("tool_call_id")); ok {
				res.callID = id
			}
			first := len(toolRow.results) == 0
			for _, f := range fs {
				switch {
				case f.key == "content" || f.key == "tool_call_id":
				case f.key == "delay_seconds" && first:
				default:
					res.extra = append(res.extra, f)
				}
			}
			if res.callID == "" {
				problems = append(problems, fmt.Sprintf("messages[%d]: tool message with an empty or missing tool_call_id", k))
			}
			if res.content == nil {
				problems = append(problems, fmt.Sprintf("messages[%d]: tool message lacks content", k))
			}
			toolRow.results = append(toolRow.results, res)
		default:
			problems = append(problems, fmt.Sprintf("messages[%d]: unknown role %q", k, role))
		}
		return nil
	})
	flushUser()
	if err != nil {
		problems = append(problems, err.Error())
	}
	first := true
	for _, r := range rows {
		if r.role == "user" {
			r.tools = tools
			if first {
				r.system = system
				r.extra = append(r.extra, top...)
				first = false
			}
		}
		r.check()
	}
	if first && len(rows) > 0 {
		rows[0].extra = append(rows[0].extra, top...)
	}
	return rows, metadata, problems
}
