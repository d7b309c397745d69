// Package refconfig reads and writes the reference client's benchmark configuration
// (the YAML of `inference-endpoint benchmark from-config --config FILE`), as its
// schema (src/inference_endpoint/config/schema.py) defines it: the same keys and
// nesting, the same defaults, every unknown key refused with its path, and
// ${VAR}, ${VAR:-default} and $VAR expanded in string values as the reference
// expands them ($$ for a literal $), once, in the text the file holds.
//
// Two generations of the schema are read: the reference's release of August 2026
// and its newest (settings.timeouts, runtime.max_issue_duration_ms). A file is of
// the generation its keys say (Generation); keys of both in one file are refused.
//
//	cfg, err := refconfig.Load(ctx, "qwen_agentic_benchmark.yaml") // read, expand, validate
//	data, err := refconfig.Marshal(cfg)                             // config.yaml of a run, in cfg's generation
//
// A file is read as agentrace reads every input (internal/infile: a regular file,
// at most MaxFileSize bytes, under the command's context), and its YAML aliases
// may expand it to at most MaxValues values.
//
// Which keys a replay honours, and how, is replay's business (replay.FromConfig);
// this package only knows the schema.
package refconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/official"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/redact"
	"go.yaml.in/yaml/v3"
)

// Config is BenchmarkConfig. Pointer fields are nil when the file leaves them
// out; Defaults fills the schema's defaults in.
type Config struct {
	Name              string         `yaml:"name"`
	Version           string         `yaml:"version"`
	Type              string         `yaml:"type"`
	SubmissionRef     *SubmissionRef `yaml:"submission_ref,omitempty"`
	BenchmarkMode     *string        `yaml:"benchmark_mode,omitempty"`
	ModelParams       ModelParams    `yaml:"model_params"`
	Datasets          []Dataset      `yaml:"datasets"`
	Settings          Settings       `yaml:"settings"`
	EndpointConfig    EndpointConfig `yaml:"endpoint_config"`
	ReportDir         *string        `yaml:"report_dir,omitempty"`
	Timeout           *float64       `yaml:"timeout,omitempty" gen:"august"`
	Verbose           bool           `yaml:"verbose"`
	EnableCPUAffinity *bool          `yaml:"enable_cpu_affinity,omitempty"`
	Audit             map[string]any `yaml:"audit,omitempty"`

	// Generation is the schema generation the file follows (Parse tells it
	// from its keys) and Marshal writes.
	Generation Generation `yaml:"-"`
	// secrets are the values of the file's secret keys (api_key, an auth
	// token in extras), after expansion.
	secrets []string
}

// Generation is a generation of the reference's config schema: its keys differ
// (struct fields tagged gen:"august" or gen:"newest" belong to one only).
type Generation string

// The generations read.
const (
	// GenerationAugust is the schema of the reference's release of 2026-08-21
	// (mlcommons/endpoints ea332753): runtime.min_duration_ms and
	// max_duration_ms, top-level timeout, settings.drain and
	// settings.service_ready_timeout_s.
	GenerationAugust Generation = "2026-08"
	// GenerationNewest is the schema of the reference's main line since
	// (0479710d and later): runtime.max_issue_duration_ms and
	// settings.timeouts in their place.
	GenerationNewest Generation = "newest"
)

// Secrets returns the values of the config's secret keys (endpoint_config.api_key,
// an extras key such as swebench_service_auth_token), as expanded: every one
// must reach the run's scrubber.
func (c *Config) Secrets() []string { return c.secrets }

// SubmissionRef is SubmissionReference.
type SubmissionRef struct {
	Model   string `yaml:"model"`
	Ruleset string `yaml:"ruleset"`
}

// ModelParams is the model_params block: the model's name and its generation
// parameters.
type ModelParams struct {
	Name              string   `yaml:"name"`
	Temperature       *float64 `yaml:"temperature,omitempty"`
	Seed              *Int     `yaml:"seed,omitempty"`
	TopK              *int     `yaml:"top_k,omitempty"`
	TopP              *float64 `yaml:"top_p,omitempty"`
	RepetitionPenalty *float64 `yaml:"repetition_penalty,omitempty"`
	PresencePenalty   *float64 `yaml:"presence_penalty,omitempty"`
	FrequencyPenalty  *float64 `yaml:"frequency_penalty,omitempty"`
	// ChatTemplateKwargs keeps the file's node, so that its keys stay in the
	// file's order (KwargsJSON).
	ChatTemplateKwargs yaml.Node      `yaml:"chat_template_kwargs,omitempty"`
	MaxNewTokens       *int           `yaml:"max_new_tokens,omitempty"`
	MinNewTokens       *int           `yaml:"min_new_tokens,omitempty"`
	SkipSpecialTokens  *bool          `yaml:"skip_special_tokens,omitempty"`
	OSLDistribution    map[string]any `yaml:"osl_distribution,omitempty"`
	Streaming          string         `yaml:"streaming,omitempty"`
	TokenizerName      *string        `yaml:"tokenizer_name,omitempty"`
}

