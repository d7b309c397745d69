package ingest

import (
	"context"
	"fmt"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/schemas"
)

type problemFunc func(line int64, conv string, turn int32, msg string)

// consumeFlat groups a flat file's rows into conversations, in order.
func (in *ingester) consumeFlat(ctx context.Context, path string, input *schemas.DatasetInput, order chan chan []item, problem problemFunc) error {
	var conv []*row
	flush := func() error {
		if len(conv) == 0 {
			return nil
		}
		err := in.conversation(path, "", conv, problem)
		conv = nil
		return err
	}
	closed := map[string]int64{} // conversations of this file already finished
	for ch := range order {
		items := <-ch
		if err := ctx.Err(); err != nil {
			return err
		}
		for i := range items {
			it := &items[i]
			if it.err != nil {
				problem(it.line, "", 0, it.err.Error())
				continue
			}
			if it.meta != nil {
				input.Metadata = append(input.Metadata, datasets.AppendCompact(nil, it.meta))
				continue
			}
			r := it.row
			if len(conv) > 0 && (!r.hasID || r.convID != conv[0].convID) {
				if conv[0].hasID {
					closed[conv[0].convID] = conv[0].line
				}
				if err := flush(); err != nil {
					return err
				}
			}
			if r.hasID && len(conv) == 0 {
				if first, ok := closed[r.convID]; ok {
					problem(r.line, r.convID, r.turn, fmt.Sprintf("rows of the conversation are not contiguous (it started at line %d)", first))
				}
			}
			conv = append(conv, r)
		}
	}
	return flush()
}

// consumeSnapshots keeps the latest snapshot of each conversation (highest
// conversation_idx; the first seen on a tie), then converts them in order of first
// appearance.
func (in *ingester) consumeSnapshots(ctx context.Context, path string, input *schemas.DatasetInput, order chan chan []item, problem problemFunc) error {
	best := map[string]*snapshot{}
	var ids []string
	for ch := range order {
		items := <-ch
		if err := ctx.Err(); err != nil {
			return err
		}
		for i := range items {
			it := &items[i]
			if it.err != nil {
				problem(it.line, "", 0, it.err.Error())
				continue
			}
			if it.meta != nil {
				input.Metadata = append(input.Metadata, datasets.AppendCompact(nil, it.meta))
				continue
			}
			if len(it.row.problems) > 0 {
				for _, p := range it.row.problems {
					problem(it.line, it.snap.id, 0, p)
				}
				continue
			}
			s := it.snap
			old, ok := best[s.id]
			if !ok {
				ids = append(ids, s.id)
			}
			if !ok || s.idx > old.idx {
				s.raw = append([]byte(nil), s.raw...)
				best[s.id] = s
			}
		}
	}
	for _, id := range ids {
		s := best[id]
		delete(best, id)
		rows, metadata, problems := snapshotRows(s)
		for _, p := range problems {
			problem(s.line, s.id, 0, p)
		}
		if len(rows) == 0 {
			problem(s.line, s.id, 0, "snapshot has no messages besides the system prompt")
			continue
		}
		md := ""
		if !isNull(metadata) {
			md = string(datasets.AppendCompact(nil, metadata))
		}
		if err := in.conversation(path, md, rows, problem); err != nil {
			return err
		}
	}
	return nil
}

// conversation validates one conversation's rows and, when the input has been
// clean so far, builds and writes it.
func (in *ingester) conversation(path, metadata string, rows []*row, problem problemFunc) error {
	first := rows[0]
	id := first.convID
	bad := false
	report := func(r *row, msg string) {
		bad = true
		problem(r.line, id, r.turn, msg)
	}
	for _, r := range rows {
		for _, p := range r.problems {
			report(r, p)
		}
	}
	if first.hasID {
		if loc, ok := in.seen[id]; ok {
			if loc.file != path {
				report(first, fmt.Sprintf("conversation id also used in %s (line %d): ids must be unique across files", loc.file, loc.line))
			}
			// Within one file the contiguity check has reported it.
			bad = true
		} else {
			in.seen[id] = location{path, first.line}
		}
	}
	validateSequence(rows, report)
	if bad || in.problems.any() || !first.hasID {
		return nil
	}
	b := buildConversation(id, in.index, path, rows)
	b.conv.Metadata = metadata
	if in.opts.ISL != nil {
		if err := in.countISL(&b); err != nil {
			return fmt.Errorf("ingest: count ISL of conversation %q: %w", id, err)
		}
	}
	if err := in.w.Add(&b.conv, b.msgs, b.turns); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	in.index++
	in.convs.Add(1)
	return nil
}

// countISL fills Turn.ISL from the salted (repeat 1) messages and the tools.
func (in *ingester) countISL(b *built) error {
	c := &b.conv
	var msgs []byte
	for k := range b.turns {
		t := &b.turns[k]
		msgs = append(msgs[:0], '[')
		if c.HasSystem {
			msgs = datasets.AppendSystemMessage(msgs, c.SystemEscaped, datasets.RepeatSalt(1), datasets.SaltHex(c.ConversationID))
		}
		for i := int32(0); i < t.MsgEnd; i++ {
			if len(msgs) > 1 {
				msgs = append(msgs, ',')
			}
			msgs = append(msgs, b.msgs[i].Wire...)
		}
		msgs = append(msgs, ']')
		var tools []byte
		if t.Tools != "" {
			tools = []byte(t.Tools)
		}
		n, err := in.opts.ISL(msgs, tools)
		if err != nil {
			return fmt.Errorf("turn %d: %w", t.Turn, err)
		}
		v := int32(n)
		t.ISL = &v
	}
	return nil
}
