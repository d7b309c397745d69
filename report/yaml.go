package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
)

// yq quotes s as a YAML scalar: a JSON string is a valid YAML double-quoted scalar.
func yq(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pointRegion is the §8.3 region of a point: the lowest-concurrency point of each
// mandatory region represents it; every other point (margin included) is the
// submitter's choice.
func pointRegion(s *System, p *Point) string {
	if !score.Mandatory(p.Region) {
		return "submitters_choice"
	}
	for _, q := range s.Points {
		if q.Region == p.Region {
			if q == p {
				return p.Region
			}
			return "submitters_choice"
		}
	}
	return "submitters_choice"
}

// PointYAML drafts a point's point.yaml (§8.3) from its run, in the submission
// checker's schema (models/file/point_config.py PointConfig: dataset a string,
// runtime_settings with load_pattern a string and a runtime mapping of seeds,
// warmup a mapping): the fields the run knows are filled in, the others are
// marked TODO for the submitter (a draft with a TODO left fails the checker's
// disclosure and cohort checks, as it should).
func PointYAML(s *System, p *Point) []byte {
	var b bytes.Buffer
	c := p.Manifest.Config
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	w("# Draft point.yaml (MLPerf Endpoints rules §8.3) written by agentrace %s.\n", yq(p.Summary.Version))
	w("# Fields marked TODO are not known from the run; fill them in before submitting.\n")
	w("concurrency: %d\n", p.Concurrency)
	w("region: %s  # %s by §5.5", pointRegion(s, p), yq(p.Region))
	if p.Region == score.RegionMargin {
		w(" (margin point: legal, satisfies no region)")
	}
	w("\n")
	w("max_supported_concurrency: %d\n", s.CMax)
	w("division: TODO  # Standardized, Serviced or RDI\n")
	w("model_name: %s\n", yq(c.Model))
	w("model_precision: TODO\n")
	w("link_to_model: TODO\n")
	w("dataset_name: %s\n", yq(filepath.Base(datasetShown(c))))
	w("dataset_type: agentic\n")
	w("dataset_link: TODO\n")
	w("dataset: %s  # content hash %s, %d conversations\n", yq(datasetShown(c)), p.Manifest.DatasetHash, p.Manifest.DatasetSize)
	w("shared_src: TODO\n")
	w("shared_docs: TODO\n")
	w("seed_set: TODO\n")
	w("target_cohort: TODO  # YYYY-MM-C0 or YYYY-MM-C1\n")
	w("runtime_settings:\n")
	w("  load_pattern: concurrency\n")
	w("  target_concurrency: %d\n", p.Concurrency)
	w("  min_duration_ms: %d\n", minDurationMs(p))
	w("  stream_all_chunks: true\n")
	w("  num_trajectories_to_issue: %d\n", c.Trajectories)
	w("  salt: %t\n", c.Salt)
	w("  delays: %t\n", c.Delays)
	w("  delay_scale: %g\n", c.DelayScale)
	w("  stop_issuing_on_first_user_complete: %t\n", c.StopIssuingAtWindow)
	w("  stream: %t\n", c.Stream)
	w("  max_new_tokens: %d\n", c.MaxTokens)
	w("  turn_timeout_s: %g\n", c.TurnTimeoutSeconds)
	w("  runtime:\n")
	if sd := c.Seeds; sd != nil && sd.Scheduler != "" {
		w("    scheduler_random_seed: %s\n", sd.Scheduler)
		if sd.Dataloader != "" {
			w("    dataloader_random_seed: %s\n", sd.Dataloader)
		}
	} else {
		b.Truncate(b.Len() - len("  runtime:\n"))
		w("  runtime: {}  # TODO: the bound seed set's seeds (§4.6)\n")
	}
	w("warmup:\n")
	w("  duration_s: 0  # agentrace runs have no warmup phase\n")
	w("  requests_issued: 0\n")
	w("  requests_completed: 0\n")
	w("  data_source: TODO\n")
	w("  concurrency: %d\n", p.Concurrency)
	w("  initialization_steps: []\n")
	return b.Bytes()
}

func minDurationMs(p *Point) int {
	if p.Region == score.RegionLowLatency {
		return 600_000
	}
	return 1_200_000
}

// datasetShown is the dataset path a reader is shown: the absolute one when the
// manifest has it (its dataset field is relative to the run folder).
func datasetShown(c schemas.RunConfig) string {
	if c.DatasetAbs != "" {
		return c.DatasetAbs
	}
	return c.Dataset
}
