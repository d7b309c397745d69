package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/replay/refconfig"
	"github.com/agentrace/agentrace/schemas"
)

// newestExample loads one of the reference's newest example configs
// (../shared/data/reference-configs), its dataset, endpoint, run folder and
// run length replaced as a user edits them.
func newestExample(t *testing.T, file, ds, endpoint string) Options {
	t.Helper()
	data, err := os.ReadFile(testenv.SharedData(t, "reference-configs/"+file))
	if err != nil {
		t.Fatal(err)
	}
	o := configOptions(t, file, data, map[string]string{"MODEL_DIR": "/models/dsv4", "SWEBENCH_SERVICE_AUTH_TOKEN": "tok-secret-1234"})
	o.Dataset, o.Endpoint, o.Out, o.Trajectories = ds, endpoint, filepath.Join(t.TempDir(), "run"), 2
	return o
}

// The reference's newest Qwen example sends the bytes the reference sent for the
// same trace file (its sampling is the August example's); the newest DeepSeek
// example sends the same bodies with its model name and its model_params where
// the reference's encoder puts them (top_k 0 sent, no penalties, its kwargs in
// the file's order), the same as --profile deepseek-v4.
func TestNewestExamplesSendReferenceBodies(t *testing.T) {
	f := newFake(t)
	ds := ingestRefparity(t, "00-base")
	want := refVerdictBodies(t, "00-base", "qwen_salt")
	o := newestExample(t, "qwen_agentic_benchmark.0479710d.yaml", ds, f.srv.URL)
	if o.MaxDuration != 10*time.Hour || o.Concurrency != 8 || o.NoSalt || o.NoDelays {
		t.Errorf("qwen options: %+v", o)
	}
	compareBodies(t, "newest qwen", runBodies(t, f, o), want)

	const qwenSampling = `"temperature":1.0,"max_completion_tokens":8192,"stream":true,"top_p":0.95,"top_k":20,"repetition_penalty":1.0,"presence_penalty":1.5,"chat_template_kwargs":{"preserve_thinking":true}`
	const dsSampling = `"temperature":1.0,"max_completion_tokens":8192,"stream":true,"top_p":0.95,"top_k":0,"chat_template_kwargs":{"thinking":true,"reasoning_effort":"max","preserve_thinking":true}`
	dsWant := map[string]string{}
	for k, b := range want {
		if !strings.Contains(b, qwenSampling) {
			t.Fatalf("a reference body without the Qwen sampling fields: %s", b)
		}
		b = strings.Replace(b, `{"model":"Qwen/Qwen3.6-35B-A3B",`, `{"model":"deepseek-ai/DeepSeek-V4-Pro-0813",`, 1)
		dsWant[k] = strings.Replace(b, qwenSampling, dsSampling, 1)
	}
	o = newestExample(t, "dsv4_agentic_benchmark.3fa7e483.yaml", ds, f.srv.URL)
	compareBodies(t, "newest deepseek", runBodies(t, f, o), dsWant)
	prof := Options{Dataset: ds, Endpoint: f.srv.URL, Out: filepath.Join(t.TempDir(), "run"), Concurrency: 8, Profile: "deepseek-v4"}
	compareBodies(t, "--profile deepseek-v4", runBodies(t, f, prof), dsWant)
}

// A run's config.yaml validates against the generation it was written for: the
// config's, the newest without one (no min_duration_ms or max_duration_ms,
// which the newest refuses).
func TestRunConfigYAMLByGeneration(t *testing.T) {
	f := newFake(t)
	d := makeDataset(t, chat("a", 1))
	check := func(name string, o Options, gen refconfig.Generation, has, hasNot []string) {
		t.Helper()
		o.Data, o.Dataset, o.Endpoint, o.Out, o.NoSalt, o.NoDelays = d, "mem", f.srv.URL, filepath.Join(t.TempDir(), "run"), true, true
		if _, err := Run(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(o.Out, schemas.RefConfigFile))
		if err != nil {
			t.Fatal(err)
		}
		c, err := refconfig.ParseAs("config.yaml", data, func(string) (string, bool) { return "", false }, gen)
		if err != nil || c.Generation != gen {
			t.Errorf("%s: config.yaml against the %s schema: %v\n%s", name, gen, err, data)
		}
		for _, k := range has {
			if !strings.Contains(string(data), k) {
				t.Errorf("%s: config.yaml lacks %q\n%s", name, k, data)
			}
		}
		for _, k := range hasNot {
			if strings.Contains(string(data), k) {
				t.Errorf("%s: config.yaml holds %q\n%s", name, k, data)
			}
		}
	}
	august := []string{"min_duration_ms", "max_duration_ms", "\ntimeout:"}
	check("flags", Options{Concurrency: 2, MaxDuration: time.Hour, Timeout: time.Minute}, refconfig.GenerationNewest,
		[]string{"max_issue_duration_ms: 3600000", "run_timeout_s: 60.0", "interrupted_teardown_grace_s:"}, august)
	check("flags, no caps", Options{Concurrency: 2}, refconfig.GenerationNewest, nil, append(august, "max_issue_duration_ms", "run_timeout_s"))

	vars := map[string]string{"DATASET": "mem", "ENDPOINT": f.srv.URL}
	cr, err := fromYAML(t, minimalConfig("  runtime:\n    max_duration_ms: 600000\n", "timeout: 30\n"), vars)
	if err != nil {
		t.Fatal(err)
	}
	check("an August config", cr.Options, refconfig.GenerationAugust, []string{"max_duration_ms: 600000", "timeout: 30.0"}, []string{"timeouts:", "max_issue_duration_ms"})
	cr, err = fromYAML(t, minimalConfig("  runtime:\n    max_issue_duration_ms: 10m\n  timeouts:\n    run_timeout_s: 900\n    interrupted_teardown_grace_s: 7\n    metrics_drain_timeout_s: 5\n", ""), vars)
	if err != nil {
		t.Fatal(err)
	}
	if cr.Options.Grace != 7*time.Second || cr.Options.Timeout != 900*time.Second || cr.Options.MaxDuration != 10*time.Minute {
		t.Errorf("newest config: grace %v, timeout %v, max duration %v", cr.Options.Grace, cr.Options.Timeout, cr.Options.MaxDuration)
	}
	check("a newest config", cr.Options, refconfig.GenerationNewest,
		[]string{"max_issue_duration_ms: 600000", "run_timeout_s: 900.0", "interrupted_teardown_grace_s: 7.0", "metrics_drain_timeout_s: 5.0"}, august)
}
