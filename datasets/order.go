package datasets

import (
	"fmt"
	"math/big"

	"github.com/agentrace/agentrace/internal/python"
)

// DefaultSeed is the reference's default for its RNG seeds (schema.py's 42),
// the dataloader seed of a start order no config sets.
const DefaultSeed = 42

// StartOrderRule names the order in which trajectories take conversations, as
// a run's manifest records it.
const StartOrderRule = "shuffle_per_pass"

// StartOrder gives the conversation each trajectory replays, in start order, as
// the reference's agentic strategy draws it: the conversation indices 0..n-1,
// shuffled with random.shuffle by random.Random(dataloader seed) before each pass
// over the dataset, the same list reshuffled pass after pass. Trajectory k
// replays the k-th draw as instance k div n + 1 (a pass holds each conversation
// once). Turns inside a conversation keep their order.
type StartOrder struct {
	rng  *python.Random
	perm []int
	pos  int
}

// NewStartOrder returns the start order over n conversations from the
// dataloader seed.
func NewStartOrder(n int, seed *big.Int) *StartOrder {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	return &StartOrder{rng: python.NewRandom(seed), perm: perm, pos: n}
}

// Next returns the conversation index of the next trajectory.
func (o *StartOrder) Next() int {
	if o.pos >= len(o.perm) {
		o.rng.Shuffle(o.perm)
		o.pos = 0
	}
	c := o.perm[o.pos]
	o.pos++
	return c
}

// ParseSeed reads a seed as the reference's configs write it: a decimal
// integer of any size.
func ParseSeed(s string) (*big.Int, error) {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return nil, fmt.Errorf("seed %q: not a decimal integer", s)
	}
	return v, nil
}
