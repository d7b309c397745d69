package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/replay/refconfig"
)

// minimalConfig is a config of an agentic run of the dataset at ${DATASET}
// against ${ENDPOINT}, with extra YAML appended to its settings block and top
// level.
func minimalConfig(settings, top string) string {
	return `type: online
model_params:
  name: test-model
datasets:
  - name: perf
    path: ${DATASET}
    agentic_inference:
      inject_tool_delay: false
settings:
  load_pattern:
    type: agentic_inference
    target_concurrency: 2
` + settings + `
endpoint_config:
  endpoints: ["${ENDPOINT}"]
` + top
}

func fromYAML(t *testing.T, y string, vars map[string]string) (*ConfigRun, error) {
	t.Helper()
	cfg, err := refconfig.Parse("c.yaml", []byte(y), func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		return nil, err
	}
	return FromConfig(cfg, "c.yaml")
}

// A key given in a config (endpoint_config.api_key: ${MY_KEY}) and a token in
// an accuracy dataset's extras reach the run's scrubber: a server that echoes
// the Authorization header leaves neither in turns.arrows, turns.parquet, the
// manifest, config.yaml, the progress lines or a turn's error message.
func TestConfigAPIKeyMaskedWhenEchoed(t *testing.T) {
	const key, token = "sk-CONFIGSECRET-5151", "svc-TOKENSECRET-7171"
	// The config's dataloader seed (the default, 42) starts the second of two
	// conversations first.
	d := makeDataset(t, chat("deny", 1), chat("ok", 2))
	f := newFake(t)
	f.fault = func(w http.ResponseWriter, r *http.Request, s seen) bool {
		js, _ := json.Marshal("ok " + r.Header.Get("Authorization") + " " + token)
		if s.session == "deny" {
			http.Error(w, `{"error":{"message":"bad key `+string(js[1:len(js)-1])+`"}}`, http.StatusUnauthorized)
			return true
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%s}}]}\n\n", js)
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		return true
	}
	y := minimalConfig("", `  api_key: ${MY_KEY}
`) + `  # an accuracy dataset's token
`
	y = strings.Replace(y, "settings:", `  - name: swe
    type: accuracy
    accuracy_config:
      eval_method: swe_bench_scorer
      extras:
        swebench_service_auth_token: ${SVC_TOKEN}
settings:`, 1)
	cr, err := fromYAML(t, y, map[string]string{"DATASET": "mem", "ENDPOINT": f.srv.URL, "MY_KEY": key, "SVC_TOKEN": token})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	var progress testenv.SyncBuffer
	o := cr.Options
	o.Data, o.Out, o.Concurrency, o.NoSalt, o.Progress, o.Events = d, dir, 1, true, &progress, eventLines(&progress)
	sum, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[0].headers.Get("Authorization"); got != "Bearer "+key {
		t.Fatalf("the server got Authorization %q", got)
	}
	recs := byKey(t, readLog(t, dir))
	if c := recs["ok#1"].OutputContent; !strings.Contains(c, "<redacted>") || strings.Contains(c, key) {
		t.Errorf("echoed content %q", c)
	}
	if e := recs["deny#1"].Error; !strings.Contains(e, "HTTP 401") || strings.Contains(e, key) || strings.Contains(e, token) {
		t.Errorf("401 row's error %q", e)
	}
	if n, leaks := testenv.Leaks(t, dir, key, token); n < 4 || len(leaks) > 0 {
		t.Errorf("%d files read; leaks: %v", n, leaks)
	}
	if _, err := os.Stat(filepath.Join(dir, "turns.parquet")); err != nil {
		t.Errorf("no turns.parquet to check: %v", err)
	}
	if out := progress.String() + sum.String(); strings.Contains(out, key) || strings.Contains(out, token) {
		t.Errorf("progress or summary holds a secret:\n%s", out)
	}
}

// target_concurrency far above the limit is refused as --concurrency is, naming
// its key, before anything is dialled; --concurrency too. Warm-up opens at most
// one connection per trajectory that can be active at once, whatever the
// concurrency (warmup_connections -1 is one per active trajectory).
func TestConfigConcurrencyLimitsAndWarmup(t *testing.T) {
	var conns atomic.Int64
	f := newFake(t)
	f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	vars := map[string]string{"DATASET": "mem", "ENDPOINT": f.srv.URL}
	huge := strings.Replace(minimalConfig("", ""), "target_concurrency: 2", "target_concurrency: 1000000000", 1)
	if _, err := fromYAML(t, huge, vars); err == nil || !strings.Contains(err.Error(), "settings.load_pattern.target_concurrency") || !strings.Contains(err.Error(), "at most 1048576") {
		t.Errorf("target_concurrency 1e9: %v", err)
	}
	d := makeDataset(t, chat("a", 1), chat("b", 1))
	t0 := time.Now()
	_, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: filepath.Join(t.TempDir(), "r"), Concurrency: 1_000_000_000, NoSalt: true})
	if err == nil || !strings.Contains(err.Error(), "concurrency 1000000000: at most 1048576") || conns.Load() != 0 || time.Since(t0) > 2*time.Second {
		t.Errorf("--concurrency 1e9: %v after %v, %d connections", err, time.Since(t0), conns.Load())
	}

	wide := strings.Replace(minimalConfig("  client:\n    warmup_connections: -1\n", ""), "target_concurrency: 2", "target_concurrency: 5000", 1)
	cr, err := fromYAML(t, wide, vars)
	if err != nil {
		t.Fatal(err)
	}
	o := cr.Options
	o.Data, o.Out, o.NoSalt, o.NoDelays = d, filepath.Join(t.TempDir(), "run"), true, true
	t0 = time.Now()
	sum, err := Run(context.Background(), o)
	if err != nil || sum.State != "complete" {
		t.Fatalf("%v %v", sum, err)
	}
	// the probe's connection, at most 2 warm ones, and none beyond
	if n := conns.Load(); n > 3 || time.Since(t0) > 5*time.Second {
		t.Errorf("concurrency 5000 on 2 trajectories: %d connections opened in %v, want at most 3", n, time.Since(t0))
	}
}

// Durations too long for a time.Duration are refused with their key and a range,
// never wrapped round to a negative duration.
func TestConfigDurationsInRange(t *testing.T) {
	vars := map[string]string{"DATASET": "mem", "ENDPOINT": "http://127.0.0.1:9"}
	for _, c := range []struct{ name, settings, top, want string }{
		{"timeout 1e308", "", "timeout: 1e308\n", "timeout: 1e+308 s: out of range"},
		{"run_timeout_s 1e308", "  timeouts:\n    run_timeout_s: 1e308\n", "", "settings.timeouts.run_timeout_s: 1e+308 s: out of range"},
		{"max_idle_time 1e300", "  client:\n    max_idle_time: 1e300\n", "", "settings.client.max_idle_time: 1e+300 s: out of range"},
		{"turn_timeout_s 1e300", "", "", "turn_timeout_s: 1e+300 s: out of range"},
	} {
		y := minimalConfig(c.settings, c.top)
		if c.name == "turn_timeout_s 1e300" {
			y = strings.Replace(y, "inject_tool_delay: false", "inject_tool_delay: false\n      turn_timeout_s: 1e300", 1)
		}
		_, err := fromYAML(t, y, vars)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "-") && strings.Contains(err.Error(), "negative") {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	cr, err := fromYAML(t, minimalConfig("  runtime:\n    max_duration_ms: 9223372036854\n", ""), vars)
	if err != nil || cr.Options.MaxDuration <= 0 {
		t.Errorf("max_duration_ms at the limit: %v, %v", err, cr)
	}
}
