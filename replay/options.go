package replay

import (
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/official"
	"github.com/agentrace/agentrace/internal/redact"
	"github.com/agentrace/agentrace/internal/relpath"
	"github.com/agentrace/agentrace/replay/refconfig"
	"github.com/agentrace/agentrace/schemas"
)

// Defaults of Options' zero values.
const (
	DefaultTurnTimeout   = 86400 * time.Second // the reference client's turn_timeout_s
	DefaultGrace         = 30 * time.Second
	DefaultRoutingHeader = "X-Session-ID"
	DefaultProgressEvery = 10 * time.Second
)

// Options configure one replay run. They mirror the flags of `agentrace replay`;
// the zero value of every field is its default.
type Options struct {
	// Dataset is the dataset directory. Data, when set, is used instead of opening
	// it (an already opened dataset; Dataset then only names it in the manifest).
	Dataset string
	Data    *datasets.Dataset
	// DatasetSource is the trace file the dataset was ingested from for this
	// run (a config's JSONL path), recorded in config.yaml; "" for none.
	DatasetSource string

	// Endpoint is the server's base URL: http://host:port, with or without a
	// trailing /v1, or the full .../chat/completions URL.
	Endpoint string
	// Out is the run directory; it must not already hold a run unless Overwrite.
	Out       string
	Overwrite bool

	// Model is sent as "model" (the row's, then the profile's model when "");
	// Profile names the sampling profile (datasets.Profiles).
	Model   string
	Profile string
	// Sampling sets sampling parameters over the named profile's, field by field
	// (datasets.Profile.Overlay): a config's model_params, the sampling flags.
	Sampling datasets.Profile

	// Endpoints are further endpoints: requests go round-robin over Endpoint and
	// these, one issued request after another, as the reference's workers,
	// pinned to endpoint_urls[worker mod n], take requests round-robin.
	Endpoints []string
	// APIKey is the API key itself (a config's endpoint_config.api_key), used
	// when APIKeyEnv is unset; never written anywhere.
	APIKey string
	// Seeds are the reference's RNG seeds the run records (a config's); nil
	// records the reference's defaults, 42. Nothing in a replay draws with them.
	Seeds *schemas.RunSeeds
	// Timeout interrupts the run this long after its start (a config's global
	// timeout; 0: none): the run ends as after Ctrl-C, its manifest interrupted.
	Timeout time.Duration
	// IdleConnTimeout closes connections idle this long (settings.client
	// max_idle_time; 0: 90 s); MaxConnections caps the connections to each
	// endpoint (max_connections; 0 or -1: no cap); WarmupConnections opens this
	// many connections before the first turn (warmup_connections; 0: none).
	IdleConnTimeout   time.Duration
	MaxConnections    int
	WarmupConnections int
	// Config is the reference config the run was built from (--config), kept so
	// that the run's config.yaml holds the file's settings agentrace has no
	// counterpart for; nil without one.
	Config *refconfig.Config
	// ConfigFile is the config's path, recorded in the manifest.
	ConfigFile string
	// ConfigNotes are what the run's config says that has no effect on an
	// agentrace run (recorded in the manifest).
	ConfigNotes []string

	// Concurrency is the number of trajectories active at once (N).
	Concurrency int
	// Trajectories is the budget of trajectories to start; 0 means one per
	// conversation of the dataset.
	Trajectories int

	NoSalt   bool
	NoDelays bool
	// DelayScale multiplies every delay; 0 means 1.
	DelayScale float64

	// TurnTimeout fails a turn that has not completed in time; 0 means 24 h.
	TurnTimeout time.Duration
	// StopIssuingAtWindowEnd stops issuing turns when the performance window ends.
	StopIssuingAtWindowEnd bool
	// Grace is how long an interrupted run waits for in-flight turns before
	// cancelling them; 0 means 30 s.
	Grace time.Duration
	// Force, when it closes (a second interrupt), cancels the turns in flight at
	// once; the log and the manifest (state interrupted) are still written.
	Force <-chan struct{}
	// MaxDuration ends the run this long after its start (0: no cap), with the
	// reference's max_duration_ms semantics: no turn is issued any more and the
	// turns in flight are cancelled at once; the run then ends as complete, its
	// manifest's stop_cause "max_duration".
	MaxDuration time.Duration

	// StrictStream fails a turn on what the reference client tolerates in a
	// stream (a malformed frame, an error object in a 200 stream, a stream ending
	// without a finish reason or [DONE], a frame over the limit); by default such
	// a turn completes like the reference's and its warnings column says what
	// happened.
	StrictStream bool
	// MaxOutputBytes caps the output a turn keeps (content, reasoning and tool
	// calls together; the excess is counted in output_truncated_bytes); 0 means
	// DefaultMaxOutputBytes. A single SSE frame may be 2 × MaxOutputBytes + 1 MiB,
	// a non-streamed body as much.
	MaxOutputBytes int64

	// APIKeyEnv names the environment variable holding the API key, sent as
	// "Authorization: Bearer KEY". The key is never written anywhere.
	APIKeyEnv string
	// Headers are extra request headers, each "Name: value". Their values are
	// secrets: never recorded, masked wherever they appear (a server's echo
	// included), unless PublicHeaders names them.
	Headers []string
	// PublicHeaders name the Headers whose values are not secret: recorded in the
	// manifest, never masked.
	PublicHeaders []string
	// RoutingHeaders carry the session id; nil means X-Session-ID.
	RoutingHeaders []string

	// MaxTokens is max_completion_tokens for rows that set none (0: the profile's).
	MaxTokens int
	// NoStream turns the run's streaming mode off: rows that set no stream value
	// (and whose conversation's first user row sets none) are sent with "stream":
	// false and read as whole responses. Each turn is streamed or not as its body's
	// stream value says (datasets.Dataset.Streams), as the reference decides per
	// request, whatever the mode.
	NoStream bool
	// StreamUsage asks a streamed answer for server usage counts
	// ("stream_options":{"include_usage":true}), which the reference client never
	// sends: a run that sets it is not official.
	StreamUsage bool
	// ClearGeneratedCache puts a space at the start of every recorded assistant
	// message of the history (datasets.BodyOptions.ClearGeneratedCache).
	ClearGeneratedCache bool

	// Telemetry scrapes the endpoints' Prometheus metrics during the run and
	// routes turns over several endpoints.
	Telemetry

	// EndpointDescription is recorded in the manifest (e.g. the embedded sim's
	// settings).
	EndpointDescription string

	// Progress receives the live status line (nil: none); ProgressTTY redraws it
	// in place, otherwise a plain line is printed every ProgressEvery (0: 10 s).
	// Events receives the run's notes and warnings (nil: none), its secrets
	// masked, with the status line held off the terminal while it says them.
	Events        notice.Sink
	Progress      io.Writer
	ProgressTTY   bool
	ProgressEvery time.Duration

	// transport replaces the tuned HTTP transport (tests).
	transport http.RoundTripper
	// wrapLog wraps the turn log's file writer (tests inject write faults).
	wrapLog func(io.Writer) io.Writer
}

