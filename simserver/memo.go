package simserver

import (
	"hash/maphash"
	"sync"
)

// tokenMemo remembers the tokens of rendered messages by a hash of their raw
// JSON, so that an agentic conversation, whose every turn resends the whole
// history, is decoded and tokenized once per message rather than once per turn.
// It keeps two generations: when the current one holds budget tokens it becomes
// the previous one and the one before is dropped. Safe for concurrent use.
type tokenMemo struct {
	seed   maphash.Seed
	budget int

	mu        sync.Mutex
	cur, prev map[uint64][]uint64
	curTokens int
}

func newTokenMemo(budget int) *tokenMemo {
	return &tokenMemo{seed: maphash.MakeSeed(), budget: budget, cur: make(map[uint64][]uint64)}
}

func (m *tokenMemo) key(raw []byte) uint64 { return maphash.Bytes(m.seed, raw) }

// get returns the tokens stored under k.
func (m *tokenMemo) get(k uint64) ([]uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.cur[k]; ok {
		return t, true
	}
	t, ok := m.prev[k]
	if ok {
		m.store(k, t)
	}
	return t, ok
}

// put stores toks (which the memo now owns) under k.
func (m *tokenMemo) put(k uint64, toks []uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.store(k, toks)
}

func (m *tokenMemo) store(k uint64, toks []uint64) {
	if m.curTokens+len(toks) > m.budget {
		m.prev, m.cur, m.curTokens = m.cur, make(map[uint64][]uint64), 0
	}
	m.cur[k] = toks
	m.curTokens += len(toks)
}
