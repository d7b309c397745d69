package datasets

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Profile is a set of sampling settings, the fields of the reference client's
// model_params that reach a request body: a built-in profile is a model's official
// settings (spec §5), named; a run may also take them from a reference config's
// model_params or from flags (replay.Options.Sampling), field by field. A nil
// pointer leaves the field out of the request body.
type Profile struct {
	Name        string
	Model       string
	Temperature *float64
	TopP        *float64
	TopK        *int
	// Seed is sent as "seed" after "stream": an integer in decimal ("" for none),
	// as large as the reference's encoder sends (-2^63 to 2^64-1).
	Seed              json.Number
	RepetitionPenalty *float64
	PresencePenalty   *float64
	FrequencyPenalty  *float64
	// MaxTokens is sent as max_completion_tokens when the dataset row sets none.
	MaxTokens int
	// ChatTemplateKwargs is sent as chat_template_kwargs (keys in sorted order)
	// unless ChatTemplateKwargsJSON is set.
	ChatTemplateKwargs map[string]any
	// ChatTemplateKwargsJSON, when set, is the compact JSON object sent as
	// chat_template_kwargs, its keys in the order a config file wrote them, as
	// the reference's encoder keeps a dict's insertion order.
	ChatTemplateKwargsJSON string
}

// Overlay returns p with every field that o sets replacing p's: a run's explicit
// settings over a named profile. Name stays p's.
func (p Profile) Overlay(o Profile) Profile {
	if o.Model != "" {
		p.Model = o.Model
	}
	set := func(dst **float64, v *float64) {
		if v != nil {
			*dst = v
		}
	}
	set(&p.Temperature, o.Temperature)
	set(&p.TopP, o.TopP)
	set(&p.RepetitionPenalty, o.RepetitionPenalty)
	set(&p.PresencePenalty, o.PresencePenalty)
	set(&p.FrequencyPenalty, o.FrequencyPenalty)
	if o.TopK != nil {
		p.TopK = o.TopK
	}
	if o.Seed != "" {
		p.Seed = o.Seed
	}
	if o.MaxTokens != 0 {
		p.MaxTokens = o.MaxTokens
	}
	if o.ChatTemplateKwargs != nil || o.ChatTemplateKwargsJSON != "" {
		p.ChatTemplateKwargs, p.ChatTemplateKwargsJSON = o.ChatTemplateKwargs, o.ChatTemplateKwargsJSON
	}
	return p
}

// RunProfile is the profile a run sends: the built-in profile called name ("" for
// none) with every field that sampling sets overlaid; nil when name is "" and
// sampling sets nothing.
func RunProfile(name string, sampling Profile) (*Profile, error) {
	if name == "" && sampling.IsZero() {
		return nil, nil
	}
	var p Profile
	if name != "" {
		var err error
		if p, err = LookupProfile(name); err != nil {
			return nil, err
		}
	}
	p = p.Overlay(sampling)
	return &p, nil
}

// IsZero reports whether p sets no field (its name aside).
func (p Profile) IsZero() bool {
	return p.Model == "" && p.Temperature == nil && p.TopP == nil && p.TopK == nil && p.Seed == "" &&
		p.RepetitionPenalty == nil && p.PresencePenalty == nil && p.FrequencyPenalty == nil &&
		p.MaxTokens == 0 && p.ChatTemplateKwargs == nil && p.ChatTemplateKwargsJSON == ""
}

func f64(v float64) *float64 { return &v }
func intp(v int) *int        { return &v }

// Profiles returns the built-in sampling profiles, sorted by name.
func Profiles() []Profile {
	ps := []Profile{
		{
			Name: "qwen3.6-35b-a3b", Model: "Qwen/Qwen3.6-35B-A3B",
			Temperature: f64(1.0), TopK: intp(20), TopP: f64(0.95),
			RepetitionPenalty: f64(1.0), PresencePenalty: f64(1.5), MaxTokens: 8192,
			ChatTemplateKwargs: map[string]any{"preserve_thinking": true},
		},
		{
			Name: "kimi-k3", Model: "moonshotai/Kimi-K3",
			Temperature: f64(1.0), TopP: f64(1.0), MaxTokens: 8192,
		},
		{
			// The reference's examples/10_Agentic_Inference/dsv4_agentic_benchmark.yaml
			// (mlcommons/endpoints 3fa7e483): its kwargs in the file's order.
			Name: "deepseek-v4", Model: "deepseek-ai/DeepSeek-V4-Pro-0813",
			Temperature: f64(1.0), TopK: intp(0), TopP: f64(0.95), MaxTokens: 8192,
			ChatTemplateKwargs:     map[string]any{"thinking": true, "reasoning_effort": "max", "preserve_thinking": true},
			ChatTemplateKwargsJSON: `{"thinking":true,"reasoning_effort":"max","preserve_thinking":true}`,
		},
		{
			Name: "kimi-k2.6", Model: "moonshotai/Kimi-K2.6",
			Temperature: f64(1.0), TopP: f64(0.95), MaxTokens: 8192,
			ChatTemplateKwargs: map[string]any{"preserve_thinking": true},
		},
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	return ps
}

// LookupProfile returns the built-in profile called name (case-insensitive).
func LookupProfile(name string) (Profile, error) {
	var names []string
	for _, p := range Profiles() {
		if strings.EqualFold(p.Name, name) {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("look up profile %q: unknown (known: %s)", name, strings.Join(names, ", "))
}