// Dataset is one entry of datasets.
type Dataset struct {
	Name             string            `yaml:"name"`
	Type             string            `yaml:"type"`
	Path             *string           `yaml:"path,omitempty"`
	Format           *string           `yaml:"format,omitempty"`
	Samples          *int              `yaml:"samples,omitempty"`
	EvalMethod       *string           `yaml:"eval_method,omitempty"`
	Parser           map[string]string `yaml:"parser,omitempty"`
	GenerateParams   map[string]any    `yaml:"generate_params,omitempty"`
	AccuracyConfig   *AccuracyConfig   `yaml:"accuracy_config,omitempty"`
	AgenticInference *AgenticInference `yaml:"agentic_inference,omitempty"`
	// GenerationConfigOverride keeps the file's node (Effective merges it).
	GenerationConfigOverride yaml.Node `yaml:"generation_config_override,omitempty"`
}

// AccuracyConfig is a dataset's accuracy_config.
type AccuracyConfig struct {
	EvalMethod  *string        `yaml:"eval_method,omitempty"`
	GroundTruth *string        `yaml:"ground_truth,omitempty"`
	Extractor   *string        `yaml:"extractor,omitempty"`
	NumRepeats  *int           `yaml:"num_repeats,omitempty"`
	Extras      map[string]any `yaml:"extras,omitempty"`
}

// AgenticInference is a dataset's agentic_inference block.
type AgenticInference struct {
	TurnTimeoutS                   *float64 `yaml:"turn_timeout_s,omitempty"`
	EnableSalt                     bool     `yaml:"enable_salt"`
	InjectToolDelay                bool     `yaml:"inject_tool_delay"`
	RoutingHeaders                 []string `yaml:"routing_headers,omitempty"`
	NumTrajectoriesToIssue         *int     `yaml:"num_trajectories_to_issue,omitempty"`
	StopIssuingOnFirstUserComplete bool     `yaml:"stop_issuing_on_first_user_complete"`
}

// Settings is the settings block.
type Settings struct {
	Runtime              Runtime        `yaml:"runtime"`
	LoadPattern          LoadPattern    `yaml:"load_pattern"`
	Client               Client         `yaml:"client"`
	Drain                map[string]any `yaml:"drain,omitempty" gen:"august"`
	Timeouts             *Timeouts      `yaml:"timeouts,omitempty" gen:"newest"`
	Warmup               Warmup         `yaml:"warmup"`
	Profiling            Profiling      `yaml:"profiling"`
	EarlyStopping        EarlyStopping  `yaml:"early_stopping"`
	ServiceReadyTimeoutS *float64       `yaml:"service_ready_timeout_s,omitempty" gen:"august"`
}

// Timeouts is settings.timeouts of the newest schema: every wait and deadline,
// in seconds (null: none).
type Timeouts struct {
	RunTimeoutS                  *float64 `yaml:"run_timeout_s,omitempty"`
	EndpointResponseIdleTimeoutS *float64 `yaml:"endpoint_response_idle_timeout_s,omitempty"`
	InterruptedTeardownGraceS    *float64 `yaml:"interrupted_teardown_grace_s,omitempty"`
	ServiceReadyTimeoutS         *float64 `yaml:"service_ready_timeout_s,omitempty"`
	WarmupDrainTimeoutS          *float64 `yaml:"warmup_drain_timeout_s,omitempty"`
	PerformanceDrainTimeoutS     *float64 `yaml:"performance_drain_timeout_s,omitempty"`
	AccuracyDrainTimeoutS        *float64 `yaml:"accuracy_drain_timeout_s,omitempty"`
	MetricsDrainTimeoutS         *float64 `yaml:"metrics_drain_timeout_s,omitempty"`
}

// Runtime is settings.runtime. Durations accept the reference's suffixes (600s,
// 10m, 600000ms) as strings.
type Runtime struct {
	MinDurationMs        *Millis `yaml:"min_duration_ms,omitempty" gen:"august"`
	MaxDurationMs        *Millis `yaml:"max_duration_ms,omitempty" gen:"august"`
	MaxIssueDurationMs   *Millis `yaml:"max_issue_duration_ms,omitempty" gen:"newest"`
	NSamplesToIssue      *int    `yaml:"n_samples_to_issue,omitempty"`
	SchedulerRandomSeed  *Int    `yaml:"scheduler_random_seed,omitempty"`
	DataloaderRandomSeed *Int    `yaml:"dataloader_random_seed,omitempty"`
}

// LoadPattern is settings.load_pattern.
type LoadPattern struct {
	Type                       string   `yaml:"type"`
	TargetQPS                  *float64 `yaml:"target_qps,omitempty"`
	TargetConcurrency          *int     `yaml:"target_concurrency,omitempty"`
	UseLegacyLoadgenQPSMetrics *bool    `yaml:"use_legacy_loadgen_qps_metrics,omitempty"`
}

// Client is settings.client, the reference's HTTPClientConfig.
type Client struct {
	NumWorkers                  *int           `yaml:"num_workers,omitempty"`
	LogLevel                    *string        `yaml:"log_level,omitempty"`
	WarmupConnections           *int           `yaml:"warmup_connections,omitempty"`
	AutoWarmupBudgetFraction    *float64       `yaml:"auto_warmup_budget_fraction,omitempty"`
	MaxConcurrentWarmupConnects *int           `yaml:"max_concurrent_warmup_connects,omitempty"`
	MaxConnections              *int           `yaml:"max_connections,omitempty"`
	Transport                   map[string]any `yaml:"transport,omitempty"`
	StreamAllChunks             *bool          `yaml:"stream_all_chunks,omitempty"`
	WorkerInitializationTimeout *float64       `yaml:"worker_initialization_timeout,omitempty"`
	WorkerGracefulShutdownWait  *float64       `yaml:"worker_graceful_shutdown_wait,omitempty"`
	WorkerForceKillTimeout      *float64       `yaml:"worker_force_kill_timeout,omitempty"`
	Insecure                    *bool          `yaml:"insecure,omitempty"`
	MaxIdleTime                 *float64       `yaml:"max_idle_time,omitempty"`
	MinRequiredConnections      *int           `yaml:"min_required_connections,omitempty"`
	WorkerGCMode                *string        `yaml:"worker_gc_mode,omitempty"`
}

