package score

import (
	"strings"
	"testing"
)

// TestSummaryInvalid checks result summaries against the submission checker's
// schema of them (PointSummary, read in pydantic's lax mode).
func TestSummaryInvalid(t *testing.T) {
	for _, tc := range []struct {
		summary string
		why     string // a part of the reason; "" when it validates
	}{
		{`{"n_samples_completed": 11, "duration_ns": 1e9}`, ""},
		{`{"n_samples_completed": "11", "duration_ns": "1000"}`, ""},
		{`{"n_samples_completed": 11.0, "duration_ns": 1e9, "output_tokens_per_turn_total": null}`, ""},
		{`{"n_samples_completed": 11, "duration_ns": 1e9, "ttft": {"total": 3, "percentiles": {"90.0": 1.5}}}`, ""},
		{`{"duration_ns": 1e9}`, "n_samples_completed is required"},
		{`{"n_samples_completed": 11}`, "duration_ns is required"},
		{`{"n_samples_completed": null, "duration_ns": 1e9}`, "n_samples_completed is required"},
		{`{"n_samples_completed": 11.5, "duration_ns": 1e9}`, "n_samples_completed 11.5 is not an integer"},
		{`{"n_samples_completed": 11, "n_samples_failed": "none", "duration_ns": 1e9}`, "n_samples_failed"},
		{`{"n_samples_completed": 11, "duration_ns": "long"}`, "duration_ns"},
		{`{"n_samples_completed": 11, "duration_ns": 1e9, "tpot": [1]}`, "tpot"},
		{`{"n_samples_completed": 11, "duration_ns": 1e9, "ttft": {"percentiles": {"90.0": "slow"}}}`, "ttft.percentiles.90.0"},
		{`{"n_samples_completed": 11, "duration_ns": 1e9, "output_sequence_lengths": {"total": "many"}}`, "output_sequence_lengths.total"},
		{`{"n_samples_completed": 11, "duration_ns": 1e9, "e2e_turn_time_seconds_total": "x"}`, "e2e_turn_time_seconds_total"},
	} {
		s, err := DecodeSummary([]byte(tc.summary))
		if err != nil {
			t.Fatal(err)
		}
		got := summaryInvalid(s)
		if (got == "") != (tc.why == "") || !strings.Contains(got, tc.why) {
			t.Errorf("%s: %q, want %q", tc.summary, got, tc.why)
		}
	}
}