// inputs are the files and folders a run reads, which its output may not be,
// contain or sit inside: the dataset, the trace file it was ingested from and
// the config.
func (o *Options) inputs() []string {
	in := []string{o.Dataset}
	for _, p := range []string{o.DatasetSource, o.ConfigFile} {
		if p != "" {
			in = append(in, p)
		}
	}
	return in
}

// MaxConcurrency is the largest concurrency (and warm-up connection count) a
// run takes, from a flag or a config alike: far above any server's, and small
// enough that what a run sizes by it stays small.
const MaxConcurrency = 1 << 20

// MaxOutputLimit is the largest MaxOutputBytes: one turn's output must fit an
// Arrow string column of a batch with room to spare.
const MaxOutputLimit = 512 << 20

// settings are Options resolved against the dataset.
type settings struct {
	Options
	endpoints            []string // Endpoint and Endpoints
	chatURLs, modelsURLs []string
	dialAddrs            []string // host:port of each endpoint
	apiKey               string
	header               http.Header // static request headers
	routing              []string    // routing header names, canonical
	profile              *datasets.Profile
	budget               int
	// orderSeed is the dataloader seed that orders the trajectories' starts
	// (datasets.StartOrder).
	orderSeed *big.Int
	// slots is how many trajectories can be active at once: the concurrency, or
	// the budget when that is smaller (a slot beyond it would never start one).
	slots      int
	delayScale float64
	maxOutput  int64
	// scrub knows the run's secrets (Options.scrubber).
	scrub *redact.Scrubber
}

