package rulesets

import (
	"bytes"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/score/scoretest"
)

func TestRederivePublishedRulesets(t *testing.T) {
	for _, p := range scoretest.CheckerTargets {
		rs, err := Load(p.Ruleset)
		if err != nil {
			t.Fatal(err)
		}
		if rs.InlineAccuracyMin != p.InlineMin || rs.OSLWindow != p.OSLWindow || rs.SWEBenchMin != p.SWEMin {
			t.Errorf("%s: thresholds %v %v %v, published %v %v %v", p.Ruleset,
				rs.InlineAccuracyMin, rs.OSLWindow, rs.SWEBenchMin, p.InlineMin, p.OSLWindow, p.SWEMin)
		}
		d := rs.Derivation
		if d == nil {
			t.Fatalf("%s has no derivation block", p.Ruleset)
		}
		if d.Means.InlineAccuracy.Mean != p.Inline || d.Means.OSL.Mean != p.OSL || d.Means.SWEBench == nil || d.Means.SWEBench.Mean != p.SWE {
			t.Errorf("%s: means %+v, published %v %v %v", p.Ruleset, d.Means, p.Inline, p.OSL, p.SWE)
		}
		means := ReferenceMeans{InlineAccuracy: Spread{Mean: p.Inline}, OSL: Spread{Mean: p.OSL}, SWEBench: &Spread{Mean: p.SWE}}
		got, err := d.Rule.Derive(means, rs.SWEBenchEvaluated)
		if err != nil {
			t.Fatal(err)
		}
		want := Thresholds{InlineAccuracyMin: p.InlineMin, OSLWindow: p.OSLWindow, SWEBenchMin: p.SWEMin}
		if got != want {
			t.Errorf("%s: re-derived %+v from the published means, published %+v", p.Ruleset, got, want)
		}
		for _, b := range []BoundRule{d.Rule.InlineAccuracy, d.Rule.OSLLow, d.Rule.OSLHigh} {
			if b.Factor != 0.99 && b.Factor != 0.9 && b.Factor != 1.1 {
				t.Errorf("%s: factor %v is not one of the published 0.99, 0.9, 1.1", p.Ruleset, b.Factor)
			}
		}
	}
}

