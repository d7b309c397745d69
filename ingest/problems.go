package ingest

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/agentrace/agentrace/internal/english"
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
	// Omitted counts problems beyond the per-file limit (or the limit on problems
	// kept); OmittedByKind splits them by kind (problemKind).
	Omitted       int
	OmittedByKind map[string]int
	// Stopped, when set, says where reading stopped: past StopAfterProblems
	// problems the rest of the input is not read.
	Stopped string
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	more := ""
	if e.Stopped != "" {
		more = " or more"
	}
	fmt.Fprintf(&b, "invalid input: %s%s", english.Count(len(e.Problems)+e.Omitted, "problem", "problems"), more)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&b, "\n  ... and %d more (a higher problem limit shows them)", e.Omitted)
		b.WriteString(kindsSummary(e.OmittedByKind, "\n    "))
	}
	if e.Stopped != "" {
		fmt.Fprintf(&b, "\n  %s", e.Stopped)
	}
	return b.String()
}

// kindsSummary lists counts by kind, most frequent first, one per line.
func kindsSummary(byKind map[string]int, indent string) string {
	type kc struct {
		kind string
		n    int
	}
	var ks []kc
	for k, n := range byKind {
		ks = append(ks, kc{k, n})
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].n != ks[j].n {
			return ks[i].n > ks[j].n
		}
		return ks[i].kind < ks[j].kind
	})
	var b strings.Builder
	for i, k := range ks {
		if i == 10 {
			fmt.Fprintf(&b, "%s%8s  ... %d more kinds", indent, "", len(ks)-10)
			break
		}
		fmt.Fprintf(&b, "%s%8d  %s", indent, k.n, k.kind)
	}
	return b.String()
}

// Limits on what ingest keeps of the problems (and, apart, the warnings) it finds,
// whatever the size of the input: a hostile input (a gzip bomb of failing lines)
// must not grow memory or time without bound.
const (
	// MaxKeptProblems is how many problems are kept in memory across all inputs
	// (or Options.MaxProblems per file, when that is larger); beyond it only their
	// counts by kind.
	MaxKeptProblems = 1000
	// StopAfterProblems: once this many problems are found, the input is refused
	// anyway, and reading stops.
	StopAfterProblems = 100_000
	// MaxConversationBytes bounds the rows of one conversation held while it is
	// read (a real one is a few MB).
	MaxConversationBytes = 256 << 20
	// maxKinds bounds the distinct kinds counted; the rest count as "other".
	maxKinds = 200
)

// problemList collects problems, up to a limit per file and MaxKeptProblems in
// all, and counts the rest by kind.
type problemList struct {
	limit   int // per file
	perFile map[string]int
	total   int
	err     ValidationError
}

// add records p; it reports whether reading should stop (StopAfterProblems).
func (l *problemList) add(p Problem) bool {
	if l.perFile == nil {
		l.perFile = map[string]int{}
	}
	l.total++
	n := l.perFile[p.File]
	if n <= l.limit {
		l.perFile[p.File] = n + 1 // bounded: the map stops growing past the limit
	}
	if n >= l.limit || len(l.err.Problems) >= max(MaxKeptProblems, l.limit) {
		l.err.Omitted++
		if l.err.OmittedByKind == nil {
			l.err.OmittedByKind = map[string]int{}
		}
		k := problemKind(p.Message)
		if _, ok := l.err.OmittedByKind[k]; !ok && len(l.err.OmittedByKind) >= maxKinds {
			k = "other"
		}
		l.err.OmittedByKind[k]++
	} else {
		l.err.Problems = append(l.err.Problems, p)
	}
	return l.total >= StopAfterProblems
}

var (
	quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	numberRE = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?`)
)

// problemKind is a problem's message with its particulars (quoted values,
// numbers) blanked: problems of one kind share it.
func problemKind(msg string) string {
	if len(msg) > 200 {
		msg = msg[:200]
	}
	msg = quotedRE.ReplaceAllString(msg, `"…"`)
	return numberRE.ReplaceAllString(msg, "N")
}

func (l *problemList) any() bool { return len(l.err.Problems) > 0 || l.err.Omitted > 0 }

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
