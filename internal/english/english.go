// Package english words what agentrace tells a person: the counts of messages
// ("1 curve", "2 curves", through Count, so that no command prints "1 curves")
// and numbers with thousands separators (Thousands: "218,374.7").
package english

import (
	"fmt"
	"strings"
)

// Count is n followed by one (n == 1) or many: Count(1, "curve", "curves") is
// "1 curve", Count(0, "curve", "curves") "0 curves".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Shorten cuts s to at most n bytes at a word boundary (at a byte when the last
// space is in the first half), marking the cut with " ...".
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut < n/2 {
		cut = n
	}
	return s[:cut] + " ..."
}