// TestDeepSeekDoesNotFollowTheRule: the checker's third agentic entry
// (DeepSeek-V4.1-Flash: means 53.16 / 882 / 97.5, thresholds 52.36, [793, 970],
// 96.4) does not follow the rule fitted to Kimi K3 and Qwen3.6. Its ruleset
// carries the published thresholds, marks follows_rule false with a note, and
// loading holds the mark to the truth both ways; deriving from its means gives
// the rule's thresholds and says so rather than passing them for the published.
func TestDeepSeekDoesNotFollowTheRule(t *testing.T) {
	const name = "checker-2026-11-deepseek-v4.1-flash"
	rs, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	if rs.InlineAccuracyMin != 0.5236 || rs.OSLWindow != [2]float64{793, 970} || rs.SWEBenchMin != 0.964 {
		t.Errorf("thresholds %v %v %v, the checker publishes 0.5236 [793 970] 0.964", rs.InlineAccuracyMin, rs.OSLWindow, rs.SWEBenchMin)
	}
	d := rs.Derivation
	if d == nil || d.Follows() || d.Means.InlineAccuracy.Mean != 0.5316 || d.Means.OSL.Mean != 882 || d.Means.SWEBench == nil || d.Means.SWEBench.Mean != 0.975 {
		t.Fatalf("derivation %+v", d)
	}
	for _, r := range []DerivationRule{d.Rule, mustRuleset(t, "checker-2026-10-qwen3.6").Derivation.Rule, mustRuleset(t, "checker-2026-10-kimi-k3").Derivation.Rule} {
		got, err := r.Derive(d.Means, rs.SWEBenchEvaluated)
		if err != nil {
			t.Fatal(err)
		}
		if got.InlineAccuracyMin == rs.InlineAccuracyMin && got.OSLWindow == rs.OSLWindow && got.SWEBenchMin == rs.SWEBenchMin {
			t.Errorf("rule %+v reproduces the DeepSeek thresholds: the file's follows_rule false is stale", r)
		}
	}
	if got, _ := d.Rule.Derive(d.Means, 200); got != (Thresholds{InlineAccuracyMin: 0.5262, OSLWindow: [2]float64{793, 971}, SWEBenchMin: 0.965}) {
		t.Errorf("its rule gives %+v, want 0.5262 [793 971] 0.965", got)
	}
	if dep := rs.Departures(); !strings.Contains(dep, "inline accuracy >= 0.5262 (published 0.5236)") || !strings.Contains(dep, "SWE-bench >= 0.965 (published 0.964)") {
		t.Errorf("departures %q", dep)
	}
	// The mark must be true: without it the file does not load, and on a ruleset
	// that follows its rule it does not either; a mark without a note neither.
	raw, err := rulesetFiles.ReadFile(name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(bytes.Replace(raw, []byte(`"follows_rule": false,`), nil, 1), "test"); err == nil ||
		!strings.Contains(err.Error(), "the rule applied to the means gives inline_accuracy_min 0.5262") {
		t.Errorf("without follows_rule: %v", err)
	}
	if _, err := Parse(regexp.MustCompile(`"note": "[^"]*"`).ReplaceAll(raw, []byte(`"note": ""`)), "test"); err == nil || !strings.Contains(err.Error(), "without a note") {
		t.Errorf("follows_rule false without a note: %v", err)
	}
	kimi, _ := rulesetFiles.ReadFile("checker-2026-10-kimi-k3.json")
	if _, err := Parse(bytes.Replace(kimi, []byte(`"means_source"`), []byte(`"follows_rule": false, "means_source"`), 1), "test"); err == nil ||
		!strings.Contains(err.Error(), "yet the rule applied to the means gives the thresholds") {
		t.Errorf("follows_rule false on a ruleset that follows: %v", err)
	}
}

func mustRuleset(t *testing.T, name string) Ruleset {
	t.Helper()
	r, err := Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The Kimi K3 file's note says that the Qwen3.6 rule (lower bounds rounded down)
// falls one step short on Kimi's quoted means, and what unrounded means it needs.
func TestKimiMeansAreRounded(t *testing.T) {
	qwen, _ := Load("checker-2026-10-qwen3.6")
	kimi := ReferenceMeans{InlineAccuracy: Spread{Mean: 0.589}, OSL: Spread{Mean: 472}, SWEBench: &Spread{Mean: 0.9483}}
	got, err := qwen.Derivation.Rule.Derive(kimi, 200)
	if err != nil {
		t.Fatal(err)
	}
	if got.InlineAccuracyMin != 0.5831 || got.OSLWindow != [2]float64{424, 520} || got.SWEBenchMin != 0.935 {
		t.Errorf("Qwen3.6 rule on Kimi K3's quoted means: %+v", got)
	}
	kimi.InlineAccuracy.Mean, kimi.OSL.Mean = 0.589091, 472.223
	if got, _ = qwen.Derivation.Rule.Derive(kimi, 200); got.InlineAccuracyMin != 0.5832 || got.OSLWindow != [2]float64{425, 520} {
		t.Errorf("Qwen3.6 rule on unrounded means within Kimi K3's rounding: %+v", got)
	}
	kimi.InlineAccuracy.Mean, kimi.OSL.Mean = 0.58909, 472.222
	if got, _ = qwen.Derivation.Rule.Derive(kimi, 200); got.InlineAccuracyMin != 0.5831 || got.OSLWindow[0] != 424 {
		t.Errorf("just under the bounds the note gives: %+v", got)
	}
}

// No constant factor, with any rounding direction to 0.1% or to a whole instance,
// gives both published SWE-bench thresholds from their means: the reason the rule
// is a lower confidence bound.
func TestNoConstantSWEBenchFactor(t *testing.T) {
	for _, round := range []string{RoundDown, RoundUp, RoundNearest} {
		for _, step := range []float64{0.001, 0.005} {
			for k := 8000; k <= 10000; k++ {
				f := float64(k) / 10000
				ok := true
				for _, p := range scoretest.CheckerTargets {
					got, err := BoundRule{Factor: f, Round: round, Step: step}.apply(p.SWE)
					if err != nil {
						t.Fatal(err)
					}
					ok = ok && got == p.SWEMin
				}
				if ok {
					t.Errorf("factor %v (round %s, step %v) gives both SWE-bench thresholds", f, round, step)
				}
			}
		}
	}
	// The bound gives both for every z from 1.39 to 1.69, the one-sided 95% quantile
	// 1.645 among them.
	for _, z := range []float64{1.39, 1.5, 1.645, 1.69} {
		for _, p := range scoretest.CheckerTargets {
			r := SWEBenchRule{Method: SWEBenchLowerBound, Z: z, Results: 4, Instances: 200, Round: RoundDown, Step: 0.005}
			if got, _ := r.apply(p.SWE, 0); got != p.SWEMin {
				t.Errorf("z %v: %s SWE-bench %v, want %v", z, p.Ruleset, got, p.SWEMin)
			}
		}
	}
	for _, z := range []float64{1.28, 1.96} {
		r := SWEBenchRule{Method: SWEBenchLowerBound, Z: z, Results: 4, Instances: 200, Round: RoundDown, Step: 0.005}
		a, _ := r.apply(scoretest.CheckerTargets[0].SWE, 0)
		b, _ := r.apply(scoretest.CheckerTargets[1].SWE, 0)
		if a == scoretest.CheckerTargets[0].SWEMin && b == scoretest.CheckerTargets[1].SWEMin {
			t.Errorf("z %v also gives both (%v, %v): the note's claim is too strong", z, a, b)
		}
	}
}

func TestRoundTo(t *testing.T) {
	tests := []struct {
		x, f, step float64
		round      string
		want       float64
	}{
		{380, 0.9, 1, RoundUp, 342}, // exact: 0.9 x 380 is 342, never 342.00000000000006
		{380, 1.1, 1, RoundDown, 418},
		{0.5643, 0.99, 0.0001, RoundDown, 0.5586},
		{0.5643, 0.99, 0.0001, RoundNearest, 0.5587},
		{0.5, 0.99, 0.01, RoundNearest, 0.5},  // 0.495: tie to even (0.50, not 0.49)
		{0.5, 0.97, 0.01, RoundNearest, 0.48}, // 0.485: tie to even
		{0.5, 0.99, 0.01, RoundDown, 0.49},
		{0.5, 0.99, 0.01, RoundUp, 0.5},
		{-1.5, 1, 1, RoundDown, -2},
		{-1.5, 1, 1, RoundUp, -1},
		{-1.5, 1, 1, RoundNearest, -2},
		{0.717, 1, 0.005, RoundDown, 0.715},
	}
	for _, tt := range tests {
		got, err := BoundRule{Factor: tt.f, Round: tt.round, Step: tt.step}.apply(tt.x)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("%v x %v to %v %s = %v, want %v", tt.f, tt.x, tt.step, tt.round, got, tt.want)
		}
	}
}

func TestNewSpread(t *testing.T) {
	s := NewSpread([]float64{0.58, 0.60, 0.59})
	if math.Abs(s.Mean-0.59) > 1e-12 || s.N != 3 || *s.Min != 0.58 || *s.Max != 0.60 || math.Abs(*s.StdDev-0.01) > 1e-12 {
		t.Errorf("%+v", s)
	}
	one := NewSpread([]float64{472})
	if one.Mean != 472 || one.StdDev != nil || *one.Min != 472 {
		t.Errorf("one run: %+v", one)
	}
}

func TestBadDerivation(t *testing.T) {
	base := `{"name": "x", "source": "s", "date": "2026-11", "inline_accuracy_min": 0.5586, "osl_window": [344, 422], "swebench_min": 0.69, "curve": {"min_points": 7, "max_points": 32, "dataset_size": 613, "consistency_tolerance": 0.01}, "derivation": %s}`
	good := `{"rule": {"inline_accuracy": {"factor": 0.99, "round": "down", "step": 0.0001}, "osl_low": {"factor": 0.9, "round": "down", "step": 1},
		"osl_high": {"factor": 1.1, "round": "up", "step": 1}, "swebench": {"method": "lower_bound", "z": 1.645, "results": 4, "round": "down", "step": 0.005}},
		"means": {"inline_accuracy": {"mean": 0.5643}, "osl": {"mean": 383}, "swebench": {"mean": 0.717}}, "means_source": "test"}`
	if _, err := Parse([]byte(strings.Replace(base, "%s", good, 1)), "good"); err != nil {
		t.Fatalf("good: %v", err)
	}
	for name, tc := range map[string]struct{ from, to, want string }{
		"threshold off":   {`"mean": 383`, `"mean": 390`, "osl_window [351 429] (file says [344 422])"},
		"swebench off":    {`"mean": 0.717`, `"mean": 0.75`, "swebench_min"},
		"bad round":       {`"round": "up"`, `"round": "ceil"`, `round "ceil"`},
		"zero step":       {`"step": 1}`, `"step": 0}`, "step 0"},
		"bad method":      {`"lower_bound"`, `"median"`, `method "median"`},
		"no source":       {`"means_source": "test"`, `"means_source": ""`, "means_source"},
		"factors crossed": {`{"factor": 1.1, "round": "up"`, `{"factor": 0.8, "round": "up"`, "osl_low factor"},
	} {
		_, err := Parse([]byte(strings.Replace(base, "%s", strings.Replace(good, tc.from, tc.to, 1), 1)), name)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to mention %q", name, err, tc.want)
		}
	}
}
