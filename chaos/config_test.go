package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// configYAML is a reference config of an agentic run of ds against endpoint,
// with extra lines appended to its settings block.
func configYAML(ds, endpoint, concurrency, settings string) string {
	return `type: online
model_params:
  name: Qwen/Qwen3.6-35B-A3B
datasets:
  - name: perf
    path: ` + ds + `
    agentic_inference:
      inject_tool_delay: false
      num_trajectories_to_issue: 40
settings:
  load_pattern:
    type: agentic_inference
    target_concurrency: ` + concurrency + `
` + settings + `
endpoint_config:
  endpoints: ["` + endpoint + `"]
`
}

// TestChaosConfig: what --config names is read as every input is. A FIFO as
// the config or as its dataset path, /dev/zero, a 70 MiB config, an alias bomb
// of a kilobyte and target_concurrency 1e9 are refused at once (exit 2, within
// promptExit, under a small memory budget, without a signal). A config of
// concurrency 100000 with warm-up on (warmup_connections -1) under an open-file
// limit of 256 warms as many connections as trajectories can be active (its 40),
// runs, and on SIGINT stops promptly with an interrupted manifest and a whole
// log.
func TestChaosConfig(t *testing.T) {
	h := chaos(t)
	root := t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	_, ds := h.dataset(root)
	sim, endpoint := h.sim(small, "--output-mean", "64")
	defer sim.stop()

	fifo := p("fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) string {
		if err := os.WriteFile(p(name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p(name)
	}
	big := write("big.yaml", configYAML(ds, endpoint, "2", "")+"# "+strings.Repeat("x", 70<<20)+"\n")
	var bomb strings.Builder
	bomb.WriteString("    a0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		bomb.WriteString("    a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat("*a"+string(rune('0'+i-1))+", ", 8) + "*a" + string(rune('0'+i-1)) + "]\n")
	}
	bombed := write("bomb.yaml", strings.Replace(configYAML(ds, endpoint, "2", ""), "  name: Qwen/Qwen3.6-35B-A3B\n", "  name: Qwen/Qwen3.6-35B-A3B\n  chat_template_kwargs:\n"+bomb.String(), 1))
	for _, c := range []struct{ name, config, want string }{
		{"a FIFO config", fifo, "not a regular file (a FIFO)"},
		{"a FIFO dataset", write("fifods.yaml", configYAML(fifo, endpoint, "2", "")), "not a regular file (a FIFO)"},
		{"/dev/zero", "/dev/zero", "not a regular file (a character device)"},
		{"a 70 MiB config", big, "file too large"},
		{"an alias bomb", bombed, "more than 100000 values once its YAML aliases are expanded"},
		{"target_concurrency 1e9", write("huge.yaml", configYAML(ds, endpoint, "1000000000", "")), "target_concurrency: 1000000000: at most 1048576"},
	} {
		r := h.run(spec{budget: small}, 30*time.Second, "agentrace", "replay", "--config", c.config, "--out", p("out-"+strings.ReplaceAll(c.name, " ", "-")))
		r.expectExit(2)
		if r.elapsed > promptExit || !strings.Contains(r.stderr.String(), c.want) {
			t.Errorf("%s: exit %d after %v, want 2 within %v saying %q:\n%s", c.name, r.exitCode, r.elapsed, promptExit, c.want, tail(r.stderr.String()))
		}
	}

	run := p("wide")
	wide := write("wide.yaml", configYAML(ds, endpoint, "100000", "  client:\n    warmup_connections: -1\n"))
	r := h.start(spec{budget: small, nofile: 256}, "agentrace", "replay", "--config", wide, "--grace", "200ms", "--out", run)
	waitFile(t, r, filepath.Join(run, "manifest.json"))
	time.Sleep(time.Second)
	t0 := time.Now()
	r.signal(syscall.SIGINT)
	r.wait(minute)
	if r.exitCode != 130 || time.Since(t0) > promptExit {
		t.Errorf("SIGINT: exit %d after %v, want 130 within %v:\n%s", r.exitCode, time.Since(t0), promptExit, tail(r.stderr.String()))
	}
	if strings.Contains(r.stderr.String(), "file descriptors") || strings.Contains(r.stderr.String(), "client_fault") {
		t.Errorf("warm-up ran out of file descriptors:\n%s", tail(r.stderr.String()))
	}
	checkInterruptedRun(t, h, run)
}
