package ingest

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/python"
	"github.com/agentrace/agentrace/schemas"
)

type problemFunc func(line int64, conv string, turn int32, msg string)

// consumeFlat groups a flat file's rows into conversations, in order.
func (in *ingester) consumeFlat(ctx context.Context, path string, input *schemas.DatasetInput, order chan chan parsed, problem problemFunc) error {
	var conv []*row
	convBytes, convTooBig := 0, false
	flush := func() error {
		if len(conv) == 0 {
			return nil
		}
		err := in.conversation(path, "", conv, problem)
		conv, convBytes, convTooBig = nil, 0, false
		return err
	}
	closed := map[string]int64{} // conversations of this file already finished
	// What the reference's pandas does to the file's columns: generation
	// parameters, names and reasoning (pandasColumn), conversation ids.
	cols := map[string]*pandasColumn{}
	column := func(key string, v []byte) {
		c := cols[key]
		if c == nil {
			c = &pandasColumn{}
			cols[key] = c
		}
		c.add(v)
	}
	dataRows := 0
	type idEntry struct {
		id   string
		raw  []byte
		line int64
	}
	var ids []idEntry
	sp := splicer{maxLine: in.opts.MaxLineBytes}
	for ch := range order {
		p := <-ch
		items := p.items
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(sp.held) > 0 || hasRaw(items) {
			items = sp.feed(items)
		}
		for i := range items {
			it := &items[i]
			if !in.dataItem(it, input, problem) {
				continue
			}
			r := it.row
			r.chunk = p.seq
			in.rows++
			dataRows++
			for _, f := range r.params {
				column(f.key, f.val)
			}
			column("name", r.name)
			column("reasoning_content", r.reasoning)
			if r.hasID && (len(ids) == 0 || ids[len(ids)-1].id != r.convID) {
				ids = append(ids, idEntry{r.convID, append([]byte(nil), r.idRaw...), r.line})
			}
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
			// A conversation's rows stay in memory until it ends: past
			// MaxConversationBytes they are counted, not kept.
			if convBytes += r.size; convBytes > in.opts.maxConvBytes && len(conv) > 0 {
				if !convTooBig {
					convTooBig = true
					problem(r.line, conv[0].convID, r.turn, fmt.Sprintf("the conversation's rows pass %d bytes (the limit of one conversation): the rest of its rows are not read", in.opts.maxConvBytes))
				}
				continue
			}
			conv = append(conv, r)
			in.prog.rows.Store(int64(in.rows))
		}
		in.prog.rows.Store(int64(in.rows))
	}
	for _, it := range sp.flush() {
		in.rows++
		problem(it.line, "", 0, it.err.Error())
	}
	if err := flush(); err != nil {
		return err
	}
	warn := func(line int64, conv, msg string) {
		in.addWarning(Problem{File: path, Line: line, ConversationID: conv, Message: msg})
	}
	for _, key := range append(genParamOrder[:], "name", "reasoning_content") {
		if c := cols[key]; c != nil {
			if note := c.note(key, dataRows); note != "" {
				warn(0, "", note)
			}
		}
	}
	// Conversation ids: when every id reads as a number, pandas makes the column
	// numeric and the reference's id is str() of that number (integers when all are
	// whole).
	numeric, whole := len(ids) > 0, true
	vals := make([]float64, len(ids))
	for i, e := range ids {
		var v float64
		ok := false
		switch kind(e.raw) {
		case "number":
			v, _ = strconv.ParseFloat(string(e.raw), 64)
			ok = true
		case "string":
			v, ok = python.Float(e.id)
		}
		if !ok {
			numeric = false
			break
		}
		vals[i] = v
		whole = whole && v == math.Trunc(v) && math.Abs(v) < 1<<63
	}
	if numeric {
		for i, e := range ids {
			ref := python.FloatRepr(vals[i])
			if whole {
				ref = strconv.FormatInt(int64(vals[i]), 10)
			}
			if ref != e.id {
				warn(e.line, e.id, fmt.Sprintf("every conversation_id of the file reads as a number: the reference's pandas makes them numbers and uses %q as this conversation's id (in its session id and salt); agentrace keeps %q", ref, e.id))
			}
		}
	}
	return nil
}

// dataItem tells whether it is a row to consume: a line that could not be parsed
// is counted as a row and reported, a metadata line kept in input.
func (in *ingester) dataItem(it *item, input *schemas.DatasetInput, problem problemFunc) bool {
	switch {
	case it.err != nil:
		in.rows++
		problem(it.line, "", 0, it.err.Error())
		return false
	case it.meta != nil:
		input.Metadata = append(input.Metadata, jsontext.AppendCompact(nil, it.meta))
		return false
	}
	return true
}

