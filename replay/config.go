package replay

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/redact"
	"github.com/agentrace/agentrace/replay/refconfig"
	"github.com/agentrace/agentrace/schemas"
)

// ConfigRun is what FromConfig makes of a reference config.
type ConfigRun struct {
	Options Options
	// Perf is the performance dataset's entry; Accuracy the accuracy datasets'.
	Perf     *refconfig.Dataset
	Accuracy []refconfig.Dataset
}

// FromConfig turns a reference config into replay options, as the reference's
// from-config would run it: the schema's defaults apply (salting and delays off
// unless the dataset's agentic_inference turns them on), model_params become
// the requests' sampling settings, and settings.client the HTTP client's. What
// agentrace cannot honour is refused naming its key; what has no effect on an
// agentrace run (worker processes, logging, drain timeouts) is listed in
// Options.ConfigNotes. The accuracy datasets are returned for the caller to run
// or not (replay runs the performance one only). Out is report_dir.
func FromConfig(c *refconfig.Config, file string) (*ConfigRun, error) {
	cr := &configReader{c: c, file: file}
	if err := cr.checkLoad(); err != nil {
		return nil, err
	}
	r, perfPath, err := cr.datasets()
	if err != nil {
		return nil, err
	}
	mp, err := r.Perf.Effective(c.ModelParams, file, perfPath)
	if err != nil {
		return nil, err
	}
	if err := cr.checkUnhonoured(&mp); err != nil {
		return nil, err
	}
	o, err := cr.options(r.Perf, &mp)
	if err != nil {
		return nil, err
	}
	if err := cr.client(&o); err != nil {
		return nil, err
	}
	if c.ReportDir != nil {
		o.Out = *c.ReportDir
	}
	cr.noteIneffective(&o, &mp)
	o.ConfigNotes = cr.notes
	r.Options = o
	return r, nil
}

// configReader reads one reference config (c, from file) into replay options,
// gathering the notes on what has no effect on an agentrace run.
type configReader struct {
	c     *refconfig.Config
	file  string
	notes []string
}

// bad is the error of the config's key path.
func (cr *configReader) bad(path, format string, a ...any) error {
	return &refconfig.Error{File: cr.file, Path: path, Msg: fmt.Sprintf(format, a...)}
}

func (cr *configReader) note(format string, a ...any) {
	cr.notes = append(cr.notes, fmt.Sprintf(format, a...))
}

// checkLoad refuses a config that is not an online agentic_inference run with a
// positive concurrency against the OpenAI API.
func (cr *configReader) checkLoad() error {
	c, bad := cr.c, cr.bad
	mode := c.Type
	if mode == "submission" {
		if c.BenchmarkMode == nil {
			return bad("benchmark_mode", "a submission config must set it (online)")
		}
		mode = *c.BenchmarkMode
	}
	if mode != refconfig.TypeOnline {
		return bad("type", "%q: agentrace replays agentic_inference runs, which are online", mode)
	}
	if t := c.EndpointConfig.APIType; t != "" && t != "openai" {
		return bad("endpoint_config.api_type", "%q: agentrace speaks the OpenAI chat-completions API (openai) only", t)
	}
	lp := c.Settings.LoadPattern
	if lp.Type != refconfig.LoadPatternAgenticInference {
		return bad("settings.load_pattern.type", "%q: agentrace replays agentic_inference only", lp.Type)
	}
	if lp.TargetQPS != nil {
		return bad("settings.load_pattern.target_qps", "not used by agentic_inference: remove it")
	}
	if lp.TargetConcurrency == nil || *lp.TargetConcurrency <= 0 {
		return bad("settings.load_pattern.target_concurrency", "agentic inference requires a positive concurrency")
	}
	if *lp.TargetConcurrency > MaxConcurrency {
		return bad("settings.load_pattern.target_concurrency", "%d: at most %d (as any concurrency)", *lp.TargetConcurrency, MaxConcurrency)
	}
	return nil
}

