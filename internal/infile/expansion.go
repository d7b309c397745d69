package infile

import (
	"errors"
	"fmt"
	"io"
)

// ErrExpansion is returned for a compressed input (a .gz trace, an archive)
// that expands past its limit: a decompression bomb, or a limit set too low.
var ErrExpansion = errors.New("compressed input expands past its limit")

// ExpansionLimit is what size compressed bytes may expand to at ratio: ratio
// times size, and at least floor (so that a tiny input's framing does not count
// as expansion); a negative ratio means no limit (-1).
func ExpansionLimit(size int64, ratio float64, floor int64) int64 {
	if ratio < 0 {
		return -1
	}
	return max(int64(ratio*float64(size)), floor)
}

// ExpansionReader is the decompression guard: it passes through what R (a
// decompressor) reads and fails with ErrExpansion once more than Limit bytes
// came out. Size and Ratio (the compressed size and the ratio the limit came
// from) are for the message; Name, when set, leads it.
type ExpansionReader struct {
	R     io.Reader
	Limit int64 // < 0: none
	Size  int64
	Ratio float64
	Name  string
	n     int64
}

// Read reads from R, counting, and fails past the limit.
func (e *ExpansionReader) Read(p []byte) (int, error) {
	n, err := e.R.Read(p)
	e.n += int64(n)
	if e.Limit >= 0 && e.n > e.Limit {
		err := fmt.Errorf("%w: more than %d bytes from %d (%gx its size; a higher expansion limit lifts this)", ErrExpansion, e.Limit, e.Size, e.Ratio)
		if e.Name != "" {
			err = fmt.Errorf("%q: %w", e.Name, err)
		}
		return n, err
	}
	return n, err
}
