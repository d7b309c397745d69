package submission

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/agentrace/agentrace/internal/infile"
	"go.yaml.in/yaml/v3"
)

// Submitter is the submitter file: what only the submitter knows of a
// submission. Every field may be left out; Build then writes the tree without it
// and names it in Result.Missing.
type Submitter struct {
	// System is the system description (§8.2), written as each point's
	// system_desc.json (with the division and the point's tps_utilization).
	System map[string]any `yaml:"system"`
	// Division is Standardized, Serviced or RDI.
	Division       string `yaml:"division"`
	ModelPrecision string `yaml:"model_precision"`
	LinkToModel    string `yaml:"link_to_model"`
	// Checkpoint is the weights served, by name and revision.
	Checkpoint *Checkpoint `yaml:"checkpoint"`
	// SpeculativeDecoding is "none", or the drafter as the checker's approved
	// list identifies one (model_id and weight_checksum, or target_checksum and
	// configuration).
	SpeculativeDecoding any    `yaml:"speculative_decoding"`
	DatasetLink         string `yaml:"dataset_link"`
	// TargetCohort is the cohort the submission targets, YYYY-MM-C0 or YYYY-MM-C1.
	TargetCohort string `yaml:"target_cohort"`
	// SWEBenchTemplate is the agent template of the SWE-bench run.
	SWEBenchTemplate string `yaml:"swebench_template"`
	// Power is the system's power descriptor (system_power.json), which the
	// Standardized division requires.
	Power map[string]any `yaml:"power"`
}

// MaxSubmitterBytes bounds the submitter file.
const MaxSubmitterBytes = 1 << 20

// ReadSubmitter reads a submitter file (YAML; a key it does not know is an
// error, so that a misspelt field is not silently left open).
func ReadSubmitter(ctx context.Context, path string) (*Submitter, error) {
	b, err := infile.ReadFile(ctx, path, MaxSubmitterBytes)
	if err != nil {
		return nil, fmt.Errorf("read submitter file %q: %w", path, err)
	}
	var s Submitter
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read submitter file %q: %w", path, err)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("submitter file %q: %w", path, err)
	}
	return &s, nil
}

