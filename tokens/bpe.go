package tokens

import (
	"container/heap"
	"sync"
)

// merge is the result of merging one adjacent pair of tokens: the merge's rank
// (lower merges first) and the merged token's id.
type merge struct {
	rank int32
	id   int32
}

// bpe is a byte-level BPE model. It works on raw bytes: the byte-to-unicode
// mapping of Hugging Face's ByteLevel is undone when the vocabulary is loaded.
type bpe struct {
	byteID [256]int32       // id of each single-byte token, -1 when absent
	merges map[uint64]merge // (left id, right id) -> merge
	vocab  map[string]int32 // raw bytes -> id, for whole-word look-ups
	// wholeWord makes a word that is itself a token encode as that token before any
	// merge (HF's ignore_merges; tiktoken always does this).
	wholeWord bool
	cache     wordCache
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// encodeWord appends the ids of one pre-token word to dst.
// Every byte has a token (Load checks it).
func (m *bpe) encodeWord(dst []int, word string) []int {
	if len(word) == 0 {
		return dst
	}
	if len(word) == 1 {
		return append(dst, int(m.byteID[word[0]]))
	}
	if m.wholeWord {
		if id, ok := m.vocab[word]; ok {
			return append(dst, int(id))
		}
	}
	if ids, ok := m.cache.get(word); ok {
		for _, id := range ids {
			dst = append(dst, int(id))
		}
		return dst
	}
	var buf [64]int32
	syms := buf[:0]
	for i := 0; i < len(word); i++ {
		syms = append(syms, m.byteID[word[i]])
	}
	if len(syms) <= 48 {
		syms = m.mergeSmall(syms)
	} else {
		syms = m.mergeLarge(syms)
	}
	m.cache.put(word, syms)
	for _, id := range syms {
		dst = append(dst, int(id))
	}
	return dst
}

// mergeSmall applies merges by repeated scans: the lowest rank first, the
// leftmost among equal ranks, as Hugging Face's priority queue does. It is the
// fast path for ordinary words.
func (m *bpe) mergeSmall(syms []int32) []int32 {
	for len(syms) > 1 {
		best, at := merge{rank: -1}, -1
		for i := 0; i+1 < len(syms); i++ {
			mg, ok := m.merges[pairKey(syms[i], syms[i+1])]
			if ok && (at < 0 || mg.rank < best.rank) {
				best, at = mg, i
			}
		}
		if at < 0 {
			break
		}
		syms[at] = best.id
		syms = append(syms[:at+1], syms[at+2:]...)
	}
	return syms
}

// mergeLarge is mergeSmall for long words: a heap of candidate pairs over a linked
// list of symbols, O(n log n).
func (m *bpe) mergeLarge(syms []int32) []int32 {
	n := len(syms)
	prev := make([]int32, n)
	next := make([]int32, n)
	for i := range syms {
		prev[i] = int32(i - 1)
		next[i] = int32(i + 1)
	}
	next[n-1] = -1
	h := make(pairHeap, 0, n)
	for i := 0; i+1 < n; i++ {
		if mg, ok := m.merges[pairKey(syms[i], syms[i+1])]; ok {
			h = append(h, candidate{pos: int32(i), rank: mg.rank, id: mg.id, right: syms[i+1]})
		}
	}
	heap.Init(&h)
	dead := make([]bool, n)
	for h.Len() > 0 {
		c := heap.Pop(&h).(candidate)
		p := c.pos
		if dead[p] {
			continue
		}
		q := next[p]
		if q < 0 {
			continue
		}
		// The pair is stale when either side changed since it was pushed.
		if mg, ok := m.merges[pairKey(syms[p], syms[q])]; !ok || mg.id != c.id || mg.rank != c.rank || syms[q] != c.right {
			continue
		}
		syms[p] = c.id
		dead[q] = true
		next[p] = next[q]
		if next[q] >= 0 {
			prev[next[q]] = p
		}
		if l := prev[p]; l >= 0 {
			if mg, ok := m.merges[pairKey(syms[l], syms[p])]; ok {
				heap.Push(&h, candidate{pos: l, rank: mg.rank, id: mg.id, right: syms[p]})
			}
		}
		if r := next[p]; r >= 0 {
			if mg, ok := m.merges[pairKey(syms[p], syms[r])]; ok {
				heap.Push(&h, candidate{pos: p, rank: mg.rank, id: mg.id, right: syms[r]})
			}
		}
	}
	out := syms[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	return out
}

type candidate struct {
	pos, rank, id, right int32
}

type pairHeap []candidate

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	if h[i].rank != h[j].rank {
		return h[i].rank < h[j].rank
	}
	return h[i].pos < h[j].pos
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(candidate)) }
func (h *pairHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// wordCache maps pre-token words to their ids. It is sharded to keep lock
// contention low under concurrent Encode calls, and each shard is emptied when
// it fills, which bounds memory without bookkeeping on the hot path.
type wordCache struct {
	shards [cacheShards]cacheShard
}

const (
	cacheShards   = 64
	cacheShardCap = 8192
	cacheMaxWord  = 256 // longer words are not cached
)

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
}

func shardOf(word string) int {
	// FNV-1a over at most the first 32 bytes.
	h := uint32(2166136261)
	for i := 0; i < len(word) && i < 32; i++ {
		h ^= uint32(word[i])
		h *= 16777619
	}
	return int(h % cacheShards)
}

func (c *wordCache) get(word string) ([]int32, bool) {
	if len(word) > cacheMaxWord {
		return nil, false
	}
	s := &c.shards[shardOf(word)]
	s.mu.RLock()
	ids, ok := s.m[word]
	s.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(word string, ids []int32) {
	if len(word) > cacheMaxWord {
		return
	}
	own := make([]int32, len(ids))
	copy(own, ids)
	s := &c.shards[shardOf(word)]
	s.mu.Lock()
	if s.m == nil || len(s.m) >= cacheShardCap {
		s.m = make(map[string][]int32, 256)
	}
	s.m[word] = own
	s.mu.Unlock()
}
