package submission

import (
	"strings"
	"testing"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/curve"
	"go.yaml.in/yaml/v3"
)

// pointDoc is point.yaml as the submission checker's PointConfig types it, with
// the reference config's blocks.
type pointDoc struct {
	Concurrency             int            `yaml:"concurrency"`
	Region                  string         `yaml:"region"`
	MaxSupportedConcurrency *int           `yaml:"max_supported_concurrency"`
	Division                *string        `yaml:"division"`
	ModelName               *string        `yaml:"model_name"`
	ModelPrecision          *string        `yaml:"model_precision"`
	LinkToModel             *string        `yaml:"link_to_model"`
	Checkpoint              *Checkpoint    `yaml:"checkpoint"`
	SpeculativeDecoding     map[string]any `yaml:"speculative_decoding"`
	DatasetName             string         `yaml:"dataset_name"`
	DatasetType             string         `yaml:"dataset_type"`
	DatasetLink             *string        `yaml:"dataset_link"`
	Dataset                 string         `yaml:"dataset"`
	SharedSrc               *string        `yaml:"shared_src"`
	SharedDocs              *string        `yaml:"shared_docs"`
	SeedSet                 string         `yaml:"seed_set"`
	TargetCohort            *string        `yaml:"target_cohort"`
	SubmissionRef           struct {
		Ruleset string `yaml:"ruleset"`
	} `yaml:"submission_ref"`
	Runtime struct {
		LoadPattern       string            `yaml:"load_pattern"`
		TargetConcurrency int               `yaml:"target_concurrency"`
		MinDurationMs     int               `yaml:"min_duration_ms"`
		StreamAllChunks   bool              `yaml:"stream_all_chunks"`
		MaxNewTokens      int               `yaml:"max_new_tokens"`
		Runtime           map[string]uint64 `yaml:"runtime"`
		Agentic           struct {
			EnableSalt      *bool `yaml:"enable_salt"`
			InjectToolDelay *bool `yaml:"inject_tool_delay"`
			StopIssuing     *bool `yaml:"stop_issuing_on_first_user_complete"`
			Trajectories    int   `yaml:"num_trajectories_to_issue"`
		} `yaml:"agentic_inference"`
	} `yaml:"runtime_settings"`
	Accuracy []struct {
		Name       string `yaml:"name"`
		EvalMethod string `yaml:"eval_method"`
		NumRepeats int    `yaml:"num_repeats"`
		Extras     struct {
			NumInstances int    `yaml:"num_instances"`
			Template     string `yaml:"swebench_template"`
		} `yaml:"extras"`
	} `yaml:"accuracy"`
	Warmup struct {
		DataSource  string `yaml:"data_source"`
		Concurrency int    `yaml:"concurrency"`
	} `yaml:"warmup"`
}

