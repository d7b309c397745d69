package refconfig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/infile"
	"go.yaml.in/yaml/v3"
)

const base = `type: online
model_params:
  name: m
endpoint_config:
  endpoints: ["http://x"]
`

// A value that several aliases name is expanded once, in the text the file
// holds: a variable's value is never expanded again ($Z in a key is not a
// variable, $HOME in it stays), and $$ gives one $ wherever the alias is used.
func TestExpandOnceThroughAliases(t *testing.T) {
	for _, key := range []string{"sk-AB$Zsecretpart99", "sk-AB$HOME", "sk-AB${HOME}"} {
		y := base + `  api_key: &k "${MY_KEY}"
datasets:
  - name: swe
    type: accuracy
    accuracy_config:
      extras:
        auth_token: *k
        again: *k
        literal: &l "a$$HOME"
        literal_again: *l
`
		c, err := Parse("c.yaml", []byte(y), env(map[string]string{"MY_KEY": key, "HOME": "/root"}))
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		ex := c.Datasets[0].AccuracyConfig.Extras
		if *c.EndpointConfig.APIKey != key || ex["auth_token"] != key || ex["again"] != key {
			t.Errorf("key %q: api_key %q, aliases %q %q", key, *c.EndpointConfig.APIKey, ex["auth_token"], ex["again"])
		}
		if ex["literal"] != "a$HOME" || ex["literal_again"] != "a$HOME" {
			t.Errorf("$$ through an alias: %q %q, want a$HOME", ex["literal"], ex["literal_again"])
		}
		if s := c.Secrets(); len(s) == 0 || s[0] != key {
			t.Errorf("secrets %q, want the key", s)
		}
	}
}

// An error about a value quotes what the file wrote, never a variable's value.
func TestErrorsQuoteTheFileNotTheEnvironment(t *testing.T) {
	const secret = "sk-NOTANUMBER-4242"
	y := base + "settings:\n  client:\n    max_idle_time: ${MY_KEY}\n"
	_, err := Parse("c.yaml", []byte(y), env(map[string]string{"MY_KEY": secret}))
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), `"${MY_KEY}"`) {
		t.Errorf("error %v: want it to quote ${MY_KEY}, not its value", err)
	}
}

// aliasBomb is a config of about a kilobyte whose chat_template_kwargs expand
// to 9^9 values.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("type: online\nendpoint_config:\n  endpoints: [\"http://x\"]\nmodel_params:\n  name: m\n  chat_template_kwargs:\n    a0: &a0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		b.WriteString("    a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 9 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// An alias bomb is refused in bounded time and memory; so is one that reaches
// KwargsJSON without Parse.
func TestAliasBombRefused(t *testing.T) {
	y := aliasBomb()
	if len(y) > 1100 {
		t.Fatalf("the bomb is %d bytes", len(y))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	t0 := time.Now()
	_, err := Parse("bomb.yaml", []byte(y), env(nil))
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "more than 100000 values once its YAML aliases are expanded") {
		t.Errorf("Parse: %v", err)
	}
	if d, mem := time.Since(t0), after.TotalAlloc-before.TotalAlloc; d > time.Second || mem > 64<<20 {
		t.Errorf("Parse took %v and %d MB", d, mem>>20)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(y), &doc); err != nil {
		t.Fatal(err)
	}
	mp := ModelParams{ChatTemplateKwargs: *doc.Content[0].Content[5].Content[3]}
	t0 = time.Now()
	if _, _, err := mp.KwargsJSON(); err == nil || !strings.Contains(err.Error(), "more than 100000 values") || time.Since(t0) > time.Second {
		t.Errorf("KwargsJSON: %v after %v", err, time.Since(t0))
	}
}

// Durations in milliseconds are refused out of a time.Duration's range, with
// the key and the range, never wrapped round to a negative one.
func TestMillisInRange(t *testing.T) {
	for _, c := range []struct{ runtime, want string }{
		{"max_duration_ms: 9223372036854775807", "9223372036854775807 ms: out of range (at most 9223372036854 ms"},
		{"max_duration_ms: 99999999999999999999", `"99999999999999999999": out of range`},
		{`max_duration_ms: "1e308s"`, `"1e308s": out of range`},
		{`min_duration_ms: "1e20m"`, `"1e20m": out of range`},
		{"max_duration_ms: -5", "-5 ms: must not be negative"},
		{"max_issue_duration_ms: 9223372036854775807", "out of range"},
		{"max_issue_duration_ms: 0", "must be positive"},
		{`max_duration_ms: "1.5ms"`, "want milliseconds"},
	} {
		_, err := Parse("c.yaml", []byte(base+"settings:\n  runtime:\n    "+c.runtime+"\n"), env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.runtime, err, c.want)
		}
	}
	c, err := Parse("c.yaml", []byte(base+"settings:\n  runtime:\n    max_duration_ms: 9223372036854\n    min_duration_ms: \"1.5s\"\n"), env(nil))
	if err != nil || int64(*c.Settings.Runtime.MaxDurationMs) != MaxMillis || *c.Settings.Runtime.MinDurationMs != 1500 {
		t.Errorf("durations at the limit: %v", err)
	}
}

// Load reads a config as every input is read: a FIFO (no writer), a device and
// a file over MaxFileSize are refused at once, and a cancelled context stops it.
func TestLoadRefusesWhatIsNotAConfigFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(base+"# "+strings.Repeat("x", MaxFileSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok.yaml")
	if err := os.WriteFile(ok, []byte(base), 0o600); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name, path string
		ctx        context.Context
		want       error
	}{
		{"a FIFO", fifo, context.Background(), infile.ErrNotRegular},
		{"/dev/zero", "/dev/zero", context.Background(), infile.ErrNotRegular},
		{"a folder", dir, context.Background(), infile.ErrNotRegular},
		{"a file over the limit", big, context.Background(), infile.ErrTooLarge},
		{"a cancelled context", ok, cancelled, context.Canceled},
	} {
		done := make(chan error, 1)
		go func() { _, err := Load(c.ctx, c.path); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Load blocks", c.name)
		}
	}
	if c, err := Load(context.Background(), ok); err != nil || c.ModelParams.Name != "m" {
		t.Errorf("a config file: %v", err)
	}
}
