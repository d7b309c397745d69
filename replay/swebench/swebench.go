// Package swebench is the client of the reference's SWE-bench service
// (src/inference_endpoint/evaluation/swebench_service): it submits a run of the
// first N SWE-bench instances against one endpoint, follows it to the end with
// progress, cancels it on an interrupt or at its timeout, downloads its
// artifacts and writes DIR/swe_bench_results.json, as the reference's
// swe_bench_scorer does. Scoring the result (resolved / evaluated, the counter
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

	"github.com/agentrace/agentrace/internal/english"
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
	// ResultsFile is the result the scorer keeps in its report folder.
	ResultsFile = "swe_bench_results.json"
	// StatusFile is the service's last status, under swe_bench_runs/RUN_ID/.
	StatusFile = "swe_bench_service_status.json"
	APIVersion = "v1"
)

// OutKind is the kind of folder swebench writes (internal/outguard).
var OutKind = outguard.Kind{Name: "swebench", Folder: true}

// Capabilities the service must declare on /health.
var requiredCapabilities = []string{"artifacts.download", "swebench.cancel", "swebench.run"}

// safeArtifacts are the artifact names downloaded; others are ignored.
var safeArtifacts = map[string]bool{
	"preds.json": true, "swe_bench_agent.log": true, "swe_bench_eval.log": true,
	"swe_bench_results.json": true, "status.json": true,
}

var safeRunID = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

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
	// Out is the folder written: swe_bench_results.json, swe_bench_runs/RUN_ID/.
	Out       string
	Overwrite bool
	// Timeout cancels the service run this long after it was submitted (0: 24 h).
	Timeout      time.Duration
	PollInterval time.Duration
	// Progress receives a line per change of phase or counts (nil: none).
	Progress io.Writer
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
	// Artifacts are the files downloaded.
	Artifacts []string
}

// runRequest is the service's RunRequest: the ten fields agentrace sends
// (endpoint_api_key is left to its default).
type runRequest struct {
	ModelName            string          `json:"model_name"`
	EndpointURLs         []string        `json:"endpoint_urls"`
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
	// scrub knows the token and the endpoint's user information: every message
	// and file the client writes passes through it.
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
		return res, fmt.Errorf("swebench: %w", err)
	}
	return res, nil
}

