package simserver

import (
	"bytes"
	"container/list"
	"encoding/json"
	"hash/maphash"
	"math/rand/v2"
	"sync"

	"github.com/agentrace/agentrace/internal/jsontext"
)

// Session is what a virtual-time server remembers of one trajectory between
// its turns, so that a turn costs what is new in it rather than its whole
// history: where the last request's messages lie in its body (a body that
// starts with the same bytes is read from there on), the tokens of those
// messages as the prefix cache sees them (the chained hashes of their full
// blocks and the tokens after the last one), and the KV blocks its last turn
// held on a replica (the prefix-cache match of the next turn checks them before
// it looks a hash up). The turns it prepares are exactly those
// Server.PrepareTurn prepares from the same bodies; whatever it cannot reuse it
// reads, tokenizes and hashes afresh. A Session is not safe for concurrent use.
type Session struct {
	srv *Server
	id  string

	// The last request read: the hash of its body up to the end of its last
	// message (end), its messages' offsets, and the raw values of the fields
	// before its messages (head); end is 0 when there is none.
	h    maphash.Hash
	sum  uint64
	end  int
	msgs [][2]int
	head [][]byte
	tail []byte // scratch: the body's fields after the messages, as an object

	// The history: the first nmsg messages of the last request prepared, ntok
	// tokens; the chained hashes of its full blocks (from the seed of salt) and
	// the tokens after them. Valid while the messages, the tools and the
	// cache_salt stay the same.
	nmsg, ntok int
	tools      []byte
	salt       string
	hashes     []uint64
	rest       []uint64
	// The tools of the last request that validate accepted.
	validTools []byte
	validated  bool

	// The registered blocks of the last turn that finished, on pool.
	pool   *kvPool
	blocks []blockID
}

// NewSession returns an empty session for the trajectory with X-Session-ID id.
func (s *Server) NewSession(id string) *Session {
	return &Session{srv: s, id: id}
}

// PrepareTurn is Server.PrepareTurn for the session's next turn.
func (x *Session) PrepareTurn(body []byte) (*Turn, error) {
	req, known, err := x.decode(body)
	if err != nil {
		x.forget()
		return nil, err
	}
	t, err := x.srv.newTurn(req, x.id, x.validate, func(rng *rand.Rand) (*response, string) { return x.prepare(req, known, rng) })
	if err != nil {
		x.forget()
		return nil, err
	}
	t.sess = x
	t.q.sess = x
	return t, nil
}

// validate is validate(req), with tools that it accepted last time not parsed
// again.
func (x *Session) validate(req *chatRequest) string {
	tools := bytes.TrimSpace(req.Tools)
	if x.validated && bytes.Equal(tools, x.validTools) {
		r := *req
		r.Tools = nil
		return validate(&r)
	}
	if msg := validate(req); msg != "" {
		return msg
	}
	x.validTools, x.validated = append(x.validTools[:0], tools...), true
	return ""
}

// forget drops what the session knows of the last request.
func (x *Session) forget() {
	x.end, x.msgs, x.head = 0, x.msgs[:0], nil
	x.nmsg, x.ntok = 0, 0
	x.hashes, x.rest = x.hashes[:0], x.rest[:0]
}

// decode reads the body as decodeRequest does and tells how many of its leading
// messages are the last request's, byte for byte. When the body starts with the
// last request's bytes up to the end of its last message, only what follows is
// scanned: the same bytes were validated, in the same state, the last time.
func (x *Session) decode(body []byte) (*chatRequest, int, error) {
	if x.end > 0 && len(body) > x.end {
		x.h.Reset()
		_, _ = x.h.Write(body[:x.end])
		if x.h.Sum64() == x.sum {
			if req, ok := x.decodeAfter(body); ok {
				known := len(x.msgs)
				x.remember(body, req, x.end)
				return req, known, nil
			}
		}
	}
	req, err := decodeRequest(body)
	if err != nil {
		return nil, 0, err
	}
	x.head = x.head[:0]
	x.remember(body, req, 0)
	return req, 0, nil
}

// offset is where sub, a slice of b, starts in b.
func offset(b, sub []byte) int { return cap(b) - cap(sub) }

