package synth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/internal/outguard"
)

// TestWriteFileNeverReplacesUserData: synth replaces a trace file only with
// Overwrite and only when agentrace wrote it; a user's file is never touched.
func TestWriteFileNeverReplacesUserData(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine.jsonl")
	const only = `{"conversation_id":"x","turn":1,"role":"user","content":"my only copy"}` + "\n"
	if err := os.WriteFile(mine, []byte(only), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{Scale: 1, CodingScale: 0.01, WorkflowScale: 0.01, Seed: 3}
	for _, ow := range []bool{false, true} {
		o.Overwrite = ow
		if _, err := WriteFile(ctx, mine, o); !errors.Is(err, outguard.ErrNotOurs) {
			t.Errorf("overwrite=%v over the user's file: %v, want ErrNotOurs", ow, err)
		}
	}
	if b, _ := os.ReadFile(mine); string(b) != only {
		t.Fatalf("the user's file changed")
	}
	out := filepath.Join(dir, "traces.jsonl")
	o.Overwrite = false
	if _, err := WriteFile(ctx, out, o); err != nil {
		t.Fatal(err)
	}
	if k := outguard.FileKind(out); k != outguard.Traces.Name {
		t.Fatalf("synth output kind %q", k)
	}
	if _, err := WriteFile(ctx, out, o); !errors.Is(err, outguard.ErrExists) {
		t.Errorf("second synth without overwrite: %v, want ErrExists", err)
	}
	o.Overwrite = true
	if _, err := WriteFile(ctx, out, o); err != nil {
		t.Errorf("second synth with overwrite: %v", err)
	}
	if _, err := WriteFile(ctx, dir, o); !errors.Is(err, outguard.ErrNotOurs) {
		t.Errorf("synth onto a folder: %v, want ErrNotOurs", err)
	}
}
