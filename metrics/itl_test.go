package metrics

import (
	"strings"
	"testing"

	"github.com/agentrace/agentrace/metrics/metricstest"
)

// TestCoalescedITL: chunks that arrive in bursts (gaps under 10 µs: a server
// that wrote them together) leave ITL null with a note saying why; the same
// run with chunks spread out has ITL and no note.
func TestCoalescedITL(t *testing.T) {
	o := metricstest.RunOptions{DatasetSize: 16, Seed: 7, Model: "Qwen/Qwen3.6-35B-A3B", ConvPrefix: "django__django-"}
	o.Concurrency, o.Trajectories = 4, 64
	for _, burst := range []bool{false, true} {
		m, recs := metricstest.Run(o)
		if burst {
			for i := range recs {
				for j := range recs[i].ChunkTimesNs {
					recs[i].ChunkTimesNs[j] = int64(j) * 2000 // 2 µs apart
				}
			}
		}
		p, err := FoldRun(m, recs, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case burst && (p.ITLP50Ms.Valid() || !strings.Contains(p.ITLNote, "chunk gaps are under 10 µs")):
			t.Errorf("bursts: ITL p50 %v, note %q; want null and the reason", p.ITLP50Ms, p.ITLNote)
		case !burst && (!p.ITLP50Ms.Valid() || p.ITLNote != ""):
			t.Errorf("spread chunks: ITL p50 %v, note %q; want a value and no note", p.ITLP50Ms, p.ITLNote)
		}
	}
}

// TestShortWindow: a point whose window holds under MinWindowTurns completed
// turns carries a window note; one with enough turns, most of the run, none.
func TestShortWindow(t *testing.T) {
	for _, tc := range []struct {
		trajectories int
		short        bool
	}{{16, true}, {160, false}} {
		o := metricstest.RunOptions{DatasetSize: 16, Seed: 7, Model: "Qwen/Qwen3.6-35B-A3B", ConvPrefix: "django__django-"}
		o.Concurrency, o.Trajectories = 4, tc.trajectories
		m, recs := metricstest.Run(o)
		p, err := FoldRun(m, recs, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.WindowNote != ""; got != tc.short {
			t.Errorf("%d trajectories: %d window turns of %d, note %q; want short %v", tc.trajectories, p.Completed,
				p.Issued+p.TurnsExcludedByWindow, p.WindowNote, tc.short)
		}
	}
}