// datasets finds the one performance dataset (and its key path) and the
// accuracy datasets, refusing what agentrace does not honour in them.
func (cr *configReader) datasets() (*ConfigRun, string, error) {
	c, bad := cr.c, cr.bad
	r := &ConfigRun{}
	perfPath := ""
	for i := range c.Datasets {
		d := &c.Datasets[i]
		if d.TypeOrDefault() == refconfig.DatasetAccuracy {
			if d.AgenticInference != nil {
				return nil, "", bad(fmt.Sprintf("datasets[%d].agentic_inference", i), "only a performance dataset may have it")
			}
			r.Accuracy = append(r.Accuracy, *d)
			continue
		}
		if r.Perf != nil {
			return nil, "", bad(fmt.Sprintf("datasets[%d]", i), "a second performance dataset: agentrace (as the reference) runs one")
		}
		r.Perf = d
		p := fmt.Sprintf("datasets[%d]", i)
		perfPath = p
		switch {
		case d.Path == nil || *d.Path == "":
			return nil, "", bad(p+".path", "missing")
		case d.AgenticInference == nil:
			return nil, "", bad(p+".agentic_inference", "missing: load_pattern agentic_inference needs it")
		case d.Format != nil:
			return nil, "", bad(p+".format", "not honoured: agentrace reads the agentic JSONL (or its dataset folder)")
		case d.Samples != nil:
			return nil, "", bad(p+".samples", "not honoured for an agentic dataset: use agentic_inference.num_trajectories_to_issue")
		case d.EvalMethod != nil:
			return nil, "", bad(p+".eval_method", "not honoured for an agentic dataset")
		case d.Parser != nil:
			return nil, "", bad(p+".parser", "not honoured for an agentic dataset")
		case d.GenerateParams != nil:
			return nil, "", bad(p+".generate_params", "not honoured for an agentic dataset")
		}
		if m := d.Scorer(); m != "" && m != refconfig.EvalAgenticInline {
			return nil, "", bad(p+".accuracy_config.eval_method", "%q: the performance dataset is scored inline (agentic_inference_inline, agentrace score)", m)
		}
		if a := d.AccuracyConfig; a != nil && a.NumRepeats != nil && *a.NumRepeats != 1 {
			return nil, "", bad(p+".accuracy_config.num_repeats", "%d: not honoured for the performance dataset", *a.NumRepeats)
		}
	}
	if r.Perf == nil {
		return nil, "", bad("datasets", "no performance dataset with agentic_inference")
	}
	return r, perfPath, nil
}

// checkUnhonoured refuses the model parameters and settings agentrace cannot
// honour, naming each key.
func (cr *configReader) checkUnhonoured(mp *refconfig.ModelParams) error {
	c, bad := cr.c, cr.bad
	switch {
	case mp.MinNewTokens != nil && *mp.MinNewTokens != 1:
		return bad("model_params.min_new_tokens", "requires endpoint_config.api_type openai_completions, which agentic inference does not support")
	case mp.SkipSpecialTokens != nil && !*mp.SkipSpecialTokens:
		return bad("model_params.skip_special_tokens", "requires endpoint_config.api_type openai_completions, which agentic inference does not support")
	case mp.OSLDistribution != nil:
		return bad("model_params.osl_distribution", "not honoured: an agentic turn's output length is the server's")
	}
	if c.Settings.Runtime.NSamplesToIssue != nil {
		return bad("settings.runtime.n_samples_to_issue", "not supported for agentic inference runs: use datasets[].agentic_inference.num_trajectories_to_issue")
	}
	if c.Settings.Warmup.Enabled {
		return bad("settings.warmup.enabled", "no warm-up phase for an agentic run: the reference's warm-up phase takes the agentic_inference load pattern, which its create_load_strategy refuses, so such a config fails there too; warm the server with a first replay into a scratch folder")
	}
	if c.Settings.Profiling.Engine != nil {
		return bad("settings.profiling.engine", "agentrace does not drive a server profiler")
	}
	if c.Audit != nil {
		return bad("audit", "agentrace does not run the output-caching audit")
	}
	if cl := c.Settings.Client; cl.Insecure != nil && *cl.Insecure {
		return bad("settings.client.insecure", "agentrace always verifies TLS certificates")
	}
	return nil
}

