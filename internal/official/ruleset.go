package official

import (
	"fmt"
	"slices"
	"strings"
)

// Ruleset is a submission ruleset of the reference client's registry, the one a
// config binds with submission_ref.ruleset and a point.yaml names: the published
// seed set it pins. Seeds are decimal strings, since they do not fit an int64.
type Ruleset struct {
	Name    string
	Aliases []string
	// SeedSet is the seed set's id, as the submission checker's seed_sets.yaml
	// names it (a point's seed_set).
	SeedSet string
	// SchedulerRNG, SampleIndexRNG and Model are the set's scheduler_rng_seed,
	// sample_index_rng_seed and model_seed.
	SchedulerRNG, SampleIndexRNG, Model string
}

// Rulesets returns the rulesets agentrace knows, as the reference registers them:
// cohort 2026-10-C1's set A (mlcommons/endpoints_policies seedset.yaml, which the
// checker's seed_sets.yaml mirrors; score/checker's tests hold the two equal).
// The first is the current one, the one a point.yaml written today binds.
func Rulesets() []Ruleset {
	return []Ruleset{{
		Name: "mlperf-endpoints-v1.0-2026-10-C1-A", Aliases: []string{"mlperf-endpoints-current"}, SeedSet: "A",
		SchedulerRNG: "10487924139932647040", SampleIndexRNG: "586478644936801402", Model: "9315206023656308754",
	}}
}

// LookupRuleset returns the ruleset called name (or one of its aliases).
func LookupRuleset(name string) (Ruleset, error) {
	var names []string
	for _, r := range Rulesets() {
		if r.Name == name || slices.Contains(r.Aliases, name) {
			return r, nil
		}
		names = append(names, r.Name)
		names = append(names, r.Aliases...)
	}
	return Ruleset{}, fmt.Errorf("%q: not a ruleset agentrace knows (known: %s)", name, strings.Join(names, ", "))
}