// Warmup is settings.warmup.
type Warmup struct {
	Enabled          bool `yaml:"enabled"`
	NRequests        *int `yaml:"n_requests,omitempty"`
	Salt             bool `yaml:"salt"`
	Drain            bool `yaml:"drain"`
	WarmupRandomSeed *Int `yaml:"warmup_random_seed,omitempty"`
}

// Profiling is settings.profiling.
type Profiling struct {
	Engine *string  `yaml:"engine,omitempty"`
	URLs   []string `yaml:"urls,omitempty"`
}

// EarlyStopping is settings.early_stopping.
type EarlyStopping struct {
	Enabled *bool `yaml:"enabled,omitempty"`
}

// EndpointConfig is endpoint_config. APIKey is a secret: Marshal writes it
// redacted.
type EndpointConfig struct {
	Endpoints []string `yaml:"endpoints"`
	APIKey    *string  `yaml:"api_key,omitempty"`
	APIType   string   `yaml:"api_type,omitempty"`
}

// Millis is a duration in milliseconds; in a file, an integer or a string with
// the suffix ms, s or m.
type Millis int64

// Int is an integer of any size in decimal, as Python's int holds a seed (the
// published seed sets are 64-bit unsigned).
type Int string

// MarshalYAML writes an Int as a YAML integer.
func (i Int) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: string(i)}, nil
}

// Big returns i as a big.Int.
func (i Int) Big() *big.Int {
	n, _ := new(big.Int).SetString(string(i), 10)
	return n
}

// Schema defaults (schema.py) that Defaults fills in.
const (
	DefaultMaxNewTokens         = 1024
	DefaultMinDurationMs        = 600000
	DefaultSeed                 = datasets.DefaultSeed
	DefaultTurnTimeoutS         = 86400.0
	DefaultWarmupConnections    = -1
	DefaultMaxConnections       = -1
	DefaultMaxIdleTime          = 4.0
	DefaultNumWorkers           = -1
	DefaultRoutingHeader        = "X-Session-ID"
	TypeOnline                  = "online"
	LoadPatternAgenticInference = "agentic_inference"
	DatasetPerformance          = "performance"
	DatasetAccuracy             = "accuracy"
	EvalSWEBench                = "swe_bench_scorer"
	EvalAgenticInline           = "agentic_inference_inline"
)