// options makes the run's options from the endpoint, the load pattern, the
// performance dataset's agentic_inference, the runtime and the model parameters,
// the schema's defaults applying.
func (cr *configReader) options(perf *refconfig.Dataset, mp *refconfig.ModelParams) (Options, error) {
	c, bad := cr.c, cr.bad
	rt := c.Settings.Runtime
	ai := perf.AgenticInference
	o := Options{
		Dataset:                *perf.Path,
		Endpoint:               c.EndpointConfig.Endpoints[0],
		Endpoints:              append([]string(nil), c.EndpointConfig.Endpoints[1:]...),
		Model:                  mp.Name,
		Concurrency:            *c.Settings.LoadPattern.TargetConcurrency,
		NoSalt:                 !ai.EnableSalt,
		NoDelays:               !ai.InjectToolDelay,
		StopIssuingAtWindowEnd: ai.StopIssuingOnFirstUserComplete,
		TurnTimeout:            time.Duration(refconfig.DefaultTurnTimeoutS * float64(time.Second)),
		RoutingHeaders:         []string{refconfig.DefaultRoutingHeader},
		NoStream:               mp.Streaming == "off",
		IdleConnTimeout:        time.Duration(refconfig.DefaultMaxIdleTime * float64(time.Second)),
		Config:                 c,
	}
	if o.Model == "" && c.SubmissionRef != nil {
		o.Model = c.SubmissionRef.Model
	}
	var err error
	if ai.TurnTimeoutS != nil {
		if o.TurnTimeout, err = cr.seconds("datasets[].agentic_inference.turn_timeout_s", *ai.TurnTimeoutS, false); err != nil {
			return o, err
		}
	}
	if ai.RoutingHeaders != nil {
		o.RoutingHeaders = ai.RoutingHeaders
	}
	if ai.NumTrajectoriesToIssue != nil {
		if *ai.NumTrajectoriesToIssue <= 0 {
			return o, bad("datasets[].agentic_inference.num_trajectories_to_issue", "must be positive")
		}
		o.Trajectories = *ai.NumTrajectoriesToIssue
	}
	// Millis are at most refconfig.MaxMillis: in a time.Duration's range.
	if rt.MaxDurationMs != nil {
		o.MaxDuration = time.Duration(*rt.MaxDurationMs) * time.Millisecond
	}
	if rt.MaxIssueDurationMs != nil {
		o.MaxDuration = time.Duration(*rt.MaxIssueDurationMs) * time.Millisecond
	}
	if c.Timeout != nil && *c.Timeout > 0 {
		if o.Timeout, err = cr.seconds("timeout", *c.Timeout, true); err != nil {
			return o, err
		}
	}
	if t := c.Settings.Timeouts; t != nil {
		if t.RunTimeoutS != nil {
			if o.Timeout, err = cr.seconds("settings.timeouts.run_timeout_s", *t.RunTimeoutS, false); err != nil {
				return o, err
			}
		}
		if t.InterruptedTeardownGraceS != nil {
			if o.Grace, err = cr.seconds("settings.timeouts.interrupted_teardown_grace_s", *t.InterruptedTeardownGraceS, false); err != nil {
				return o, err
			}
		}
	}
	if k := c.EndpointConfig.APIKey; k != nil && *k != "" {
		o.APIKey = *k
	}
	s, err := samplingOf(mp)
	if err != nil {
		return o, &refconfig.Error{File: cr.file, Path: "model_params", Msg: err.Error()}
	}
	o.Sampling = s
	return o, nil
}

