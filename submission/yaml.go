package submission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/official"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/checker"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/agentrace/agentrace/score/rulesets"
)

// yq quotes s as a YAML scalar: a JSON string is a valid YAML double-quoted scalar.
func yq(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pointRegion is the §8.3 region of a point: the region the ruleset's form places
// it in; a margin point (legal, satisfying no region) is the submitter's choice.
func pointRegion(p *curve.Point) string {
	if !score.Mandatory(p.Region) {
		return "submitters_choice"
	}
	return p.Region
}

// AcceptedModels are the benchmark models the submission checker accepts, in the
// canonical form it requires of point.yaml's model_name and of the model folder:
// the embedded checker data's allowed names (score/checker).
func AcceptedModels() []string {
	d, err := checker.LoadData(checker.DataOptions{})
	if err != nil {
		return nil
	}
	return d.AllowedModels
}

// CanonicalModelName is a served model's name as the checker spells a benchmark
// model: its canonical form (checker.CanonicalModelName) in lower case
// ("Qwen/Qwen3.6-35B-A3B" is qwen3_6-35b-a3b). ok tells whether the checker
// accepts that name (AcceptedModels).
func CanonicalModelName(model string) (name string, ok bool) {
	name = strings.ToLower(checker.CanonicalModelName(model))
	return name, slices.Contains(AcceptedModels(), name)
}

// Disclosure is what a point.yaml declares that only the submitter knows (§8.3):
// agentrace submit reads it from the submitter file. A field left empty is left
// out of point.yaml, never guessed.
type Disclosure struct {
	Division       string
	ModelPrecision string
	LinkToModel    string
	DatasetLink    string
	TargetCohort   string
	// Checkpoint is the weights served, by name and revision (nil: not declared).
	Checkpoint *Checkpoint
	// SpeculativeDecoding is the drafter served (model_id and weight_checksum, or
	// target_checksum and configuration, as the checker's approved list names
	// one); NoSpeculativeDecoding declares that none is. Neither: not declared.
	SpeculativeDecoding   map[string]any
	NoSpeculativeDecoding bool
	// SWEBenchTemplate is the agent template the SWE-bench run used.
	SWEBenchTemplate string
	// SharedSrc and SharedDocs are the submission's src/<implementation> and docs
	// folders, relative to its root.
	SharedSrc, SharedDocs string
}

// Checkpoint names model weights and their revision.
type Checkpoint struct {
	Name     string `yaml:"name" json:"name"`
	Revision string `yaml:"revision" json:"revision"`
}

// pointYAMLHeader starts every point.yaml agentrace writes (isOurPointYAML).
const pointYAMLHeader = "point.yaml (MLPerf Endpoints rules §8.3) written by agentrace"

// PointYAML writes a point's point.yaml (§8.3) in the submission checker's
// schema (models/file/point_config.py PointConfig), filled from what the run
// recorded: the agentic_inference load pattern, the canonical model name (the
// model folder's), the published seed set and its seeds, the agentic_inference
// and accuracy blocks as the reference's config declares them, the region the
// ruleset's form places the point in, max_new_tokens as sent, and no local path.
// What only the submitter knows comes from d (nil: nothing), and a field it
// leaves open is left out: the checker's point-disclosure-complete then names it.
func PointYAML(s *curve.System, p *curve.Point, d *Disclosure) []byte {
	if d == nil {
		d = &Disclosure{}
	}
	var b bytes.Buffer
	c := p.Manifest.Config
	w := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	str := func(k, v string) {
		if v != "" {
			w("%s: %s\n", k, yq(v))
		}
	}
	w("# %s %s.\n", pointYAMLHeader, yq(p.Summary.Version))
	w("concurrency: %d\n", p.Concurrency)
	w("region: %s  # %s by §5.5", pointRegion(p), yq(p.Region))
	if p.Region == score.RegionMargin {
		w(" (margin point: legal, satisfies no region)")
	}
	w("\n")
	if s.NoCMax == "" && s.CMaxSource != curve.CMaxHighestPoint {
		w("max_supported_concurrency: %d\n", s.CMax)
	}
	str("division", d.Division)
	if name, ok := CanonicalModelName(ServedModel(c)); ok {
		w("model_name: %s  # served as %s\n", name, yq(ServedModel(c)))
	}
	str("model_precision", d.ModelPrecision)
	str("link_to_model", d.LinkToModel)
	if cp := d.Checkpoint; cp != nil {
		w("checkpoint:\n  name: %s\n  revision: %s\n", yq(cp.Name), yq(cp.Revision))
	}
	switch {
	case d.SpeculativeDecoding != nil:
		j, _ := json.Marshal(d.SpeculativeDecoding)
		w("speculative_decoding: %s\n", j)
	case d.NoSpeculativeDecoding:
		w("speculative_decoding: null\n")
	}
	name := datasetName(p)
	str("dataset_name", name)
	w("dataset_type: \"Accuracy + Performance\"\n")
	str("dataset_link", d.DatasetLink)
	w("dataset: %s  # content hash %s, %d conversations\n", yq(name), p.Manifest.DatasetHash, p.Manifest.DatasetSize)
	str("shared_src", d.SharedSrc)
	str("shared_docs", d.SharedDocs)
	seeds := official.Rulesets()[0]
	w("seed_set: %s\n", yq(seeds.SeedSet))
	str("target_cohort", d.TargetCohort)
	w("submission_ref:\n  ruleset: %s\n", yq(seeds.Name))
	w("runtime_settings:\n")
	w("  load_pattern: agentic_inference\n")
	w("  target_concurrency: %d\n", p.Concurrency)
	w("  min_duration_ms: %d\n", minDurationMs(p))
	w("  stream_all_chunks: %t\n", c.Stream)
	if n := maxNewTokens(c); n > 0 {
		w("  max_new_tokens: %d\n", n)
	}
	w("  runtime:  # agentrace's replay draws no random number: the run is the same under every seed set\n")
	w("    scheduler_rng_seed: %s\n    sample_index_rng_seed: %s\n    model_seed: %s\n", seeds.SchedulerRNG, seeds.SampleIndexRNG, seeds.Model)
	w("  agentic_inference:\n")
	w("    enable_salt: %t\n", c.Salt)
	w("    inject_tool_delay: %t\n", c.Delays)
	w("    stop_issuing_on_first_user_complete: %t\n", c.StopIssuingAtWindow)
	w("    num_trajectories_to_issue: %d\n", c.Trajectories)
	w("    turn_timeout_s: %g\n", c.TurnTimeoutSeconds)
	if c.DelayScale != 0 && c.DelayScale != 1 {
		w("    delay_scale: %g  # agentrace's own setting, not the reference's: not official\n", c.DelayScale)
	}
	w("accuracy:\n")
	w("  - name: %s\n    eval_method: agentic_inference_inline\n", yq(name))
	w("  - name: swe_bench\n    eval_method: swe_bench_scorer\n    num_repeats: 1\n    extras:\n")
	w("      num_instances: %d\n", swebenchInstances(ServedModel(c)))
	if d.SWEBenchTemplate != "" {
		w("      swebench_template: %s\n", yq(d.SWEBenchTemplate))
	}
	w("warmup:\n")
	w("  duration_s: 0\n")
	w("  requests_issued: 0\n")
	w("  requests_completed: 0\n")
	w("  data_source: \"none: agentrace runs no warmup phase\"\n")
	w("  concurrency: %d\n", p.Concurrency)
	w("  initialization_steps: []\n")
	return b.Bytes()
}

// datasetName names a point's dataset without a local path: the file it was
// ingested from (its dataset manifest's one input), else the dataset folder's name.
func datasetName(p *curve.Point) string {
	if p.DatasetDir() != "" {
		b, err := infile.ReadSmall(filepath.Join(p.DatasetDir(), schemas.RunManifestFile), 1<<20)
		var m schemas.DatasetManifest
		if err == nil && json.Unmarshal(b, &m) == nil && len(m.Inputs) == 1 {
			return path.Base(m.Inputs[0].Path)
		}
	}
	return filepath.Base(filepath.FromSlash(p.Manifest.Config.Dataset))
}

// ServedModel is the model name a run's requests carried.
func ServedModel(c schemas.RunConfig) string {
	if c.Model != "" {
		return c.Model
	}
	if pr, err := datasets.LookupProfile(c.Profile); c.Profile != "" && err == nil {
		return pr.Model
	}
	return ""
}

// maxNewTokens is the max_completion_tokens the run sent to rows that set none,
// resolved as replay resolves it: --max-tokens, else the sampling settings' (a
// profile's or a config's), else datasets.DefaultRunMaxTokens; 0 when the run set
// no default (the rows' own values alone).
func maxNewTokens(c schemas.RunConfig) int {
	switch {
	case c.MaxTokens < 0:
		return 0
	case c.MaxTokens > 0:
		return c.MaxTokens
	case c.Sampling != nil && c.Sampling.MaxNewTokens > 0:
		return c.Sampling.MaxNewTokens
	}
	if pr, err := datasets.LookupProfile(c.Profile); c.Profile != "" && err == nil && pr.MaxTokens > 0 {
		return pr.MaxTokens
	}
	return datasets.DefaultRunMaxTokens
}

// swebenchInstances is the number of SWE-bench instances the model's ruleset
// evaluates (the first 200 of SWE-bench Verified when it names none).
func swebenchInstances(model string) int {
	if rs, ok := rulesets.ForModel(model); ok && rs.SWEBenchEvaluated > 0 {
		return rs.SWEBenchEvaluated
	}
	return 200
}

func minDurationMs(p *curve.Point) int {
	if p.Region == score.RegionLowLatency {
		return 600_000
	}
	return 1_200_000
}