// Error is a problem with one key of a config file.
type Error struct {
	File string
	Line int
	Path string // dotted key path, e.g. settings.client.max_idle_time
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s line %d", e.File, e.Line)
	}
	if e.Path == "" {
		return fmt.Sprintf("config %s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("config %s: %s: %s", loc, e.Path, e.Msg)
}

// MaxFileSize is the largest config file read: a reference config is a few
// kilobytes.
const MaxFileSize = 1 << 20

// MaxValues is how many values (mappings, lists, scalars) a config may hold
// once its YAML aliases are expanded: an alias may name a node holding aliases,
// so that a kilobyte expands to billions (an alias bomb); a reference config
// holds about a hundred.
const MaxValues = 100_000

// MaxMillis is the longest duration in milliseconds a config may give: the
// longest a time.Duration holds (about 292 years).
const MaxMillis = math.MaxInt64 / int64(time.Millisecond)

// Load reads, expands and validates a config file, as agentrace reads its
// inputs: a regular file of at most MaxFileSize bytes, read under ctx.
func Load(ctx context.Context, path string) (*Config, error) {
	data, err := infile.ReadFile(ctx, path, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse parses a config's YAML, of the generation its keys say (the newest when
// none says); file names it in errors and lookup resolves environment variables.
func Parse(file string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	return parse(file, data, lookup, "")
}

// ParseAs parses a config's YAML as Parse does, refusing a key that the
// generation gen does not have: a run's config.yaml validates against the
// generation it was written for. A nil lookup expands nothing (a config.yaml
// holds values already expanded).
func ParseAs(file string, data []byte, lookup func(string) (string, bool), gen Generation) (*Config, error) {
	return parse(file, data, lookup, gen)
}

func parse(file string, data []byte, lookup func(string) (string, bool), gen Generation) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{File: file, Msg: "want a YAML mapping at the top"}
	}
	root := doc.Content[0]
	left := MaxValues
	if !countValues(root, &left) {
		return nil, &Error{File: file, Msg: fmt.Sprintf("more than %d values once its YAML aliases are expanded (a config holds about a hundred)", MaxValues)}
	}
	p := &parser{file: file, lookup: lookup, written: map[*yaml.Node]string{}, gen: gen, first: map[Generation]string{}}
	if err := p.walk(root, reflect.TypeOf(Config{}), ""); err != nil {
		return nil, err
	}
	var c Config
	if err := root.Decode(&c); err != nil {
		return nil, &Error{File: file, Msg: redact.Text(err.Error(), p.secrets...)}
	}
	c.secrets = p.secrets
	c.Generation = gen
	if gen == "" {
		a, n := p.first[GenerationAugust], p.first[GenerationNewest]
		switch {
		case a != "" && n != "":
			return nil, &Error{File: file, Path: n, Msg: fmt.Sprintf("a key of the reference's newest schema, where %s is of its August 2026 release: a config follows one (docs/config.md)", a)}
		case a != "":
			c.Generation = GenerationAugust
		default:
			c.Generation = GenerationNewest
		}
	}
	if err := c.validate(file); err != nil {
		return nil, err
	}
	return &c, nil
}

// countValues counts n's values, its aliases expanded, down from *left; false
// once there are more than it held.
func countValues(n *yaml.Node, left *int) bool {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if *left--; *left < 0 {
		return false
	}
	for _, c := range n.Content {
		if !countValues(c, left) {
			return false
		}
	}
	return true
}

// parser checks a node tree against the schema types, expanding environment
// variables in string scalars and coercing strings where the schema wants a
// number or a boolean (as pydantic's lax mode does).
type parser struct {
	file string
	// lookup resolves environment variables; nil when the values are
	// expanded already (a dataset's override merged over model_params).
	lookup func(string) (string, bool)
	// written holds each expanded node's text as the file wrote it: a node is
	// expanded once, however many aliases name it, and a message quotes what
	// the file says, never a variable's value.
	written map[*yaml.Node]string
	secrets []string
	// gen is the generation the file must follow ("": any one); first holds
	// the first key path of each generation seen.
	gen   Generation
	first map[Generation]string
}

var nodeType = reflect.TypeOf(yaml.Node{})

func (p *parser) errf(n *yaml.Node, path, format string, a ...any) error {
	return &Error{File: p.file, Line: n.Line, Path: path, Msg: fmt.Sprintf(format, a...)}
}

// got quotes a scalar as the file wrote it (before expansion), cut to a short
// excerpt.
func (p *parser) got(n *yaml.Node) string {
	v := n.Value
	if w, ok := p.written[n]; ok {
		v = w
	}
	if len(v) > 60 {
		v = strings.ToValidUTF8(v[:60], "") + "…"
	}
	return strconv.Quote(v)
}

func (p *parser) walk(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	switch {
	case t == nodeType, t.Kind() == reflect.Interface:
		return p.expandAll(n, path)
	case t == reflect.TypeOf(Millis(0)):
		return p.millis(n, path)
	case t == reflect.TypeOf(Int("")):
		return p.bigInt(n, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return p.errf(n, path, "want a mapping")
		}
		type field struct {
			t   reflect.Type
			gen Generation
		}
		fields := map[string]field{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			g := generationTag(f.Tag.Get("gen"))
			if p.gen != "" && g != "" && g != p.gen {
				continue
			}
			fields[name] = field{f.Type, g}
			names = append(names, name)
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kp := join(path, k.Value)
			f, ok := fields[k.Value]
			if !ok {
				return p.errf(k, kp, "unknown key%s (known here: %s)", p.genNote(), strings.Join(names, ", "))
			}
			if seen[k.Value] {
				return p.errf(k, kp, "given twice")
			}
			seen[k.Value] = true
			if f.gen != "" && p.first[f.gen] == "" {
				p.first[f.gen] = kp
			}
			if err := p.walk(v, f.t, kp); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return p.errf(n, path, "want a list")
		}
		for i, e := range n.Content {
			if err := p.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return p.errf(n, path, "want a mapping")
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := p.walk(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return p.errf(n, path, "want a string")
		}
		if err := p.expand(n, path); err != nil {
			return err
		}
		n.Tag = "!!str"
	case reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		if n.Kind != yaml.ScalarNode {
			return p.errf(n, path, "want a %s", kindName(t.Kind()))
		}
		if n.Tag == "!!str" {
			if err := p.expand(n, path); err != nil {
				return err
			}
			n.Tag = "" // resolve "8" or "true" as the schema's type, as pydantic's lax mode
			n.Style = 0
		}
		return p.scalar(n, t.Kind(), path)
	}
	return nil
}

// generationTag reads a field's gen tag.
func generationTag(s string) Generation {
	switch s {
	case "august":
		return GenerationAugust
	case "newest":
		return GenerationNewest
	}
	return ""
}

// genNote says which generation an unknown key was checked against.
func (p *parser) genNote() string {
	switch p.gen {
	case GenerationAugust:
		return " in the reference's August 2026 schema"
	case GenerationNewest:
		return " in the reference's newest schema"
	}
	return ""
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "boolean"
	case reflect.Float64:
		return "number"
	}
	return "integer"
}

// scalar checks a scalar's value against the schema's type and gives the node
// the tag yaml.v3 decodes it by.
func (p *parser) scalar(n *yaml.Node, k reflect.Kind, path string) error {
	v := strings.TrimSpace(n.Value)
	switch k {
	case reflect.Bool:
		switch strings.ToLower(v) {
		case "true", "yes", "on", "1":
			n.Value, n.Tag = "true", "!!bool"
		case "false", "no", "off", "0":
			n.Value, n.Tag = "false", "!!bool"
		default:
			return p.errf(n, path, "want a boolean, got %s", p.got(n))
		}
	case reflect.Float64:
		f, err := strconv.ParseFloat(strings.ReplaceAll(v, "_", ""), 64)
		if err != nil || n.Tag == "!!bool" {
			return p.errf(n, path, "want a number, got %s", p.got(n))
		}
		n.Value, n.Tag = strconv.FormatFloat(f, 'g', -1, 64), "!!float"
	default:
		if n.Tag == "!!bool" {
			return p.errf(n, path, "want an integer, got %s", p.got(n))
		}
		if i, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64); err == nil {
			n.Value, n.Tag = strconv.FormatInt(i, 10), "!!int"
			return nil
		}
		// An integral float (8.0) is an integer, as pydantic takes it.
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f != float64(int64(f)) {
			return p.errf(n, path, "want an integer, got %s", p.got(n))
		}
		n.Value, n.Tag = strconv.FormatInt(int64(f), 10), "!!int"
	}
	return nil
}

