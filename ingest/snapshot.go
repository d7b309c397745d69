package ingest

import (
	"fmt"
	"strconv"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/python"
)

// snapshot is one line of a snapshot file: a checkpoint of one conversation.
type snapshot struct {
	line   int64
	id     string
	idx    int64
	raw    []byte // the whole line
	source string
	// warnings about the line itself (NaN or Infinity, which the converter's
	// json.loads takes), given to its first row.
	warnings []string
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
	if t, ok := jsontext.DecodeString(typ); ok && t == "dataset_metadata" {
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

// snapMsg is one message of a snapshot, role apart.
type snapMsg struct {
	index int
	role  string
	fs    []field
	// content is the merged content of collapsed user messages (nil: the first
	// message's own).
	content []byte
	// more are the tool messages merged into this one.
	more []*snapMsg
}

func (m *snapMsg) get(key string) []byte {
	for _, f := range m.fs {
		if f.key == key {
			return f.val
		}
	}
	return nil
}

// snapshotRows converts the latest snapshot of a conversation into flat rows as the
// reference's converter (scripts/convert_agentic_snapshot.py at ea332753) does: the
// system messages are taken out, the last one being the system prompt; then runs of
// user messages are merged into one, each merge joining the texts with "\n\n" and
// stripping the result; then runs of tool messages become one tool row whose
// tool_results hold them all (one result is a one-element list); turns are numbered
// 1..; the system prompt goes on the first user row, and tools, unless empty, on
// every client row; tool_calls are kept when not empty. Unlike the converter it
// keeps reasoning_content, delay_seconds (a tool row's is its first message's) and
// intent_codes, unless asReference; a message's name and other fields are kept for
// export but not sent. It returns the snapshot's metadata object too.
func snapshotRows(s *snapshot, asReference bool) (rows []*row, metadata []byte, problems []string) {
	var msgs, tools []byte
	var top []field
	jsontext.EachMember(s.raw, func(k, v []byte) {
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
	if !jsontext.Truthy(tools) {
		tools = nil // the converter leaves empty tools out
	}
	// Pass 0: take the system messages out.
	var system []byte
	hasSystem := false
	var list []*snapMsg
	err := eachElement(msgs, func(k int, m []byte) error {
		if kind(m) != "object" {
			problems = append(problems, fmt.Sprintf("messages[%d] is a JSON %s, not an object", k, kind(m)))
			return nil
		}
		sm := &snapMsg{index: k}
		var roleRaw []byte
		jsontext.EachMember(m, func(key, val []byte) {
			ks := keyString(key)
			if ks == "role" {
				roleRaw = val
				return
			}
			sm.fs = setField(sm.fs, ks, val)
		})
		role, ok := jsontext.DecodeString(roleRaw)
		if !ok {
			problems = append(problems, fmt.Sprintf("messages[%d] has no string role", k))
			return nil
		}
		sm.role = role
		if role == "system" {
			system, hasSystem = sm.get("content"), true
			return nil
		}
		list = append(list, sm)
		return nil
	})
	if err != nil {
		problems = append(problems, err.Error())
	}
	// Pass 1: merge runs of user messages; pass 2: runs of tool messages.
	var merged []*snapMsg
	for _, m := range list {
		if n := len(merged); n > 0 && m.role == "user" && merged[n-1].role == "user" {
			prev := merged[n-1]
			pc := prev.content
			if pc == nil {
				pc = prev.get("content")
			}
			a, okA := snapText(pc)
			b, okB := snapText(m.get("content"))
			if !okA || !okB {
				problems = append(problems, fmt.Sprintf("messages[%d]: consecutive user messages with structured content: the reference's converter would merge their Python repr, which agentrace does not", m.index))
				continue
			}
			prev.content = jsontext.AppendString(nil, python.Strip(a+"\n\n"+b))
			continue
		}
		if n := len(merged); n > 0 && m.role == "tool" && merged[n-1].role == "tool" {
			merged[n-1].more = append(merged[n-1].more, m)
			continue
		}
		merged = append(merged, m)
	}
	idRaw := jsontext.AppendString(nil, s.id)
	firstUser := true
	for pos, m := range merged {
		r := &row{line: s.line, chunk: -1, convID: s.id, hasID: true, idRaw: idRaw, role: m.role,
			roleRaw: jsontext.AppendString(nil, m.role), turn: int32(pos + 1), turnVal: float64(pos + 1),
			turnOK: true, turnSeen: true}
		rows = append(rows, r)
		if tc := m.get("tool_calls"); jsontext.Truthy(tc) {
			r.toolCalls = tc
		}
		if m.role == "user" && firstUser {
			firstUser = false
			if hasSystem && !isNull(system) {
				r.system = system
			}
			r.extra = append(r.extra, top...)
		}
		if (m.role == "user" || m.role == "tool") && tools != nil {
			r.tools = tools
		}
		keep := func(f field) {
			switch f.key {
			case "reasoning_content":
				if !asReference {
					r.reasoning = f.val
				}
			case "delay_seconds":
				if !asReference {
					r.delay = f.val
				}
			case "intent_codes":
				if !asReference {
					r.intentCodes = f.val
				}
			default:
				r.extra = append(r.extra, f)
			}
		}
		switch m.role {
		case "tool":
			r.results = []toolResult{}
			msgsOf := append([]*snapMsg{m}, m.more...)
			if tr := m.get("tool_results"); len(m.more) == 0 && jsontext.Truthy(tr) || len(m.more) > 0 && !isNull(tr) {
				// A message carrying its own tool_results list: the converter
				// uses that list (and appends the merged messages to it).
				r.toolResults = tr
				r.checkToolResults()
				msgsOf = m.more
			}
			for _, tm := range msgsOf {
				res := toolResult{content: tm.get("content")}
				if id, ok := jsontext.DecodeString(tm.get("tool_call_id")); ok && id != "" {
					res.callID = id
				} else {
					problems = append(problems, fmt.Sprintf("messages[%d]: tool message with an empty or missing tool_call_id", tm.index))
				}
				if isNull(res.content) {
					problems = append(problems, fmt.Sprintf("messages[%d]: tool message without content (null)", tm.index))
				}
				for _, f := range tm.fs {
					switch f.key {
					case "content", "tool_call_id", "tool_results":
					case "delay_seconds":
						if tm == m && !asReference {
							r.delay = f.val
						} else {
							res.extra = append(res.extra, f)
						}
					default:
						res.extra = append(res.extra, f)
					}
				}
				r.results = append(r.results, res)
			}
		default:
			r.content = m.content
			if r.content == nil {
				r.content = m.get("content")
			}
			for _, f := range m.fs {
				switch f.key {
				case "content", "tool_calls":
				default:
					keep(f)
				}
			}
		}
		switch m.role {
		case "user", "assistant", "tool":
		default:
			problems = append(problems, fmt.Sprintf("messages[%d]: unknown role %q", m.index, m.role))
		}
		r.check()
	}
	if firstUser && len(rows) > 0 {
		rows[0].extra = append(rows[0].extra, top...)
	}
	return rows, metadata, problems
}

// snapText is the text the converter merges for a user message's content: a
// string, or "" for a missing or empty value; ok is false for other values.
func snapText(raw []byte) (string, bool) {
	if !jsontext.Truthy(raw) {
		return "", true
	}
	if kind(raw) != "string" {
		return "", false
	}
	s, _ := jsontext.DecodeString(raw)
	return s, true
}
