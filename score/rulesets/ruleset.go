package rulesets

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/tokens"
)

// Default is the ruleset used when none is named: the submission checker of
// October 2026 for Qwen3.6-35B-A3B.
const Default = "checker-2026-10-qwen3.6"

// Auto picks, for each run, the newest embedded ruleset whose model patterns
// match the run's model (Default when none does or the model is unknown).
const Auto = "auto"

//go:embed *.json
var rulesetFiles embed.FS

// Ruleset is one version of the accuracy gates, as data: thresholds change between
// versions of the rules, so each version is a JSON file (see *.json here). A
// user file in the same format is accepted wherever a name is.
type Ruleset struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	// Model is the model the ruleset is for; ModelPatterns are regular expressions
	// (Go syntax) matched against a run's model name.
	Model         string   `json:"model"`
	ModelPatterns []string `json:"model_patterns"`
	// Source and Date say where the thresholds come from.
	Source    string `json:"source"`
	Date      string `json:"date"`
	Tentative bool   `json:"tentative"`
	// InlineAccuracyMin is the minimum inline accuracy score (a fraction, compared
	// with the score rounded to 4 places).
	InlineAccuracyMin float64 `json:"inline_accuracy_min"`
	// OSLWindow is the inclusive window of the per-turn OSL mean.
	OSLWindow [2]float64 `json:"osl_window"`
	// SWEBenchMin is the minimum SWE-bench Verified score (mean of the 4 region
	// points); SWEBenchEvaluated the number of evaluated instances (the first N of
	// SWE-bench Verified's test split).
	SWEBenchMin       float64 `json:"swebench_min"`
	SWEBenchEvaluated int     `json:"swebench_evaluated"`
	// Regions is the region form that places a curve's points (RegionsCMin or
	// RegionsFixed32); "" means DefaultRegionForm.
	Regions string `json:"regions,omitempty"`
	// ModelFragments, when set, are matched as the submission checker matches a
	// model: the name lower-cased with every character but a-z and 0-9 removed
	// must contain each fragment.
	ModelFragments []string `json:"model_fragments,omitempty"`
	// Derivation, when present, records how the thresholds follow from the
	// reference model's own results (the rule and the means it was applied to, and
	// for a derived ruleset the runs they came from); loading checks that it
	// reproduces them.
	Derivation *Derivation `json:"derivation,omitempty"`
	// Tokenizer is the model's own tokenizer by the digests of its files: token
	// counts are official only when made with exactly these (TokenizerUse).
	// Absent, or with empty digests, no tokenizer can be shown to be the model's.
	Tokenizer *ModelTokenizer `json:"tokenizer,omitempty"`
	// Curve holds the limits the rules put on a curve as a whole.
	Curve CurveLimits `json:"curve"`
	// Published says, for fields of the ruleset (by their JSON names), where a
	// source publishes the value ("published: WHERE") or that none does ("not
	// published: WHY"): a ruleset assembled from several sources says which of
	// its values are the rules' own.
	Published map[string]string `json:"published,omitempty"`
	// File is the path of a user ruleset, "" for an embedded one.
	File string `json:"-"`

	patterns []*regexp.Regexp
}

// CurveLimits are the rules' limits on a curve (the submission checker's
// point-count and point-cap, context.py:204-219; its metric-consistency
// tolerance, point_result.py:17; the official dataset of the rules' "Official
// agentic settings").
type CurveLimits struct {
	// MinPoints and MaxPoints bound the points of a curve, margin points counted.
	MinPoints int `json:"min_points"`
	MaxPoints int `json:"max_points"`
	// DatasetSize is the official dataset's number of trajectories.
	DatasetSize int `json:"dataset_size"`
	// ConsistencyTolerance is the largest relative error of a published figure
	// from its derivation (a fraction).
	ConsistencyTolerance float64 `json:"consistency_tolerance"`
}

// ModelTokenizer is a model's own tokenizer as the reference client loads it
// (AutoTokenizer.from_pretrained of the model's name): the SHA-256 of its
// tokenizer.json (or tiktoken.model) and of its chat template, "" where unknown.
type ModelTokenizer struct {
	// Model is the Hugging Face model id the reference loads the tokenizer by.
	Model              string `json:"model"`
	TokenizerSHA256    string `json:"tokenizer_sha256"`
	ChatTemplateSHA256 string `json:"chat_template_sha256"`
	// Source says where the digests come from, or why they are unknown.
	Source string `json:"source"`
}

