package replay

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// writeTurnTable writes the run's analysis table, RUNDIR/turns.parquet
// (runlog.WriteTable), from its closed turn log and final manifest, with
// expected_turn from the dataset replayed. It runs once the log and manifest are
// final, so it never holds up the run; a failure is a warning to say and leaves
// the run as it is (`agentrace log export` writes the table again).
func writeTurnTable(ctx context.Context, dir string, m *schemas.RunManifest, d *datasets.Dataset, say func(notice.Event)) {
	type key struct {
		conv string
		turn int32
	}
	exp := make(map[key]int32, len(d.Turns))
	for i := range d.Turns {
		t := &d.Turns[i]
		exp[key{t.ConversationID, t.Turn}] = t.ExpectedTurn
	}
	expected := func(conv string, turn int32) (int32, bool) {
		e, ok := exp[key{conv, turn}]
		return e, ok
	}
	path := filepath.Join(dir, runlog.TableFile)
	info, err := runlog.WriteTable(ctx, path, []runlog.TableRun{{Dir: dir, Manifest: m, Expected: expected}}, runlog.TableOptions{})
	for _, warn := range info.Warnings {
		say(notice.Event{Kind: notice.Warning, Text: path + ": " + warn})
	}
	if err != nil {
		say(notice.Event{Kind: notice.Warning, Text: fmt.Sprintf("the analysis table was not written (the run is complete; `agentrace log export %s` writes it): %v", dir, err)})
	}
}
