package ingest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/testenv"
)

func ingestSample(t *testing.T, files ...string) *datasets.Dataset {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ds")
	if err := Files(context.Background(), out, files...); err != nil {
		t.Fatalf("ingest %v: %v", files, err)
	}
	d, err := datasets.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSampleCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		file func(testing.TB) string
	}{{"flat", testenv.SampleFlat}, {"snapshot", testenv.SampleSnapshot}} {
		t.Run(tc.name, func(t *testing.T) {
			d := ingestSample(t, tc.file(t))
			c := d.Manifest.Counts
			if c.Conversations != 20 || c.ClientTurns != 1007 || c.Rows != 2014 || len(d.Turns) != 1007 {
				t.Errorf("counts %+v, turns %d; want 20 conversations, 1007 client turns, 2014 rows", c, len(d.Turns))
			}
			t.Logf("%+v hash %s", c, d.Manifest.ContentHash)
		})
	}
}
