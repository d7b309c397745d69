package scoretest

// CheckerTargets are the submission checker's agentic targets (src/submission_checker/
// agentic_targets.py): the reference means it quotes "from the README" and the
// thresholds, as fractions and tokens. Written out here, apart from the ruleset
// files, so that a changed file cannot pass by changing both sides.
var CheckerTargets = []struct {
	Ruleset           string
	Inline, OSL, SWE  float64 // means
	InlineMin, SWEMin float64 // thresholds
	OSLWindow         [2]float64
}{
	{"checker-2026-10-kimi-k3", 0.589, 472, 0.9483, 0.5832, 0.935, [2]float64{425, 520}},
	{"checker-2026-10-qwen3.6", 0.5643, 383, 0.717, 0.5586, 0.69, [2]float64{344, 422}},
}
