package archive

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// bigRuns writes a .tgz of n agentrace run folders (run000/ ...), written in
// reverse name order as tar of an unsorted folder may, each with a turn log
// over the size kept in memory (cacheFileBytes), and returns it with the logs.
func bigRuns(t *testing.T, n int) (string, map[string]string) {
	t.Helper()
	logs := map[string]string{}
	var entries []tarEntry
	for i := n - 1; i >= 0; i-- {
		dir := fmt.Sprintf("run%03d", i)
		var b bytes.Buffer
		for b.Len() < cacheFileBytes+cacheFileBytes/2 {
			fmt.Fprintf(&b, "row %d of run %d; ", b.Len(), i)
		}
		logs[dir+"/"+TurnLogFile] = b.String()
		entries = append(entries, tarEntry{name: dir + "/", typ: '5'},
			tarEntry{name: dir + "/" + ManifestFile, body: `{"schema_version":"2","state":"complete"}`},
			tarEntry{name: dir + "/" + TurnLogFile, body: b.String()})
	}
	p := filepath.Join(t.TempDir(), fmt.Sprintf("runs%d.tgz", n))
	writeTarGz(t, p, entries)
	return p, logs
}

// TestTarReadInOnePass: the big entries of a .tar.gz read in the order of their
// runs' Position decompress the archive once, not once per entry: 4 times the
// runs take about 4 times as long (before: each entry decompressed the archive
// from its start, 16 times). Entries read in any other order, or at once, read
// the same bytes.
func TestTarReadInOnePass(t *testing.T) {
	readAll := func(p string, logs map[string]string, order func([]*Run)) {
		t.Helper()
		src, err := Open(p, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		runs := Find(src)
		if len(runs) != len(logs) {
			t.Fatalf("%d runs found, %d written", len(runs), len(logs))
		}
		order(runs)
		for _, r := range runs {
			rc, err := r.Open(TurnLogFile)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || string(b) != logs[r.Dir+"/"+TurnLogFile] {
				t.Fatalf("%s: %d bytes (%v), want %d", r.Dir, len(b), err, len(logs[r.Dir+"/"+TurnLogFile]))
			}
		}
	}
	byPosition := func(runs []*Run) {
		slices.SortStableFunc(runs, func(a, b *Run) int { return a.Position() - b.Position() })
	}
	p, logs := bigRuns(t, 6)
	for name, order := range map[string]func([]*Run){
		"by position": byPosition,
		"by name":     func([]*Run) {},
		"reversed":    func(runs []*Run) { byPosition(runs); slices.Reverse(runs) },
	} {
		t.Run(name, func(t *testing.T) { readAll(p, logs, order) })
	}
	// At once, each reader its own stream.
	src, err := Open(p, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, r := range Find(src) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rc, err := r.Open(TurnLogFile)
			if err != nil {
				t.Error(err)
				return
			}
			defer rc.Close()
			if b, err := io.ReadAll(rc); err != nil || string(b) != logs[r.Dir+"/"+TurnLogFile] {
				t.Errorf("%s at once: %d bytes, %v", r.Dir, len(b), err)
			}
		}()
	}
	wg.Wait()
	src.Close()

	ratio := testenv.Scaling(t, 8, func(n int) func() {
		p, logs := bigRuns(t, n)
		return func() { readAll(p, logs, byPosition) }
	})
	if ratio > 8 {
		t.Errorf("4 times the runs took %.1f times as long (one pass: 4, from the start each time: 16)", ratio)
	}
}
