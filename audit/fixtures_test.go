package audit

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// TestAuditCommittedFixtures audits the committed synthetic fixtures
// (testdata/submission-tree and testdata/reference-runfolder, written by
// score/fixture_test.go as the reference's writers lay a run out): with and
// without the reference tokenizer, no published number disagrees and nothing
// fails to read, and the figures that disagreed when the generator wrote its own
// approximate summaries (10 linear histogram buckets, latency without the failed
// and skipped turns) are among the rows that agree.
func TestAuditCommittedFixtures(t *testing.T) {
	repo := testenv.RepoRoot(t)
	ds := filepath.Join(repo, "testdata", "reference-run", "dataset.jsonl")
	tok := testenv.Tokenizer(t)
	for _, tc := range []struct {
		fixture, point string
		points         int
		tokenizer      bool
		minAgree       int
	}{
		{"submission-tree", "r36", 8, false, 500},
		{"submission-tree", "r36", 8, true, 1100},
		{"reference-runfolder", "", 1, false, 60},
		{"reference-runfolder", "", 1, true, 150},
	} {
		t.Run(fmt.Sprintf("%s/tokenizer=%v", tc.fixture, tc.tokenizer), func(t *testing.T) {
			o := Options{Inputs: []string{filepath.Join(repo, "testdata", tc.fixture)}, Dataset: ds}
			if tc.tokenizer {
				o.Tokenizer = tok
			}
			res := runAudit(t, o)
			for _, r := range res.Failed() {
				t.Errorf("%s c=%d %s: %s (published %v, re-derived %v) %s", r.Run, r.Concurrency, r.Field, r.Status, fmtPtr(r.Published), fmtPtr(r.Recomputed), r.Note)
			}
			n := res.Counts()
			if res.Points != tc.points || n[Agree] < tc.minAgree {
				t.Errorf("%d points, %v; want %d points, at least %d rows agreeing", res.Points, n, tc.points, tc.minAgree)
			}
			for _, f := range []string{"latency.min", "latency.percentiles.50.0", "latency.histogram", "ttft.histogram"} {
				rows := rowsOf(res, tc.point, f)
				if len(rows) == 0 {
					t.Errorf("no %s row for %q", f, tc.point)
				}
				for _, r := range rows {
					if r.Status != Agree {
						t.Errorf("%s c=%d %s: %s", r.Run, r.Concurrency, f, r.Status)
					}
				}
			}
		})
	}
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}