// bigInt reads an integer of any size (an integral float or a numeric string
// too, as pydantic's lax mode takes them).
func (p *parser) bigInt(n *yaml.Node, path string) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!bool" {
		return p.errf(n, path, "want an integer")
	}
	if n.Tag == "!!str" {
		if err := p.expand(n, path); err != nil {
			return err
		}
	}
	v := strings.ReplaceAll(strings.TrimSpace(n.Value), "_", "")
	i, ok := new(big.Int).SetString(v, 10)
	if !ok {
		f, _, err := big.ParseFloat(v, 10, 256, big.ToNearestEven)
		if err != nil || !f.IsInt() {
			return p.errf(n, path, "want an integer, got %s", p.got(n))
		}
		i, _ = f.Int(nil)
	}
	n.Value, n.Tag, n.Style = i.String(), "!!str", 0
	return nil
}

// millis reads a duration in milliseconds: an integer, or a string ending in ms,
// m or s (schema.py RuntimeConfig._parse_duration_suffix); one that is negative
// or longer than MaxMillis is refused (a time.Duration would wrap round).
func (p *parser) millis(n *yaml.Node, path string) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!bool" {
		return p.errf(n, path, "want milliseconds")
	}
	if n.Tag == "!!str" {
		if err := p.expand(n, path); err != nil {
			return err
		}
	}
	v := strings.ReplaceAll(strings.TrimSpace(n.Value), "_", "")
	unit := 1.0
	switch {
	case n.Tag != "!!str":
	case strings.HasSuffix(v, "ms"):
		v = v[:len(v)-2]
	case strings.HasSuffix(v, "m"):
		v, unit = v[:len(v)-1], 60000
	case strings.HasSuffix(v, "s"):
		v, unit = v[:len(v)-1], 1000
	}
	var ms float64
	if i, err := strconv.ParseInt(v, 10, 64); err == nil && unit == 1 {
		if i < 0 {
			return p.errf(n, path, "%d ms: must not be negative", i)
		}
		if i > MaxMillis {
			return p.errf(n, path, "%d ms: out of range (at most %d ms, about 292 years)", i, MaxMillis)
		}
		n.Value, n.Tag, n.Style = strconv.FormatInt(i, 10), "!!int", 0
		return nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || (unit == 1 && f != math.Trunc(f)) {
		return p.errf(n, path, "want milliseconds or a duration like 600s or 10m, got %s", p.got(n))
	}
	ms = math.Trunc(f * unit)
	switch {
	case ms < 0:
		return p.errf(n, path, "%s: must not be negative", p.got(n))
	case ms > float64(MaxMillis):
		return p.errf(n, path, "%s: out of range (at most %d ms, about 292 years)", p.got(n), MaxMillis)
	}
	n.Value, n.Tag, n.Style = strconv.FormatInt(int64(ms), 10), "!!int", 0
	return nil
}

// expandAll expands environment variables in every string scalar below n (a
// free-form value: extras, chat_template_kwargs), as resolve_env_vars walks the
// whole tree.
func (p *parser) expandAll(n *yaml.Node, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!str" {
			return p.expand(n, path)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := p.expandAll(n.Content[i+1], join(path, n.Content[i].Value)); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			if err := p.expandAll(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// expand expands environment variables in a string scalar, once: a node that
// several aliases name is expanded at its first visit, and the text it holds
// then is never expanded again. The value of a secret key is kept for the
// scrubber (Config.Secrets).
func (p *parser) expand(n *yaml.Node, path string) error {
	if _, done := p.written[n]; done {
		return nil
	}
	w := n.Value
	if p.lookup != nil {
		v, err := Expand(w, p.lookup)
		if err != nil {
			return p.errf(n, path, "%v", err)
		}
		n.Value = v
	}
	p.written[n] = w
	if secretKey(lastKey(path)) && n.Value != "" {
		p.secrets = append(p.secrets, n.Value)
	}
	return nil
}

// lastKey is the last key of a dotted path (an index after it dropped).
func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		path = path[i+1:]
	}
	if i := strings.IndexByte(path, '['); i >= 0 {
		path = path[:i]
	}
	return path
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Expand resolves ${VAR}, ${VAR:-default} and $VAR in s as the reference's
// resolve_env_var_string does: a reference right after a $ is left alone, an
// unset variable without a default is an error, and every $$ of the result
// becomes $.
func Expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' || (i > 0 && s[i-1] == '$') {
			b.WriteByte(s[i])
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			name, n := identAt(s, i+2)
			if n > 0 {
				j := i + 2 + n
				if j < len(s) && s[j] == '}' {
					v, ok := lookup(name)
					if !ok {
						return "", fmt.Errorf("environment variable ${%s} is not set and has no default", name)
					}
					b.WriteString(v)
					i = j + 1
					continue
				}
				if strings.HasPrefix(s[j:], ":-") {
					if end := strings.IndexByte(s[j+2:], '}'); end >= 0 {
						def := s[j+2 : j+2+end]
						if v, ok := lookup(name); ok {
							b.WriteString(v)
						} else {
							b.WriteString(def)
						}
						i = j + 2 + end + 1
						continue
					}
				}
			}
		} else if name, n := identAt(s, i+1); n > 0 {
			v, ok := lookup(name)
			if !ok {
				return "", fmt.Errorf("environment variable $%s is not set", name)
			}
			b.WriteString(v)
			i += 1 + n
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return strings.ReplaceAll(b.String(), "$$", "$"), nil
}

