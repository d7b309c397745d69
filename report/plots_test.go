package report

import (
	"strings"
	"testing"
)

func TestNiceTicks(t *testing.T) {
	ts := niceTicks(-1234, 26000)
	var labels []string
	for _, tk := range ts {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "0 5000 10000 15000 20000 25000" {
		t.Errorf("labels = %q", got)
	}
	ts = niceTicks(0.013, 0.0521)
	labels = labels[:0]
	for _, tk := range ts {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "0.02 0.03 0.04 0.05" {
		t.Errorf("labels = %q", got)
	}
}

// TestITLAndNonStreamedTurns: ITL is measured over chunk_times alone (the chunks
// the reference publishes a receive event for), never over tool_call_chunk_times;
// a turn not streamed (first_token_ns 0, as replay logs it) gives no TTFT sample,
// in points.json and in result_summary.json, as the reference times none.
