package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/replay/refconfig"
	"github.com/agentrace/agentrace/schemas"
)

// refVerdictBodies returns the request bodies the reference client sent for a
// refparity trace file in one variant, keyed by "session/turn"
// (testdata/refparity/README.md says how they were recorded).
func refVerdictBodies(t *testing.T, file, variant string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "refparity", file+".verdict.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Variants map[string]struct {
			Turns []struct {
				Turn    int               `json:"turn"`
				Headers map[string]string `json:"headers"`
				Body    string            `json:"body"`
			} `json:"turns"`
		} `json:"variants"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tr := range v.Variants[variant].Turns {
		out[tr.Headers["X-Session-ID"]+"/"+itoa(tr.Turn)] = tr.Body
	}
	if len(out) == 0 {
		t.Fatalf("%s: no %s bodies", file, variant)
	}
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// configRun loads a testdata config with the dataset, endpoint and out given,
// runs it, and returns the bodies the fake server saw by "session/turn".
func configRun(t *testing.T, f *fake, file, dataset, out string) (map[string]string, *Options) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("refconfig", "testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	o := configOptions(t, file, data, map[string]string{"DATASET": dataset, "ENDPOINT": f.srv.URL, "OUT": out})
	return runBodies(t, f, o), &o
}

// configOptions parses the config file's data with vars for its environment
// variables and returns the run options it makes.
func configOptions(t *testing.T, file string, data []byte, vars map[string]string) Options {
	t.Helper()
	cfg, err := refconfig.Parse(file, data, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	cr, err := FromConfig(cfg, file)
	if err != nil {
		t.Fatal(err)
	}
	return cr.Options
}

// runBodies runs o against f and returns the bodies f saw.
func runBodies(t *testing.T, f *fake, o Options) map[string]string {
	t.Helper()
	before := len(f.requests())
	sum, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.State != "complete" {
		t.Fatalf("run %s", sum.State)
	}
	got := map[string]string{}
	for i, r := range f.requests()[before:] {
		got[r.session+"#"+itoa(i)] = string(r.body)
	}
	return got
}

func ingestRefparity(t *testing.T, file string) string {
	t.Helper()
	ds := filepath.Join(t.TempDir(), "ds")
	if _, err := ingest.Run(context.Background(), ingest.Options{Out: ds, Inputs: []string{filepath.Join("..", "testdata", "refparity", file+".jsonl")}}); err != nil {
		t.Fatal(err)
	}
	return ds
}

// The reference's Qwen example config, edited for the dataset, endpoint and run
// length, sends exactly the bytes the reference sent for the same trace file
// (recorded in testdata/refparity), and the same as --profile qwen3.6-35b-a3b.
func TestConfigQwenSendsReferenceBytes(t *testing.T) {
	f := newFake(t)
	ds := ingestRefparity(t, "00-base")
	want := refVerdictBodies(t, "00-base", "qwen_salt")
	got, o := configRun(t, f, "qwen_agentic_benchmark.yaml", ds, filepath.Join(t.TempDir(), "run"))
	if o.NoSalt || o.NoDelays || o.Concurrency != 8 || o.Trajectories != 2 || o.TurnTimeout.Seconds() != 14400 {
		t.Errorf("options from the config: %+v", o)
	}
	compareBodies(t, "config", got, want)
	prof := Options{Dataset: ds, Endpoint: f.srv.URL, Out: filepath.Join(t.TempDir(), "run"), Concurrency: 8, Profile: "qwen3.6-35b-a3b"}
	compareBodies(t, "--profile", runBodies(t, f, prof), want)
}

func compareBodies(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d requests, the reference sent %d", what, len(got), len(want))
	}
	n := 0
	for _, w := range want {
		found := false
		for _, g := range got {
			if g == w {
				found = true
				break
			}
		}
		if found {
			n++
		} else {
			t.Errorf("%s: an expected body not sent:\n%s", what, w)
		}
	}
	t.Logf("%s: %d of %d bodies byte-equal to the expected ones", what, n, len(want))
}

// The Edge example config (temperature 0, seed 42, max_new_tokens 1024, salting
// and delays off by the schema's defaults) sends, for each turn, the reference's
// unsalted history and tools (its recorded bare bodies) with the config's fields
// where the reference's ChatCompletionRequest puts them: temperature after
// messages (a float: 0.0), max_completion_tokens, stream (true: online streams),
// then seed.
func TestConfigEdgeSendsSeedAndTemperature(t *testing.T) {
	f := newFake(t)
	ds := ingestRefparity(t, "00-base")
	out := filepath.Join(t.TempDir(), "run")
	got, o := configRun(t, f, "online_edge_full_run.yaml", ds, out)
	if !o.NoSalt || !o.NoDelays || o.Concurrency != 1 || o.MaxConnections != 1 || o.WarmupConnections != 0 || o.Timeout.Hours() != 6 {
		t.Errorf("options from the config: %+v", o)
	}
	want := map[string]string{}
	for k, b := range refVerdictBodies(t, "00-base", "bare") {
		for _, key := range []string{`"temperature"`, `"seed"`, `"top_p"`, `"top_k"`} {
			if strings.Contains(b, key) {
				t.Fatalf("bare body sets %s itself", key)
			}
		}
		const head = `{"model":"no-model-name","messages":`
		i := strings.Index(b, `],"max_completion_tokens":128,"stream":false`)
		if !strings.HasPrefix(b, head) || i < 0 {
			t.Fatalf("unexpected bare body %s", b)
		}
		want[k] = `{"model":"Qwen3.6-27B-Q4_K_M","messages":` + b[len(head):i+1] +
			`,"temperature":0.0,"max_completion_tokens":1024,"stream":true,"seed":42` + b[i+len(`],"max_completion_tokens":128,"stream":false`):]
	}
	compareBodies(t, "edge config", got, want)

	// config.yaml holds what was run, in the reference's schema
	data, err := os.ReadFile(filepath.Join(out, schemas.RefConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	back, err := refconfig.Parse("config.yaml", data, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("config.yaml does not parse as the reference's schema: %v\n%s", err, data)
	}
	mp := back.ModelParams
	if mp.Name != "Qwen3.6-27B-Q4_K_M" || *mp.Temperature != 0 || *mp.Seed != "42" || *mp.MaxNewTokens != 1024 || mp.Streaming != "on" {
		t.Errorf("config.yaml model_params: %s", data)
	}
	perf := back.Datasets[0]
	if *perf.Path != ds || perf.AgenticInference.EnableSalt || perf.AgenticInference.InjectToolDelay || *perf.AgenticInference.NumTrajectoriesToIssue != 2 {
		t.Errorf("config.yaml dataset: %s", data)
	}
	if len(back.Datasets) != 2 || back.Datasets[1].Scorer() != "bfcl_v4" || back.Settings.Warmup.Enabled || *back.Settings.LoadPattern.TargetConcurrency != 1 {
		t.Errorf("config.yaml: %s", data)
	}
	if *back.Settings.Runtime.DataloaderRandomSeed != "42" || *back.Settings.Client.MaxConnections != 1 || *back.Settings.Client.NumWorkers != 1 {
		t.Errorf("config.yaml settings: %s", data)
	}
}

// Several endpoints take the requests round-robin, one issued request after
// another, as the reference's workers pinned to endpoint_urls[worker mod n].
func TestSeveralEndpointsRoundRobin(t *testing.T) {
	a, b := newFake(t), newFake(t)
	d := makeDataset(t, chat("c1", 3), chat("c2", 3))
	o := Options{Data: d, Dataset: "mem", Endpoint: a.srv.URL, Endpoints: []string{b.srv.URL}, Out: filepath.Join(t.TempDir(), "run"),
		Concurrency: 1, NoSalt: true}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	na, nb := len(a.requests()), len(b.requests())
	if na != 3 || nb != 3 {
		t.Errorf("requests: %d to the first endpoint, %d to the second, want 3 and 3", na, nb)
	}
}

// FromConfig reads the example configs as the reference's schema does
// (refconfig/testdata/reference-validated.json: the reference's
// BenchmarkConfig.from_yaml_file on the same files).
func TestFromConfigAgreesWithReferenceSchema(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("refconfig", "testdata", "reference-validated.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results map[string]struct {
			OK          bool            `json:"ok"`
			ModelParams json.RawMessage `json:"model_params"`
			Salt        bool            `json:"salt"`
			Delays      bool            `json:"delays"`
			Client      struct {
				WarmupConnections int     `json:"warmup_connections"`
				MaxConnections    int     `json:"max_connections"`
				MaxIdleTime       float64 `json:"max_idle_time"`
			} `json:"client"`
		} `json:"results"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"DATASET": "/work/shared/data/deepswe-sample-20.jsonl", "ENDPOINT": "http://127.0.0.1:18731", "OUT": "/tmp/e2e/x",
		"MODEL_DIR": "/models/k3", "SWEBENCH_SERVICE_AUTH_TOKEN": "tok"}
	for _, file := range []string{"qwen_agentic_benchmark.yaml", "online_edge_full_run.yaml", "kimi_agentic_benchmark.yaml"} {
		want := doc.Results[file]
		raw, _ := os.ReadFile(filepath.Join("refconfig", "testdata", file))
		cfg, err := refconfig.Parse(file, raw, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
		if err != nil || !want.OK {
			t.Fatalf("%s: %v (reference ok %v)", file, err, want.OK)
		}
		cr, err := FromConfig(cfg, file)
		if err != nil {
			t.Fatal(err)
		}
		o := cr.Options
		var mp struct {
			Name string `json:"name"`
			schemas.Sampling
			Streaming string `json:"streaming"`
		}
		if err := json.Unmarshal(want.ModelParams, &mp); err != nil {
			t.Fatal(err)
		}
		s := o.Sampling
		var kw bytes.Buffer
		if len(mp.ChatTemplateKwargs) > 0 {
			json.Compact(&kw, mp.ChatTemplateKwargs)
		}
		eqf := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
		if o.Model != mp.Name || !eqf(s.Temperature, mp.Temperature) || !eqf(s.TopP, mp.TopP) || !eqf(s.RepetitionPenalty, mp.RepetitionPenalty) ||
			!eqf(s.PresencePenalty, mp.PresencePenalty) || !eqf(s.FrequencyPenalty, mp.FrequencyPenalty) ||
			(s.TopK == nil) != (mp.TopK == nil) || s.Seed != mp.Seed ||
			s.MaxTokens != mp.MaxNewTokens || s.ChatTemplateKwargsJSON != kw.String() || o.NoStream != (mp.Streaming == "off") {
			t.Errorf("%s: sampling %+v, the reference's model_params %s", file, s, want.ModelParams)
		}
		if o.NoSalt == want.Salt || o.NoDelays == want.Delays {
			t.Errorf("%s: salt %v delays %v, the reference's %v %v", file, !o.NoSalt, !o.NoDelays, want.Salt, want.Delays)
		}
		if o.WarmupConnections != want.Client.WarmupConnections || o.IdleConnTimeout.Seconds() != want.Client.MaxIdleTime ||
			(want.Client.MaxConnections > 0 && o.MaxConnections != want.Client.MaxConnections) {
			t.Errorf("%s: client warm %d idle %v max %d, the reference's %+v", file, o.WarmupConnections, o.IdleConnTimeout, o.MaxConnections, want.Client)
		}
	}
}

