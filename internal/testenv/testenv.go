// Package testenv locates what the tests cross-check against: the shared trace
// sample, the Qwen3 tokenizer files, and the pinned JavaScript references. A
// reference that is absent skips the test with a message saying how to get it,
// unless AGENTRACE_REQUIRE_DEPS is set (as `make test` and CI do), which fails it.
// It also runs DuckDB queries for the interop tests and holds SyncBuffer, the
// goroutine-safe buffer tests capture a command's output in, and TarDir, which
// packs a folder as an archive of runs.
package testenv

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// RepoRoot returns the repository root (the folder holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testenv: no go.mod above the test's folder")
		}
		dir = parent
	}
}

func missing(t testing.TB, what, how string) {
	t.Helper()
	if os.Getenv("AGENTRACE_REQUIRE_DEPS") != "" {
		t.Fatalf("%s is missing (%s); AGENTRACE_REQUIRE_DEPS is set, so this fails", what, how)
	}
	t.Skipf("skipping: %s is missing (%s)", what, how)
}

func dirFromEnv(t testing.TB, env, rel string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	return filepath.Join(RepoRoot(t), rel)
}

// SharedData returns the path of a file in ../shared/data (AGENTRACE_SHARED overrides
// ../shared), skipping the test when it is absent, as in a user's clone.
func SharedData(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(dirFromEnv(t, "AGENTRACE_SHARED", "../shared"), "data", name)
	if _, err := os.Stat(p); err != nil {
		missing(t, "shared trace "+p, "it exists only beside the project's own checkout, never in a clone")
	}
	return p
}

// SampleFlat and SampleSnapshot are the 20 shared SWE-bench trajectories.
func SampleFlat(t testing.TB) string     { return SharedData(t, "deepswe-sample-20.jsonl") }
func SampleSnapshot(t testing.TB) string { return SharedData(t, "deepswe-sample-20.snapshot.jsonl") }

// Tokenizer returns the Qwen3 tokenizer directory (tokenizer.json and
// tokenizer_config.json), from AGENTRACE_TOKENIZER or .cache/tokenizers/qwen3.
func Tokenizer(t testing.TB) string {
	t.Helper()
	d := dirFromEnv(t, "AGENTRACE_TOKENIZER", ".cache/tokenizers/qwen3")
	if _, err := os.Stat(filepath.Join(d, "tokenizer.json")); err != nil {
		missing(t, "Qwen3 tokenizer in "+d, "run `make tokenizers`")
	}
	return d
}

// JS returns the folder with the pinned npm packages (testdata/js with node_modules)
// and the path of node, skipping when either is absent.
func JS(t testing.TB) (dir, node string) {
	t.Helper()
	dir = dirFromEnv(t, "AGENTRACE_JS", "testdata/js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		missing(t, "npm packages in "+dir, "run `make testdeps`")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node", "install Node.js")
	}
	return dir, node
}

// DuckDB runs queries (name to SQL) with DuckDB, the pinned @duckdb/node-api, in one
// node process whose working folder is dir, and returns each query's rows by name.
// A failed query fails the test with DuckDB's message.
func DuckDB(t testing.TB, dir string, queries map[string]string) map[string][]map[string]any {
	t.Helper()
	js, node := JS(t)
	qf := filepath.Join(t.TempDir(), "queries.json")
	data, err := json.Marshal(queries)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(qf, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(js, "duckdb-interop.mjs"), dir, qf)
	cmd.Dir = js
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("DuckDB in %s: %v\n%s", dir, err, stderr.String())
	}
	var res map[string][]map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("duckdb-interop.mjs output: %v\n%s", err, out)
	}
	return res
}

// Chromium returns the path of a headless-capable Chromium, skipping when absent.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missing(t, "chromium", "`make testdeps` installs it with apt as root or with sudo")
	return ""
}

// JSModule is JS for a test that needs one pinned npm package (a folder under
// node_modules), skipping (or failing under AGENTRACE_REQUIRE_DEPS) when it is absent:
// a node_modules installed from an older package-lock.json lacks it.
func JSModule(t testing.TB, name string) (dir, node string) {
	t.Helper()
	dir, node = JS(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json")); err != nil {
		missing(t, "npm package "+name+" in "+dir, "run `make testdeps`")
	}
	return dir, node
}

// DiffAt is the byte offset where a and b first differ (the shorter one's length
// when one is a prefix of the other).
func DiffAt(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// Around is s within 80 bytes of offset i, for showing where two texts differ.
func Around(s string, i int) string {
	lo, hi := max(0, min(i, len(s))-80), min(len(s), i+80)
	return s[lo:hi]
}