func (o *Options) resolve(d *datasets.Dataset) (*settings, error) {
	s := &settings{Options: *o, delayScale: o.DelayScale}
	if o.Concurrency < 1 {
		return nil, fmt.Errorf("concurrency %d: must be at least 1", o.Concurrency)
	}
	if o.Concurrency > MaxConcurrency {
		return nil, fmt.Errorf("concurrency %d: at most %d", o.Concurrency, MaxConcurrency)
	}
	if o.WarmupConnections > MaxConcurrency {
		return nil, fmt.Errorf("warm-up connections %d: at most %d", o.WarmupConnections, MaxConcurrency)
	}
	if o.Trajectories < 0 {
		return nil, fmt.Errorf("trajectories %d: must not be negative", o.Trajectories)
	}
	if s.delayScale == 0 {
		s.delayScale = 1
	}
	if s.delayScale < 0 || math.IsNaN(s.delayScale) || math.IsInf(s.delayScale, 0) {
		return nil, fmt.Errorf("delay scale %v: must be a finite positive number", o.DelayScale)
	}
	if s.TurnTimeout == 0 {
		s.TurnTimeout = DefaultTurnTimeout
	}
	if s.TurnTimeout < 0 {
		return nil, fmt.Errorf("turn timeout %v: must be positive", o.TurnTimeout)
	}
	if s.Grace == 0 {
		s.Grace = DefaultGrace
	}
	if s.Grace < 0 {
		return nil, fmt.Errorf("grace %v: must not be negative", o.Grace)
	}
	if s.MaxDuration < 0 {
		return nil, fmt.Errorf("max duration %v: must not be negative (0: no cap)", o.MaxDuration)
	}
	s.maxOutput = o.MaxOutputBytes
	if s.maxOutput == 0 {
		s.maxOutput = DefaultMaxOutputBytes
	}
	if s.maxOutput < 1024 || s.maxOutput > MaxOutputLimit {
		return nil, fmt.Errorf("max output bytes %d: must be between 1024 and %d", o.MaxOutputBytes, MaxOutputLimit)
	}
	if s.ProgressEvery == 0 {
		s.ProgressEvery = DefaultProgressEvery
	}
	if len(s.RoutingHeaders) == 0 {
		s.RoutingHeaders = []string{DefaultRoutingHeader}
	}
	var user *url.Userinfo
	s.endpoints = append([]string{o.Endpoint}, o.Endpoints...)
	for i, ep := range s.endpoints {
		chat, models, u, err := endpointURLs(ep)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			user = u
		} else if (u == nil) != (user == nil) || (u != nil && u.String() != user.String()) {
			return nil, fmt.Errorf("endpoint %s: its user information differs from the first endpoint's (one Authorization header serves them all)", redact.URL(ep))
		}
		s.chatURLs, s.modelsURLs = append(s.chatURLs, chat), append(s.modelsURLs, models)
		s.dialAddrs = append(s.dialAddrs, dialAddr(chat))
	}
	if err := s.checkTelemetry(); err != nil {
		return nil, err
	}
	profile, err := datasets.RunProfile(o.Profile, o.Sampling)
	if err != nil {
		return nil, err
	}
	s.profile = profile
	if o.Timeout < 0 || o.IdleConnTimeout < 0 || o.WarmupConnections < 0 {
		return nil, fmt.Errorf("timeout %v, idle connection timeout %v, warm-up connections %d: must not be negative", o.Timeout, o.IdleConnTimeout, o.WarmupConnections)
	}
	switch {
	case o.APIKeyEnv != "":
		s.apiKey = os.Getenv(o.APIKeyEnv)
		if s.apiKey == "" {
			return nil, fmt.Errorf("read API key: environment variable %s is unset or empty", o.APIKeyEnv)
		}
	case o.APIKey != "":
		s.apiKey = o.APIKey
	}
	s.header = http.Header{}
	for i, h := range o.Headers {
		k, v, ok := strings.Cut(h, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			// Not quoted: it may be a secret.
			return nil, fmt.Errorf("header %d of %d: want \"Name: value\" (its text is not shown: it may hold a secret)", i+1, len(o.Headers))
		}
		s.header.Add(k, strings.TrimSpace(v))
	}
	for _, p := range o.PublicHeaders {
		switch k := http.CanonicalHeaderKey(strings.TrimSpace(p)); {
		case k == "Authorization" || k == "Proxy-Authorization" || k == "Cookie":
			return nil, fmt.Errorf("public header %q: it carries credentials, its value stays secret", p)
		case s.header.Values(k) == nil:
			return nil, notice.Errorf("header", "public header %q: no header of that name is given", p)
		}
	}
	s.header.Set("Content-Type", "application/json") // Accept is set per turn (engine.trajectory)
	if s.apiKey != "" {
		s.header.Set("Authorization", "Bearer "+s.apiKey)
	}
	// User information in the endpoint URL becomes a Basic Authorization header
	// (unless one is set already), as net/http would send it; the request URLs
	// never carry it, so no error message can show it.
	if user != nil && s.header.Get("Authorization") == "" {
		pw, _ := user.Password()
		s.header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user.Username()+":"+pw)))
	}
	for _, h := range s.RoutingHeaders {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, ": \t") {
			return nil, fmt.Errorf("routing header %q: want a header name", h)
		}
		s.routing = append(s.routing, http.CanonicalHeaderKey(h))
	}
	n := len(d.Conversations)
	if n == 0 {
		return nil, fmt.Errorf("dataset %q has no conversations", o.Dataset)
	}
	s.budget = o.Trajectories
	if s.budget == 0 {
		s.budget = n
	}
	s.slots = min(s.Concurrency, s.budget)
	seed, err := datasets.ParseSeed(string(s.seeds().Dataloader))
	if err != nil {
		return nil, fmt.Errorf("dataloader_random_seed: %w", err)
	}
	s.orderSeed = seed
	if !o.NoSalt {
		if err := d.CheckSaltable(); err != nil {
			return nil, notice.Errorf("no-salt", "salting is on (it can be turned off, unofficially): %w", err)
		}
	}
	return s, nil
}

