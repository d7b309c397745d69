package report

import (
	"testing"

	"github.com/agentrace/agentrace/schemas"
	"go.yaml.in/yaml/v3"
)

// TestPointYAMLInTheCheckersSchema: the draft point.yaml types its fields as the
// submission checker's PointConfig does (dataset a string; runtime_settings with
// load_pattern a string, min_duration_ms an integer and a runtime mapping;
// warmup a mapping with a non-empty data_source and a positive concurrency), so
// the checker reads it far enough to name the TODOs left, with and without the
// run's seeds.
func TestPointYAMLInTheCheckersSchema(t *testing.T) {
	for _, seeds := range []*schemas.RunSeeds{nil, {Scheduler: "42", Dataloader: "7"}} {
		p := &Point{Concurrency: 8, Region: "low_concurrency", Summary: &ResultSummary{Version: "test"}}
		p.Manifest.Config = schemas.RunConfig{Model: "m", Dataset: "../../ds", Trajectories: 20, Seeds: seeds}
		p.Manifest.DatasetHash, p.Manifest.DatasetSize = "abc", 11
		s := &System{Points: []*Point{p}, CMax: 64}
		var doc struct {
			Concurrency int    `yaml:"concurrency"`
			Dataset     string `yaml:"dataset"`
			Runtime     struct {
				LoadPattern   string         `yaml:"load_pattern"`
				MinDurationMs int            `yaml:"min_duration_ms"`
				Runtime       map[string]any `yaml:"runtime"`
			} `yaml:"runtime_settings"`
			Warmup struct {
				DataSource  string `yaml:"data_source"`
				Concurrency int    `yaml:"concurrency"`
			} `yaml:"warmup"`
			TargetCohort string `yaml:"target_cohort"`
		}
		out := PointYAML(s, p)
		if err := yaml.Unmarshal(out, &doc); err != nil {
			t.Fatalf("seeds %v: the draft does not read as the checker's schema: %v\n%s", seeds, err, out)
		}
		if doc.Concurrency != 8 || doc.Dataset != "../../ds" || doc.Runtime.LoadPattern != "concurrency" || doc.Runtime.MinDurationMs <= 0 ||
			doc.Runtime.Runtime == nil || doc.Warmup.DataSource == "" || doc.Warmup.Concurrency != 8 || doc.TargetCohort != "TODO" {
			t.Errorf("seeds %v: %+v\n%s", seeds, doc, out)
		}
		if seeds != nil && doc.Runtime.Runtime["scheduler_random_seed"] != 42 {
			t.Errorf("the run's seeds are not in runtime_settings.runtime: %v", doc.Runtime.Runtime)
		}
	}
}