// client sets the HTTP client's options from settings.client.
func (cr *configReader) client(o *Options) error {
	cl := cr.c.Settings.Client
	if cl.MaxIdleTime != nil {
		d, err := cr.seconds("settings.client.max_idle_time", *cl.MaxIdleTime, true)
		if err != nil {
			return err
		}
		o.IdleConnTimeout = d
	}
	if cl.MaxConnections != nil && *cl.MaxConnections > 0 {
		o.MaxConnections = *cl.MaxConnections
	}
	// warmup_connections: -1 (the default) is half an explicit pool, as the
	// reference resolves it; with an unlimited pool the reference warms a
	// quarter of the ephemeral port range, agentrace one per active trajectory.
	warm := refconfig.DefaultWarmupConnections
	if cl.WarmupConnections != nil {
		warm = *cl.WarmupConnections
	}
	switch {
	case warm >= 0:
		o.WarmupConnections = warm
	case o.MaxConnections > 0:
		o.WarmupConnections = max(1, o.MaxConnections/2)
	default:
		o.WarmupConnections = o.Concurrency
		cr.note("settings.client.warmup_connections -1 (auto) with an unlimited pool: agentrace opens one connection per active trajectory (the reference a quarter of the ephemeral port range)")
	}
	return nil
}

// noteIneffective records the seeds and notes what has no effect on an agentrace
// run: the minimum duration, the seeds, the reference's worker processes, drain,
// the tokenizer name, CPU affinity.
func (cr *configReader) noteIneffective(o *Options, mp *refconfig.ModelParams) {
	c, note := cr.c, cr.note
	rt, cl := c.Settings.Runtime, c.Settings.Client
	if c.Generation == refconfig.GenerationAugust {
		note("settings.runtime.min_duration_ms %d: no effect on an agentic run (its budget is num_trajectories_to_issue), as in the reference", c.MinDurationMs())
	}
	if c.SubmissionRef != nil {
		note("submission_ref.ruleset %s: its seed set pins the scheduler, dataloader and warm-up seeds, as the reference pins them", c.SubmissionRef.Ruleset)
	}
	o.Seeds = &schemas.RunSeeds{Scheduler: seedOr(rt.SchedulerRandomSeed), Dataloader: seedOr(rt.DataloaderRandomSeed),
		Warmup: seedOr(c.Settings.Warmup.WarmupRandomSeed)}
	note("settings.runtime scheduler_random_seed %s, dataloader_random_seed %s: recorded; the dataloader seed orders the trajectories' starts (a shuffle of the conversations per pass, as the reference draws it), the scheduler seed draws nothing in an agentic run (salts are hashes)",
		o.Seeds.Scheduler, o.Seeds.Dataloader)
	if cl.NumWorkers != nil {
		note("settings.client.num_workers %d: agentrace is one process", *cl.NumWorkers)
	}
	for _, k := range []struct {
		set  bool
		name string
	}{
		{cl.LogLevel != nil, "log_level"}, {cl.AutoWarmupBudgetFraction != nil, "auto_warmup_budget_fraction"},
		{cl.MaxConcurrentWarmupConnects != nil, "max_concurrent_warmup_connects"}, {cl.Transport != nil, "transport"},
		{cl.StreamAllChunks != nil, "stream_all_chunks"}, {cl.WorkerInitializationTimeout != nil, "worker_initialization_timeout"},
		{cl.WorkerGracefulShutdownWait != nil, "worker_graceful_shutdown_wait"}, {cl.WorkerForceKillTimeout != nil, "worker_force_kill_timeout"},
		{cl.MinRequiredConnections != nil, "min_required_connections"}, {cl.WorkerGCMode != nil, "worker_gc_mode"},
	} {
		if k.set {
			note("settings.client.%s: a setting of the reference's worker processes, no effect on agentrace", k.name)
		}
	}
	if c.Settings.Drain != nil {
		note("settings.drain: agentrace waits for every started trajectory (or its grace period after Ctrl-C)")
	}
	if t := c.Settings.Timeouts; t != nil {
		for _, k := range []struct {
			set  bool
			name string
		}{
			{t.WarmupDrainTimeoutS != nil, "warmup_drain_timeout_s"}, {t.PerformanceDrainTimeoutS != nil, "performance_drain_timeout_s"},
			{t.AccuracyDrainTimeoutS != nil, "accuracy_drain_timeout_s"},
		} {
			if k.set {
				note("settings.timeouts.%s: agentrace waits for every started trajectory (or its grace period after Ctrl-C)", k.name)
			}
		}
		if t.EndpointResponseIdleTimeoutS != nil {
			note("settings.timeouts.endpoint_response_idle_timeout_s: not enforced by agentrace; each turn is bounded by turn_timeout_s")
		}
		if t.ServiceReadyTimeoutS != nil || t.MetricsDrainTimeoutS != nil {
			note("settings.timeouts service_ready_timeout_s, metrics_drain_timeout_s: settings of the reference's metrics services, no effect on agentrace")
		}
	}
	if mp.TokenizerName != nil {
		note("model_params.tokenizer_name %q: agentrace counts tokens with the tokenizer folder it is given when it scores", *mp.TokenizerName)
	}
	if c.EnableCPUAffinity != nil {
		note("enable_cpu_affinity: no effect on agentrace")
	}
}

