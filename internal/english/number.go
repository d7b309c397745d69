package english

import (
	"math"
	"strconv"
	"strings"
)

// Thousands formats x with prec decimals (-1: as few as needed) and commas
// between the thousands of its integer part: Thousands(218374.74, 1) is
// "218,374.7". A negative x that rounds to zero is written without its sign.
func Thousands(x float64, prec int) string {
	s := strconv.FormatFloat(math.Abs(x), 'f', prec, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if x < 0 && strings.Trim(s, "0.") != "" {
		b.WriteByte('-')
	}
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}