// remember records the body's messages (their offsets), its fields before them
// (when from is 0: a body read whole) and the hash of its bytes up to the end
// of its last message, of which those up to from are already in x.h.
func (x *Session) remember(body []byte, req *chatRequest, from int) {
	if len(req.Messages) == 0 {
		x.end = 0
		return
	}
	x.msgs = x.msgs[:0]
	for _, m := range req.Messages {
		o := offset(body, m)
		x.msgs = append(x.msgs, [2]int{o, o + len(m)})
	}
	if from == 0 {
		// The fields before the messages array: their values lie before the first
		// message. A body read whole has its values as slices of it.
		x.head = make([][]byte, len(requestKeys))
		start := x.msgs[0][0]
		vals := make([][]byte, len(requestKeys))
		sc := jsontext.NewScanner(body, jsontext.JSON)
		if sc.Fields(requestKeys, vals) != nil {
			x.end = 0
			return
		}
		for i, v := range vals {
			if i != 1 && v != nil && offset(body, v) < start {
				x.head[i] = bytes.Clone(v)
			}
		}
		x.h.Reset()
	}
	x.end = x.msgs[len(x.msgs)-1][1]
	_, _ = x.h.Write(body[from:x.end])
	x.sum = x.h.Sum64()
}

// decodeAfter reads a body whose bytes up to x.end are the last request's: the
// messages after the known ones, then the fields after the messages array. It
// reports false for anything it does not read exactly as decodeRequest would
// (decodeRequest then reads the body whole, and says what is wrong with it).
func (x *Session) decodeAfter(body []byte) (*chatRequest, bool) {
	var r chatRequest
	r.Messages = make([]json.RawMessage, 0, len(x.msgs)+2)
	for _, m := range x.msgs {
		r.Messages = append(r.Messages, body[m[0]:m[1]])
	}
	i := jsontext.SkipSpace(body, x.end)
	for i < len(body) && body[i] == ',' {
		sc := jsontext.NewScanner(body[i+1:], jsontext.JSON)
		sc.LimitDepth(jsontext.MaxDepth - 2) // inside the request object and its messages array
		v, err := sc.Value()
		if err != nil {
			return nil, false
		}
		r.Messages = append(r.Messages, v)
		i = jsontext.SkipSpace(body, i+1+sc.Pos())
	}
	if i >= len(body) || body[i] != ']' {
		return nil, false
	}
	vals := make([][]byte, len(requestKeys))
	copy(vals, x.head)
	switch i = jsontext.SkipSpace(body, i+1); {
	case i >= len(body):
		return nil, false
	case body[i] == '}':
		if jsontext.SkipSpace(body, i+1) != len(body) {
			return nil, false
		}
	case body[i] == ',':
		// The members after the messages, read as an object of their own: at
		// least one, as after a comma.
		if j := jsontext.SkipSpace(body, i+1); j >= len(body) || body[j] != '"' {
			return nil, false
		}
		x.tail = append(append(x.tail[:0], '{'), body[i+1:]...)
		after := make([][]byte, len(requestKeys))
		sc := jsontext.NewScanner(x.tail, jsontext.JSON)
		if sc.Fields(requestKeys, after) != nil || sc.End() != nil || after[1] != nil {
			return nil, false // a second messages array wins: read the body whole
		}
		for k, v := range after {
			if v != nil {
				vals[k] = v // of duplicate keys the last wins
			}
		}
	default:
		return nil, false
	}
	if r.setFields(vals) != nil {
		return nil, false
	}
	return &r, true
}