// identAt returns the identifier ([A-Za-z_]\w*, \w in Python's Unicode sense)
// starting at s[i] and its length in bytes (\w as str.isalnum() or _).
func identAt(s string, i int) (string, int) {
	j := i
	for j < len(s) {
		r, size := rune(s[j]), 1
		if r >= 0x80 {
			r, size = decodeRune(s[j:])
		}
		first := j == i
		if !(r == '_' || (r < 0x80 && ((r|0x20) >= 'a' && (r|0x20) <= 'z')) || (!first && (unicode.IsLetter(r) || unicode.IsNumber(r)))) {
			break
		}
		j += size
	}
	return s[i:j], j - i
}

func decodeRune(s string) (rune, int) {
	for _, r := range s {
		return r, len(string(r))
	}
	return 0, 1
}

// validate checks what the schema's validators check and that matters here.
func (c *Config) validate(file string) error {
	bad := func(path, format string, a ...any) error {
		return &Error{File: file, Path: path, Msg: fmt.Sprintf(format, a...)}
	}
	switch c.Type {
	case "offline", "online", "eval", "submission":
	case "":
		return bad("type", "missing (offline, online, eval or submission)")
	default:
		return bad("type", "%q: want offline, online, eval or submission", c.Type)
	}
	if c.ModelParams.Name == "" && (c.SubmissionRef == nil || c.SubmissionRef.Model == "") {
		return bad("model_params.name", "missing")
	}
	switch c.ModelParams.Streaming {
	case "", "auto", "on", "off":
	default:
		return bad("model_params.streaming", "%q: want auto, on or off", c.ModelParams.Streaming)
	}
	if k := c.ModelParams.ChatTemplateKwargs; k.Kind != 0 && k.Kind != yaml.MappingNode && k.Tag != "!!null" {
		return bad("model_params.chat_template_kwargs", "want a mapping")
	}
	if len(c.EndpointConfig.Endpoints) == 0 {
		return bad("endpoint_config.endpoints", "missing: at least one endpoint URL")
	}
	for i, u := range c.EndpointConfig.Endpoints {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return bad(fmt.Sprintf("endpoint_config.endpoints[%d]", i), "endpoint URL must include scheme (http:// or https://)")
		}
	}
	seen := map[string]bool{}
	for i, d := range c.Datasets {
		p := fmt.Sprintf("datasets[%d]", i)
		switch d.Type {
		case "", DatasetPerformance, DatasetAccuracy:
		default:
			return bad(p+".type", "%q: want performance or accuracy", d.Type)
		}
		k := d.DisplayName() + "/" + d.TypeOrDefault()
		if seen[k] {
			return bad(p, "duplicate dataset name %q (%s)", d.DisplayName(), d.TypeOrDefault())
		}
		seen[k] = true
	}
	rt := c.Settings.Runtime
	if rt.MaxDurationMs != nil && *rt.MaxDurationMs != 0 && *rt.MaxDurationMs < c.MinDurationMs() {
		return bad("settings.runtime.max_duration_ms", "%d must be >= min_duration_ms (%d)", *rt.MaxDurationMs, c.MinDurationMs())
	}
	if rt.MaxIssueDurationMs != nil && *rt.MaxIssueDurationMs <= 0 {
		return bad("settings.runtime.max_issue_duration_ms", "must be positive (no cap: leave it out, or null)")
	}
	if t := c.Settings.Timeouts; t != nil {
		for _, f := range []struct {
			name string
			v    *float64
			zero bool // 0 allowed
		}{
			{"run_timeout_s", t.RunTimeoutS, false}, {"endpoint_response_idle_timeout_s", t.EndpointResponseIdleTimeoutS, false},
			{"interrupted_teardown_grace_s", t.InterruptedTeardownGraceS, false}, {"service_ready_timeout_s", t.ServiceReadyTimeoutS, true},
			{"warmup_drain_timeout_s", t.WarmupDrainTimeoutS, false}, {"performance_drain_timeout_s", t.PerformanceDrainTimeoutS, false},
			{"accuracy_drain_timeout_s", t.AccuracyDrainTimeoutS, false}, {"metrics_drain_timeout_s", t.MetricsDrainTimeoutS, false},
		} {
			if f.v != nil && (math.IsNaN(*f.v) || *f.v < 0 || (*f.v == 0 && !f.zero)) {
				return bad("settings.timeouts."+f.name, "%v: must be positive (none: leave it out, or null)", *f.v)
			}
		}
	}
	if c.SubmissionRef != nil {
		rs, err := official.LookupRuleset(c.SubmissionRef.Ruleset)
		if err != nil {
			return bad("submission_ref.ruleset", "%v", err)
		}
		// Binding a ruleset pins its seed set, over the file's seeds, as the
		// reference's _apply_ruleset_seed_overrides does.
		scheduler, sampleIndex := Int(rs.SchedulerRNG), Int(rs.SampleIndexRNG)
		c.Settings.Runtime.SchedulerRandomSeed = &scheduler
		c.Settings.Runtime.DataloaderRandomSeed = &sampleIndex
		warmup := sampleIndex
		c.Settings.Warmup.WarmupRandomSeed = &warmup
	}
	return nil
}

