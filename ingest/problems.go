package ingest

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with an input, located by file, line, conversation and
// turn (each when known).
type Problem struct {
	File           string
	Line           int64 // 1-based; 0 when the problem is about the whole file
	ConversationID string
	Turn           int32 // 0 when unknown
	Message        string
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.ConversationID != "" {
		fmt.Fprintf(&b, "conversation %q ", p.ConversationID)
	}
	if p.Turn != 0 {
		fmt.Fprintf(&b, "turn %d ", p.Turn)
	}
	if p.ConversationID != "" || p.Turn != 0 {
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// ValidationError lists the problems found in the inputs; no dataset was written.
type ValidationError struct {
	Problems []Problem
	// Omitted counts problems beyond the per-file limit.
	Omitted int
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid input: %d problem(s)", len(e.Problems)+e.Omitted)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more (raise --max-problems to see them)", e.Omitted)
	}
	return b.String()
}

// problemList collects problems, up to a limit per file.
type problemList struct {
	limit   int
	perFile map[string]int
	err     ValidationError
}

func (l *problemList) add(p Problem) {
	if l.perFile == nil {
		l.perFile = map[string]int{}
	}
	l.perFile[p.File]++
	if l.perFile[p.File] > l.limit {
		l.err.Omitted++
		return
	}
	l.err.Problems = append(l.err.Problems, p)
}

func (l *problemList) any() bool { return len(l.err.Problems) > 0 || l.err.Omitted > 0 }

// fileFull reports whether file has reached its limit (scanning can stop).
func (l *problemList) fileFull(file string) bool { return l.perFile[file] > l.limit }

// sort orders the problems by input file (in the order given), then line.
func (l *problemList) sort(files []string) {
	pos := map[string]int{}
	for i, f := range files {
		if _, ok := pos[f]; !ok {
			pos[f] = i
		}
	}
	ps := l.err.Problems
	sort.SliceStable(ps, func(i, j int) bool {
		if pos[ps[i].File] != pos[ps[j].File] {
			return pos[ps[i].File] < pos[ps[j].File]
		}
		return ps[i].Line < ps[j].Line
	})
}
