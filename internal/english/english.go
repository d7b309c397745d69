// Package english words what agentrace tells a person: the counts of messages
// ("1 curve", "2 curves", through Count, so that no command prints "1 curves"), its
// numbers with thousands separators (Thousands: "218,374.7"), and the one format
// of every problem message (Problem: "agentrace CMD: warning: MSG").
package english

import "fmt"

// Count is n followed by one (n == 1) or many: Count(1, "curve", "curves") is
// "1 curve", Count(0, "curve", "curves") "0 curves".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