// identityKeys are the model_params keys a dataset may not override
// (schema.py _METRICS_DECOUPLED_OVERRIDE_KEYS).
var identityKeys = map[string]bool{"name": true, "streaming": true, "tokenizer_name": true}

// HasOverride tells whether the dataset sets generation_config_override.
func (d *Dataset) HasOverride() bool {
	n := d.GenerationConfigOverride
	return n.Kind != 0 && n.Tag != "!!null"
}

// Effective returns model_params with the dataset's generation_config_override
// merged over them, as schema.py's effective_generation_config merges it:
// nested mappings (chat_template_kwargs) deep-merged, the rest replaced, the
// result validated as model_params; identity keys (name, streaming,
// tokenizer_name) and unknown keys refused. path names the dataset in errors
// (datasets[0]).
func (d *Dataset) Effective(base ModelParams, file, path string) (ModelParams, error) {
	if !d.HasOverride() {
		return base, nil
	}
	bad := func(n *yaml.Node, p, format string, a ...any) error {
		return &Error{File: file, Line: n.Line, Path: p, Msg: fmt.Sprintf(format, a...)}
	}
	ov := &d.GenerationConfigOverride
	op := path + ".generation_config_override"
	if ov.Kind != yaml.MappingNode {
		return base, bad(ov, op, "want a mapping")
	}
	for i := 0; i+1 < len(ov.Content); i += 2 {
		if k := ov.Content[i]; identityKeys[k.Value] {
			return base, bad(k, op+"."+k.Value, "not honoured per dataset (it drives the run's single tokenizer and metrics): set it on the top-level model_params")
		}
	}
	var merged yaml.Node
	if err := merged.Encode(base); err != nil {
		return base, err
	}
	mergeNode(&merged, ov)
	p := &parser{file: file, written: map[*yaml.Node]string{}, first: map[Generation]string{}}
	if err := p.walk(&merged, reflect.TypeOf(ModelParams{}), op); err != nil {
		return base, err
	}
	var out ModelParams
	if err := merged.Decode(&out); err != nil {
		return base, bad(ov, op, "%v", err)
	}
	return out, nil
}

// mergeNode merges mapping src into mapping dst: a key whose values are both
// mappings is merged, any other replaced (schema.py _deep_merge).
func mergeNode(dst, src *yaml.Node) {
	for i := 0; i+1 < len(src.Content); i += 2 {
		k, v := src.Content[i], src.Content[i+1]
		found := false
		for j := 0; j+1 < len(dst.Content); j += 2 {
			if dst.Content[j].Value == k.Value {
				if dv := dst.Content[j+1]; dv.Kind == yaml.MappingNode && v.Kind == yaml.MappingNode {
					mergeNode(dv, v)
				} else {
					dst.Content[j+1] = v
				}
				found = true
				break
			}
		}
		if !found {
			dst.Content = append(dst.Content, k, v)
		}
	}
}

// TypeOrDefault is the dataset's type, performance when unset.
func (d *Dataset) TypeOrDefault() string {
	if d.Type == "" {
		return DatasetPerformance
	}
	return d.Type
}

// DisplayName is the dataset's name, else its path's stem (as the schema
// derives it).
func (d *Dataset) DisplayName() string {
	if d.Name != "" || d.Path == nil {
		return d.Name
	}
	base := *d.Path
	if i := strings.LastIndexAny(base, `/`); i >= 0 {
		base = base[i+1:]
	}
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	return base
}

// Scorer is the dataset's accuracy_config.eval_method, "" when none.
func (d *Dataset) Scorer() string {
	if d.AccuracyConfig == nil || d.AccuracyConfig.EvalMethod == nil {
		return ""
	}
	return *d.AccuracyConfig.EvalMethod
}

// MinDurationMs is settings.runtime.min_duration_ms or its default.
func (c *Config) MinDurationMs() Millis {
	if c.Settings.Runtime.MinDurationMs != nil {
		return *c.Settings.Runtime.MinDurationMs
	}
	return DefaultMinDurationMs
}

// KwargsJSON returns model_params.chat_template_kwargs as compact JSON, keys in
// the file's order ("" when unset).
func (m *ModelParams) KwargsJSON() (string, map[string]any, error) {
	n := &m.ChatTemplateKwargs
	if n.Kind == 0 || n.Tag == "!!null" {
		return "", nil, nil
	}
	var b bytes.Buffer
	left := MaxValues
	if err := nodeJSON(&b, n, &left); err != nil {
		return "", nil, fmt.Errorf("model_params.chat_template_kwargs: %w", err)
	}
	var kw map[string]any
	if err := n.Decode(&kw); err != nil {
		return "", nil, fmt.Errorf("model_params.chat_template_kwargs: %w", err)
	}
	return b.String(), kw, nil
}