// writeRecord writes swebench.json: what was asked and how it ended.
func (c *client) writeRecord(res *Result) error {
	o := c.o
	rec := schemas.SWEBenchRun{
		SchemaVersion: schemas.Version, ToolVersion: schemas.ToolVersion,
		Service: redact.URL(o.Service), RunID: res.RunID, State: res.State, Message: c.scrub.Text(res.Message),
		Endpoint: redact.URL(o.Endpoint), Model: o.Model, Subset: o.Subset, Split: o.Split, Template: o.Template,
		Workers: o.Workers, MaxEval: o.MaxEvalWorkers, Instances: o.InstancesFile,
		Evaluated: len(o.IDs), EvaluatedIDs: o.IDs, Artifacts: res.Artifacts,
	}
	_ = json.Unmarshal([]byte(o.Generation), &rec.GenerationParams)
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return outguard.AtomicWriteBytes(filepath.Join(o.Out, schemas.SWEBenchRunFile), append(data, '\n'))
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
	switch {
	case o.Subset != "verified" && o.Subset != "lite":
		return fmt.Errorf("subset %q: want verified or lite", o.Subset)
	case o.Template != "default" && o.Template != "qwen_tools":
		return fmt.Errorf("template %q: want default or qwen_tools", o.Template)
	case o.Workers < 1 || o.MaxEvalWorkers < 1:
		return fmt.Errorf("workers %d, max eval workers %d: must be at least 1", o.Workers, o.MaxEvalWorkers)
	case o.Model == "":
		return errors.New("no model name (--model)")
	case len(o.IDs) == 0:
		return errors.New("no instances to evaluate")
	case o.Out == "":
		return errors.New("no output folder (--out)")
	case o.Timeout < 0 || o.PollInterval < 0:
		return errors.New("timeout and poll interval must not be negative")
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
	c.scrub.Add(c.token)
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
func (c *client) call(ctx context.Context, method, path string, body any, timeout time.Duration, v any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
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
		return fmt.Errorf("service unreachable at %s: %s", redact.URL(u), c.scrub.Text(err.Error()))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read %s %s: %s", method, redact.URL(u), c.scrub.Text(err.Error()))
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("service request failed: %s %s returned HTTP %d: %s", method, redact.URL(u), resp.StatusCode, c.scrub.Text(strings.TrimSpace(string(data))))
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
			got = fmt.Sprintf("%q", *h.APIVersion)
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
		ModelName: o.Model, EndpointURLs: []string{o.Endpoint}, GenerationParams: json.RawMessage(o.Generation),
		Subset: o.Subset, Split: o.Split, NumInstances: len(o.IDs), Workers: o.Workers, MaxEvalWorkers: o.MaxEvalWorkers,
		EvaluatedInstanceIDs: o.IDs, Template: o.Template,
	}
	res := &Result{Evaluated: len(o.IDs)}
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
		cctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
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
			return cancel(fmt.Errorf("interrupted: %w", context.Cause(ctx)))
		case <-time.After(wait):
		}
		if !time.Now().Before(deadline) {
			return cancel(fmt.Errorf("timed out after %s waiting for service run %s", o.Timeout, res.RunID))
		}
		var next status
		if err := c.call(ctx, http.MethodGet, "v1/runs/"+res.RunID, nil, 30*time.Second, &next); err != nil {
			if ctx.Err() != nil {
				return cancel(fmt.Errorf("interrupted: %w", context.Cause(ctx)))
			}
			return cancel(err)
		}
		if next.RunID != res.RunID {
			return cancel(fmt.Errorf("service returned a mismatched run_id: expected %q, got %q", res.RunID, next.RunID))
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
	c.download(ctx, res, &st)
	if st.Status != "succeeded" {
		return res, fmt.Errorf("service run %s ended with status %s: %s", res.RunID, st.Status, c.scrub.Text(res.Message))
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
	if err := outguard.AtomicWriteBytes(res.Results, result); err != nil {
		res.Results = ""
		return res, err
	}
	return res, nil
}

// progress prints a line when the phase or a count changed.
func (c *client) progress(st *status, last *string) {
	if c.o.Progress == nil {
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
	line := fmt.Sprintf("swebench: run %s %s (phase %s): agent %s/%s, eval %s/%s", st.RunID, st.Status, phase,
		n(st.AgentCompleted), n(st.AgentTotal), n(st.EvalCompleted), n(st.EvalTotal))
	if line != *last {
		fmt.Fprintln(c.o.Progress, line)
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
// reference's checks); a failed download is reported, not fatal.
func (c *client) download(ctx context.Context, res *Result, st *status) {
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
		if err := c.fetch(ctx, res, a.Name, u.Path); err != nil {
			c.warn("could not download artifact %s: %v", a.Name, err)
			continue
		}
		res.Artifacts = append(res.Artifacts, a.Name)
	}
}

func (c *client) warn(format string, a ...any) {
	if c.o.Progress != nil {
		english.Fprintf(c.o.Progress, "swebench", english.Warning, format, a...)
	}
}

func (c *client) fetch(ctx context.Context, res *Result, name, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	u := c.root.ResolveReference(&url.URL{Path: strings.TrimPrefix(path, "/")})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/octet-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return errors.New(c.scrub.Text(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	target := filepath.Join(c.o.Out, "swe_bench_runs", res.RunID, name)
	return outguard.AtomicWrite(target, func(w io.Writer) error {
		_, err := io.Copy(w, resp.Body)
		return err
	})
}
