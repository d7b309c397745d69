package python

import (
	"math/big"
	"math/bits"
)

// Random is Python's random.Random: the Mersenne Twister MT19937 seeded as
// random.Random(n) seeds it from an int, with the draws random.shuffle makes.
type Random struct {
	mt [624]uint32
	i  int
}

// NewRandom returns random.Random(seed) for an int seed of any size: the
// absolute value's 32-bit words, least significant first (one zero word for
// 0), go to MT19937's init_by_array.
func NewRandom(seed *big.Int) *Random {
	abs := new(big.Int).Abs(seed)
	var key []uint32
	for _, w := range abs.Bits() {
		for j := 0; j < bits.UintSize; j += 32 {
			key = append(key, uint32(uint64(w)>>j))
		}
	}
	for len(key) > 1 && key[len(key)-1] == 0 {
		key = key[:len(key)-1]
	}
	if len(key) == 0 {
		key = []uint32{0}
	}
	r := new(Random)
	r.initByArray(key)
	return r
}

func (r *Random) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < len(r.mt); i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.i = len(r.mt)
}

func (r *Random) initByArray(key []uint32) {
	const n = len(r.mt)
	r.initGenrand(19650218)
	i, j := 1, 0
	k := max(n, len(key))
	for ; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i++
		j++
		if i >= n {
			r.mt[0] = r.mt[n-1]
			i = 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k = n - 1; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= n {
			r.mt[0] = r.mt[n-1]
			i = 1
		}
	}
	r.mt[0] = 0x80000000
	r.i = n
}

// Uint32 is the generator's next 32-bit output (genrand_uint32).
func (r *Random) Uint32() uint32 {
	const n, m = 624, 397
	if r.i >= n {
		for k := range n {
			y := r.mt[k]&0x80000000 | r.mt[(k+1)%n]&0x7fffffff
			v := r.mt[(k+m)%n] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[k] = v
		}
		r.i = 0
	}
	y := r.mt[r.i]
	r.i++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	y ^= y >> 18
	return y
}

// below returns a uniform int in [0, n) for 0 < n < 2^32 as random._randbelow
// draws it: getrandbits(n.bit_length()) until the draw is below n.
func (r *Random) below(n int) int {
	k := bits.Len(uint(n))
	for {
		v := int(r.Uint32() >> (32 - k))
		if v < n {
			return v
		}
	}
}

// Shuffle shuffles x in place as random.shuffle(x) does: from the last
// position down to the second, swap with a position drawn from those up to it.
func (r *Random) Shuffle(x []int) {
	for i := len(x) - 1; i > 0; i-- {
		j := r.below(i + 1)
		x[i], x[j] = x[j], x[i]
	}
}
