package refconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestExpandMatchesReference(t *testing.T) {
	data, err := os.ReadFile("testdata/env-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Env   map[string]string `json:"env"`
		Cases [][3]*string      `json:"cases"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	lookup := func(k string) (string, bool) { v, ok := doc.Env[k]; return v, ok }
	for _, c := range doc.Cases {
		in := *c[0]
		got, err := Expand(in, lookup)
		switch {
		case c[2] != nil:
			if err == nil {
				t.Errorf("Expand(%q) = %q, want the reference's error %q", in, got, *c[2])
			} else if !strings.EqualFold(err.Error(), *c[2]) {
				t.Errorf("Expand(%q) error %q, want %q", in, err, *c[2])
			}
		case err != nil:
			t.Errorf("Expand(%q): %v, want %q", in, err, *c[1])
		case got != *c[1]:
			t.Errorf("Expand(%q) = %q, want %q", in, got, *c[1])
		}
	}
}

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseExamples(t *testing.T) {
	vars := env(map[string]string{"DATASET": "d.jsonl", "ENDPOINT": "http://h:1", "OUT": "out", "MODEL_DIR": "/models/k3", "SWEBENCH_SERVICE_AUTH_TOKEN": "t"})
	for _, f := range []string{"qwen_agentic_benchmark.yaml", "online_edge_full_run.yaml", "kimi_agentic_benchmark.yaml"} {
		data, err := os.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(f, data, vars)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if *c.Datasets[0].Path != "d.jsonl" || c.EndpointConfig.Endpoints[0] != "http://h:1" || *c.ReportDir != "out" {
			t.Errorf("%s: variables not expanded: %+v", f, c)
		}
	}
	kimi, _ := os.ReadFile("testdata/kimi_agentic_benchmark.yaml")
	if _, err := Parse("kimi", kimi, env(map[string]string{"DATASET": "d", "ENDPOINT": "http://h", "OUT": "o", "MODEL_DIR": "m"})); err == nil ||
		!strings.Contains(err.Error(), "datasets[1].accuracy_config.extras.swebench_service_auth_token: environment variable ${SWEBENCH_SERVICE_AUTH_TOKEN} is not set") {
		t.Errorf("an unset variable is refused at load, in any mode, as the reference refuses it: %v", err)
	}
	data, _ := os.ReadFile("testdata/qwen_agentic_benchmark.yaml")
	c, err := Parse("q", data, vars)
	if err != nil {
		t.Fatal(err)
	}
	js, _, err := c.ModelParams.KwargsJSON()
	if err != nil || js != `{"preserve_thinking":true}` {
		t.Errorf("kwargs %q %v", js, err)
	}
	if got := c.Datasets[1].AccuracyConfig.Extras["swebench_service_url"]; got != "http://localhost:18080" {
		t.Errorf("extras default not expanded: %v", got)
	}
}

func TestParseRefuses(t *testing.T) {
	base := "type: online\nmodel_params:\n  name: m\nendpoint_config:\n  endpoints: [\"http://h\"]\n"
	for _, tc := range []struct{ name, yaml, path, msg string }{
		{"unknown top key", base + "bogus: 1\n", "bogus", "unknown key"},
		{"unknown nested key", base + "settings:\n  client:\n    max_idle: 1\n", "settings.client.max_idle", "unknown key"},
		{"unknown key in a list entry", base + "datasets:\n  - path: x\n    agentic_inference:\n      salt: true\n", "datasets[0].agentic_inference.salt", "unknown key"},
		{"wrong type", base + "settings:\n  load_pattern:\n    target_concurrency: lots\n", "settings.load_pattern.target_concurrency", "want an integer"},
		{"fractional integer", base + "settings:\n  load_pattern:\n    target_concurrency: 1.5\n", "settings.load_pattern.target_concurrency", "want an integer"},
		{"unset variable", base + "report_dir: ${NOPE}\n", "report_dir", "not set"},
		{"no scheme", "type: online\nmodel_params:\n  name: m\nendpoint_config:\n  endpoints: [\"h:1\"]\n", "endpoint_config.endpoints[0]", "scheme"},
		{"no model", "type: online\nendpoint_config:\n  endpoints: [\"http://h\"]\n", "model_params.name", "missing"},
		{"bad type", "type: batch\nmodel_params:\n  name: m\nendpoint_config:\n  endpoints: [\"http://h\"]\n", "type", "want offline"},
		{"max below min", base + "settings:\n  runtime:\n    min_duration_ms: 10s\n    max_duration_ms: 5000\n", "settings.runtime.max_duration_ms", "must be >="},
	} {
		_, err := Parse("c.yaml", []byte(tc.yaml), env(nil))
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%s: err %v, want a config error", tc.name, err)
			continue
		}
		if ce.Path != tc.path || !strings.Contains(ce.Msg, tc.msg) {
			t.Errorf("%s: %v, want path %q and %q", tc.name, err, tc.path, tc.msg)
		}
	}
}

func TestParseCoerces(t *testing.T) {
	y := "type: online\nmodel_params:\n  name: m\n  temperature: \"0\"\n  top_k: 20.0\n  seed: ${SEED}\n" +
		"  chat_template_kwargs:\n    z: 1\n    a: [1.0, \"s\"]\nsettings:\n  runtime:\n    max_duration_ms: 10m\n" +
		"  load_pattern:\n    target_concurrency: \"${C}\"\nendpoint_config:\n  endpoints: [\"http://h\"]\n"
	c, err := Parse("c", []byte(y), env(map[string]string{"SEED": "42", "C": "8"}))
	if err != nil {
		t.Fatal(err)
	}
	mp := c.ModelParams
	if *mp.Temperature != 0 || *mp.TopK != 20 || *mp.Seed != "42" || *c.Settings.LoadPattern.TargetConcurrency != 8 || *c.Settings.Runtime.MaxDurationMs != 600000 {
		t.Errorf("coerced %+v", c)
	}
	if js, _, _ := mp.KwargsJSON(); js != `{"z":1,"a":[1.0,"s"]}` {
		t.Errorf("kwargs keep the file's order and Python floats: %s", js)
	}
}

// parseMarshal parses the config y and writes it back.
func parseMarshal(t *testing.T, y string) []byte {
	t.Helper()
	c, err := Parse("c", []byte(y), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMarshalRedacts(t *testing.T) {
	y := "type: online\nmodel_params:\n  name: m\nendpoint_config:\n  endpoints: [\"http://u:pw@h:1/v1?api_key=k1\"]\n  api_key: sk-secret\n" +
		"datasets:\n  - name: swe\n    type: accuracy\n    accuracy_config:\n      extras:\n        swebench_service_auth_token: tok-secret\n        workers: 3\n"
	out := parseMarshal(t, y)
	s := string(out)
	for _, secret := range []string{"sk-secret", "tok-secret", "pw", "k1", "u:"} {
		if strings.Contains(s, secret) {
			t.Errorf("config.yaml holds %q:\n%s", secret, s)
		}
	}
	back, err := Parse("back", out, env(nil))
	if err != nil {
		t.Fatalf("written config does not parse back: %v\n%s", err, s)
	}
	if back.Datasets[0].AccuracyConfig.Extras["workers"] != 3 {
		t.Errorf("round trip lost extras: %s", s)
	}
}

func TestMarshalFloats(t *testing.T) {
	y := "type: online\nmodel_params:\n  name: m\n  temperature: 1\n  top_p: 0.95\ndatasets:\n  - path: x\n    agentic_inference:\n      turn_timeout_s: 600\n    accuracy_config:\n      extras:\n        poll_interval_s: 2.0\nendpoint_config:\n  endpoints: [\"http://h\"]\n"
	out := parseMarshal(t, y)
	for _, want := range []string{"temperature: 1.0\n", "top_p: 0.95\n", "turn_timeout_s: 600.0\n", "poll_interval_s: 2.0\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("want %q in\n%s", want, out)
		}
	}
}

func TestEffectiveOverride(t *testing.T) {
	head := "type: online\nmodel_params:\n  name: m\n  temperature: 1.0\n  max_new_tokens: 8192\n  chat_template_kwargs:\n    preserve_thinking: true\n" +
		"endpoint_config:\n  endpoints: [\"http://h\"]\ndatasets:\n  - path: x\n    generation_config_override:\n"
	for _, tc := range []struct{ name, override, want, err string }{
		{"merged", "      max_new_tokens: 32768\n      temperature: 0\n      chat_template_kwargs:\n        enable_thinking: false\n",
			`0 32768 {"preserve_thinking":true,"enable_thinking":false}`, ""},
		{"identity key", "      name: other\n", "", "datasets[0].generation_config_override.name: not honoured per dataset"},
		{"unknown key", "      temprature: 0\n", "", "datasets[0].generation_config_override.temprature: unknown key"},
		{"bad value", "      temperature: hot\n", "", "datasets[0].generation_config_override.temperature: want a number"},
	} {
		c, err := Parse("c", []byte(head+tc.override), env(nil))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		mp, err := c.Datasets[0].Effective(c.ModelParams, "c", "datasets[0]")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		js, _, _ := mp.KwargsJSON()
		if got := fmt.Sprintf("%g %d %s", *mp.Temperature, *mp.MaxNewTokens, js); got != tc.want || mp.Name != "m" {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}
