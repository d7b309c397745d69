package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/replay/swebench/swebenchtest"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/simserver"
)

// simServer serves the simulated endpoint for the test; its URL.
func simServer(t *testing.T) string {
	t.Helper()
	prof, err := simserver.LookupHardware(simserver.DefaultHardware)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- simserver.Serve(ctx, ln, simserver.Config{Hardware: prof, Speedup: 2000, Seed: 1}) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + ln.Addr().String()
}

func readManifest(t *testing.T, dir string) schemas.RunManifest {
	t.Helper()
	var m schemas.RunManifest
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil || json.Unmarshal(b, &m) != nil {
		t.Fatalf("manifest of %s: %v", dir, err)
	}
	return m
}

// The reference's Qwen config runs from its JSONL (ingested into the cache),
// flags win over it, --mode both runs its swe_bench_scorer dataset through the
// service after the performance run, and score --swebench takes the result.
func TestReplayConfigEndToEnd(t *testing.T) {
	root := t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	svc := swebenchtest.New(t, "queued", "agent:2", "eval:3", "succeeded")
	t.Setenv("AGENTRACE_CACHE", p("cache"))
	t.Setenv("DATASET", filepath.Join("..", "..", "testdata", "refparity", "00-base.jsonl"))
	t.Setenv("ENDPOINT", simServer(t))
	t.Setenv("OUT", p("run"))
	t.Setenv("SWEBENCH_URL", svc.URL())
	t.Setenv("SB_TOKEN", svc.Token)
	os.WriteFile(p("instances.jsonl"), []byte(`{"instance_id":"a"}`+"\n"+`{"instance_id":"b"}`+"\n"+`{"instance_id":"c"}`+"\n"), 0o644)
	// the example config, polling the stand-in every millisecond (extras.poll_interval_s)
	ex, err := os.ReadFile(filepath.Join("..", "..", "replay", "refconfig", "testdata", "qwen_agentic_benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := p("qwen.yaml")
	os.WriteFile(cfg, []byte(strings.Replace(string(ex), "        workers: 10\n", "        workers: 10\n        poll_interval_s: 0.001\n", 1)), 0o644)

	out, err := runApp(t, "replay", "--config", cfg, "--no-delays", "--concurrency", "2", "--temperature", "0.5",
		"--mode", "both", "--instances", p("instances.jsonl"), "--swebench-token-env", "SB_TOKEN")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"ingesting the trace file", "replay complete", "SWE-bench: resolved 2 / 3 evaluated (66.7%), 3 submitted"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	m := readManifest(t, p("run"))
	if c := m.Config; c.Seeds == nil || c.Seeds.Dataloader != "42" || c.Concurrency != 2 || *c.Sampling.Temperature != 0.5 || *c.Sampling.TopK != 20 || c.Delays || !c.Salt || c.ConfigFile != cfg {
		t.Errorf("manifest config: %+v", c)
	}
	var req struct {
		Workers int    `json:"workers"`
		Tmpl    string `json:"template"`
		N       int    `json:"num_instances"`
		Gen     map[string]any
	}
	raw, _ := json.Marshal(svc.Request())
	json.Unmarshal(raw, &req)
	if req.Workers != 10 || req.Tmpl != "qwen_tools" || req.N != 3 {
		t.Errorf("RunRequest from the config's extras: %s", raw)
	}
	if !strings.Contains(string(svc.Request()["generation_params"]), `"temperature":0.5`) {
		t.Errorf("generation_params: %s", svc.Request()["generation_params"])
	}
	yaml, _ := os.ReadFile(p("run/config.yaml"))
	for _, want := range []string{"temperature: 0.5", "target_concurrency: 2", "inject_tool_delay: false", "path: " + os.Getenv("DATASET")} {
		if !strings.Contains(string(yaml), want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, yaml)
		}
	}
	if out, err := runApp(t, "score", "--swebench", p("run/swebench"), p("run")); !doneWithVerdict(err) || !strings.Contains(out, "swe") {
		t.Errorf("score --swebench: %v\n%s", err, out)
	}
	// the seeds reach the published summary's run_config as the reference records them
	if out, err := runApp(t, "publish", p("run")); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	var sum struct {
		RunConfig struct {
			Scheduler  *int64 `json:"scheduler_random_seed"`
			Dataloader *int64 `json:"dataloader_random_seed"`
			Warmup     struct {
				Seed *int64 `json:"warmup_random_seed"`
			} `json:"warmup"`
		} `json:"run_config"`
	}
	b, _ := os.ReadFile(p("run/performance/result_summary.json"))
	if json.Unmarshal(b, &sum) != nil || sum.RunConfig.Scheduler == nil || *sum.RunConfig.Scheduler != 42 || *sum.RunConfig.Dataloader != 42 || *sum.RunConfig.Warmup.Seed != 42 {
		t.Errorf("run_config seeds: %s", b)
	}

	// the cache is reused
	t.Setenv("OUT", p("run2"))
	out, err = runApp(t, "replay", "--config", cfg, "--no-delays")
	if err != nil || !strings.Contains(out, "from the cache") || !strings.Contains(out, `agentrace replay: note: accuracy dataset "swe_bench" (swe_bench_scorer) not run in --mode perf`) {
		t.Errorf("second run: %v\n%s", err, out)
	}
}

func TestReplayConfigRefusals(t *testing.T) {
	root := t.TempDir()
	t.Setenv("DATASET", filepath.Join("..", "..", "testdata", "refparity", "00-base.jsonl"))
	t.Setenv("ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OUT", filepath.Join(root, "run"))
	base, err := os.ReadFile(filepath.Join("..", "..", "replay", "refconfig", "testdata", "online_edge_full_run.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"warm-up phase", "  client:\n", "  warmup:\n    enabled: true\n  client:\n", "settings.warmup.enabled"},
		{"unknown key", "  client:\n", "  client:\n    max_idle: 1\n", "settings.client.max_idle: unknown key"},
		{"other API", "api_type: openai", "api_type: sglang", "endpoint_config.api_type"},
		{"sample count", "    dataloader_random_seed: 42\n", "    n_samples_to_issue: 5\n", "settings.runtime.n_samples_to_issue"},
		{"completions control", "  seed: 42\n", "  seed: 42\n  min_new_tokens: 4\n", "model_params.min_new_tokens"},
	} {
		f := filepath.Join(root, tc.name+".yaml")
		os.WriteFile(f, []byte(strings.Replace(string(base), tc.old, tc.new, 1)), 0o644)
		out, err := runApp(t, "replay", "--config", f)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q\n%s", tc.name, err, tc.want, out)
		}
	}
	// --mode acc on a config without swe_bench_scorer names the dataset it cannot run
	f := filepath.Join(root, "edge.yaml")
	os.WriteFile(f, base, 0o644)
	if _, err := runApp(t, "replay", "--config", f, "--mode", "acc"); err == nil || !strings.Contains(err.Error(), `"bfcl_v4": agentrace runs the swe_bench_scorer accuracy tier only`) {
		t.Errorf("mode acc: %v", err)
	}
}

func TestSwebenchCommand(t *testing.T) {
	root := t.TempDir()
	svc := swebenchtest.New(t, "agent:1", "succeeded")
	t.Setenv("SB_TOKEN", svc.Token)
	inst := filepath.Join(root, "i.jsonl")
	os.WriteFile(inst, []byte(`{"instance_id":"a"}`+"\n"+`{"instance_id":"b"}`+"\n"+`{"instance_id":"c"}`+"\n"+`{"instance_id":"d"}`+"\n"), 0o644)
	out, err := runApp(t, "swebench", "--service", svc.URL(), "--auth-token-env", "SB_TOKEN", "--endpoint", "http://m:30000",
		"--profile", "qwen3.6-35b-a3b", "--instances", inst, "--num-instances", "3", "--poll-interval", "1ms", "--out", filepath.Join(root, "sb"))
	if err != nil || !strings.Contains(out, "resolved 2 / 3 evaluated") {
		t.Fatalf("%v\n%s", err, out)
	}
	if m := string(svc.Request()["model_name"]); m != `"Qwen/Qwen3.6-35B-A3B"` {
		t.Errorf("model from the profile: %s", m)
	}
	if ids := string(svc.Request()["evaluated_instance_ids"]); ids != `["a","b","c"]` {
		t.Errorf("ids %s", ids)
	}
}

// The sampling flags reach the body in the reference's key order, prompt's as
// replay's.
func TestPromptSamplingFlags(t *testing.T) {
	ds := filepath.Join(t.TempDir(), "ds")
	if out, err := runApp(t, "ingest", "--out", ds, filepath.Join("..", "..", "testdata", "refparity", "00-base.jsonl")); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err := runApp(t, "prompt", "--dataset", ds, "--conversation", "demo__calc-101", "--turn", "1", "--no-salt", "--model", "m",
		"--temperature", "0", "--sampling-seed", "42", "--top-k", "5", "--frequency-penalty", "0.25", "--chat-template-kwargs", `{"b": 1, "a": {"z": 2.0}}`, "--max-tokens", "1024")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{`"temperature":0.0,"max_completion_tokens":1024,"stream":true,"seed":42,"top_k":5,"frequency_penalty":0.25,"chat_template_kwargs":{"b":1,"a":{"z":2.0}},"tools"`} {
		if !strings.Contains(out, want) {
			t.Errorf("body lacks %s:\n%s", want, out)
		}
	}
}

// A config's api_key (from the environment) is sent and written nowhere: not in
// config.yaml, the manifest, or what is printed.
func TestConfigAPIKeyNeverWritten(t *testing.T) {
	const key = "sk-config-secret-key"
	root := t.TempDir()
	t.Setenv("AGENTRACE_CACHE", filepath.Join(root, "cache"))
	t.Setenv("DATASET", filepath.Join("..", "..", "testdata", "refparity", "00-base.jsonl"))
	t.Setenv("ENDPOINT", strings.Replace(simServer(t), "http://", "http://user:"+key+"@", 1))
	t.Setenv("OUT", filepath.Join(root, "run"))
	t.Setenv("MY_KEY", key)
	base, _ := os.ReadFile(filepath.Join("..", "..", "replay", "refconfig", "testdata", "online_edge_full_run.yaml"))
	cfg := filepath.Join(root, "edge.yaml")
	os.WriteFile(cfg, []byte(strings.Replace(string(base), "api_key: null", "api_key: ${MY_KEY}", 1)), 0o644)
	// the sim serves Qwen3.6-35B-A3B, not the Edge config's model
	out, err := runApp(t, "replay", "--config", cfg, "--model", "Qwen/Qwen3.6-35B-A3B")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(out, key) {
		t.Errorf("printed the key:\n%s", out)
	}
	filepath.Walk(filepath.Join(root, "run"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
				t.Errorf("%s holds the key", p)
			}
		}
		return nil
	})
	if y, _ := os.ReadFile(filepath.Join(root, "run", "config.yaml")); !strings.Contains(string(y), "api_key: <redacted>") || !strings.Contains(string(y), "http://<redacted>@") {
		t.Errorf("config.yaml:\n%s", y)
	}
}