// consumeSnapshots keeps the latest snapshot of each conversation (highest
// conversation_idx; the first seen on a tie), then converts them in order of id, as
// the reference's converter writes them.
func (in *ingester) consumeSnapshots(ctx context.Context, path string, input *schemas.DatasetInput, order chan chan parsed, problem problemFunc) error {
	best := map[string]*snapshot{}
	var ids []string
	for ch := range order {
		p := <-ch
		items := p.items
		if err := ctx.Err(); err != nil {
			return err
		}
		for i := range items {
			it := &items[i]
			if !in.dataItem(it, input, problem) {
				continue
			}
			in.rows++
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
		in.prog.rows.Store(int64(in.rows))
		// Everything kept from this chunk has been copied.
		if p.seq >= 0 {
			in.pool.release(p.seq + 1)
		}
	}
	// The reference's converter writes the conversations sorted by id.
	sort.Strings(ids)
	for _, id := range ids {
		s := best[id]
		delete(best, id)
		rows, metadata, problems := snapshotRows(s, in.opts.SnapshotAsReference)
		for _, p := range problems {
			problem(s.line, s.id, 0, p)
		}
		if len(rows) == 0 {
			problem(s.line, s.id, 0, "snapshot has no messages besides the system prompt")
			continue
		}
		rows[0].warnings = append(s.warnings, rows[0].warnings...)
		md := ""
		if !isNull(metadata) {
			md = string(jsontext.AppendCompact(nil, metadata))
		}
		if err := in.conversation(path, md, rows, problem); err != nil {
			return err
		}
	}
	return nil
}

// convJob is one conversation on its way to the writer: checked against the
// others by the consumer, then validated, built and digested by a build worker.
type convJob struct {
	path, metadata string
	rows           []*row
	index          int32
	bad            bool
	problems       []Problem
	out            chan convResult
	bytes          int64 // of its rows' lines (flat files)
}

type convResult struct {
	problems []Problem
	warnings []Problem
	prep     *datasets.Prepared
	err      error
	bytes    int64 // convJob.bytes
	// chunk is the first input chunk the conversation's rows came from (-1 for
	// rows that do not point into chunks): once it is written, earlier chunks
	// are free.
	chunk int64
}

// conversation takes one conversation's rows from a consumer: it checks the id
// against the conversations seen before and queues the rest of the work.
func (in *ingester) conversation(path, metadata string, rows []*row, problem problemFunc) error {
	first := rows[0]
	id := first.convID
	j := &convJob{path: path, metadata: metadata, rows: rows, index: in.index, out: make(chan convResult, 1)}
	in.index++
	in.prog.queued.Add(1)
	turns := 0
	for _, r := range rows {
		if r.role == schemas.RoleUser || r.role == schemas.RoleTool {
			turns++
		}
		j.bytes += int64(r.size)
	}
	in.prog.turns.Add(int64(turns))
	if first.hasID {
		if loc, ok := in.seen[id]; ok {
			if loc.input != in.input {
				problem(first.line, id, first.turn, fmt.Sprintf("conversation id also used in %s (line %d): ids must be unique across files", loc.file, loc.line))
			}
			// Within one file the contiguity check has reported it.
			j.bad = true
		} else {
			in.seen[id] = location{path, in.input, first.line}
			switch msg, warning := in.repeatCollision(id, in.seen[id]); {
			case msg != "":
				problem(first.line, id, first.turn, msg)
				j.bad = true
			case warning != "":
				first.warnings = append(first.warnings, warning)
			}
		}
	} else {
		j.bad = true
	}
	// The job goes to a build worker before its result joins the order, so that
	// every result the write loop waits for is coming.
	select {
	case in.jobs <- j:
	case <-in.ctx.Done():
		return in.ctx.Err()
	}
	select {
	case in.order <- j.out:
	case <-in.ctx.Done():
		return in.ctx.Err()
	}
	return nil
}

// repeatCollision checks a new conversation id against the session ids replay
// sends (datasets.SessionID: C on the first pass, C__repeat_N from the second)
// and as the reference's scorer reads them back (datasets.ParseReferenceSessionID:
// any trailing __repeat_ and digits, so C__repeat_1 and C__repeat_02 too): an id
// that reads as a repeat of a conversation C beside C would make two trajectories
// send the same session id, or the scorer take one's turns for the other's. It
// returns the problem, naming the other conversation's line; or, for such an id
// without a conversation C (yet), a warning: what reads a session id back (the
// sim's recorded answers, the reference's scorer) takes its turns for C's.
func (in *ingester) repeatCollision(id string, at location) (problem, warning string) {
	const why = "two trajectories would send the same session id (X-Session-ID), or the reference's scorer read one's turns as the other's; rename one of them"
	if s, ok := in.repeats[id]; ok {
		return fmt.Sprintf("conversation %q (%s:%d) reads as this conversation's session id on its repeat %d: %s", s.id, s.at.file, s.at.line, s.repeat, why), ""
	}
	base, n, ok := datasets.ParseReferenceSessionID(id)
	if !ok || base == id {
		return "", ""
	}
	if o, ok := in.seen[base]; ok {
		return fmt.Sprintf("conversation id reads as the session id of conversation %q (%s:%d) on its repeat %d: %s", base, o.file, o.line, n, why), ""
	}
	if _, ok := in.repeats[base]; !ok {
		in.repeats[base] = suffixed{id: id, repeat: n, at: at}
	}
	return "", fmt.Sprintf("conversation id ends like the session id of a conversation %q on its repeat %d (__repeat_N): "+
		"the sim looks its recorded answers up under %q, and the reference's scorer scores its turns as that conversation's; rename it", base, n, base)
}

// buildJob validates and builds one conversation (in a build worker).
func (in *ingester) buildJob(j *convJob) convResult {
	res := convResult{chunk: j.rows[0].chunk, bytes: j.bytes}
	first := j.rows[0]
	id := first.convID
	report := func(r *row, msg string) {
		res.problems = append(res.problems, Problem{File: j.path, Line: r.line, ConversationID: id, Turn: r.turn, Message: msg})
	}
	warn := func(r *row, msg string) {
		res.warnings = append(res.warnings, Problem{File: j.path, Line: r.line, ConversationID: id, Turn: r.turn, Message: msg})
	}
	for _, r := range j.rows {
		for _, p := range r.problems {
			report(r, p)
		}
		for _, w := range r.warnings {
			warn(r, w)
		}
	}
	if sortByTurn(j.rows) {
		warn(first, "rows are not in turn order in the file: sorted by turn, as the reference does")
	}
	validateSequence(j.rows, report, warn)
	in.prog.validated.Add(1)
	hasSystem := false
	for _, r := range j.rows {
		hasSystem = hasSystem || (kind(r.system) == "string" && string(r.system) != `""`)
	}
	if !hasSystem && len(res.problems) == 0 {
		warn(first, "no system prompt (no row has a non-empty string system): a salted run, the default of replay and of prompt, refuses this conversation")
	}
	if in.opts.Strict {
		res.problems = append(res.problems, res.warnings...)
		res.warnings = nil
	}
	if j.bad || len(res.problems) > 0 || in.failed.Load() {
		return res
	}
	b := buildConversation(id, j.index, j.path, j.rows)
	b.conv.Metadata = j.metadata
	in.prog.built.Add(1)
	if in.opts.islCounter != nil {
		if err := in.countISL(&b); err != nil {
			res.err = fmt.Errorf("ingest: count ISL of conversation %q: %w", id, err)
			return res
		}
	}
	res.prep, res.err = datasets.Prepare(&b.conv, b.msgs, b.turns)
	return res
}

// writeLoop takes the built conversations in order and writes them, until order
// is closed. It stops writing (but keeps draining) after the first problem.
func (in *ingester) writeLoop() error {
	var err error
	for ch := range in.order {
		res := <-ch
		if res.chunk > 0 {
			in.pool.release(res.chunk)
		}
		for _, p := range res.problems {
			in.addProblem(p)
		}
		for _, w := range res.warnings {
			in.addWarning(w)
		}
		if res.err != nil && err == nil {
			err = res.err
			in.failed.Store(true)
		}
		if err != nil || res.prep == nil || in.failed.Load() {
			continue
		}
		if werr := in.w.AddPrepared(res.prep); werr != nil {
			err = fmt.Errorf("ingest: %w", werr)
			in.failed.Store(true)
			continue
		}
		in.convs.Add(1)
		in.prog.doneData.Add(res.bytes)
	}
	return err
}

// countISL fills Turn.ISL from the salted (repeat 1) messages and the tools,
// with one counter for the whole conversation.
func (in *ingester) countISL(b *built) error {
	c := &b.conv
	count := in.opts.islCounter()
	msgs := make([][]byte, 0, len(b.msgs)+1)
	if c.HasSystem {
		msgs = append(msgs, datasets.AppendSystemMessage(nil, c.SystemEscaped, datasets.RepeatSalt(1), datasets.SaltHex(c.ConversationID)))
	}
	sys := len(msgs)
	var tools []byte
	for k := range b.turns {
		t := &b.turns[k]
		for i := int32(len(msgs) - sys); i < t.MsgEnd; i++ {
			msgs = append(msgs, b.msgs[i].Wire)
		}
		if t.Tools != string(tools) {
			tools = []byte(t.Tools)
		}
		n, err := count(msgs[:sys+int(t.MsgEnd)], tools)
		if err != nil {
			return fmt.Errorf("turn %d: %w", t.Turn, err)
		}
		v := int32(n)
		t.ISL = &v
		in.prog.tokenized.Add(1)
	}
	return nil
}
