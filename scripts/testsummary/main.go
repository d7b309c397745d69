// Command testsummary reads `go test -json` events on standard input and prints
// what `go test` prints without -v (each package's result line, the output of every
// failing test), then one line naming every test that skipped and why, so that a
// run of `make test` says what it did not check. It exits 1 when a test or a
// package failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
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
	case e.Test == "":
		// a package's start, pass or skip ([no test files])
	case e.Action == "output":
		s.buf[key(e)] = append(s.buf[key(e)], e.Output)
	case e.Action == "fail":
		s.failed = true
		for _, l := range s.buf[key(e)] {
			fmt.Fprint(s.out, l)
		}
		delete(s.buf, key(e))
	case e.Action == "skip":
		s.skips[shortPackage(e.Package)+"."+e.Test] = skipReason(s.buf[key(e)])
		delete(s.buf, key(e))
	case e.Action == "pass":
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

// skipLine is the one line naming every skipped test, "" when none skipped.
func (s *summary) skipLine() string {
	if len(s.skips) == 0 {
		return ""
	}
	names := make([]string, 0, len(s.skips))
	for n := range s.skips {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, n+" ("+s.skips[n]+")")
	}
	noun := "tests"
	if len(names) == 1 {
		noun = "test"
	}
	return fmt.Sprintf("make test: %d %s skipped: %s", len(names), noun, strings.Join(parts, "; "))
}

func run(in io.Reader, out io.Writer) (failed bool, err error) {
	s := &summary{out: out, buf: map[string][]string{}, skips: map[string]string{}}
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
	if l := s.skipLine(); l != "" {
		fmt.Fprintln(out, l)
	} else {
		fmt.Fprintln(out, "make test: no test skipped")
	}
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