// TestPointYAML: point.yaml as today's checker reads it, filled from the run: the
// agentic_inference load pattern, the model folder's canonical name, the published
// seed set A and its three seeds, the agentic_inference and accuracy blocks, the
// region the ruleset placed the point in, max_new_tokens as sent, no local path;
// the submitter's fields from the disclosure, and left out (never TODO) without.
func TestPointYAML(t *testing.T) {
	full := &Disclosure{Division: "Standardized", ModelPrecision: "bf16", LinkToModel: "https://huggingface.co/Qwen/Qwen3.6-35B-A3B",
		DatasetLink: "https://example.org/agentic.jsonl", TargetCohort: "2026-10-C1",
		Checkpoint:          &Checkpoint{Name: "Qwen/Qwen3.6-35B-A3B", Revision: "0123abcd"},
		SpeculativeDecoding: map[string]any{"model_id": "drafter", "weight_checksum": "sha256:ff"},
		SWEBenchTemplate:    "qwen_tools", SharedSrc: "src/agentrace", SharedDocs: "docs"}
	for _, tc := range []struct {
		name      string
		d         *Disclosure
		region    string
		maxTokens int
		wantMax   int
	}{
		{"no disclosure, medium region, the profile's max tokens", nil, "med_concurrency", 0, 8192},
		{"every disclosure, margin, --max-tokens", full, "margin", 512, 512},
		{"declared no speculative decoding", &Disclosure{NoSpeculativeDecoding: true}, "low_latency", 0, 8192},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &curve.Point{Concurrency: 16, Region: tc.region, Point: metrics.Point{Summary: &metrics.ResultSummary{Version: "test"}}}
			p.Manifest.Config = schemas.RunConfig{Model: "Qwen/Qwen3.6-35B-A3B", Profile: "qwen3.6-35b-a3b", Dataset: "../../ds", DatasetAbs: "/home/me/work/ds",
				Trajectories: 613, Salt: true, Delays: true, DelayScale: 1, Stream: true, MaxTokens: tc.maxTokens,
				Seeds: &schemas.RunSeeds{Scheduler: "42", Dataloader: "42"}}
			p.Manifest.DatasetHash, p.Manifest.DatasetSize = "sha256:abc", 613
			s := &curve.System{Points: []*curve.Point{p}, CMax: 1024}
			out := PointYAML(s, p, tc.d)
			var doc pointDoc
			if err := yaml.Unmarshal(out, &doc); err != nil {
				t.Fatalf("point.yaml does not read: %v\n%s", err, out)
			}
			wantRegion := tc.region
			if tc.region == "margin" {
				wantRegion = "submitters_choice"
			}
			rt := doc.Runtime
			if doc.Concurrency != 16 || doc.Region != wantRegion || doc.MaxSupportedConcurrency == nil || *doc.MaxSupportedConcurrency != 1024 ||
				doc.ModelName == nil || *doc.ModelName != "qwen3_6-35b-a3b" || doc.Dataset != "ds" || doc.DatasetName != "ds" || doc.DatasetType == "" ||
				doc.SeedSet != "A" || doc.SubmissionRef.Ruleset != "mlperf-endpoints-v1.0-2026-10-C1-A" ||
				rt.LoadPattern != "agentic_inference" || rt.TargetConcurrency != 16 || !rt.StreamAllChunks || rt.MaxNewTokens != tc.wantMax ||
				rt.Runtime["scheduler_rng_seed"] != 10487924139932647040 || rt.Runtime["sample_index_rng_seed"] != 586478644936801402 ||
				rt.Runtime["model_seed"] != 9315206023656308754 || len(rt.Runtime) != 3 ||
				rt.Agentic.EnableSalt == nil || !*rt.Agentic.EnableSalt || rt.Agentic.InjectToolDelay == nil || !*rt.Agentic.InjectToolDelay ||
				rt.Agentic.StopIssuing == nil || *rt.Agentic.StopIssuing || rt.Agentic.Trajectories != 613 ||
				doc.Warmup.DataSource == "" || doc.Warmup.Concurrency != 16 {
				t.Errorf("%+v\n%s", doc, out)
			}
			if len(doc.Accuracy) != 2 || doc.Accuracy[0].EvalMethod != "agentic_inference_inline" || doc.Accuracy[1].Name != "swe_bench" ||
				doc.Accuracy[1].EvalMethod != "swe_bench_scorer" || doc.Accuracy[1].NumRepeats != 1 || doc.Accuracy[1].Extras.NumInstances != 200 {
				t.Errorf("accuracy block %+v\n%s", doc.Accuracy, out)
			}
			if strings.Contains(string(out), "/home/me") || strings.Contains(string(out), "TODO") || strings.Contains(string(out), "../") {
				t.Errorf("a local path or a TODO:\n%s", out)
			}
			if !isPointYAMLHeader(out) {
				t.Errorf("header not recognized as agentrace's:\n%s", out)
			}
			switch tc.d {
			case nil:
				if doc.Division != nil || doc.ModelPrecision != nil || doc.LinkToModel != nil || doc.Checkpoint != nil || doc.SpeculativeDecoding != nil ||
					doc.DatasetLink != nil || doc.SharedSrc != nil || doc.SharedDocs != nil || doc.TargetCohort != nil || doc.Accuracy[1].Extras.Template != "" ||
					strings.Contains(string(out), "speculative_decoding") {
					t.Errorf("a submitter's field without a disclosure:\n%s", out)
				}
			case full:
				if *doc.Division != "Standardized" || *doc.ModelPrecision != "bf16" || *doc.LinkToModel != full.LinkToModel || *doc.Checkpoint != *full.Checkpoint ||
					doc.SpeculativeDecoding["weight_checksum"] != "sha256:ff" || *doc.DatasetLink != full.DatasetLink || *doc.SharedSrc != "src/agentrace" ||
					*doc.SharedDocs != "docs" || *doc.TargetCohort != "2026-10-C1" || doc.Accuracy[1].Extras.Template != "qwen_tools" {
					t.Errorf("the disclosure is not written whole:\n%s", out)
				}
			default:
				if !strings.Contains(string(out), "\nspeculative_decoding: null\n") {
					t.Errorf("no speculative decoding declared:\n%s", out)
				}
			}
		})
	}
}

// A model's canonical name is the checker's spelling of the model folder.
func TestCanonicalModelName(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{{"Qwen/Qwen3.6-35B-A3B", "qwen3_6-35b-a3b", true}, {"deepseek-ai/DeepSeek-V4.1-Flash", "deepseek-v4_1-flash", true},
		{"moonshotai/Kimi-K3", "kimi-k3", true}, {"openai/gpt-oss-120b", "gpt-oss-120b", true},
		{"deepseek-ai/DeepSeek-V4-Pro-0813", "deepseek-v4-pro-0813", false}, {"no-model-name", "no-model-name", false}} {
		if got, ok := CanonicalModelName(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("CanonicalModelName(%q) = %q, %t; want %q, %t", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