// A seed is sent as large as the reference's encoder sends one (a uint64), and
// refused beyond.
func TestSamplingSeedRange(t *testing.T) {
	ds := filepath.Join(t.TempDir(), "ds")
	if out, err := runApp(t, "ingest", "--out", ds, filepath.Join("..", "..", "testdata", "refparity", "00-base.jsonl")); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	args := []string{"prompt", "--dataset", ds, "--conversation", "demo__calc-101", "--turn", "1", "--no-salt", "--sampling-seed"}
	out, err := runApp(t, append(args, "18446744073709551615")...)
	if err != nil || !strings.Contains(out, `"stream":true,"seed":18446744073709551615,`) {
		t.Errorf("%v\n%s", err, out)
	}
	if _, err := runApp(t, append(args, "18446744073709551616")...); err == nil || !strings.Contains(err.Error(), "want an integer from -2^63 to 2^64-1") {
		t.Errorf("a seed past uint64: %v", err)
	}
}

// The run folder may not hold the config it was made from, nor the trace file.
func TestConfigIsAnInput(t *testing.T) {
	root := t.TempDir()
	t.Setenv("AGENTRACE_CACHE", filepath.Join(root, "cache"))
	run := filepath.Join(root, "run")
	os.MkdirAll(run, 0o755)
	base, _ := os.ReadFile(filepath.Join("..", "..", "replay", "refconfig", "testdata", "online_edge_full_run.yaml"))
	cfg := filepath.Join(run, "edge.yaml")
	os.WriteFile(cfg, base, 0o644)
	t.Setenv("DATASET", filepath.Join("..", "..", "testdata", "refparity", "00-base.jsonl"))
	t.Setenv("ENDPOINT", simServer(t))
	t.Setenv("OUT", run)
	if _, err := runApp(t, "replay", "--config", cfg); err == nil || !strings.Contains(err.Error(), "overlaps an input") {
		t.Errorf("a run into the config's folder: %v", err)
	}
	if b, _ := os.ReadFile(cfg); string(b) != string(base) {
		t.Error("the config was touched")
	}
}
