package score

import (
	"math"
	"strings"
	"testing"
)

// TestReadSummaryFigures reads a result summary's system_tps, interactivity and
// tps_per_user as the submission checker's PointSummary derives them: from the
// totals (the output tokens total truncated to an integer; 0 when the duration is
// not positive; none without a duration), interactivity none without both totals
// or with zero seconds, tps_per_user from the P90 keyed "90" or "90.0"; the
// summary's own fields kept beside, never used in their place.
func TestReadSummaryFigures(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name                string
		summary             string
		tps, inter, perUser float64 // NaN: none
		storedTPS           float64 // NaN: none
	}{
		{"totals", `{"duration_ns": 2e9, "output_sequence_lengths": {"total": 300.9}, "output_tokens_per_turn_total": 300, "e2e_turn_time_seconds_total": 6, "tpot": {"percentiles": {"90.0": 20000000}}}`,
			150, 50, 50, nan},
		{"own fields are not the figures", `{"duration_ns": 1e9, "output_sequence_lengths": {"total": 100}, "system_tps": 900, "e2e_avg_interactivity": 9, "tps_per_user": 9, "output_tokens_per_turn_total": 10, "e2e_turn_time_seconds_total": 1, "tpot": {"percentiles": {"90": 1e7}}}`,
			100, 10, 100, 900},
		{"numeric strings (pydantic's lax float)", `{"duration_ns": "1e9", "output_sequence_lengths": {"total": "40"}}`, 40, nan, nan, nan},
		{"no output tokens block: the default total 0", `{"duration_ns": 1e9}`, 0, nan, nan, nan},
		{"zero duration: the checker's 0.0", `{"duration_ns": 0, "output_sequence_lengths": {"total": 40}, "system_tps": 3}`, 0, nan, nan, 3},
		{"no duration: no summary to the checker", `{"output_sequence_lengths": {"total": 40}, "system_tps": 3}`, nan, nan, nan, 3},
		{"one agentic total", `{"duration_ns": 1e9, "output_tokens_per_turn_total": 10, "e2e_avg_interactivity": 4}`, 0, nan, nan, nan},
		{"zero seconds", `{"duration_ns": 1e9, "output_tokens_per_turn_total": 10, "e2e_turn_time_seconds_total": 0}`, 0, nan, nan, nan},
		{"null totals", `{"duration_ns": 1e9, "output_tokens_per_turn_total": null, "e2e_turn_time_seconds_total": null}`, 0, nan, nan, nan},
		{"P90 not positive", `{"duration_ns": 1e9, "tpot": {"percentiles": {"90.0": 0}}}`, 0, nan, nan, nan},
	}
	same := func(got float64, has bool, want float64) bool {
		if math.IsNaN(want) {
			return !has
		}
		return has && math.Abs(got-want) < 1e-9*math.Max(1, math.Abs(want))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := DecodeSummary([]byte(c.summary))
			if err != nil {
				t.Fatal(err)
			}
			f := ReadSummaryFigures(s)
			if !same(f.SystemTPS, f.HasSystemTPS, c.tps) || !same(f.Interactivity, f.HasInteractivity, c.inter) || !same(f.TPSPerUser, f.HasTPSPerUser, c.perUser) {
				t.Errorf("system_tps %v/%v, interactivity %v/%v, tps_per_user %v/%v; want %v, %v, %v",
					f.SystemTPS, f.HasSystemTPS, f.Interactivity, f.HasInteractivity, f.TPSPerUser, f.HasTPSPerUser, c.tps, c.inter, c.perUser)
			}
			var stored float64
			if f.StoredSystemTPS != nil {
				stored = *f.StoredSystemTPS
			}
			if !same(stored, f.StoredSystemTPS != nil, c.storedTPS) {
				t.Errorf("stored system_tps %v, want %v", f.StoredSystemTPS, c.storedTPS)
			}
		})
	}
}

// TestCheckerRelErr: the checker divides by the derived figure (a 1.01x stored
// value is 1% off, not 0.99%), never by zero.
func TestCheckerRelErr(t *testing.T) {
	for _, c := range []struct{ stored, derived, want float64 }{
		{101, 100, 0.01}, {100, 101, 1.0 / 101}, {3, 0, 3e9}, {0, 0, 0},
	} {
		if got := CheckerRelErr(c.stored, c.derived); math.Abs(got-c.want) > 1e-12*math.Max(1, c.want) {
			t.Errorf("CheckerRelErr(%v, %v) = %v, want %v", c.stored, c.derived, got, c.want)
		}
	}
}

// TestAccuracyEntries reads accuracy results as Python's json.loads gives them to
// the checker: a repeated key's last value wins in its first place, keys keep
// their file order, NaN and Infinity are numbers, and anything after the value
// is refused.
func TestAccuracyEntries(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // "name:keys|..." or "error"
	}{
		{"mapping", `{"b": {"score": 1, "x": 2}, "a": {"score": 3}}`, "b:score,x|a:score"},
		{"list", `[{"dataset_name": "d", "score": 0.5}]`, "d:dataset_name,score"},
		{"wrapped", `{"accuracy_scores": [{"dataset_name": "d", "score": 1}]}`, "d:dataset_name,score"},
		{"last key wins", `{"d": {"score": 1, "x": 2, "score": 7}}`, "d:score,x"},
		{"NaN and Infinity", `{"d": {"score": NaN, "x": -Infinity}}`, "d:score,x"},
		{"trailing data", `{"d": {"score": 1}} {}`, "error"},
		{"not JSON", `{"d": {"score": nan}}`, "error"},
	} {
		l, err := accuracyEntries([]byte(tc.in))
		got := "error"
		if err == nil {
			var parts []string
			for _, e := range l {
				parts = append(parts, e.name+":"+strings.Join(e.keys, ","))
			}
			got = strings.Join(parts, "|")
		}
		if got != tc.want {
			t.Errorf("%s: got %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
	l, err := accuracyEntries([]byte(`{"d": {"score": 1, "score": 7}, "n": {"score": NaN}}`))
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := PyFloat(l[0].fields["score"]); !ok || f != 7 {
		t.Errorf("last score: %v %v, want 7", f, ok)
	}
	if f, ok := PyFloat(l[1].fields["score"]); !ok || !math.IsNaN(f) {
		t.Errorf("NaN score: %v %v, want NaN", f, ok)
	}
}
