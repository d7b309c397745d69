package sim

// block is one KV-cache block of the pool.
type block struct {
	hash   uint64
	hashed bool  // registered in the prefix index under hash
	ref    int32 // sequences using it
	// LRU list of free hashed blocks (ref == 0), oldest first.
	prev, next *block
}

// kvPool is the global KV-cache pool: a fixed number of blocks, a prefix index
// from chained block hash to block, reference counts while sequences use blocks,
// and least-recently-freed eviction of the free hashed blocks. It is owned by the
// scheduler goroutine and is not safe for concurrent use.
type kvPool struct {
	capacity int
	unused   int // blocks never allocated or freed without a hash
	inUse    int // blocks with ref > 0
	index    map[uint64]*block
	lru      block // sentinel: lru.next is the oldest free hashed block
	lruLen   int
	spare    []*block // recycled block structs
	// Counters, for tests and metrics.
	evictions int64
}

func newKVPool(capacity int) *kvPool {
	p := &kvPool{capacity: capacity, unused: capacity, index: make(map[uint64]*block)}
	p.lru.next, p.lru.prev = &p.lru, &p.lru
	return p
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

func (p *kvPool) lruRemove(b *block) {
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next = nil, nil
	p.lruLen--
}

func (p *kvPool) lruPush(b *block) {
	b.prev, b.next = p.lru.prev, &p.lru
	p.lru.prev.next = b
	p.lru.prev = b
	p.lruLen++
}

// lookup returns the cached block with hash h, or nil.
func (p *kvPool) lookup(h uint64) *block { return p.index[h] }

// acquire takes a reference on a cached block (a prefix-cache hit).
func (p *kvPool) acquire(b *block) {
	if b.ref == 0 {
		p.lruRemove(b)
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
			b = new(block)
		}
	case p.lruLen > 0:
		b = p.lru.next
		p.lruRemove(b)
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
