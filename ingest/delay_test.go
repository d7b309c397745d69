package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/datasets"
)

// TestAbsurdDelayIsCapped, ingest side: `delay_seconds: 1e308`
// was accepted and replay then never issued the next turn. A delay past
// MaxDelaySeconds (or one overflowing to infinity) is a warning, replay waits
// MaxDelaySeconds, export keeps the value as given, and --strict refuses it.
func TestAbsurdDelayIsCapped(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	rows := `{"conversation_id":"c1","turn":1,"role":"user","content":"a","system":"s"}
{"conversation_id":"c1","turn":2,"role":"assistant","content":"b"}
{"conversation_id":"c1","turn":3,"role":"user","content":"c","delay_seconds":1e308}
{"conversation_id":"c1","turn":4,"role":"assistant","content":"d"}
{"conversation_id":"c1","turn":5,"role":"user","content":"e","delay_seconds":1e999}
{"conversation_id":"c1","turn":6,"role":"assistant","content":"f"}
{"conversation_id":"c1","turn":7,"role":"user","content":"g","delay_seconds":"86400"}
{"conversation_id":"c1","turn":8,"role":"assistant","content":"h"}
{"conversation_id":"c1","turn":9,"role":"user","content":"i","delay_seconds":120.5}
`
	if err := os.WriteFile(in, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "ds")
	m, err := Run(context.Background(), Options{Out: out, Inputs: []string{in}})
	if err != nil {
		t.Fatal(err)
	}
	capped := 0
	for _, w := range m.Warnings {
		if strings.Contains(w, "replay waits 3600 s") {
			capped++
		}
	}
	if capped != 3 {
		t.Errorf("%d cap warnings, want 3: %q", capped, m.Warnings)
	}
	d, err := datasets.Open(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0, MaxDelaySeconds, MaxDelaySeconds, MaxDelaySeconds, 120.5}
	for i, tr := range d.Turns {
		if tr.DelaySeconds != want[i] {
			t.Errorf("client turn %d waits %g s, want %g", tr.Turn, tr.DelaySeconds, want[i])
		}
	}
	back := filepath.Join(dir, "back.jsonl")
	if err := Export(context.Background(), ExportOptions{Dataset: out, Out: back}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(back)
	// (1e999 is out of the float range: how export writes it is the JSON
	// compactor's business, not this test's.)
	for _, v := range []string{`"delay_seconds":1e308`, `"delay_seconds":"86400"`} {
		if !strings.Contains(string(b), v) {
			t.Errorf("export lost %s", v)
		}
	}
	if _, err := Run(context.Background(), Options{Out: filepath.Join(dir, "strict"), Inputs: []string{in}, Strict: true}); err == nil || !strings.Contains(err.Error(), "more than 3600 s") {
		t.Errorf("--strict: %v", err)
	}
}
