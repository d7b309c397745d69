package sim

// block is one KV-cache block of the pool.
type block struct {
	hash   uint64
	freed  uint64 // when it was last freed (kvPool.clock), while it is a free hashed block
	ref    int32  // sequences using it
	hashed bool   // registered in the prefix index under hash
}

// freedBlock is an entry of the pool's queue of freed hashed blocks: the block
// and when it was freed. An entry is stale once its block is used or freed again
// (ref > 0, or freed no longer at) or evicted.
type freedBlock struct {
	b  *block
	at uint64
}

// kvPool is the global KV-cache pool: a fixed number of blocks, a prefix index
// from chained block hash to block, reference counts while sequences use blocks,
// and least-recently-freed eviction of the free hashed blocks. It is owned by the
// scheduler goroutine and is not safe for concurrent use.
//
// The free hashed blocks are found in the order they were freed from a queue
// whose stale entries are skipped (and dropped when they outnumber the live
// ones): taking a reference on a cached block then touches only the block, so a
// turn that finds its history's thousands of blocks in the cache walks them in
// memory order.
type kvPool struct {
	capacity int
	unused   int // blocks never allocated or freed without a hash
	inUse    int // blocks with ref > 0
	index    map[uint64]*block
	queue    []freedBlock // oldest first, from head
	head     int
	lruLen   int      // free hashed blocks: the live entries of the queue
	clock    uint64   // frees so far
	spare    []*block // recycled block structs
	slab     []block  // blocks never handed out, allocated a chunk at a time
	// Counters, for tests and metrics.
	evictions int64
}

// slabBlocks is how many blocks the pool allocates at once.
const slabBlocks = 4096

func newKVPool(capacity int) *kvPool {
	return &kvPool{capacity: capacity, unused: capacity, index: make(map[uint64]*block)}
}

// free returns the number of blocks that can be allocated now: never-used ones
// plus evictable cached ones.
func (p *kvPool) free() int { return p.unused + p.lruLen }

// usage is the fraction of blocks held by running sequences.
func (p *kvPool) usage() float64 {
	if p.capacity == 0 {
		return 0
	}
	return float64(p.inUse) / float64(p.capacity)
}

// lruPush queues a hashed block that was just freed.
func (p *kvPool) lruPush(b *block) {
	p.clock++
	b.freed = p.clock
	if p.head > 0 && len(p.queue)-p.head < p.head && len(p.queue) == cap(p.queue) {
		// Reuse the consumed front before growing.
		p.queue = p.queue[:copy(p.queue, p.queue[p.head:])]
		p.head = 0
	}
	p.queue = append(p.queue, freedBlock{b, b.freed})
	p.lruLen++
	if n := len(p.queue) - p.head; n > 64 && n > 4*p.lruLen {
		p.compact()
	}
}

// live tells whether a queue entry still stands for a free hashed block.
func (e freedBlock) live() bool { return e.b.ref == 0 && e.b.hashed && e.b.freed == e.at }

// compact drops the stale entries of the queue, keeping the order.
func (p *kvPool) compact() {
	q := p.queue[:0]
	for _, e := range p.queue[p.head:] {
		if e.live() {
			q = append(q, e)
		}
	}
	clear(p.queue[len(q):])
	p.queue, p.head = q, 0
}

// oldest removes and returns the least recently freed free hashed block.
func (p *kvPool) oldest() *block {
	for {
		e := p.queue[p.head]
		p.queue[p.head] = freedBlock{}
		p.head++
		if e.live() {
			p.lruLen--
			return e.b
		}
	}
}

// lookup returns the cached block with hash h, or nil.
func (p *kvPool) lookup(h uint64) *block { return p.index[h] }

// acquire takes a reference on a cached block (a prefix-cache hit).
func (p *kvPool) acquire(b *block) {
	if b.ref == 0 {
		p.lruLen-- // its queue entry is now stale
		p.inUse++
	}
	b.ref++
}

// alloc returns a fresh block with one reference, evicting the least recently
// freed cached block when no unused block is left; nil when every block is in use.
func (p *kvPool) alloc() *block {
	var b *block
	switch {
	case p.unused > 0:
		p.unused--
		if n := len(p.spare); n > 0 {
			b = p.spare[n-1]
			p.spare = p.spare[:n-1]
		} else {
			if len(p.slab) == 0 {
				// Contiguous blocks: a sequence's blocks, allocated together, are
				// then walked (acquired, released) in memory order.
				p.slab = make([]block, min(slabBlocks, p.unused+1))
			}
			b = &p.slab[0]
			p.slab = p.slab[1:]
		}
	case p.lruLen > 0:
		b = p.oldest()
		delete(p.index, b.hash)
		p.evictions++
		*b = block{}
	default:
		return nil
	}
	b.ref = 1
	p.inUse++
	return b
}

// register enters a block whose tokens are all computed into the prefix index
// under hash h. When another block already holds h, b stays private (the
// duplicate is dropped when freed), as vLLM does.
func (p *kvPool) register(b *block, h uint64) {
	if b.hashed {
		return
	}
	if _, ok := p.index[h]; ok {
		return
	}
	b.hash, b.hashed = h, true
	p.index[h] = b
}

// release drops one reference on each block, last block first, so that among
// blocks freed together the tail of a sequence is evicted before its prefix.
func (p *kvPool) release(blocks []*block) {
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		b.ref--
		if b.ref > 0 {
			continue
		}
		p.inUse--
		if b.hashed {
			p.lruPush(b)
			continue
		}
		p.unused++
		*b = block{}
		p.spare = append(p.spare, b)
	}
}
