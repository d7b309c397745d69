// Package english words the counts of messages: "1 curve", "2 curves". Every
// message that counts things says it through Count, so that no command prints
// "1 curves".
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