// nodeJSON writes a YAML value as compact JSON, mappings in their order, floats
// as Python's repr writes them; its aliases expanded, it may hold at most *left
// values.
func nodeJSON(b *bytes.Buffer, n *yaml.Node, left *int) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if *left--; *left < 0 {
		return fmt.Errorf("more than %d values once its YAML aliases are expanded", MaxValues)
	}
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(jsontext.AppendString(nil, n.Content[i].Value))
			b.WriteByte(':')
			if err := nodeJSON(b, n.Content[i+1], left); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, e := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := nodeJSON(b, e, left); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		switch v := v.(type) {
		case nil:
			b.WriteString("null")
		case bool:
			b.WriteString(strconv.FormatBool(v))
		case int:
			b.WriteString(strconv.Itoa(v))
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case uint64:
			b.WriteString(strconv.FormatUint(v, 10))
		case float64:
			b.Write(jsontext.AppendPyFloat(nil, v))
		case string:
			b.Write(jsontext.AppendString(nil, v))
		default:
			b.Write(jsontext.AppendString(nil, n.Value))
		}
	default:
		return errors.New("unsupported YAML value")
	}
	return nil
}

// Marshal writes c as YAML in the schema's key order, the keys of its
// generation only (the newest when c.Generation is unset), with every secret
// replaced by redact.Mask: the api_key, URL user information and secret query
// values, and any value whose key looks secret (an auth token in extras), as
// the reference redacts the config.yaml it writes.
func Marshal(c *Config) ([]byte, error) {
	c = c.forGeneration()
	var doc yaml.Node
	if err := doc.Encode(c); err != nil {
		return nil, err
	}
	floats(reflect.ValueOf(c), &doc)
	var secrets []string
	for _, v := range c.secrets {
		if len(v) >= redact.MinSecret {
			secrets = append(secrets, v)
		}
	}
	scrub(&doc, secrets)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// forGeneration returns a copy of c without the keys its generation does not
// have (the newest when unset).
func (c *Config) forGeneration() *Config {
	v := *c
	switch v.Generation {
	case GenerationAugust:
		v.Settings.Timeouts = nil
		v.Settings.Runtime.MaxIssueDurationMs = nil
	default:
		v.Timeout, v.Settings.Drain, v.Settings.ServiceReadyTimeoutS = nil, nil, nil
		v.Settings.Runtime.MinDurationMs, v.Settings.Runtime.MaxDurationMs = nil, nil
	}
	return &v
}

// floats writes the float values of v, encoded as n, as Python writes them
// (1.0, not yaml.v3's 1), so that they read back as floats.
func floats(v reflect.Value, n *yaml.Node) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Float64:
		if n.Kind == yaml.ScalarNode {
			n.Tag, n.Value = "!!float", string(jsontext.AppendPyFloat(nil, v.Float()))
		}
	case reflect.Struct:
		if v.Type() == nodeType || n.Kind != yaml.MappingNode {
			return
		}
		t := v.Type()
		for i := 0; i+1 < len(n.Content); i += 2 {
			for f := 0; f < t.NumField(); f++ {
				if name, _, _ := strings.Cut(t.Field(f).Tag.Get("yaml"), ","); name == n.Content[i].Value {
					floats(v.Field(f), n.Content[i+1])
				}
			}
		}
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode {
			for i := 0; i < v.Len() && i < len(n.Content); i++ {
				floats(v.Index(i), n.Content[i])
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode && v.Type().Key().Kind() == reflect.String {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if e := v.MapIndex(reflect.ValueOf(n.Content[i].Value).Convert(v.Type().Key())); e.IsValid() {
					floats(e, n.Content[i+1])
				}
			}
		}
	}
}

// scrub redacts secrets in an encoded config tree: the values of secret keys,
// URL user information, and the secrets given wherever they appear (a secret
// key's value that an alias put under another key).
func scrub(n *yaml.Node, secrets []string) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			scrub(c, secrets)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if secretKey(k.Value) && !(v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
				*v = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: redact.Mask}
				continue
			}
			scrub(v, secrets)
		}
	case yaml.ScalarNode:
		if n.Tag != "!!str" {
			break
		}
		n.Value = redact.Text(n.Value, secrets...)
		if strings.Contains(n.Value, "://") {
			n.Value = redact.URL(n.Value)
		}
	}
}

// secretKey tells whether a config key holds a secret, as the reference's
// _is_secret_field_name tells.
func secretKey(k string) bool {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(k)), "-", "_")
	switch n {
	case "api_key", "access_token", "authorization", "auth_token", "password", "token":
		return true
	}
	return strings.HasSuffix(n, "_key") || strings.HasSuffix(n, "_token") || strings.HasSuffix(n, "_password") ||
		strings.Contains(n, "secret")
}

// SetKwargsJSON sets chat_template_kwargs to a JSON object, its keys in their
// order, in block style; "" (or JSON that does not parse) unsets it.
func (m *ModelParams) SetKwargsJSON(js []byte) {
	m.ChatTemplateKwargs = yaml.Node{}
	var doc yaml.Node
	if len(js) == 0 || yaml.Unmarshal(js, &doc) != nil || len(doc.Content) != 1 {
		return
	}
	n := doc.Content[0]
	var block func(*yaml.Node)
	block = func(n *yaml.Node) {
		n.Style = 0
		for _, c := range n.Content {
			block(c)
		}
	}
	block(n)
	m.ChatTemplateKwargs = *n
}