// TokenizerUse tells what counts made with the tokenizer id are under the
// ruleset: the model's own when both its digests equal the ones the ruleset
// records, else a stand-in (also when the ruleset records none).
func (r *Ruleset) TokenizerUse(id tokens.Identity) *schemas.TokenizerUse {
	u := &schemas.TokenizerUse{Name: id.Name, Spec: id.Spec, File: id.File, TokenizerSHA256: id.TokenizerSHA256,
		TemplateSHA256: id.TemplateSHA256, Ruleset: r.Name, StandIn: true}
	used := fmt.Sprintf("counted with %s (%s sha256 %s, chat template sha256 %s)", id.Name, id.File, ShortDigest(id.TokenizerSHA256), ShortDigest(id.TemplateSHA256))
	mt := r.Tokenizer
	switch {
	case mt == nil || mt.TokenizerSHA256 == "" || mt.ChatTemplateSHA256 == "":
		model := r.Model
		if mt != nil && mt.Model != "" {
			model = mt.Model
		}
		u.Model = model
		u.Note = fmt.Sprintf("%s: %s; ruleset %s records no digest of %s's tokenizer and chat template (unknown), so no count can be shown to be the model's",
			schemas.StandInLabel, used, r.Name, model)
	case mt.TokenizerSHA256 == id.TokenizerSHA256 && mt.ChatTemplateSHA256 == id.TemplateSHA256:
		u.Model, u.StandIn = mt.Model, false
		u.Note = fmt.Sprintf("the model's tokenizer: %s, the digests ruleset %s records for %s", used, r.Name, mt.Model)
	default:
		u.Model = mt.Model
		u.Note = fmt.Sprintf("%s: %s; %s's are %s sha256 %s and chat template sha256 %s (ruleset %s)",
			schemas.StandInLabel, used, mt.Model, tokens.HFTokenizerFile, ShortDigest(mt.TokenizerSHA256), ShortDigest(mt.ChatTemplateSHA256), r.Name)
	}
	return u
}

// ShortDigest is a digest's first 12 hex digits ("none" for no digest).
func ShortDigest(d string) string {
	switch {
	case d == "":
		return "none"
	case len(d) > 12:
		return d[:12]
	}
	return d
}

// MatchesModel tells whether the ruleset names model (false for an empty model).
func (r *Ruleset) MatchesModel(model string) bool {
	if model == "" {
		return false
	}
	if len(r.ModelFragments) > 0 {
		var b strings.Builder
		for _, c := range strings.ToLower(model) {
			if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
				b.WriteRune(c)
			}
		}
		all := true
		for _, f := range r.ModelFragments {
			all = all && strings.Contains(b.String(), f)
		}
		if all {
			return true
		}
	}
	for _, p := range r.patterns {
		if p.MatchString(model) {
			return true
		}
	}
	return false
}

// AccuracyThreshold, OSLThreshold and SWEBenchThreshold write the gates'
// thresholds for tables.
func (r *Ruleset) AccuracyThreshold() string { return ">= " + fmtFloat(r.InlineAccuracyMin) }
func (r *Ruleset) OSLThreshold() string {
	return "[" + fmtFloat(r.OSLWindow[0]) + ", " + fmtFloat(r.OSLWindow[1]) + "]"
}
func (r *Ruleset) SWEBenchThreshold() string { return ">= " + fmtFloat(r.SWEBenchMin) }

// AccuracyPass tells whether an inline accuracy score meets the ruleset.
func (r *Ruleset) AccuracyPass(score float64) bool { return score >= r.InlineAccuracyMin }

// OSLPass tells whether a per-turn OSL mean lies in the (inclusive) window.
func (r *Ruleset) OSLPass(mean float64) bool {
	return mean >= r.OSLWindow[0] && mean <= r.OSLWindow[1]
}

// SWEBenchPass tells whether a SWE-bench score meets the ruleset.
func (r *Ruleset) SWEBenchPass(score float64) bool { return score >= r.SWEBenchMin }

