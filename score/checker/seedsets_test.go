package checker

import (
	"testing"

	"github.com/agentrace/agentrace/internal/official"
)

// TestOfficialRulesetsAreCheckerSeedSets: every ruleset the reference's registry
// pins (internal/official, what replay sends and point.yaml declares) binds a
// seed set of the checker's embedded seed_sets.yaml, with the same three seeds.
func TestOfficialRulesetsAreCheckerSeedSets(t *testing.T) {
	d, err := LoadData(DataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range official.Rulesets() {
		set, ok := d.SeedSets[rs.SeedSet]
		if !ok {
			t.Errorf("ruleset %s binds seed set %q, which the checker's seed_sets.yaml does not have", rs.Name, rs.SeedSet)
			continue
		}
		want := map[string]string{"scheduler_rng_seed": rs.SchedulerRNG, "sample_index_rng_seed": rs.SampleIndexRNG, "model_seed": rs.Model}
		for k, v := range want {
			if set.Seeds[k] != v {
				t.Errorf("ruleset %s: %s = %s, the checker's set %s has %q", rs.Name, k, v, rs.SeedSet, set.Seeds[k])
			}
		}
	}
}