// dialAddr is the host:port a URL's connections go to.
func dialAddr(raw string) string {
	u, _ := url.Parse(raw)
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// idleTimeout is how long an idle connection is kept (IdleConnTimeout, else
// 90 s).
func (s *settings) idleTimeout() time.Duration {
	if s.IdleConnTimeout > 0 {
		return s.IdleConnTimeout
	}
	return 90 * time.Second
}

// endpointURLs returns the chat-completions and models URLs of a base URL, without
// its user information (returned apart). A URL with an "@" after "://" that does
// not parse with user information (a password holding #, /, ?, a space or a
// quote, not percent-encoded) is refused: it would send the secret as a host.
func endpointURLs(endpoint string) (chat, models string, user *url.Userinfo, err error) {
	u, err := url.Parse(endpoint)
	if _, rest, ok := strings.Cut(endpoint, "://"); ok && strings.Contains(rest, "@") && (err != nil || u.User == nil) {
		return "", "", nil, fmt.Errorf("endpoint %q: its user information does not parse: percent-encode the user name and password "+
			"(# as %%23, / as %%2F, ? as %%3F, a space as %%20, \" as %%22, @ as %%40)", redact.URL(endpoint))
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", nil, fmt.Errorf("endpoint %q: want an http:// or https:// URL", redact.URL(endpoint))
	}
	user, u.User = u.User, nil
	base := strings.TrimRight(u.String(), "/")
	switch {
	case strings.HasSuffix(base, "/chat/completions"):
		chat = base
		base = strings.TrimSuffix(base, "/chat/completions")
	case strings.HasSuffix(base, "/v1"):
		chat = base + "/chat/completions"
	default:
		base += "/v1"
		chat = base + "/chat/completions"
	}
	return chat, base + "/models", user, nil
}

// bodyOptions returns the request-body options of instance repeat.
func (s *settings) bodyOptions(repeat int) datasets.BodyOptions {
	return datasets.BodyOptions{
		Model:               s.Model,
		Profile:             s.profile,
		Salt:                !s.NoSalt,
		Repeat:              repeat,
		Stream:              !s.NoStream,
		IncludeUsage:        s.StreamUsage && !s.NoStream,
		MaxTokens:           s.MaxTokens,
		ClearGeneratedCache: s.ClearGeneratedCache,
	}
}

// config is the run's configuration as the manifest records it: never the key,
// and of the headers their names only (the values of public headers too).
func (s *settings) config(d *datasets.Dataset) schemas.RunConfig {
	n := len(d.Conversations)
	c := schemas.RunConfig{
		Endpoint:            redact.URL(s.Endpoint),
		Model:               s.Model,
		Profile:             s.Profile,
		Concurrency:         s.Concurrency,
		Trajectories:        s.budget,
		Salt:                !s.NoSalt,
		Delays:              !s.NoDelays,
		DelayScale:          s.delayScale,
		TurnTimeoutSeconds:  s.TurnTimeout.Seconds(),
		StopIssuingAtWindow: s.StopIssuingAtWindowEnd,
		Stream:              !s.NoStream,
		StreamUsage:         s.StreamUsage && !s.NoStream,
		MaxTokens:           s.MaxTokens,
		ClearGeneratedCache: s.ClearGeneratedCache,
		MaxDurationSeconds:  s.MaxDuration.Seconds(),
		MaxOutputBytes:      s.maxOutput,
		StrictStream:        s.StrictStream,
		RoutingHeaders:      s.RoutingHeaders,
		APIKeyEnv:           s.APIKeyEnv,
		Sampling:            s.sampling(),
		Seeds:               s.seeds(),
		StartOrder:          datasets.StartOrderRule,
		TimeoutSeconds:      s.Timeout.Seconds(),
		MaxConnections:      s.MaxConnections,
		WarmupConnections:   s.WarmupConnections,
		ConfigFile:          s.ConfigFile,
		ConfigNotes:         s.ConfigNotes,
	}
	if s.IdleConnTimeout > 0 {
		c.IdleConnTimeoutSeconds = s.IdleConnTimeout.Seconds()
	}
	for _, ep := range s.Endpoints {
		c.Endpoints = append(c.Endpoints, redact.URL(ep))
	}
	// Whether a turn streams depends on its row and the mode, not on the repeat.
	bo := s.bodyOptions(1)
	for i := range d.Turns {
		if d.Streams(&d.Turns[i], bo) {
			c.StreamedTurns++
		} else {
			c.NonStreamedTurns++
		}
	}
	c.Dataset, c.DatasetAbs = relpath.Record(s.Out, s.Dataset)
	c.OfficialDataset = d.Manifest.OfficialDataset
	if c.Model == "" && s.profile != nil {
		c.Model = s.profile.Model
	}
	for _, h := range s.Headers {
		k, v, _ := strings.Cut(h, ":")
		k = http.CanonicalHeaderKey(strings.TrimSpace(k))
		if c.Headers == nil {
			c.Headers = map[string]string{}
		}
		v = strings.TrimSpace(v)
		if !s.publicHeader(k) {
			v = redact.Mask
		}
		c.Headers[k] = v
	}
	model := c.Model
	if model == "" {
		model = datasets.DefaultModelName
	}
	c.NonOfficial = official.Reasons(official.Conditions{
		Salt: official.Bool(!s.NoSalt), Delays: official.Bool(!s.NoDelays), DelayScale: s.delayScale,
		StopIssuing: official.Bool(s.StopIssuingAtWindowEnd),
		Stream:      official.Bool(!s.NoStream), StreamedTurns: c.StreamedTurns, NonStreamedTurns: c.NonStreamedTurns,
		StreamUsage:  s.StreamUsage,
		Trajectories: s.budget, DatasetSize: n,
		Profile: official.String(s.Profile), Model: model,
		OfficialDataset: c.OfficialDataset,
	})
	c.Official = len(c.NonOfficial) == 0
	return c
}

// publicHeader tells whether PublicHeaders names header name (any case).
func (o *Options) publicHeader(name string) bool {
	for _, p := range o.PublicHeaders {
		if strings.EqualFold(strings.TrimSpace(p), strings.TrimSpace(name)) {
			return true
		}
	}
	return false
}

// headerNotes says, for each header whose value is kept secret although its name
// does not look secret (redact.SecretName), that it is and how to record it.
func (o *Options) headerNotes() []notice.Event {
	var notes []notice.Event
	for _, h := range o.Headers {
		k, _, _ := strings.Cut(h, ":")
		k = http.CanonicalHeaderKey(strings.TrimSpace(k))
		if !o.publicHeader(k) && !redact.SecretName(k) {
			notes = append(notes, notice.Event{Kind: notice.Note, Option: "public-header", Text: fmt.Sprintf("the value of header %s is kept secret (masked wherever it appears, not recorded); declaring %s public records it", k, k)})
		}
	}
	return notes
}

// scrubber returns the run's scrubber: it knows the API key, the value of every
// header not declared public (with the credential of a Bearer or Basic value),
// and the endpoint's user information with its Basic form. Every sink of the run
// passes through it: the turn log's text columns, the manifest, the progress
// lines and the errors.
func (o *Options) scrubber() *redact.Scrubber {
	sc := new(redact.Scrubber)
	if o.APIKeyEnv != "" {
		sc.Add(os.Getenv(o.APIKeyEnv))
	}
	if o.APIKey != "" {
		sc.Add(o.APIKey)
	}
	if o.Config != nil {
		for _, v := range o.Config.Secrets() {
			sc.Add(v)
		}
	}
	for _, h := range o.Headers {
		k, v, ok := strings.Cut(h, ":")
		switch {
		case !ok:
			sc.AddHeader(h) // malformed, refused by resolve: all of it may be secret
		case !o.publicHeader(k):
			sc.AddHeader(v)
		}
	}
	sc.AddURL(o.Endpoint)
	for _, u := range o.MetricsURLs {
		sc.AddURL(u)
	}
	return sc
}
