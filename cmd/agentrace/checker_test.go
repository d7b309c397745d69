package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRulesetsListsCheckerData: rulesets names the embedded checker data and its
// versions, --checker-rules lists the 80 rule ids, --checker-data prints a file
// to start from, and --seed-sets (or its environment variable) replaces the
// seed sets, an unreadable one said so rather than failing.
func TestRulesetsListsCheckerData(t *testing.T) {
	got, err := runApp(t, "rulesets")
	if err != nil || !strings.Contains(got, "messages.yaml at 064aa17 (80 rule ids)") || !strings.Contains(got, "seed sets: embedded, sets A") ||
		!strings.Contains(got, "agentic targets Kimi K3, Qwen3.6-35B-A3B, DeepSeek-V4.1-Flash\n") {
		t.Fatalf("rulesets: %v\n%s", err, got)
	}
	got, err = runApp(t, "rulesets", "--checker-rules")
	if err != nil || !strings.Contains(got, "point-rules-skipped") || !strings.Contains(got, "run.pointRulesSkipped") {
		t.Fatalf("--checker-rules: %v\n%s", err, got)
	}
	got, err = runApp(t, "rulesets", "--checker-data", "seed_sets.yaml")
	if err != nil || !strings.Contains(got, "scheduler_rng_seed: 10487924139932647040") {
		t.Fatalf("--checker-data: %v\n%s", err, got)
	}
	alt := filepath.Join(t.TempDir(), "sets.yaml")
	os.WriteFile(alt, []byte("seed_sets:\n  - id: B\n    scheduler_rng_seed: 1\n    sample_index_rng_seed: 2\n    model_seed: 3\n"), 0o644)
	got, err = runApp(t, "rulesets", "--seed-sets", alt)
	if err != nil || !strings.Contains(got, "seed sets: "+alt+", sets B") {
		t.Fatalf("--seed-sets: %v\n%s", err, got)
	}
	t.Setenv("MLPERF_ENDPOINTS_SEED_SETS", filepath.Join(t.TempDir(), "absent.yaml"))
	got, err = runApp(t, "rulesets")
	if err != nil || !strings.Contains(got, "(unavailable: cannot read") {
		t.Fatalf("MLPERF_ENDPOINTS_SEED_SETS: %v\n%s", err, got)
	}
}
