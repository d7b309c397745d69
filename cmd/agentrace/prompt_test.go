package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrace/agentrace/simserver"
)

// TestPromptAsTheRunSent: `prompt --from-run RUNDIR` prints byte for byte the body
// that run sent for the turn (here the first turn of a trajectory, as the server
// received it), its profile's model included, with neither --dataset nor
// --profile; a flag given wins over the run's.
func TestPromptAsTheRunSent(t *testing.T) {
	root, ds, _ := readersFixture(t)
	prof, err := simserver.LookupHardware(simserver.DefaultHardware)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := simserver.New(simserver.Config{Hardware: prof, Speedup: 2000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var mu sync.Mutex
	first := map[string][]byte{} // session id -> the first body sent
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			mu.Lock()
			if s := r.Header.Get("X-Session-ID"); first[s] == nil {
				first[s] = b
			}
			mu.Unlock()
		}
		srv.Handler().ServeHTTP(w, r)
	}))
	defer hs.Close()
	run := filepath.Join(root, "run-profile")
	if out, err := runApp(t, "replay", "--dataset", ds, "--endpoint", hs.URL+"/v1", "--profile", "qwen3.6-35b-a3b",
		"--concurrency", "2", "--no-delays", "--out", run); err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	conv := "sim_000001"
	sent := first[conv]
	if sent == nil {
		t.Fatalf("no body sent for %s; sessions %d", conv, len(first))
	}
	out, err := runApp(t, "prompt", "--from-run", run, "--conversation", conv, "--turn", "1")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(sent)+"\n" || !strings.Contains(out, `"model":"Qwen/Qwen3.6-35B-A3B"`) {
		i := 0
		for i < len(out) && i < len(sent) && out[i] == sent[i] {
			i++
		}
		t.Errorf("prompt --from-run printed, from byte %d:\n%.300s\nthe run sent:\n%.300s", i, out[i:], sent[i:])
	}
	out, err = runApp(t, "prompt", "--from-run", run, "--conversation", conv, "--turn", "1", "--model", "m")
	if err != nil || !strings.Contains(out, `"model":"m"`) {
		t.Errorf("--model with --from-run: %v\n%.200s", err, out)
	}
}
