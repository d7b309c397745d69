// Package swebench is the client of the reference's SWE-bench service
// (src/inference_endpoint/evaluation/swebench_service): it submits a run of the
// first N SWE-bench instances against one endpoint, follows it to the end with
// progress, cancels it on an interrupt or at its timeout, downloads its
// artifacts and writes DIR/swe_bench_results.json, as the reference's
// swe_bench_scorer does. Whatever the service sends passes the scrubber
// (internal/redact) before it reaches a file, a progress line or an error (a
// token it echoes is masked), artifacts are copied under size caps, and what an
// error quotes of the service is short. Scoring the result (resolved / evaluated, the counter
// checks) is score's: score.ParseSWEBenchReport.
//
//	res, err := swebench.Run(ctx, swebench.Options{Service: url, Endpoint: ep, Model: m, IDs: ids, Out: dir})
package swebench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/redact"
	"github.com/agentrace/agentrace/schemas"
)

// Defaults, the reference scorer's (num_instances: the benchmark's 200).
const (
	DefaultNumInstances   = 200
	DefaultWorkers        = 10
	DefaultMaxEvalWorkers = 10
	DefaultSubset         = "verified"
	DefaultSplit          = "test"
	DefaultTemplate       = "default"
	DefaultTimeout        = 24 * time.Hour
	DefaultPollInterval   = 5 * time.Second
	// DefaultRoutingHeader is the header the service's agents carry their
	// trajectory's session id in (the reference scorer's routing_headers).
	DefaultRoutingHeader = "X-Session-ID"
	// DefaultMaxArtifactBytes and DefaultMaxArtifactsBytes cap what is
	// downloaded: one artifact, and all of a run's together.
	DefaultMaxArtifactBytes  = 256 << 20
	DefaultMaxArtifactsBytes = 1 << 30
	// maxAnswerBytes caps a JSON answer of the service (a status).
	maxAnswerBytes = 64 << 20
	// ResultsFile is the result the scorer keeps in its report folder.
	ResultsFile = "swe_bench_results.json"
	// StatusFile is the service's last status, under swe_bench_runs/RUN_ID/.
	StatusFile = "swe_bench_service_status.json"
	APIVersion = "v1"
)

// OutKind is the kind of folder swebench writes (internal/outguard).
var OutKind = outguard.Kind{Name: "swebench", Folder: true}

// Capabilities the service must declare on /health.
var requiredCapabilities = []string{"artifacts.download", "swebench.cancel", "swebench.routing_headers", "swebench.run"}

// safeArtifacts are the artifact names downloaded; others are ignored.
var safeArtifacts = map[string]bool{
	"preds.json": true, "swe_bench_agent.log": true, "swe_bench_eval.log": true,
	"swe_bench_results.json": true, "status.json": true,
}

