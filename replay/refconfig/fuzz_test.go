package refconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/redact"
)

// fuzzSecret is the value of $MY_KEY while fuzzing: it holds a $, so that a
// second expansion of it would show (as "$ECRET" not set, or a value changed).
const fuzzSecret = "sk-FUZZ$ECRET-4242"

func fuzzLookup(name string) (string, bool) {
	switch {
	case name == "MY_KEY":
		return fuzzSecret, true
	case strings.HasPrefix(name, "V"):
		return "v", true
	}
	return "", false
}

// FuzzParse: whatever the file, Parse returns in bounded time and memory, its
// error never shows a variable's value (nor a part of it), a config it accepts
// writes its api_key redacted, and what Marshal writes reads back against the
// config's generation.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	if shared, err := filepath.Glob(filepath.Join("..", "..", "..", "shared", "data", "reference-configs", "*.yaml")); err == nil {
		files = append(files, shared...)
	}
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(aliasBomb()))
	f.Add([]byte(base + "  api_key: &k ${MY_KEY}\ndatasets:\n  - accuracy_config:\n      extras: {token: *k, again: *k}\n"))
	f.Add([]byte(base + "timeout: 1e308\nsettings:\n  runtime:\n    max_duration_ms: 9223372036854775807\n"))
	f.Add([]byte(base + "settings:\n  client:\n    max_idle_time: ${MY_KEY}\n  timeouts: {run_timeout_s: 5}\n"))
	f.Add([]byte(base + "submission_ref: {model: m, ruleset: mlperf-endpoints-current}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > MaxFileSize {
			return
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 := time.Now()
		c, err := Parse("fuzz.yaml", data, fuzzLookup)
		elapsed := time.Since(t0)
		runtime.ReadMemStats(&after)
		if elapsed > 2*time.Second {
			t.Errorf("Parse took %v on %d bytes", elapsed, len(data))
		}
		if mem := after.TotalAlloc - before.TotalAlloc; mem > 64<<20+uint64(len(data))*256 {
			t.Errorf("Parse allocated %d MB on %d bytes", mem>>20, len(data))
		}
		if err != nil {
			for _, part := range []string{fuzzSecret, "ECRET-4242", "sk-FUZZ"} {
				if strings.Contains(err.Error(), part) && !bytes.Contains(data, []byte(part)) {
					t.Fatalf("the error shows %q: %v", part, err)
				}
			}
			return
		}
		out, err := Marshal(c)
		if err != nil {
			return
		}
		if c.EndpointConfig.APIKey != nil && *c.EndpointConfig.APIKey != "" && !bytes.Contains(out, []byte("api_key: "+redact.Mask)) {
			t.Fatalf("api_key written unredacted:\n%s", out)
		}
		if bytes.Contains(out, []byte(fuzzSecret)) && !bytes.Contains(data, []byte(fuzzSecret)) {
			for _, s := range c.Secrets() {
				if s == fuzzSecret {
					t.Fatalf("a secret key's value written:\n%s", out)
				}
			}
		}
		if _, err := ParseAs("config.yaml", out, nil, c.Generation); err != nil {
			t.Fatalf("what Marshal wrote does not read back as %s: %v\n%s", c.Generation, err, out)
		}
	})
}
