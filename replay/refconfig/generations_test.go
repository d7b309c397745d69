package refconfig

import (
	"github.com/agentrace/agentrace/internal/official"
	"os"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// The reference's newest example configs (../shared/data/reference-configs,
// read from there) parse as the newest generation, with the values they give.
func TestNewestExamples(t *testing.T) {
	vars := env(map[string]string{"MODEL_DIR": "/models/dsv4", "SWEBENCH_SERVICE_AUTH_TOKEN": "tok-secret-1234"})
	data, err := os.ReadFile(testenv.SharedData(t, "reference-configs/qwen_agentic_benchmark.0479710d.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse("qwen", data, vars)
	if err != nil {
		t.Fatal(err)
	}
	if q.Generation != GenerationNewest || q.Settings.Runtime.MaxIssueDurationMs == nil || *q.Settings.Runtime.MaxIssueDurationMs != 36000000 {
		t.Errorf("qwen: generation %q, max_issue_duration_ms %v", q.Generation, q.Settings.Runtime.MaxIssueDurationMs)
	}
	data, err = os.ReadFile(testenv.SharedData(t, "reference-configs/dsv4_agentic_benchmark.3fa7e483.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse("dsv4", data, vars)
	if err != nil {
		t.Fatal(err)
	}
	js, _, err := d.ModelParams.KwargsJSON()
	if err != nil || js != `{"thinking":true,"reasoning_effort":"max","preserve_thinking":true}` || *d.ModelParams.TopK != 0 ||
		*d.ModelParams.TokenizerName != "/models/dsv4" || d.ModelParams.Streaming != "on" {
		t.Errorf("dsv4: kwargs %s (%v), top_k %d, tokenizer %q, streaming %q", js, err, *d.ModelParams.TopK, *d.ModelParams.TokenizerName, d.ModelParams.Streaming)
	}
	if s := d.Secrets(); len(s) != 1 || s[0] != "tok-secret-1234" {
		t.Errorf("dsv4 secrets %q, want the service token", s)
	}
	if out, err := Marshal(d); err != nil || strings.Contains(string(out), "tok-secret-1234") {
		t.Errorf("dsv4 written: %v\n%s", err, out)
	}
}

// A config is of the generation its keys say; keys of both, a key either one
// removed, and an unknown key are refused; ParseAs holds a file to one.
func TestGenerations(t *testing.T) {
	const august, newest = GenerationAugust, GenerationNewest
	for _, c := range []struct {
		name, yaml string
		as         Generation // "": Parse
		want       Generation
		err        string
	}{
		{"neither", "", "", newest, ""},
		{"min_duration_ms", "settings:\n  runtime:\n    min_duration_ms: 0\n", "", august, ""},
		{"top-level timeout", "timeout: 30\n", "", august, ""},
		{"settings.drain", "settings:\n  drain:\n    performance_timeout_s: 10\n", "", august, ""},
		{"service_ready_timeout_s", "settings:\n  service_ready_timeout_s: 10\n", "", august, ""},
		{"max_issue_duration_ms", "settings:\n  runtime:\n    max_issue_duration_ms: 10m\n", "", newest, ""},
		{"settings.timeouts", "settings:\n  timeouts:\n    run_timeout_s: 900\n    endpoint_response_idle_timeout_s: 300\n    warmup_drain_timeout_s: 12.5\n    performance_drain_timeout_s: 30\n    accuracy_drain_timeout_s: null\n    metrics_drain_timeout_s: 300\n    interrupted_teardown_grace_s: 30\n    service_ready_timeout_s: 0\n", "", newest, ""},
		{"both", "timeout: 30\nsettings:\n  timeouts:\n    run_timeout_s: 900\n", "", "", "settings.timeouts: a key of the reference's newest schema, where timeout is of its August 2026 release"},
		{"both in runtime", "settings:\n  runtime:\n    max_issue_duration_ms: 10\n    max_duration_ms: 10\n", "", "", "a key of the reference's newest schema"},
		{"min_issue_duration_ms", "settings:\n  runtime:\n    min_issue_duration_ms: 10\n", "", "", "settings.runtime.min_issue_duration_ms: unknown key"},
		{"an unknown timeout", "settings:\n  timeouts:\n    worker_initialization_timeout_s: 90\n", "", "", "settings.timeouts.worker_initialization_timeout_s: unknown key"},
		{"a zero run_timeout_s", "settings:\n  timeouts:\n    run_timeout_s: 0\n", "", "", "settings.timeouts.run_timeout_s: 0: must be positive"},
		{"an unknown key", "settings:\n  nope: 1\n", "", "", "settings.nope: unknown key"},
		{"newest refuses drain", "settings:\n  drain:\n    performance_timeout_s: 10\n", newest, "", "settings.drain: unknown key in the reference's newest schema"},
		{"newest refuses min_duration_ms", "settings:\n  runtime:\n    min_duration_ms: 0\n", newest, "", "settings.runtime.min_duration_ms: unknown key in the reference's newest schema"},
		{"newest refuses timeout", "timeout: 30\n", newest, "", "timeout: unknown key in the reference's newest schema"},
		{"august refuses timeouts", "settings:\n  timeouts:\n    run_timeout_s: 900\n", august, "", "settings.timeouts: unknown key in the reference's August 2026 schema"},
		{"august takes its keys", "timeout: 30\nsettings:\n  runtime:\n    max_duration_ms: 700000\n", august, august, ""},
	} {
		y := []byte(base + c.yaml)
		var cfg *Config
		var err error
		if c.as == "" {
			cfg, err = Parse("c.yaml", y, env(nil))
		} else {
			cfg, err = ParseAs("c.yaml", y, env(nil), c.as)
		}
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && cfg.Generation != c.want:
			t.Errorf("%s: generation %q, want %q", c.name, cfg.Generation, c.want)
		}
	}
}

// Binding the Endpoints ruleset (by its name or its alias) pins its published
// seed set over the file's seeds, in config.yaml too; an unknown ruleset is
// refused.
func TestRulesetPinsSeeds(t *testing.T) {
	for _, name := range []string{"mlperf-endpoints-v1.0-2026-10-C1-A", "mlperf-endpoints-current"} {
		y := base + "submission_ref:\n  model: m\n  ruleset: " + name + "\nsettings:\n  runtime:\n    scheduler_random_seed: 42\n"
		c, err := Parse("c.yaml", []byte(y), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		rt := c.Settings.Runtime
		if *rt.SchedulerRandomSeed != "10487924139932647040" || *rt.DataloaderRandomSeed != "586478644936801402" || *c.Settings.Warmup.WarmupRandomSeed != "586478644936801402" {
			t.Errorf("%s: seeds %s %s %s", name, *rt.SchedulerRandomSeed, *rt.DataloaderRandomSeed, *c.Settings.Warmup.WarmupRandomSeed)
		}
		out, err := Marshal(c)
		if err != nil || !strings.Contains(string(out), "scheduler_random_seed: 10487924139932647040\n") {
			t.Errorf("%s: written %v\n%s", name, err, out)
		}
		if back, err := ParseAs("config.yaml", out, env(nil), GenerationNewest); err != nil || *back.Settings.Runtime.DataloaderRandomSeed != "586478644936801402" {
			t.Errorf("%s: read back: %v", name, err)
		}
	}
	rs, _ := official.LookupRuleset("mlperf-endpoints-current")
	if rs.Model != "9315206023656308754" || rs.SeedSet != "A" {
		t.Errorf("ruleset %+v", rs)
	}
	_, err := Parse("c.yaml", []byte(base+"submission_ref:\n  model: m\n  ruleset: mlperf-inference-v6.1\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), `submission_ref.ruleset: "mlperf-inference-v6.1": not a ruleset agentrace knows`) {
		t.Errorf("unknown ruleset: %v", err)
	}
}

// Marshal writes the keys of the config's generation only, so that what it
// writes validates against that generation.
func TestMarshalByGeneration(t *testing.T) {
	y := base + "timeout: 30\nsettings:\n  runtime:\n    min_duration_ms: 0\n    max_duration_ms: 600000\n  service_ready_timeout_s: 5\n"
	c, err := Parse("c.yaml", []byte(y), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseAs("config.yaml", out, env(nil), GenerationAugust); err != nil || !strings.Contains(string(out), "max_duration_ms: 600000") {
		t.Errorf("August: %v\n%s", err, out)
	}
	ms := Millis(600000)
	c.Generation = GenerationNewest
	c.Settings.Runtime.MaxIssueDurationMs = &ms
	c.Settings.Timeouts = &Timeouts{RunTimeoutS: c.Timeout}
	out, err = Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"min_duration_ms", "max_duration_ms", "\ntimeout:", "service_ready_timeout_s: 5", "\n  drain:"} {
		if strings.Contains(string(out), k) {
			t.Errorf("newest: writes %q\n%s", k, out)
		}
	}
	if back, err := ParseAs("config.yaml", out, env(nil), GenerationNewest); err != nil || *back.Settings.Timeouts.RunTimeoutS != 30 {
		t.Errorf("newest read back: %v\n%s", err, out)
	}
}