// seconds is a config's duration in seconds as a time.Duration: finite,
// positive (or zero, with zero), and at most what a time.Duration holds (about
// 292 years).
func (cr *configReader) seconds(path string, s float64, zero bool) (time.Duration, error) {
	switch {
	case math.IsNaN(s) || s < 0 || (s == 0 && !zero):
		if zero {
			return 0, cr.bad(path, "%v: must not be negative", s)
		}
		return 0, cr.bad(path, "%v: must be positive", s)
	case s > float64(math.MaxInt64)/float64(time.Second):
		return 0, cr.bad(path, "%v s: out of range (at most %d s, about 292 years)", s, int64(math.MaxInt64/int64(time.Second)))
	}
	return time.Duration(s * float64(time.Second)), nil
}

func seedOr(p *refconfig.Int) json.Number {
	if p == nil {
		return json.Number(strconv.Itoa(refconfig.DefaultSeed))
	}
	return json.Number(*p)
}

// seedRange is what the reference's msgspec encoder can send as a request's
// seed: an int64 or a uint64.
var seedMin, seedMax = new(big.Int).Lsh(big.NewInt(-1), 63), new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 64), big.NewInt(1))

// samplingOf returns the sampling settings of model_params. max_new_tokens
// defaults to the schema's 1024, as a reference run always sends one.
func samplingOf(mp *refconfig.ModelParams) (datasets.Profile, error) {
	p := datasets.Profile{
		Temperature: mp.Temperature, TopP: mp.TopP, TopK: mp.TopK,
		RepetitionPenalty: mp.RepetitionPenalty, PresencePenalty: mp.PresencePenalty, FrequencyPenalty: mp.FrequencyPenalty,
		MaxTokens: refconfig.DefaultMaxNewTokens,
	}
	if mp.Seed != nil {
		if b := mp.Seed.Big(); b.Cmp(seedMin) < 0 || b.Cmp(seedMax) > 0 {
			return p, fmt.Errorf("seed %s: the reference's encoder sends a seed between -2^63 and 2^64-1", *mp.Seed)
		}
		p.Seed = json.Number(*mp.Seed)
	}
	if mp.MaxNewTokens != nil {
		p.MaxTokens = *mp.MaxNewTokens
		if p.MaxTokens <= 0 {
			return p, fmt.Errorf("max_new_tokens %d: must be positive", p.MaxTokens)
		}
	}
	js, kw, err := mp.KwargsJSON()
	if err != nil {
		return p, err
	}
	p.ChatTemplateKwargsJSON, p.ChatTemplateKwargs = js, kw
	return p, nil
}

