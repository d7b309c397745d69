package simserver

// blockID names a block of the pool: its index in the pool's slab. The zero
// blockID is the pool's LRU sentinel, never handed out.
type blockID int32

// block is one KV-cache block of the pool. It holds no pointers, so that the
// slab of a large pool costs the garbage collector nothing to scan, and a
// sequence's blocks, allocated together, lie together in memory.
type block struct {
	hash uint64
	ref  int32 // sequences using it
	// LRU list of free hashed blocks (ref == 0), oldest first.
	prev, next blockID
	hashed     bool // registered in the prefix index under hash
}

// kvPool is the global KV-cache pool: a fixed number of blocks, a prefix index
// from chained block hash to block, reference counts while sequences use blocks,
// and least-recently-freed eviction of the free hashed blocks. It is owned by the
// scheduler goroutine and is not safe for concurrent use.
type kvPool struct {
	capacity int
	unused   int // blocks never allocated or freed without a hash
	inUse    int // blocks with ref > 0
	index    map[uint64]blockID
	// slab[0] is the LRU sentinel: slab[0].next is the oldest free hashed block.
	// The slab grows as blocks are first used, up to capacity+1.
	slab   []block
	lruLen int
	spare  []blockID // blocks freed without a hash, for reuse before new ones
	// Counters, for tests and metrics.
	evictions int64
}

func newKVPool(capacity int) *kvPool {
	return &kvPool{capacity: capacity, unused: capacity, index: make(map[uint64]blockID), slab: make([]block, 1, 1+min(capacity, 1<<16))}
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

func (p *kvPool) lruRemove(id blockID) {
	b := &p.slab[id]
	p.slab[b.prev].next, p.slab[b.next].prev = b.next, b.prev
	b.prev, b.next = 0, 0
	p.lruLen--
}

func (p *kvPool) lruPush(id blockID) {
	s := &p.slab[0]
	last := s.prev
	p.slab[id].prev, p.slab[id].next = last, 0
	p.slab[last].next = id
	s.prev = id
	p.lruLen++
}

// lookup returns the cached block with hash h, or 0.
func (p *kvPool) lookup(h uint64) blockID { return p.index[h] }

// holds reports whether block id is registered under hash h.
func (p *kvPool) holds(id blockID, h uint64) bool {
	b := &p.slab[id]
	return b.hashed && b.hash == h
}

// acquire takes a reference on a cached block (a prefix-cache hit).
func (p *kvPool) acquire(id blockID) {
	if p.slab[id].ref == 0 {
		p.lruRemove(id)
		p.inUse++
	}
	p.slab[id].ref++
}

// alloc returns a fresh block with one reference, evicting the least recently
// freed cached block when no unused block is left; 0 when every block is in use.
func (p *kvPool) alloc() blockID {
	var id blockID
	switch {
	case p.unused > 0:
		p.unused--
		if n := len(p.spare); n > 0 {
			id = p.spare[n-1]
			p.spare = p.spare[:n-1]
		} else {
			id = blockID(len(p.slab))
			p.slab = append(p.slab, block{})
		}
	case p.lruLen > 0:
		id = p.slab[0].next
		p.lruRemove(id)
		delete(p.index, p.slab[id].hash)
		p.evictions++
		p.slab[id] = block{}
	default:
		return 0
	}
	p.slab[id].ref = 1
	p.inUse++
	return id
}

// register enters a block whose tokens are all computed into the prefix index
// under hash h. When another block already holds h, the block stays private
// (the duplicate is dropped when freed), as vLLM does.
func (p *kvPool) register(id blockID, h uint64) {
	b := &p.slab[id]
	if b.hashed {
		return
	}
	if _, ok := p.index[h]; ok {
		return
	}
	b.hash, b.hashed = h, true
	p.index[h] = id
}

// release drops one reference on each block, last block first, so that among
// blocks freed together the tail of a sequence is evicted before its prefix.
func (p *kvPool) release(blocks []blockID) {
	for i := len(blocks) - 1; i >= 0; i-- {
		id := blocks[i]
		b := &p.slab[id]
		b.ref--
		if b.ref > 0 {
			continue
		}
		p.inUse--
		if b.hashed {
			p.lruPush(id)
			continue
		}
		p.unused++
		*b = block{}
		p.spare = append(p.spare, id)
	}
}
