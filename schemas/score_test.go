package schemas

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestGateJSON checks the three outcomes' JSON form: a gate not evaluated writes
// value and pass as null (never 0 and false) with its severity and reason, and
// every form reads back.
func TestGateJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		gate Gate
		want string
	}{
		{"pass", Gate{Name: "osl_window", Value: 400, Threshold: "[344, 422]", Pass: true, Outcome: OutcomePass},
			`{"name":"osl_window","value":400,"threshold":"[344, 422]","pass":true,"outcome":"pass"}`},
		{"fail at zero", Gate{Name: "inline_accuracy", Value: 0, Threshold: ">= 0.5586", Outcome: OutcomeFail},
			`{"name":"inline_accuracy","value":0,"threshold":">= 0.5586","pass":false,"outcome":"fail"}`},
		{"not evaluated", Gate{Name: "osl_window", Threshold: "[344, 422]", Outcome: OutcomeNotEvaluated, Severity: SeverityWarning,
			Reason: "no output_sequence_lengths_full_run block", Rederived: ptr(28.5)},
			`{"name":"osl_window","value":null,"threshold":"[344, 422]","pass":null,"outcome":"not_evaluated","severity":"warning","reason":"no output_sequence_lengths_full_run block","rederived":28.5}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := marshalNoHTML(tc.gate) // as scores.json is written
			if err != nil || string(b) != tc.want {
				t.Fatalf("got %s (%v)\nwant %s", b, err, tc.want)
			}
			var back Gate
			if err := json.Unmarshal(b, &back); err != nil || back.Outcome != tc.gate.Outcome || back.Value != tc.gate.Value || back.Pass != tc.gate.Pass {
				t.Errorf("read back %+v (%v)", back, err)
			}
		})
	}
}

func ptr(f float64) *float64 { return &f }

// TestVerdictTally checks how a verdict counts its gates: a failure or an error
// not evaluated fails it, a warning not evaluated leaves it not evaluated, and an
// informational gate does not count.
func TestVerdictTally(t *testing.T) {
	g := func(outcome, severity string) Gate {
		return Gate{Outcome: outcome, Severity: severity, Pass: outcome == OutcomePass}
	}
	for _, tc := range []struct {
		gates []Gate
		want  string
		pass  bool
		count GateCounts
	}{
		{[]Gate{g(OutcomePass, ""), g(OutcomePass, "")}, OutcomePass, true, GateCounts{Pass: 2}},
		{[]Gate{g(OutcomePass, ""), g(OutcomeFail, "")}, OutcomeFail, false, GateCounts{Pass: 1, Fail: 1}},
		{[]Gate{g(OutcomePass, ""), g(OutcomeNotEvaluated, SeverityWarning)}, OutcomeNotEvaluated, false, GateCounts{Pass: 1, NotEvaluated: 1}},
		{[]Gate{g(OutcomePass, ""), g(OutcomeNotEvaluated, SeverityError)}, OutcomeFail, false, GateCounts{Pass: 1, NotEvaluated: 1}},
		{[]Gate{g(OutcomePass, ""), {Outcome: OutcomeFail, Informational: true}}, OutcomePass, true, GateCounts{Pass: 1}},
	} {
		v := Verdict{Gates: tc.gates}
		v.Tally()
		if v.Outcome != tc.want || v.Pass != tc.pass || v.Counts != tc.count {
			t.Errorf("%v: outcome %s pass %v counts %+v; want %s %v %+v", tc.gates, v.Outcome, v.Pass, v.Counts, tc.want, tc.pass, tc.count)
		}
	}
	// A scores.json before ScoresVersion 3: outcomes read from pass and the note.
	v := Verdict{Pass: false, Gates: []Gate{{Name: "a", Pass: true}, {Name: "b", Note: "not evaluated: no output token counts (they need the reference tokenizer)"}}}
	v.ReadOutcomes()
	if v.Outcome != OutcomeNotEvaluated || v.Gates[1].Severity != SeverityWarning || !strings.HasPrefix(v.Gates[1].Reason, "no output token") {
		t.Errorf("older verdict read as %+v", v)
	}
}
