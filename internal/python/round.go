// Package python restates in Go the parts of Python's semantics that the
// reference client's results depend on: round() on floats (its scorer), float()
// of a str and repr() of a float (how its loader reads trace values), the str
// methods and re character classes it applies to commands and model output
// (isspace, strip, \w, \d, lower), and random.Random's Mersenne Twister with
// random.shuffle (the order its agentic strategy starts conversations in).
// Python's json.loads is jsontext's Python dialect. Each is checked against
// CPython's own results (testdata).
package python

import (
	"math"
	"math/big"
	"strconv"
)

// Limits of Python's round(x, n) on floats: beyond them the result is x (or a
// signed zero), because every float64 is already exact at that many places.
const (
	maxPlaces = 323  // (DBL_MANT_DIG - DBL_MIN_EXP) * 0.30103
	minPlaces = -308 // -(DBL_MAX_EXP + 1) * 0.30103
)

// Round rounds x to places decimal places the way Python's round(x, places)
// does: the exact decimal value of the binary float64 is rounded half to even and
// the result converted back to the nearest float64. round(2.675, 2) is therefore
// 2.67 (2.675 is stored as 2.67499999...), round(0.125, 2) is 0.12 (an exact tie,
// to even), and round(0.375, 2) is 0.38. NaN and infinities are returned as is.
func Round(x float64, places int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	if places > maxPlaces {
		return x
	}
	if places < minPlaces {
		return math.Copysign(0, x)
	}
	if places >= 0 {
		// strconv formats a fixed number of places from the exact binary value,
		// rounding an exact tie to even; parsing back is correctly rounded.
		s := strconv.FormatFloat(x, 'f', places, 64)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil { // cannot happen for a finite float
			return x
		}
		return v
	}
	// Negative places: round x / 10^k to an integer, exactly, in rationals.
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-places)), nil)
	r := new(big.Rat).SetFloat64(x)
	r.Quo(r, new(big.Rat).SetInt(scale))
	q, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	// rem has the sign of the numerator; compare 2|rem| with the denominator.
	twice := new(big.Int).Abs(rem)
	twice.Lsh(twice, 1)
	switch c := twice.Cmp(r.Denom()); {
	case c > 0, c == 0 && q.Bit(0) == 1:
		if rem.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	res := new(big.Rat).SetInt(q.Mul(q, scale))
	v, _ := res.Float64()
	return math.Copysign(v, x)
}
