package simserver

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
)

// TestOpenAISDK drives the sim with the official openai npm SDK (pinned in
// testdata/js): streaming with usage, tool calls (through the SDK's own stream
// accumulator), a growing conversation that hits the cache, and 4xx errors
// mapped to the SDK's error classes. The script asserts; this test runs it.
func TestOpenAISDK(t *testing.T) {
	dir, node := testenv.JS(t)
	cfg := tinyConfig(t)
	cfg.Hardware.KVBlocks = 1024
	cfg.Hardware.MaxModelLen = 8192
	cfg.Hardware.MaxBatchedTokens = 512
	_, hs := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "openai-interop.mjs"), hs.URL+"/v1", cfg.Hardware.Model)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("node: %s", out)
	if err != nil {
		t.Fatalf("openai-interop.mjs: %v", err)
	}
}
