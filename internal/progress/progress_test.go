package progress

import (
	"strings"
	"testing"
	"time"
)

func TestETA(t *testing.T) {
	for _, tc := range []struct {
		done, total int64
		elapsed     time.Duration
		want        string
	}{
		{0, 10, time.Second, ""},                          // nothing done: no pace yet
		{10, 10, time.Second, ""},                         // all done
		{12, 10, time.Second, ""},                         // more than planned
		{5, 10, 0, ""},                                    // no time passed
		{1, 4, 10 * time.Second, "about 30s left"},        // 3 more at 10 s each
		{2, 613, 18 * time.Second, "about 1h32m0s left"},  // the full dataset at its start
		{10, 40, 70 * time.Second, "about 3m30s left"},    // tens of seconds
		{3, 10, 1234 * time.Millisecond, "about 3s left"}, // 2.879 s
		{99, 100, 10 * time.Millisecond, "under 1s left"},
	} {
		got := ETA(tc.done, tc.total, tc.elapsed)
		if got != tc.want {
			t.Errorf("ETA(%d, %d, %v) = %q, want %q", tc.done, tc.total, tc.elapsed, got, tc.want)
		}
	}
}

// TestOver: on a terminal, what Over's f writes starts on a cleared line, and the
// final status follows it.
func TestOver(t *testing.T) {
	var b strings.Builder
	l := New(&b, true, 0, func() string { return "status 1/2" })
	l.print(false)
	l.Over(func() { b.WriteString("note: hello\n") })
	l.Stop()
	if want := "\rstatus 1/2\r          \rnote: hello\n\rstatus 1/2\n"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}