var safeRunID = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// validHeaderName tells whether h is an HTTP header name (RFC 9110 token).
func validHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for _, r := range h {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// Options configure one service run.
type Options struct {
	// Service is the service's root URL (no path, query or fragment).
	Service string
	// AuthTokenEnv names the environment variable holding the service's bearer
	// token ("" for an unauthenticated service); the token is never written.
	AuthTokenEnv string
	// AuthToken is the token itself (a config's swebench_service_auth_token),
	// used when AuthTokenEnv is unset; never written.
	AuthToken string
	// Endpoint is the one model endpoint the service's agents call; Model its
	// model name.
	Endpoint string
	Model    string
	// EndpointAPIKeyEnv names the environment variable holding the endpoint's
	// API key, EndpointAPIKey the key itself (a config's endpoint_config.api_key,
	// used when EndpointAPIKeyEnv is unset): the service's agents send it to the
	// endpoint (endpoint_api_key; neither: null, as the reference sends a config
	// without one). Never written, and scrubbed wherever the service echoes it.
	EndpointAPIKeyEnv string
	EndpointAPIKey    string
	// Generation is the generation_params object, compact JSON with the keys
	// in the scorer's order (GenerationParams); "" for {}.
	Generation string
	// IDs are the instances to evaluate, in order (ReadInstances), read from
	// InstancesFile (recorded).
	IDs            []string
	InstancesFile  string
	Subset, Split  string
	Template       string
	Workers        int
	MaxEvalWorkers int
	// RoutingHeaders are the headers the service's agents set to their
	// trajectory's session id on every request to the endpoint (nil:
	// X-Session-ID; empty: none).
	RoutingHeaders []string
	// Out is the folder written: swe_bench_results.json, swe_bench_runs/RUN_ID/.
	Out       string
	Overwrite bool
	// Timeout cancels the service run this long after it was submitted (0: 24 h).
	Timeout      time.Duration
	PollInterval time.Duration
	// MaxArtifactBytes caps each artifact downloaded, MaxArtifactsBytes all of
	// them together (0: the defaults).
	MaxArtifactBytes, MaxArtifactsBytes int64
	// Events receives a progress event per change of phase or counts and the
	// warnings of the run (nil: none).
	Events notice.Sink
	// Client replaces the HTTP client (tests).
	Client *http.Client
}

// Result is how a service run ended.
type Result struct {
	RunID string
	// State is the service's final status: succeeded, failed or cancelled.
	State string
	// Evaluated is the number of instances submitted for evaluation, the
	// score's denominator.
	Evaluated int
	// Results is DIR/swe_bench_results.json ("" when the run gave no result);
	// Status the status file.
	Results string
	Status  string
	Message string
	// Problem is why a submitted run gave no whole result, as the error said
	// ("" when it did).
	Problem string
	// Artifacts are the files downloaded; Unfetched the safe artifacts the
	// service listed that were not, each with why.
	Artifacts []string
	Unfetched []string
	// InstancesSHA256 is the digest of the instance list (InstancesSHA256);
	// Official tells whether it is the pinned list (OfficialInstances).
	InstancesSHA256 string
	Official        bool
}

// runRequest is the service's RunRequest: the twelve fields the reference's
// scorer sends.
type runRequest struct {
	ModelName            string          `json:"model_name"`
	EndpointURLs         []string        `json:"endpoint_urls"`
	EndpointAPIKey       *string         `json:"endpoint_api_key"`
	RoutingHeaders       []string        `json:"routing_headers"`
	GenerationParams     json.RawMessage `json:"generation_params"`
	Subset               string          `json:"subset"`
	Split                string          `json:"split"`
	NumInstances         int             `json:"num_instances"`
	Workers              int             `json:"workers"`
	MaxEvalWorkers       int             `json:"max_eval_workers"`
	EvaluatedInstanceIDs []string        `json:"evaluated_instance_ids"`
	Template             string          `json:"template"`
}

// status is the service's RunStatus, as far as the client reads it.
type status struct {
	RunID          string          `json:"run_id"`
	Status         string          `json:"status"`
	Phase          *string         `json:"phase"`
	AgentTotal     *int            `json:"agent_total"`
	AgentCompleted *int            `json:"agent_completed"`
	EvalTotal      *int            `json:"eval_total"`
	EvalCompleted  *int            `json:"eval_completed"`
	Message        *string         `json:"message"`
	Error          *string         `json:"error"`
	Result         json.RawMessage `json:"result"`
	Artifacts      []struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	} `json:"artifacts"`
}

func (s *status) terminal() bool {
	return s.Status == "succeeded" || s.Status == "failed" || s.Status == "cancelled"
}

type client struct {
	o     *Options
	root  *url.URL
	token string
	// endpointKey is the endpoint's API key sent as endpoint_api_key ("": none).
	endpointKey string
	// scrub knows the token, the endpoint's key and user information: every message
	// and file the client writes passes through it, the events it says too.
	scrub redact.Scrubber
	hc    *http.Client
}

