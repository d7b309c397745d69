// Command testsummary reads `go test -json` events on standard input and prints
// what `go test` prints without -v (each package's result line, the output of every
// failing test), then the skipped tests grouped by the reason they gave, so that a
// run of `make test` says what it did not check, and last, alone on its line,
// "N passed, N failed, N skipped" (tests and subtests; a package that failed
// without a failing test, as one that does not build, counts as one failure).
// It exits 1 when a test or a package failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/agentrace/agentrace/internal/english"
)

// event is one record of test2json (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// summary folds the events.
type summary struct {
	out    io.Writer
	buf    map[string][]string // a running test's output, by package and test
	skips  map[string]string   // test -> reason
	failed bool

	passed, failedTests, failedPkgs int
	pkgFailedTest                   map[string]bool // packages with a failed test
}

func key(e event) string { return e.Package + " " + e.Test }

func (s *summary) add(e event) {
	switch {
	case e.Test == "" && e.Action == "output":
		if e.Output != "PASS\n" { // go test without -v does not print the test binary's PASS
			fmt.Fprint(s.out, e.Output) // package lines: ok, FAIL, build errors
		}
	case e.Test == "" && e.Action == "fail":
		s.failed = true
		if !s.pkgFailedTest[e.Package] {
			s.failedPkgs++
		}
	case e.Test == "":
		// a package's start, pass or skip ([no test files])
	case e.Action == "output":
		s.buf[key(e)] = append(s.buf[key(e)], e.Output)
	case e.Action == "fail":
		s.failed = true
		s.failedTests++
		s.pkgFailedTest[e.Package] = true
		for _, l := range s.buf[key(e)] {
			fmt.Fprint(s.out, l)
		}
		delete(s.buf, key(e))
	case e.Action == "skip":
		s.skips[shortPackage(e.Package)+"."+e.Test] = skipReason(s.buf[key(e)])
		delete(s.buf, key(e))
	case e.Action == "pass":
		s.passed++
		delete(s.buf, key(e))
	}
}

// skipReason is the message a skipped test gave: its last output line that is not
// the "--- SKIP" line or a "=== RUN" line, without the file:line prefix.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		if f, rest, ok := strings.Cut(l, ": "); ok && strings.Contains(f, ".go:") {
			l = rest
		}
		return l
	}
	return "no reason given"
}

func shortPackage(p string) string {
	return strings.TrimPrefix(p, "github.com/agentrace/agentrace/")
}

// skipLines are the skipped tests grouped by reason, the reasons in order, each
// line "  REASON: TEST, TEST"; none when nothing skipped.
func (s *summary) skipLines() []string {
	byReason := map[string][]string{}
	for n, r := range s.skips {
		byReason[r] = append(byReason[r], n)
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	lines := make([]string, 0, len(reasons)+1)
	if len(reasons) > 0 {
		lines = append(lines, fmt.Sprintf("make test: skipped, by reason (%s):", english.Count(len(reasons), "reason", "reasons")))
	}
	for _, r := range reasons {
		names := byReason[r]
		sort.Strings(names)
		lines = append(lines, fmt.Sprintf("  %s: %s", r, strings.Join(names, ", ")))
	}
	return lines
}

// closing is the last line: "N passed, N failed, N skipped".
func (s *summary) closing() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", s.passed, s.failedTests+s.failedPkgs, len(s.skips))
}

func run(in io.Reader, out io.Writer) (failed bool, err error) {
	s := &summary{out: out, buf: map[string][]string{}, skips: map[string]string{}, pkgFailedTest: map[string]bool{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			fmt.Fprintln(out, sc.Text()) // not an event: go test's own message
			continue
		}
		s.add(e)
	}
	for _, l := range s.skipLines() {
		fmt.Fprintln(out, l)
	}
	fmt.Fprintln(out, s.closing())
	return s.failed, sc.Err()
}

func main() {
	failed, err := run(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}
