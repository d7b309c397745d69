package checker

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed data/*.yaml
var embedded embed.FS

// Source names where one of the checker's data files came from and which version.
type Source struct {
	Name    string `json:"name"`
	File    string `json:"file"`
	Version string `json:"version"`
}

// Sources lists the embedded data files and the checker versions they were read at.
var Sources = []Source{
	{Name: "catalog", File: "data/messages.yaml", Version: "mlcommons/endpoints-submission-cli src/submission_checker/data/messages.yaml at 064aa17 (80 rule ids)"},
	{Name: "approved drafters", File: "data/approved_drafters.yaml", Version: "mlcommons/endpoints-submission-cli src/submission_checker/data/approved_drafters.yaml at c1d7077"},
	{Name: "seed sets", File: "data/seed_sets.yaml", Version: "mlcommons/endpoints-submission-cli src/submission_checker/data/seed_sets.yaml at 428596b"},
	{Name: "model names and agentic targets", File: "data/targets.yaml", Version: "checker.py _ALLOWED_MODEL_NAMES (newest stored checker.py, 52,175 characters) and agentic_targets.py at b889565"},
}

// RuleInfo is one rule of the checker's catalog: its id, title and spec section.
type RuleInfo struct {
	ID    string
	Title string
	Spec  string
}

// Drafter is one entry of the approved-drafter list (§2.9.4).
type Drafter struct {
	Benchmark      string
	ApprovedCohort string
	ModelID        string
	WeightChecksum string
	TargetChecksum string
	Configuration  map[string]any
}

// SeedSet is one published seed set (§4.6); seeds are decimal strings, since the
// published values do not fit an int64.
type SeedSet struct {
	ID      string
	Seeds   map[string]string
	Cohorts []string
}

// AgenticTarget is one agentic model's accuracy gates.
type AgenticTarget struct {
	Name        string    `yaml:"name"`
	Fragments   []string  `yaml:"fragments"`
	InlineMin   *float64  `yaml:"inline_min"`
	SWEBenchMin *float64  `yaml:"swebench_min"`
	OSLRange    []float64 `yaml:"osl_range"`
}

// Data is everything the checker reads besides the tree: its rule catalog, the
// approved drafters, the seed sets, the accepted model names and the agentic
// targets. A registry that could not be read is not an error of the load: the
// checker reports it as a warning (seed-set-registry, drafter-list-registry) and
// skips the rules that need it, and so does Check.
type Data struct {
	Catalog        []RuleInfo
	Drafters       map[string][]Drafter
	DraftersError  string
	SeedSets       map[string]SeedSet
	SeedSetsError  string
	AllowedModels  []string
	AgenticTargets []AgenticTarget
	DraftersFile   string
	SeedSetsFile   string
	TargetsFile    string
}

// DataOptions names files that replace the embedded ones; empty keeps the embedded.
type DataOptions struct {
	ApprovedDrafters string
	SeedSets         string
	Targets          string
}

// LoadData reads the embedded data, each file replaced where opts names one.
func LoadData(opts DataOptions) (*Data, error) {
	d := &Data{DraftersFile: "embedded", SeedSetsFile: "embedded", TargetsFile: "embedded"}
	cat, err := embedded.ReadFile("data/messages.yaml")
	if err != nil {
		return nil, err
	}
	if d.Catalog, err = parseCatalog(cat); err != nil {
		return nil, fmt.Errorf("read the checker's catalog: %w", err)
	}

	raw, name, err := readData("data/approved_drafters.yaml", opts.ApprovedDrafters)
	if err != nil {
		d.DraftersError = err.Error()
	} else if d.Drafters, err = parseDrafters(raw, name); err != nil {
		d.DraftersError = err.Error()
	}
	if opts.ApprovedDrafters != "" {
		d.DraftersFile = opts.ApprovedDrafters
	}

	raw, name, err = readData("data/seed_sets.yaml", opts.SeedSets)
	if err != nil {
		d.SeedSetsError = err.Error()
	} else if d.SeedSets, err = parseSeedSets(raw, name); err != nil {
		d.SeedSetsError = err.Error()
	}
	if opts.SeedSets != "" {
		d.SeedSetsFile = opts.SeedSets
	}

	raw, name, err = readData("data/targets.yaml", opts.Targets)
	if err != nil {
		return nil, err
	}
	var t struct {
		Allowed []string        `yaml:"allowed_model_names"`
		Targets []AgenticTarget `yaml:"agentic_targets"`
	}
	if err := yaml.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("read checker targets %q: %w", name, err)
	}
	if len(t.Allowed) == 0 {
		return nil, fmt.Errorf("read checker targets %q: no allowed_model_names", name)
	}
	for _, a := range t.Targets {
		if len(a.Fragments) == 0 || (a.OSLRange != nil && len(a.OSLRange) != 2) {
			return nil, fmt.Errorf("read checker targets %q: target %q needs fragments and a two-value osl_range", name, a.Name)
		}
	}
	d.AllowedModels, d.AgenticTargets = t.Allowed, t.Targets
	if opts.Targets != "" {
		d.TargetsFile = opts.Targets
	}
	return d, nil
}

// EmbeddedFile returns one embedded data file by its name (messages.yaml,
// approved_drafters.yaml, seed_sets.yaml, targets.yaml), to start a replacement from.
func EmbeddedFile(name string) ([]byte, error) {
	for _, s := range Sources {
		if strings.TrimPrefix(s.File, "data/") == name {
			return embedded.ReadFile(s.File)
		}
	}
	return nil, fmt.Errorf("no embedded checker data file %q (messages.yaml, approved_drafters.yaml, seed_sets.yaml, targets.yaml)", name)
}

// readData returns the override file's bytes when one is named, else the embedded file.
func readData(embeddedName, override string) ([]byte, string, error) {
	if override == "" {
		b, err := embedded.ReadFile(embeddedName)
		return b, embeddedName, err
	}
	b, err := os.ReadFile(override)
	if err != nil {
		return nil, override, fmt.Errorf("cannot read %s: %w", override, err)
	}
	return b, override, nil
}

func parseCatalog(raw []byte) ([]RuleInfo, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a mapping of rule ids")
	}
	m := doc.Content[0]
	var out []RuleInfo
	for i := 0; i+1 < len(m.Content); i += 2 {
		id := m.Content[i].Value
		if strings.HasPrefix(id, "_") {
			continue
		}
		var body struct {
			Title string `yaml:"title"`
			Spec  string `yaml:"spec"`
		}
		if err := m.Content[i+1].Decode(&body); err != nil {
			return nil, fmt.Errorf("rule %q: %w", id, err)
		}
		out = append(out, RuleInfo{ID: id, Title: body.Title, Spec: body.Spec})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func parseDrafters(raw []byte, name string) (map[string][]Drafter, error) {
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("invalid YAML in drafter list %s: %w", name, err)
	}
	doc = normalize(doc)
	if doc == nil {
		return map[string][]Drafter{}, nil
	}
	m, ok := doc.(map[string]any)
	list, lok := m["drafters"].([]any)
	if !ok || !lok {
		return nil, fmt.Errorf("%s must be a mapping with a 'drafters' list", name)
	}
	out := map[string][]Drafter{}
	for i, e := range list {
		entry, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: drafters[%d] is not a mapping", name, i)
		}
		bench, _ := entry["benchmark"].(string)
		if bench == "" {
			return nil, fmt.Errorf("%s: drafters[%d] has no 'benchmark'", name, i)
		}
		d := Drafter{
			Benchmark:      bench,
			ApprovedCohort: optString(entry["approved_cohort"]),
			ModelID:        optString(entry["model_id"]),
			WeightChecksum: optString(entry["weight_checksum"]),
			TargetChecksum: optString(entry["target_checksum"]),
		}
		if c, ok := entry["configuration"].(map[string]any); ok {
			d.Configuration = c
		}
		if d.WeightChecksum == "" && d.TargetChecksum == "" {
			return nil, fmt.Errorf("%s: drafters[%d] identifies no drafter — §2.9.4 needs a weight_checksum, or a target_checksum plus configuration", name, i)
		}
		out[bench] = append(out[bench], d)
	}
	return out, nil
}

var seedFields = []string{"scheduler_rng_seed", "sample_index_rng_seed", "model_seed"}

func parseSeedSets(raw []byte, name string) (map[string]SeedSet, error) {
	var doc any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("invalid YAML in seed-set file %s: %w", name, err)
	}
	doc = normalize(doc)
	m, ok := doc.(map[string]any)
	list, lok := m["seed_sets"].([]any)
	if !ok || !lok {
		return nil, fmt.Errorf("%s must be a mapping with a 'seed_sets' list", name)
	}
	out := map[string]SeedSet{}
	for i, e := range list {
		entry, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: seed_sets[%d] is not a mapping", name, i)
		}
		id, _ := entry["id"].(string)
		if id == "" {
			return nil, fmt.Errorf("%s: seed_sets[%d] has no 'id'", name, i)
		}
		s := SeedSet{ID: id, Seeds: map[string]string{}}
		for _, f := range seedFields {
			v, ok := intText(entry[f])
			if !ok {
				return nil, fmt.Errorf("%s: seed set %q must define integer %s", name, id, strings.Join(seedFields, ", "))
			}
			s.Seeds[f] = v
		}
		if c, ok := entry["cohorts"]; ok && c != nil {
			cl, ok := c.([]any)
			if !ok {
				return nil, fmt.Errorf("%s: seed set %q has a non-list 'cohorts'", name, id)
			}
			for _, x := range cl {
				s.Cohorts = append(s.Cohorts, fmt.Sprint(x))
			}
		}
		out[id] = s
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s defines no seed sets", name)
	}
	return out, nil
}

func optString(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

var normRE = regexp.MustCompile(`[^a-z0-9]`)

// agenticTarget returns the targets of a model folder, as the checker matches them.
func (d *Data) agenticTarget(model string) *AgenticTarget {
	hay := normRE.ReplaceAllString(strings.ToLower(model), "")
	for i := range d.AgenticTargets {
		all := true
		for _, f := range d.AgenticTargets[i].Fragments {
			if !strings.Contains(hay, f) {
				all = false
				break
			}
		}
		if all {
			return &d.AgenticTargets[i]
		}
	}
	return nil
}

// Describe writes what the data holds and where each part came from.
func (d *Data) Describe() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "submission checker data\n")
	for _, s := range Sources {
		fmt.Fprintf(&b, "  %s (%s): %s\n", s.Name, s.File, s.Version)
	}
	fmt.Fprintf(&b, "  catalog: %d rule ids\n", len(d.Catalog))
	fmt.Fprintf(&b, "  approved drafters: %s", d.DraftersFile)
	if d.DraftersError != "" {
		fmt.Fprintf(&b, " (unavailable: %s)\n", d.DraftersError)
	} else {
		n := 0
		for _, l := range d.Drafters {
			n += len(l)
		}
		fmt.Fprintf(&b, ", %d entries for %d benchmarks\n", n, len(d.Drafters))
	}
	fmt.Fprintf(&b, "  seed sets: %s", d.SeedSetsFile)
	if d.SeedSetsError != "" {
		fmt.Fprintf(&b, " (unavailable: %s)\n", d.SeedSetsError)
	} else {
		ids := make([]string, 0, len(d.SeedSets))
		for id := range d.SeedSets {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		fmt.Fprintf(&b, ", sets %s\n", strings.Join(ids, ", "))
	}
	names := make([]string, 0, len(d.AgenticTargets))
	for _, t := range d.AgenticTargets {
		names = append(names, t.Name)
	}
	fmt.Fprintf(&b, "  targets: %s, models %s; agentic targets %s\n", d.TargetsFile, strings.Join(d.AllowedModels, ", "), strings.Join(names, ", "))
	return b.String()
}