// seeds are the seeds the run records: the config's, else the reference's
// defaults.
func (s *settings) seeds() *schemas.RunSeeds {
	if s.Seeds != nil {
		v := *s.Seeds
		return &v
	}
	d := seedOr(nil)
	return &schemas.RunSeeds{Scheduler: d, Dataloader: d, Warmup: d}
}

// sampling is the manifest's record of the run's sampling settings.
func (s *settings) sampling() *schemas.Sampling {
	if s.profile == nil {
		return nil
	}
	p := s.profile
	r := &schemas.Sampling{
		Temperature: p.Temperature, Seed: p.Seed, TopK: p.TopK, TopP: p.TopP,
		RepetitionPenalty: p.RepetitionPenalty, PresencePenalty: p.PresencePenalty, FrequencyPenalty: p.FrequencyPenalty,
		MaxNewTokens: p.MaxTokens,
	}
	if s.MaxTokens > 0 {
		r.MaxNewTokens = s.MaxTokens
	}
	switch {
	case p.ChatTemplateKwargsJSON != "":
		r.ChatTemplateKwargs = json.RawMessage(p.ChatTemplateKwargsJSON)
	case len(p.ChatTemplateKwargs) > 0:
		r.ChatTemplateKwargs = datasets.AppendKwargs(nil, p.ChatTemplateKwargs)
	}
	return r
}

