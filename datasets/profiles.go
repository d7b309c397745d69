package datasets

import (
	"fmt"
	"sort"
	"strings"
)

// Profile is a model's official sampling settings (spec §5). A nil pointer leaves the
// field out of the request body.
type Profile struct {
	Name              string
	Model             string
	Temperature       *float64
	TopP              *float64
	TopK              *int
	RepetitionPenalty *float64
	PresencePenalty   *float64
	FrequencyPenalty  *float64
	// MaxTokens is sent as max_completion_tokens when the dataset row sets none.
	MaxTokens int
	// ChatTemplateKwargs is sent as chat_template_kwargs (keys in sorted order).
	ChatTemplateKwargs map[string]any
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