// The Kimi example config sends the kimi-k3 profile's bodies (with its served
// model name).
func TestConfigKimiEqualsProfile(t *testing.T) {
	f := newFake(t)
	ds := ingestRefparity(t, "00-base")
	data, _ := os.ReadFile(filepath.Join("refconfig", "testdata", "kimi_agentic_benchmark.yaml"))
	vars := map[string]string{"DATASET": ds, "ENDPOINT": f.srv.URL, "OUT": filepath.Join(t.TempDir(), "run"), "MODEL_DIR": "/models/k3", "SWEBENCH_SERVICE_AUTH_TOKEN": "tok"}
	cfg, err := refconfig.Parse("kimi", data, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	cr, err := FromConfig(cfg, "kimi")
	if err != nil {
		t.Fatal(err)
	}
	o := cr.Options
	o.Trajectories, o.NoDelays = 2, true
	got := runBodies(t, f, o)
	want := runBodies(t, f, Options{Dataset: ds, Endpoint: f.srv.URL, Out: filepath.Join(t.TempDir(), "run"), Concurrency: 8,
		Profile: "kimi-k3", Model: "/models/Kimi-K3", NoDelays: true})
	compareBodies(t, "kimi config", got, want)
}

// warmup_connections opens that many connections before the first turn; the
// turns reuse them.
func TestWarmupConnections(t *testing.T) {
	f := &fake{t: t, perSession: map[string]int{}, chunks: 3}
	var conns atomic.Int32
	var atFirstTurn atomic.Int32
	atFirstTurn.Store(-1)
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	f.hold = func(seen) { atFirstTurn.CompareAndSwap(-1, conns.Load()) }
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	d := makeDataset(t, chat("c1", 2), chat("c2", 2), chat("c3", 2))
	o := Options{Data: d, Dataset: "mem", Endpoint: f.srv.URL, Out: filepath.Join(t.TempDir(), "run"), Concurrency: 3, NoSalt: true,
		WarmupConnections: 3}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	// the probe's connection and the three warmed
	if n := atFirstTurn.Load(); n != 4 {
		t.Errorf("%d connections open at the first turn, want the probe's and the 3 warmed", n)
	}
	if n := conns.Load(); n != 4 {
		t.Errorf("%d connections in all: the three trajectories did not use the warmed ones", n)
	}
}

// max_connections caps the connections to the endpoint: with 1, three active
// trajectories have one request in flight at a time.
func TestMaxConnections(t *testing.T) {
	f := newFake(t)
	f.hold = func(seen) { time.Sleep(5 * time.Millisecond) }
	d := makeDataset(t, chat("c1", 2), chat("c2", 2), chat("c3", 2))
	o := Options{Data: d, Dataset: "mem", Endpoint: f.srv.URL, Out: filepath.Join(t.TempDir(), "run"), Concurrency: 3, NoSalt: true, MaxConnections: 1}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if f.maxInFlight != 1 {
		t.Errorf("%d requests in flight at once, want 1", f.maxInFlight)
	}
}