func fmtFloat(f float64) string {
	s := fmt.Sprintf("%.6f", f)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// Parse decodes and checks a ruleset file.
func Parse(data []byte, where string) (Ruleset, error) {
	var r Ruleset
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("parse ruleset %s: %w", where, err)
	}
	switch {
	case r.Name == "":
		return r, fmt.Errorf("ruleset %s: no name", where)
	case r.Source == "" || r.Date == "":
		return r, fmt.Errorf("ruleset %s: source and date are required", where)
	case r.InlineAccuracyMin < 0 || r.InlineAccuracyMin > 1:
		return r, fmt.Errorf("ruleset %s: inline_accuracy_min %v is not a fraction in [0, 1]", where, r.InlineAccuracyMin)
	case r.SWEBenchMin < 0 || r.SWEBenchMin > 1:
		return r, fmt.Errorf("ruleset %s: swebench_min %v is not a fraction in [0, 1]", where, r.SWEBenchMin)
	case r.OSLWindow[0] > r.OSLWindow[1] || r.OSLWindow[1] <= 0:
		return r, fmt.Errorf("ruleset %s: osl_window %v is not a window", where, r.OSLWindow)
	}
	switch r.Regions {
	case "", RegionsCMin, RegionsFixed32:
	default:
		return r, fmt.Errorf("ruleset %s: regions %q is not a region form (%v)", where, r.Regions, RegionForms())
	}
	if c := r.Curve; c.MinPoints < 1 || c.MaxPoints < c.MinPoints || c.DatasetSize < 1 || c.ConsistencyTolerance <= 0 || c.ConsistencyTolerance >= 1 {
		return r, fmt.Errorf("ruleset %s: curve needs min_points >= 1, max_points >= min_points, dataset_size >= 1 and consistency_tolerance in (0, 1); it has %+v", where, c)
	}
	if r.SWEBenchEvaluated == 0 {
		r.SWEBenchEvaluated = 200
	}
	if r.SWEBenchEvaluated < 0 {
		return r, fmt.Errorf("ruleset %s: swebench_evaluated %d is negative", where, r.SWEBenchEvaluated)
	}
	if t := r.Tokenizer; t != nil {
		for _, d := range []string{t.TokenizerSHA256, t.ChatTemplateSHA256} {
			if d != "" && !sha256Hex.MatchString(d) {
				return r, fmt.Errorf("ruleset %s: tokenizer digest %q is not a SHA-256 in hex", where, d)
			}
		}
		if t.Source == "" {
			return r, fmt.Errorf("ruleset %s: tokenizer: source is required (where the digests come from, or why they are unknown)", where)
		}
	}
	for k, v := range r.Published {
		if !strings.Contains(jsonFields, " "+k+" ") {
			return r, fmt.Errorf("ruleset %s: published: %q is not a field of a ruleset", where, k)
		}
		if !strings.HasPrefix(v, "published: ") && !strings.HasPrefix(v, "not published: ") {
			return r, fmt.Errorf("ruleset %s: published.%s: want \"published: WHERE\" or \"not published: WHY\", got %q", where, k, v)
		}
	}
	if err := r.checkDerivation(); err != nil {
		return r, fmt.Errorf("ruleset %s: %w", where, err)
	}
	for _, p := range r.ModelPatterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return r, fmt.Errorf("ruleset %s: model pattern %q: %w", where, p, err)
		}
		r.patterns = append(r.patterns, re)
	}
	return r, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// jsonFields are the JSON names of a ruleset's fields that Published may name,
// space-separated with a space either side.
const jsonFields = " model model_patterns model_fragments source date inline_accuracy_min osl_window swebench_min swebench_evaluated regions derivation tokenizer curve "

// All returns the embedded rulesets, ordered by date, then name.
func All() []Ruleset {
	entries, err := fs.ReadDir(rulesetFiles, ".")
	if err != nil {
		panic(err) // the embedded folder always exists
	}
	var out []Ruleset
	for _, e := range entries {
		data, err := rulesetFiles.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		r, err := Parse(data, "embedded "+e.Name())
		if err != nil {
			panic(err) // TestRulesets keeps the embedded files valid
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Date != out[j].Date {
			return out[i].Date < out[j].Date
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Load returns the embedded ruleset named nameOrFile, or reads a user ruleset
// file when nameOrFile is a path to one. "" means Default.
func Load(nameOrFile string) (Ruleset, error) {
	if nameOrFile == "" {
		nameOrFile = Default
	}
	for _, r := range All() {
		if r.Name == nameOrFile {
			return r, nil
		}
	}
	data, err := infile.ReadSmall(nameOrFile, infile.SmallFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Ruleset{}, fmt.Errorf("load ruleset %q: no embedded ruleset by that name (see `agentrace rulesets`) and no such file", nameOrFile)
		}
		return Ruleset{}, fmt.Errorf("load ruleset: %w", err)
	}
	r, err := Parse(data, fmt.Sprintf("%q", nameOrFile))
	if err != nil {
		return Ruleset{}, err
	}
	r.File = nameOrFile
	return r, nil
}

// JSON returns a ruleset in the file format (indented JSON), to start a
// user ruleset from.
func JSON(r Ruleset) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ForModel returns the newest embedded ruleset whose patterns match model,
// and false (with the default ruleset) when none does.
func ForModel(model string) (Ruleset, bool) {
	all := All()
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].MatchesModel(model) {
			return all[i], true
		}
	}
	r, _ := Load(Default)
	return r, false
}

// RegionForm is the ruleset's region form (DefaultRegionForm when it names none).
func (r *Ruleset) RegionForm() string {
	if r.Regions == "" {
		return DefaultRegionForm
	}
	return r.Regions
}

// Region forms: which rules version places a curve's points (Ruleset.Regions).
const (
	// RegionsCMin is the v1.0 form the submission checker of October 2026 runs
	// (models/regions.py compute_regions(c_max, c_min)): C_min is the curve's
	// lowest concurrency, clamped to 32 (a curve whose lowest point is above 32
	// still gets boundaries; its missing ultra-low point is reported on its own);
	// low latency 1..C_min, three log regions from C_min+1 to C_max, and a margin
	// C_max+1..ceil(1.10 C_max) that satisfies no region.
	RegionsCMin = "cmin-v1.0"
	// RegionsFixed32 is the v0.7 form (the rules text of v0.7 and the checker
	// before v1.0): low latency fixed at 1..32, 33..C_max split in three log
	// regions, the 10% margin folded into the high region.
	RegionsFixed32 = "fixed32-v0.7"
	// DefaultRegionForm is the form of rulesets that name none.
	DefaultRegionForm = RegionsCMin
)

// RegionForms lists the region forms, the default first.
func RegionForms() []string { return []string{RegionsCMin, RegionsFixed32} }
