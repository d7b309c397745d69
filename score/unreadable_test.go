package score

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/schemas"
)

// TestUnreadableTurnLogIsAnError: an empty or random-bytes
// turns.arrows was scored as a failing run (score 0, exit 0). It is an error (an
// error row in rescore); a log cut after some batches is still scored on them.
func TestUnreadableTurnLogIsAnError(t *testing.T) {
	ds, truth := fixtureTruth(t)
	recs := recordsFromReference(t, truth)
	archive := filepath.Join(t.TempDir(), "archive")
	good := filepath.Join(archive, "good")
	writeRun(t, good, ds, truth.Hash, recs)
	whole, err := os.ReadFile(filepath.Join(good, schemas.TurnLogFile))
	if err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(i*2654435761>>13 + i)
	}
	cases := map[string][]byte{"empty": nil, "random": random, "header": whole[:6], "cut": whole[:len(whole)-5]}
	for name, data := range cases {
		dir := filepath.Join(archive, name)
		writeRun(t, dir, ds, truth.Hash, recs)
		if err := os.WriteFile(filepath.Join(dir, schemas.TurnLogFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ScoreRun(context.Background(), Options{Run: dir, Dataset: ds})
		if name == "cut" {
			if err != nil {
				t.Errorf("a log cut after its batches: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "turn log") {
			t.Errorf("%s turns.arrows: err = %v, want an error naming the turn log", name, err)
		}
	}
	rows, err := Rescore(context.Background(), RescoreOptions{Archives: []string{archive}, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		name := filepath.Base(r.Path)
		bad := name == "empty" || name == "random" || name == "header"
		if bad != (r.Error != "") {
			t.Errorf("%s: error %q", name, r.Error)
		}
		if bad && (r.Score != nil || r.Pass != nil) {
			t.Errorf("%s: an unreadable run has a score %v / pass %v", name, r.Score, r.Pass)
		}
	}
}