// refConfig is the run as the reference's schema writes it: the config the run
// was built from (if any), with every setting replaced by the one the run used.
func (s *settings) refConfig() *refconfig.Config {
	var c refconfig.Config
	if s.Config != nil {
		c = *s.Config
		c.Datasets = append([]refconfig.Dataset(nil), s.Config.Datasets...)
		c.EndpointConfig.Endpoints = nil
	}
	if c.Name == "" {
		c.Name = "online_benchmark"
	}
	if c.Version == "" {
		c.Version = "1.0"
	}
	if c.Type == "" {
		c.Type = refconfig.TypeOnline
	}
	mp := &c.ModelParams
	mp.Name = s.Model
	if mp.Name == "" && s.profile != nil {
		mp.Name = s.profile.Model
	}
	if mp.Name == "" {
		mp.Name = datasets.DefaultModelName
	}
	sm := s.sampling()
	if sm == nil {
		sm = &schemas.Sampling{}
	}
	mp.Temperature, mp.TopK, mp.TopP = sm.Temperature, sm.TopK, sm.TopP
	mp.Seed = nil
	if sm.Seed != "" {
		mp.Seed = ptr(refconfig.Int(sm.Seed))
	}
	mp.RepetitionPenalty, mp.PresencePenalty, mp.FrequencyPenalty = sm.RepetitionPenalty, sm.PresencePenalty, sm.FrequencyPenalty
	mt := sm.MaxNewTokens
	if s.MaxTokens > 0 {
		mt = s.MaxTokens
	}
	if mt <= 0 {
		mt = datasets.DefaultRunMaxTokens
	}
	mp.MaxNewTokens = &mt
	mp.SetKwargsJSON(sm.ChatTemplateKwargs)
	mp.Streaming = "on"
	if s.NoStream {
		mp.Streaming = "off"
	}
	// the performance dataset: the one run, with the settings used
	path := s.Dataset
	if s.DatasetSource != "" {
		path = s.DatasetSource
	}
	ai := &refconfig.AgenticInference{
		TurnTimeoutS: ptr(s.TurnTimeout.Seconds()), EnableSalt: !s.NoSalt, InjectToolDelay: !s.NoDelays,
		RoutingHeaders: s.RoutingHeaders, NumTrajectoriesToIssue: ptr(s.budget),
		StopIssuingOnFirstUserComplete: s.StopIssuingAtWindowEnd,
	}
	perf := refconfig.Dataset{Name: datasetName(path), Type: refconfig.DatasetPerformance, Path: &path,
		AccuracyConfig: &refconfig.AccuracyConfig{EvalMethod: ptr(refconfig.EvalAgenticInline)}, AgenticInference: ai}
	replaced := false
	for i := range c.Datasets {
		if c.Datasets[i].TypeOrDefault() == refconfig.DatasetPerformance {
			if c.Datasets[i].Name != "" {
				perf.Name = c.Datasets[i].Name
			}
			c.Datasets[i], replaced = perf, true
		}
	}
	if !replaced {
		c.Datasets = append([]refconfig.Dataset{perf}, c.Datasets...)
	}
	// the generation of the config the run was built from, else the newest
	c.Generation = refconfig.GenerationNewest
	if s.Config != nil && s.Config.Generation != "" {
		c.Generation = s.Config.Generation
	}
	rt := &c.Settings.Runtime
	if c.Generation == refconfig.GenerationAugust {
		if rt.MinDurationMs == nil {
			rt.MinDurationMs = ptr(refconfig.Millis(0))
		}
		rt.MaxDurationMs = ptr(refconfig.Millis(s.MaxDuration.Milliseconds()))
		if s.Timeout > 0 {
			c.Timeout = ptr(s.Timeout.Seconds())
		}
	} else {
		rt.MaxIssueDurationMs = nil
		if s.MaxDuration > 0 {
			rt.MaxIssueDurationMs = ptr(refconfig.Millis(max(1, s.MaxDuration.Milliseconds())))
		}
		var t refconfig.Timeouts
		if c.Settings.Timeouts != nil {
			t = *c.Settings.Timeouts
		}
		t.RunTimeoutS = nil
		if s.Timeout > 0 {
			t.RunTimeoutS = ptr(s.Timeout.Seconds())
		}
		t.InterruptedTeardownGraceS = ptr(s.Grace.Seconds())
		c.Settings.Timeouts = &t
	}
	seeds := s.seeds()
	rt.SchedulerRandomSeed, rt.DataloaderRandomSeed = ptr(refconfig.Int(seeds.Scheduler)), ptr(refconfig.Int(seeds.Dataloader))
	c.Settings.LoadPattern = refconfig.LoadPattern{Type: refconfig.LoadPatternAgenticInference, TargetConcurrency: ptr(s.Concurrency)}
	cl := &c.Settings.Client
	idle := s.IdleConnTimeout
	if idle <= 0 {
		idle = 90 * time.Second
	}
	cl.MaxIdleTime = ptr(idle.Seconds())
	cl.MaxConnections = ptr(-1)
	if s.MaxConnections > 0 {
		cl.MaxConnections = ptr(s.MaxConnections)
	}
	cl.WarmupConnections = ptr(s.WarmupConnections)
	c.Settings.Warmup = refconfig.Warmup{Enabled: false, Salt: false, WarmupRandomSeed: ptr(refconfig.Int(seeds.Warmup))}
	for _, ep := range s.endpoints {
		c.EndpointConfig.Endpoints = append(c.EndpointConfig.Endpoints, redact.URL(ep))
	}
	c.EndpointConfig.APIType = "openai"
	if s.apiKey != "" {
		c.EndpointConfig.APIKey = ptr(redact.Mask)
	} else {
		c.EndpointConfig.APIKey = nil
	}
	out := s.Out
	c.ReportDir = &out
	return &c
}

func ptr[T any](v T) *T { return &v }

// datasetName is a dataset path's stem, as the schema derives a name.
func datasetName(path string) string {
	base := filepath.Base(strings.TrimRight(path, "/"))
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// writeRefConfig writes RUNDIR/config.yaml (temp file, sync, rename).
func writeRefConfig(dir string, s *settings) error {
	data, err := refconfig.Marshal(s.refConfig())
	if err != nil {
		return fmt.Errorf("write %s: %w", schemas.RefConfigFile, err)
	}
	return outguard.AtomicWriteBytes(filepath.Join(dir, schemas.RefConfigFile), data)
}