func cohortRE() *regexp.Regexp     { return regexp.MustCompile(`^\d{4}-\d{2}-C[01]$`) }
func systemNameRE() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`) }

// validate refuses a value given in a form the checker cannot take (a value left
// out is not an error: it is missing).
func (s *Submitter) validate() error {
	if s.Division != "" && division(s.Division) == "" {
		return fmt.Errorf("division %q: want Standardized, Serviced or RDI", s.Division)
	}
	if s.TargetCohort != "" && !cohortRE().MatchString(s.TargetCohort) {
		return fmt.Errorf("target_cohort %q: want YYYY-MM-C0 or YYYY-MM-C1", s.TargetCohort)
	}
	if n, ok := s.System["system_name"]; ok {
		name, isString := n.(string)
		if !isString || !systemNameRE().MatchString(strings.ReplaceAll(strings.TrimSpace(name), " ", "_")) {
			return fmt.Errorf("system.system_name %v: want a name of letters, digits, spaces, '.', '_' or '-' (it names the system's folder)", n)
		}
	}
	if d, ok := s.System["division"]; ok && s.Division != "" && fmt.Sprint(d) != division(s.Division) {
		return fmt.Errorf("system.division %v and division %q differ", d, s.Division)
	}
	switch v := s.SpeculativeDecoding.(type) {
	case nil, map[string]any:
	case string:
		if v != "none" {
			return fmt.Errorf("speculative_decoding %q: want none, or the drafter's model_id and weight_checksum", v)
		}
	default:
		return fmt.Errorf("speculative_decoding: want none, or the drafter's model_id and weight_checksum")
	}
	return nil
}

// division is the checker's spelling of a division, "" when it is none.
func division(d string) string {
	for _, v := range []string{"Standardized", "Serviced", "RDI"} {
		if strings.EqualFold(strings.TrimSpace(d), v) {
			return v
		}
	}
	return ""
}

// disclosure is what point.yaml takes from the submitter.
func (s *Submitter) disclosure() *Disclosure {
	d := &Disclosure{Division: division(s.Division), ModelPrecision: s.ModelPrecision, LinkToModel: s.LinkToModel,
		DatasetLink: s.DatasetLink, TargetCohort: s.TargetCohort, Checkpoint: s.Checkpoint, SWEBenchTemplate: s.SWEBenchTemplate,
		SharedSrc: SrcDir + "/" + Implementation, SharedDocs: DocsDir}
	switch v := s.SpeculativeDecoding.(type) {
	case string:
		d.NoSpeculativeDecoding = v == "none"
	case map[string]any:
		d.SpeculativeDecoding = v
	}
	return d
}

// missing lists what the submitter file leaves open, each as "field: what it is".
func (s *Submitter) missing() []string {
	var out []string
	add := func(f, why string) { out = append(out, f+": "+why) }
	// The system description's fields the checker's schema requires
	// (models/file/system.py SystemDescription; one of the availability spellings
	// stands for publication_status), and those of each node_types entry.
	systemRequired := []string{"system_name", "publication_status", "max_supported_concurrency", "system_size",
		"system_node_ensemble_count", "system_node_ensemble_total", "node_types"}
	nodeRequired := []string{"host_memory_configuration", "host_network_card_count", "driver", "filesystem"}
	if s.System == nil {
		add("system", "the system description (§8.2), written as each point's system_desc.json")
	} else {
		for _, k := range systemRequired {
			if k == "publication_status" {
				if blank(s.System["publication_status"]) && blank(s.System["system_availability_status"]) && blank(s.System["availability_status"]) {
					add("system.publication_status", "Available, Preview or RDI")
				}
				continue
			}
			if blank(s.System[k]) {
				add("system."+k, "required by the checker's system description schema")
			}
		}
		if nodes, ok := s.System["node_types"].([]any); ok {
			for i, n := range nodes {
				m, _ := n.(map[string]any)
				for _, k := range nodeRequired {
					if blank(m[k]) {
						add(fmt.Sprintf("system.node_types[%d].%s", i, k), "required by the checker's node type schema")
					}
				}
				if blank(m["host_processor_core_count"]) && blank(m["host_processor_vcpu_count"]) {
					add(fmt.Sprintf("system.node_types[%d].host_processor_core_count", i), "or host_processor_vcpu_count")
				}
			}
		}
		if v, ok := s.System["max_supported_concurrency"]; ok && !blank(v) {
			if _, ok := v.(int); !ok {
				add("system.max_supported_concurrency", fmt.Sprintf("%v is not an integer", v))
			}
		}
	}
	if s.Division == "" {
		add("division", "Standardized, Serviced or RDI")
	}
	if s.ModelPrecision == "" {
		add("model_precision", "the lowest precision of the weights")
	}
	if s.LinkToModel == "" {
		add("link_to_model", "where the submitted model is published")
	}
	switch {
	case s.Checkpoint == nil:
		add("checkpoint", "the served weights' name and revision")
	case s.Checkpoint.Name == "":
		add("checkpoint.name", "the served weights' name")
	case s.Checkpoint.Revision == "":
		add("checkpoint.revision", "the served weights' revision")
	}
	if s.SpeculativeDecoding == nil {
		add("speculative_decoding", "none, or the drafter's model_id and weight_checksum")
	}
	if s.DatasetLink == "" {
		add("dataset_link", "where the dataset used is published")
	}
	if s.TargetCohort == "" {
		add("target_cohort", "YYYY-MM-C0 or YYYY-MM-C1")
	}
	if s.SWEBenchTemplate == "" {
		add("swebench_template", "the SWE-bench run's agent template (default or qwen_tools)")
	}
	if s.Power == nil && !strings.EqualFold(division(s.Division), "RDI") && !strings.EqualFold(division(s.Division), "Serviced") {
		add("power", "the system's power descriptor (system_power.json), which the Standardized division requires")
	}
	sort.Strings(out)
	return out
}

func blank(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(x) == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// systemName is the folder name of the system (the builder's: system_name with
// spaces as underscores), "" when the file names none.
func (s *Submitter) systemName() string {
	n, _ := s.System["system_name"].(string)
	return strings.ReplaceAll(strings.TrimSpace(n), " ", "_")
}

// cmax is the system's declared max_supported_concurrency, 0 when none.
func (s *Submitter) cmax() int {
	n, _ := s.System["max_supported_concurrency"].(int)
	return max(n, 0)
}
