package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/infile"
)

func gzipFile(t *testing.T, path string, lines func(w *bytes.Buffer)) {
	t.Helper()
	var raw bytes.Buffer
	lines(&raw)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGzipBomb: a gzip bomb once grew ingest to 8.9 GB (7.8M problems
// kept). A .gz input may decompress to --max-expansion times its size (at least 64
// MiB), the problems kept are capped and the rest counted by kind, reading stops
// after StopAfterProblems, and one conversation's rows are capped.
func TestGzipBomb(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()

	// 80 MiB of one repeated line: about 1000x.
	bomb := filepath.Join(dir, "bomb.jsonl.gz")
	gzipFile(t, bomb, func(w *bytes.Buffer) {
		line := `{"conversation_id":"c1","turn":1,"role":"user","content":"` + strings.Repeat("x", 1000) + `"}` + "\n"
		for w.Len() < 80<<20 {
			w.WriteString(line)
		}
	})
	_, err := Run(ctx, Options{Out: filepath.Join(dir, "ds"), Inputs: []string{bomb}})
	if !errors.Is(err, infile.ErrExpansion) || !strings.Contains(err.Error(), "a higher expansion limit lifts this") {
		t.Fatalf("gzip bomb: err = %v, want ErrExpansion naming the flag", err)
	}

	// Failing lines, each its own conversation, a few times StopAfterProblems.
	failing := filepath.Join(dir, "failing.jsonl.gz")
	n := StopAfterProblems + StopAfterProblems/2
	gzipFile(t, failing, func(w *bytes.Buffer) {
		for i := range n {
			fmt.Fprintf(w, `{"conversation_id":"c%d","turn":1,"role":"assistant","content":"x"}`+"\n", i)
		}
	})
	for _, maxProblems := range []int{0} {
		_, err = Run(ctx, Options{Out: filepath.Join(dir, "ds"), Inputs: []string{failing}, MaxExpansion: -1, MaxProblems: maxProblems})
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Fatalf("failing lines: %v", err)
		}
		kept := max(maxProblems, DefaultMaxProblems)
		if len(ve.Problems) != kept || ve.Omitted+len(ve.Problems) < StopAfterProblems || ve.Omitted+len(ve.Problems) >= n {
			t.Errorf("max-problems %d: %d kept, %d omitted of %d lines", maxProblems, len(ve.Problems), ve.Omitted, n)
		}
		if ve.Stopped == "" || !strings.Contains(err.Error(), "reading stopped") {
			t.Errorf("max-problems %d: no stop reported: %s", maxProblems, ve.Stopped)
		}
		var byKind int
		for k, c := range ve.OmittedByKind {
			if !strings.Contains(k, "first row is assistant") {
				t.Errorf("unexpected kind %q (%d)", k, c)
			}
			byKind += c
		}
		if byKind != ve.Omitted {
			t.Errorf("counts by kind %d, omitted %d", byKind, ve.Omitted)
		}
	}

	// The problems kept in all are capped, whatever --max-problems per file says.
	l := problemList{limit: 2 * MaxKeptProblems} // --max-problems above the cap: it is the cap
	for i := range 3 * MaxKeptProblems {
		l.add(Problem{File: "f", Line: int64(i), Message: fmt.Sprintf("turn %d is bad", i)})
	}
	if len(l.err.Problems) != 2*MaxKeptProblems || l.err.Omitted != MaxKeptProblems {
		t.Errorf("one file, --max-problems %d: %d kept, %d omitted", l.limit, len(l.err.Problems), l.err.Omitted)
	}
	l = problemList{limit: 10}
	for i := range 3 * MaxKeptProblems {
		l.add(Problem{File: fmt.Sprintf("f%d", i), Line: 1, Message: fmt.Sprintf("turn %d is bad", i)})
	}
	if len(l.err.Problems) != MaxKeptProblems || l.err.Omitted != 2*MaxKeptProblems || l.err.OmittedByKind["turn N is bad"] != 2*MaxKeptProblems {
		t.Errorf("across files: %d kept, %d omitted, by kind %v", len(l.err.Problems), l.err.Omitted, l.err.OmittedByKind)
	}
	if len(l.perFile) > 3*MaxKeptProblems {
		t.Errorf("perFile grew to %d", len(l.perFile))
	}

	// One conversation past its byte limit: a problem, its rows not kept.
	big := filepath.Join(dir, "big.jsonl")
	var b bytes.Buffer
	b.WriteString(`{"conversation_id":"c1","turn":1,"role":"user","content":"hi","system":"s"}` + "\n")
	for i := 2; i < 2000; i++ {
		role := "assistant"
		if i%2 == 1 {
			role = "user"
		}
		fmt.Fprintf(&b, `{"conversation_id":"c1","turn":%d,"role":"%s","content":"%s"}`+"\n", i, role, strings.Repeat("y", 500))
	}
	if err := os.WriteFile(big, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Run(ctx, Options{Out: filepath.Join(dir, "ds"), Inputs: []string{big}, maxConvBytes: 100 << 10})
	if err == nil || !strings.Contains(err.Error(), "the limit of one conversation") {
		t.Errorf("a conversation over its limit: %v", err)
	}
	if _, err := Run(ctx, Options{Out: filepath.Join(dir, "ds"), Inputs: []string{big}}); err != nil {
		t.Errorf("the same conversation under the default limit: %v", err)
	}
}
