package score

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/testenv"
)

// TestLoadTruthEqualsNewTruth: the ground truth read from a dataset folder's
// messages table, column by column, is the one built from the opened dataset's
// messages: synthetic traces of both domains, and the shared sample.
func TestLoadTruthEqualsNewTruth(t *testing.T) {
	for name, traces := range map[string]func(t *testing.T) string{
		"synthetic": func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "synth.jsonl")
			if _, err := synth.WriteFile(context.Background(), p, synth.Options{Scale: 0.3, Seed: 7}); err != nil {
				t.Fatal(err)
			}
			return p
		},
		"sample": func(t *testing.T) string { return testenv.SampleFlat(t) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ds")
			if err := ingest.Files(context.Background(), dir, traces(t)); err != nil {
				t.Fatal(err)
			}
			d, err := datasets.Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			want := NewTruth(d)
			got, err := LoadTruth(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.Len() == 0 || got.Len() != want.Len() || got.Size != len(d.Conversations) || got.Hash != d.Manifest.ContentHash {
				t.Fatalf("%d expectations of %d conversations (hash %s), want %d of %d (%s)", got.Len(), got.Size, got.Hash, want.Len(), len(d.Conversations), d.Manifest.ContentHash)
			}
			domains := map[string]int{}
			for i, e := range got.sorted {
				if !reflect.DeepEqual(e, want.sorted[i]) {
					t.Fatalf("expectation %d = %+v, want %+v", i, e, want.sorted[i])
				}
				if i > 0 {
					p := got.sorted[i-1]
					if p.ConversationID > e.ConversationID || (p.ConversationID == e.ConversationID && p.ClientTurn >= e.ClientTurn) {
						t.Fatalf("expectations %d and %d out of (conversation id, client turn) order: %+v, %+v", i-1, i, p, e)
					}
				}
				domains[e.Domain]++
			}
			t.Logf("%d expectations by domain: %v", got.Len(), domains)
		})
	}
}