// Run submits the run, follows it and writes its results; see the package
// comment. An interrupt (ctx) or the timeout cancels the service run and
// returns an error, after writing the last status.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, fmt.Errorf("swebench: %w", err)
	}
	c, err := newClient(&o)
	if err != nil {
		return nil, fmt.Errorf("swebench: %w", err)
	}
	// The output folder is claimed for the command's life (internal/outguard):
	// into a new folder the run is written in place and kept, whole or not; over
	// an earlier one it is written beside and replaces it only when the run
	// succeeded, so a failed or cancelled run leaves the earlier output as it was.
	out := outguard.Output{Path: o.Out, Kind: OutKind, Overwrite: o.Overwrite, Live: true}
	var inputs []string
	if o.InstancesFile != "" {
		inputs = append(inputs, o.InstancesFile)
	}
	claim, err := outguard.Take(out, inputs...)
	if err != nil {
		return nil, fmt.Errorf("swebench: %w", err)
	}
	defer claim.Release()
	if err := c.health(ctx); err != nil {
		return nil, fmt.Errorf("swebench: %w", err)
	}
	final := o.Out
	o.Out = claim.Dir()
	res, err := c.run(ctx)
	if err != nil && res.RunID != "" {
		res.Problem = c.scrub.Text(err.Error())
	}
	if werr := c.writeRecord(res); werr != nil && err == nil {
		err = werr
	}
	if err == nil || claim.InPlace() {
		if cerr := claim.Commit(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if res != nil {
		for _, p := range []*string{&res.Results, &res.Status} {
			if rel, rerr := filepath.Rel(o.Out, *p); *p != "" && rerr == nil && !strings.HasPrefix(rel, "..") {
				*p = filepath.Join(final, rel)
			}
		}
	}
	o.Out = final
	if err != nil {
		return res, c.scrub.Error(fmt.Errorf("swebench: %w", err))
	}
	return res, nil
}

// writeRecord writes swebench.json: what was asked and how it ended.
func (c *client) writeRecord(res *Result) error {
	o := c.o
	rec := schemas.SWEBenchRun{
		SchemaVersion: schemas.Version, ToolVersion: schemas.ToolVersion,
		Service: redact.URL(o.Service), RunID: res.RunID, State: res.State, Message: c.scrub.Text(res.Message),
		Problem:  res.Problem,
		Endpoint: redact.URL(o.Endpoint), Model: o.Model, Subset: o.Subset, Split: o.Split, Template: o.Template,
		Workers: o.Workers, MaxEval: o.MaxEvalWorkers, RoutingHeaders: o.RoutingHeaders, Instances: o.InstancesFile,
		InstancesSHA256: res.InstancesSHA256, OfficialInstances: res.Official,
		Evaluated: len(o.IDs), EvaluatedIDs: o.IDs, Artifacts: res.Artifacts, Unfetched: res.Unfetched,
	}
	_ = json.Unmarshal([]byte(o.Generation), &rec.GenerationParams)
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return outguard.AtomicWriteBytes(filepath.Join(o.Out, schemas.SWEBenchRunFile), []byte(c.scrub.Secrets(string(data))+"\n"))
}

func (o *Options) defaults() error {
	if o.Subset == "" {
		o.Subset = DefaultSubset
	}
	if o.Split == "" {
		o.Split = DefaultSplit
	}
	if o.Template == "" {
		o.Template = DefaultTemplate
	}
	if o.Workers == 0 {
		o.Workers = DefaultWorkers
	}
	if o.MaxEvalWorkers == 0 {
		o.MaxEvalWorkers = DefaultMaxEvalWorkers
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.RoutingHeaders == nil {
		o.RoutingHeaders = []string{DefaultRoutingHeader}
	}
	if o.MaxArtifactBytes == 0 {
		o.MaxArtifactBytes = DefaultMaxArtifactBytes
	}
	if o.MaxArtifactsBytes == 0 {
		o.MaxArtifactsBytes = DefaultMaxArtifactsBytes
	}
	for _, h := range o.RoutingHeaders {
		if !validHeaderName(h) {
			return fmt.Errorf("routing header %q: not an HTTP header name", h)
		}
	}
	switch {
	case o.Subset != "verified" && o.Subset != "lite":
		return fmt.Errorf("subset %q: want verified or lite", o.Subset)
	case o.Template != "default" && o.Template != "qwen_tools":
		return fmt.Errorf("template %q: want default or qwen_tools", o.Template)
	case o.Workers < 1 || o.MaxEvalWorkers < 1:
		return fmt.Errorf("workers %d, max eval workers %d: must be at least 1", o.Workers, o.MaxEvalWorkers)
	case o.Model == "":
		return notice.Errorf("model", "no model name")
	case len(o.IDs) == 0:
		return errors.New("no instances to evaluate")
	case o.Out == "":
		return notice.Errorf("out", "no output folder")
	case o.Timeout < 0 || o.PollInterval < 0:
		return errors.New("timeout and poll interval must not be negative")
	case o.MaxArtifactBytes < 0 || o.MaxArtifactsBytes < 0:
		return errors.New("artifact size limits must not be negative")
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("endpoint %q: want an HTTP(S) URL with a host name", redact.URL(o.Endpoint))
	}
	if o.Generation == "" {
		o.Generation = "{}"
	}
	return nil
}

func newClient(o *Options) (*client, error) {
	u, err := url.Parse(o.Service)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("service %q: want an HTTP(S) service root URL with no path, query, fragment or user information", redact.URL(o.Service))
	}
	u.Path = "/"
	c := &client{o: o, root: u, hc: o.Client}
	if o.AuthTokenEnv != "" {
		c.token = os.Getenv(o.AuthTokenEnv)
		if c.token == "" {
			return nil, fmt.Errorf("read service token: environment variable %s is unset or empty", o.AuthTokenEnv)
		}
	} else {
		c.token = o.AuthToken
	}
	if o.EndpointAPIKeyEnv != "" {
		c.endpointKey = os.Getenv(o.EndpointAPIKeyEnv)
		if c.endpointKey == "" {
			return nil, fmt.Errorf("read endpoint API key: environment variable %s is unset or empty", o.EndpointAPIKeyEnv)
		}
	} else {
		c.endpointKey = o.EndpointAPIKey
	}
	c.scrub.Add(c.token)
	c.scrub.Add(c.endpointKey)
	c.scrub.AddURL(o.Endpoint)
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	// Redirects are refused, as the reference's opener refuses them: the token
	// must not follow one.
	hc := *c.hc
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.hc = &hc
	return c, nil
}

// call sends one JSON request and decodes the JSON answer into v.
func (c *client) call(parent context.Context, method, path string, body any, timeout time.Duration, v any) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	u := c.root.ResolveReference(&url.URL{Path: path}).String()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil && parent.Err() != nil {
			return parent.Err()
		}
		return fmt.Errorf("service unreachable at %s: %s", redact.URL(u), c.scrub.Text(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("service request failed: %s %s returned HTTP %d: %s", method, redact.URL(u), resp.StatusCode, c.scrub.ReadExcerpt(resp.Body))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		if parent.Err() != nil {
			return parent.Err()
		}
		return fmt.Errorf("read %s %s: %s", method, redact.URL(u), c.scrub.Text(err.Error()))
	}
	if len(data) > maxAnswerBytes {
		return fmt.Errorf("service answered %s %s with more than %d MiB", method, redact.URL(u), maxAnswerBytes>>20)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("service returned invalid JSON from %s %s: %v", method, redact.URL(u), err)
	}
	return nil
}

// health checks the service's API version and capabilities.
func (c *client) health(ctx context.Context) error {
	var h struct {
		APIVersion   *string  `json:"api_version"`
		Capabilities []string `json:"capabilities"`
	}
	if err := c.call(ctx, http.MethodGet, "health", nil, 10*time.Second, &h); err != nil {
		return err
	}
	if h.APIVersion == nil || *h.APIVersion != APIVersion {
		got := "none"
		if h.APIVersion != nil {
			got = fmt.Sprintf("%q", c.scrub.Excerpt([]byte(*h.APIVersion)))
		}
		return fmt.Errorf("service API version mismatch: expected %q, got %s", APIVersion, got)
	}
	have := map[string]bool{}
	for _, c := range h.Capabilities {
		have[c] = true
	}
	var missing []string
	for _, r := range requiredCapabilities {
		if !have[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("service is missing required capabilities: %s", strings.Join(missing, ", "))
	}
	return nil
}

func (c *client) run(ctx context.Context) (*Result, error) {
	o := c.o
	req := runRequest{
		ModelName: o.Model, EndpointURLs: []string{o.Endpoint}, RoutingHeaders: o.RoutingHeaders, GenerationParams: json.RawMessage(o.Generation),
		Subset: o.Subset, Split: o.Split, NumInstances: len(o.IDs), Workers: o.Workers, MaxEvalWorkers: o.MaxEvalWorkers,
		EvaluatedInstanceIDs: o.IDs, Template: o.Template,
	}
	if c.endpointKey != "" {
		req.EndpointAPIKey = &c.endpointKey
	}
	res := &Result{Evaluated: len(o.IDs), InstancesSHA256: InstancesSHA256(o.IDs), Official: OfficialInstances(o.IDs)}
	var st status
	if err := c.call(ctx, http.MethodPost, "v1/runs", req, 30*time.Second, &st); err != nil {
		return res, err
	}
	if !safeRunID.MatchString(st.RunID) {
		return res, errors.New("service returned an invalid run_id")
	}
	res.RunID = st.RunID
	var last string
	c.progress(&st, &last)
	deadline := time.Now().Add(o.Timeout)
	cancel := func(why error) (*Result, error) {
		cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer stop()
		var cs status
		if err := c.call(cctx, http.MethodPost, "v1/runs/"+res.RunID+"/cancel", nil, 10*time.Second, &cs); err != nil {
			return res, fmt.Errorf("%w; cancelling service run %s failed too: %v", why, res.RunID, err)
		}
		if cs.RunID == res.RunID {
			res.State = cs.Status
			_ = c.writeStatus(res, &cs)
		}
		return res, fmt.Errorf("%w; service run %s cancelled", why, res.RunID)
	}
	for !st.terminal() {
		wait := o.PollInterval
		if left := time.Until(deadline); left < wait {
			wait = max(left, 0)
		}
		select {
		case <-ctx.Done():
			return cancel(interrupted(ctx))
		case <-time.After(wait):
		}
		if !time.Now().Before(deadline) {
			return cancel(fmt.Errorf("timed out after %s waiting for service run %s", o.Timeout, res.RunID))
		}
		var next status
		if err := c.call(ctx, http.MethodGet, "v1/runs/"+res.RunID, nil, 30*time.Second, &next); err != nil {
			if ctx.Err() != nil {
				return cancel(interrupted(ctx))
			}
			return cancel(err)
		}
		if next.RunID != res.RunID {
			return cancel(fmt.Errorf("service returned a mismatched run_id: expected %q, got %q", res.RunID, c.scrub.Excerpt([]byte(next.RunID))))
		}
		st = next
		c.progress(&st, &last)
	}
	res.State = st.Status
	if st.Message != nil {
		res.Message = *st.Message
	}
	if st.Error != nil {
		res.Message = strings.TrimSpace(res.Message + " " + *st.Error)
	}
	if err := c.writeStatus(res, &st); err != nil {
		return res, err
	}
	if err := c.download(ctx, res, &st); err != nil {
		return res, err
	}
	if st.Status != "succeeded" {
		return res, fmt.Errorf("service run %s ended with status %s: %s", res.RunID, c.scrub.Excerpt([]byte(st.Status)), c.scrub.Excerpt([]byte(res.Message)))
	}
	result := []byte(st.Result)
	if len(bytes.TrimSpace(result)) == 0 || string(bytes.TrimSpace(result)) == "null" {
		data, err := os.ReadFile(filepath.Join(o.Out, "swe_bench_runs", res.RunID, ResultsFile))
		if err != nil {
			return res, fmt.Errorf("service run %s did not return a result", res.RunID)
		}
		result = data
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(result, &obj) != nil || obj == nil {
		return res, fmt.Errorf("service run %s did not return a result object", res.RunID)
	}
	res.Results = filepath.Join(o.Out, ResultsFile)
	if err := outguard.AtomicWriteBytes(res.Results, []byte(c.scrub.Secrets(string(result)))); err != nil {
		res.Results = ""
		return res, err
	}
	return res, nil
}

// progress prints a line when the phase or a count changed.
func (c *client) progress(st *status, last *string) {
	if c.o.Events == nil {
		return
	}
	n := func(p *int) string {
		if p == nil {
			return "?"
		}
		return fmt.Sprint(*p)
	}
	phase := st.Status
	if st.Phase != nil {
		phase = *st.Phase
	}
	// what the service says is quoted short (the line is scrubbed as written)
	short := func(x string) string { return c.scrub.Excerpt([]byte(x)) }
	line := fmt.Sprintf("run %s %s (phase %s): agent %s/%s, eval %s/%s", short(st.RunID), short(st.Status), short(phase),
		n(st.AgentCompleted), n(st.AgentTotal), n(st.EvalCompleted), n(st.EvalTotal))
	if line != *last {
		c.say(notice.Progress, nil, "%s", line)
		*last = line
	}
}

// writeStatus writes the last status under swe_bench_runs/RUN_ID/.
func (c *client) writeStatus(res *Result, st *status) error {
	dir := filepath.Join(c.o.Out, "swe_bench_runs", res.RunID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	res.Status = filepath.Join(dir, StatusFile)
	return outguard.AtomicWriteBytes(res.Status, []byte(c.scrub.Text(string(data))))
}

// download fetches the run's artifacts with safe names and URLs (the
// reference's checks), each scrubbed and under the size caps. An artifact that
// could not be fetched is reported and listed in res.Unfetched, as the
// reference goes on without it; an interrupt stops the download with an error.
func (c *client) download(ctx context.Context, res *Result, st *status) error {
	left := c.o.MaxArtifactsBytes
	for _, a := range st.Artifacts {
		if !safeArtifacts[a.Name] {
			continue
		}
		u, err := url.Parse(a.URL)
		if err != nil || u.Scheme != "" || u.Host != "" || u.RawQuery != "" || u.Fragment != "" ||
			u.Path != "/v1/runs/"+res.RunID+"/artifacts/"+a.Name {
			c.warn("ignoring unsafe artifact URL for %s", a.Name)
			continue
		}
		limit, tooLarge := c.o.MaxArtifactBytes, notice.Errorf("max-artifact-bytes", "larger than the cap on one artifact, %s; not kept", mib(c.o.MaxArtifactBytes))
		if left < limit {
			limit, tooLarge = left, notice.Errorf("max-artifacts-bytes", "larger than what is left of the cap on all artifacts, %s; not kept", mib(c.o.MaxArtifactsBytes))
		}
		n, err := c.fetch(ctx, res, a.Name, u.Path, limit)
		left = max(left-n, 0)
		if ctx.Err() != nil {
			return fmt.Errorf("%s while downloading the artifacts of service run %s (%d of %d downloaded); no result written",
				interrupted(ctx), res.RunID, len(res.Artifacts), countSafe(st))
		}
		if errors.Is(err, errTooLarge) {
			err = tooLarge
		}
		if err != nil {
			c.say(notice.Warning, notice.Options(err), "could not download artifact %s: %v", a.Name, err)
			res.Unfetched = append(res.Unfetched, fmt.Sprintf("%s: %v", a.Name, err))
			continue
		}
		res.Artifacts = append(res.Artifacts, a.Name)
	}
	return nil
}

// countSafe counts the artifacts with a safe name a status lists.
func countSafe(st *status) int {
	n := 0
	for _, a := range st.Artifacts {
		if safeArtifacts[a.Name] {
			n++
		}
	}
	return n
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// interrupted is the error of a run stopped by ctx: "interrupted", and why when
// the cause is more than a cancellation.
func interrupted(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return fmt.Errorf("interrupted: %w", cause)
	}
	return errors.New("interrupted")
}

var errTooLarge = errors.New("artifact too large")

func (c *client) warn(format string, a ...any) { c.say(notice.Warning, nil, format, a...) }

// say hands the caller an event about the first of options (none: nil), its
// secrets masked.
func (c *client) say(kind notice.Kind, options []string, format string, a ...any) {
	option := ""
	if len(options) > 0 {
		option = options[0]
	}
	c.o.Events.Say(kind, option, "%s", c.scrub.Text(fmt.Sprintf(format, a...)))
}

// fetch downloads one artifact, scrubbed, reading at most limit bytes of it
// (errTooLarge beyond: nothing is kept). It returns the bytes read.
func (c *client) fetch(ctx context.Context, res *Result, name, path string, limit int64) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	u := c.root.ResolveReference(&url.URL{Path: strings.TrimPrefix(path, "/")})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/octet-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, errors.New(c.scrub.Text(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, c.scrub.ReadExcerpt(resp.Body))
	}
	if resp.ContentLength > limit {
		return 0, errTooLarge
	}
	body := &io.LimitedReader{R: resp.Body, N: limit + 1}
	target := filepath.Join(c.o.Out, "swe_bench_runs", res.RunID, name)
	err = outguard.AtomicWrite(target, func(w io.Writer) error {
		if _, err := c.scrub.Copy(w, body); err != nil {
			return errors.New(c.scrub.Text(err.Error()))
		}
		if body.N == 0 {
			return errTooLarge
		}
		return nil
	})
	return limit + 1 - body.N, err
}