// prepare is Server.prepare from the history the session knows: known leading
// messages of req are the last request's. The tokens of the messages after the
// history are counted on from it, and the block hashes chained on from its
// last full block.
func (x *Session) prepare(req *chatRequest, known int, rng *rand.Rand) (*response, string) {
	s := x.srv
	bs := s.prof.BlockSize
	tools := bytes.TrimSpace(req.Tools)
	if x.nmsg == 0 || known < x.nmsg || !bytes.Equal(tools, x.tools) || req.CacheSalt != x.salt || x.ntok >= s.prof.MaxModelLen {
		// Start the history again: tokenizing from an ntok at the limit would not
		// stop where a whole prompt's tokenizing stops.
		x.nmsg, x.ntok = 0, 0
		x.tools, x.salt = append(x.tools[:0], tools...), req.CacheSalt
		x.hashes, x.rest = x.hashes[:0], x.rest[:0]
	}
	bp := s.tokenBuf()
	defer s.putTokenBuf(bp)
	toks, bad, complete := s.messageTokens((*bp)[:0], req, x.nmsg, x.ntok, s.prof.MaxModelLen)
	if bad != "" {
		return nil, bad
	}
	newMsg := len(toks)
	if complete {
		toks = s.tt.append(toks, genPrompt)
	}
	promptLen := x.ntok + len(toks)
	res, toks, msg := s.respond(req, x.id, rng, promptLen, complete, toks)
	*bp = toks
	if msg != "" {
		return nil, msg
	}
	// The sequence's blocks: the history's, then those of the tokens after its
	// last full block, the new messages, the generation prompt and the answer.
	chain := cacheSeed(req)
	if n := len(x.hashes); n > 0 {
		chain = x.hashes[n-1]
	}
	mp := s.tokenBuf()
	defer s.putTokenBuf(mp)
	more := append(append((*mp)[:0], x.rest...), toks[:promptLen-x.ntok+res.target]...)
	*mp = more
	hashes := make([]uint64, len(x.hashes), (promptLen+res.target)/bs)
	copy(hashes, x.hashes)
	hashes = blockHashes(hashes, chain, more, bs)
	res.q = newSeq(promptLen, res.target, hashes)
	// The history grows by the new messages: their full blocks are the
	// sequence's next ones.
	full := (len(x.rest) + newMsg) / bs
	x.hashes = append(x.hashes, hashes[len(x.hashes):len(x.hashes)+full]...)
	x.rest = append(x.rest[:0], more[full*bs:len(x.rest)+newMsg]...)
	x.nmsg, x.ntok = len(req.Messages), x.ntok+newMsg
	return res, ""
}

// keep remembers the registered blocks of the session's turn that just
// finished on pool.
func (x *Session) keep(pool *kvPool, blocks []blockID) {
	if pool != x.pool {
		x.pool, x.blocks = pool, nil // a new array: a turn in flight may hold the old one
	}
	x.blocks = append(x.blocks[:0], blocks...)
}

// maxSessions bounds the sessions the HTTP server remembers: each holds a
// chained hash and a block id per KV block of its history (12 bytes per 16
// tokens), so 1,024 sessions of full 256k-token contexts hold 192 MiB (at most
// twice that with their slices' spare room) and a typical run's a few MiB.
const maxSessions = 1024

// sessionTable is the HTTP server's Sessions by X-Session-ID, the least
// recently used dropped past maxSessions. A session serves one request at a
// time: take hands it out, give takes it back.
type sessionTable struct {
	mu  sync.Mutex
	m   map[string]*list.Element // of *tableEntry
	lru list.List                // front: most recently used
}

type tableEntry struct {
	x    *Session
	busy bool
}

// take returns the Session of id for one request, nil when id is "" or the
// session is serving another request (that one is then prepared whole).
func (t *sessionTable) take(s *Server, id string) *Session {
	if id == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]*list.Element)
	}
	if el, ok := t.m[id]; ok {
		e := el.Value.(*tableEntry)
		if e.busy {
			return nil
		}
		e.busy = true
		t.lru.MoveToFront(el)
		return e.x
	}
	e := &tableEntry{x: s.NewSession(id), busy: true}
	t.m[id] = t.lru.PushFront(e)
	if t.lru.Len() > maxSessions {
		old := t.lru.Back()
		t.lru.Remove(old)
		delete(t.m, old.Value.(*tableEntry).x.id)
	}
	return e.x
}

// give takes back a Session that take returned.
func (t *sessionTable) give(x *Session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el, ok := t.m[x.id]; ok && el.Value.(*tableEntry).x == x {
		el.Value.(*tableEntry).busy = false
	}
}
