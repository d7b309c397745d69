package score

import (
	"sync"

	"github.com/agentrace/agentrace/score/runread"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// recycler hands what scoring one run allocated on to the next run of a
// rescore: the turn log's buffers (runread.BufferPool) and rows, the attempts
// and outputs read from it, and the per-turn working slices of scoring. A batch
// of runs then makes little garbage, so that the collector seldom takes CPU from
// the jobs scoring the other runs. It is safe for concurrent use. The zero
// recycler (one run scored alone) allocates the turn log's buffers afresh.
type recycler struct {
	buffers  *runread.BufferPool // nil: Arrow's default allocator
	rows     sync.Pool           // of *[]runread.TurnLogRow
	attempts sync.Pool           // of *[]Attempt
	outs     sync.Pool           // of *[]Output
	usage    sync.Pool           // of *[]int32
	issued   sync.Pool           // of *[]issued
	raw      sync.Pool           // of *[]float64
}

func newRecycler() *recycler { return &recycler{buffers: runread.NewBufferPool()} }

// allocator is the allocator of the turn log's buffers: the pool, or nil for
// Arrow's default.
func (r *recycler) allocator() memory.Allocator {
	if r.buffers == nil {
		return nil
	}
	return r.buffers
}

// take returns an empty slice with room for n, reused from p when p holds one
// large enough.
func take[T any](p *sync.Pool, n int) []T {
	if s, ok := p.Get().(*[]T); ok && cap(*s) >= n {
		return (*s)[:0]
	}
	return make([]T, 0, n)
}

// give hands s back to p, emptied so that it holds on to nothing of the run it
// served.
func give[T any](p *sync.Pool, s []T) {
	if cap(s) == 0 {
		return
	}
	s = s[:cap(s)]
	clear(s)
	s = s[:0]
	p.Put(&s)
}
