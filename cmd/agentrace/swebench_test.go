package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/replay/swebench/swebenchtest"
	"github.com/agentrace/agentrace/schemas"
)

// swebenchArgs are the arguments of a swebench run against svc of the
// instances a, b, c into root/NAME, with more after them.
func swebenchArgs(t *testing.T, svc *swebenchtest.Service, root, name string, more ...string) []string {
	t.Helper()
	t.Setenv("SB_TOKEN", svc.Token)
	inst := filepath.Join(root, "i.jsonl")
	if err := os.WriteFile(inst, []byte(`{"instance_id":"a"}`+"\n"+`{"instance_id":"b"}`+"\n"+`{"instance_id":"c"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return append([]string{"swebench", "--service", svc.URL(), "--auth-token-env", "SB_TOKEN", "--endpoint", "http://m:30000",
		"--model", "m", "--instances", inst, "--poll-interval", "1ms", "--out", filepath.Join(root, name)}, more...)
}

// swebench's exit statuses are the README's: 0 a whole result; 2 refused before
// a service run was submitted; 3 a submitted run that gave no whole result (it
// failed, its result is incomplete, an artifact was not downloaded), the score
// printed where there is one. What the service echoes of its token is shown
// nowhere.
func TestSwebenchExitStatus(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		name   string
		script []string
		setup  func(*swebenchtest.Service)
		more   []string
		status int
		want   []string // in what was printed and the error
		resolv bool     // the score was printed
	}{
		{name: "succeeded", script: []string{"agent:1", "succeeded"}, status: exitOK, resolv: true,
			want: []string{"note: the 3 instances evaluated are not the benchmark's", "the result is unofficial"}},
		{name: "failed", script: []string{"agent:1", "failed"}, status: exitIncomplete, want: []string{"service run run_1 ended with status failed: agent crashed"}},
		{name: "incomplete", script: []string{"succeeded"}, status: exitIncomplete, resolv: true,
			setup: func(s *swebenchtest.Service) { s.Result = `{"submitted_instances":2,"resolved_instances":1}` },
			want:  []string{", incomplete;", "service run run_1 is not whole: the service submitted 2 of the 3 instances evaluated"}},
		{name: "artifact over the cap", script: []string{"succeeded"}, status: exitIncomplete, resolv: true, more: []string{"--max-artifact-bytes", "30"},
			want: []string{"warning: could not download artifact swe_bench_agent.log: larger than the cap on one artifact, 30 bytes; not kept (--max-artifact-bytes)",
				"is not whole: 2 artifacts not downloaded (swe_bench_results.json: larger than"}},
		{name: "official refused", script: []string{"succeeded"}, status: exitUsage, more: []string{"--official"},
			want: []string{"--official: the 3 instances evaluated are not the benchmark's (the first 200 of princeton-nlp/SWE-bench_Verified at revision c104f840cc67"}},
		{name: "service refuses", script: []string{"succeeded"}, status: exitUsage,
			setup: func(s *swebenchtest.Service) {
				s.Hook = func(w http.ResponseWriter, r *http.Request) bool {
					if r.URL.Path != "/v1/runs" {
						return false
					}
					w.WriteHeader(http.StatusUnprocessableEntity)
					io.WriteString(w, "no "+r.Header.Get("Authorization")+" "+strings.Repeat("z", 60<<20))
					return true
				}
			},
			want: []string{"returned HTTP 422: no Bearer <redacted> zzz"}},
		{name: "echo", script: []string{"agent:1", "succeeded"}, status: exitOK, resolv: true, setup: func(s *swebenchtest.Service) { s.Echo = true },
			want: []string{"(phase agent Bearer <redacted>)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := swebenchtest.New(t, tc.script...)
			if tc.setup != nil {
				tc.setup(svc)
			}
			out, err := runApp(t, swebenchArgs(t, svc, root, tc.name, tc.more...)...)
			code := exitOK
			var line bytes.Buffer
			if err != nil {
				code = exitCode(err)
				printError(&line, err)
			}
			all := out + line.String()
			if code != tc.status || strings.Contains(out, "SWE-bench: resolved") != tc.resolv {
				t.Errorf("exit status %d, want %d; printed:\n%s", code, tc.status, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("lacks %q:\n%.3000s", w, all)
				}
			}
			if strings.Contains(all, svc.Token) || len(line.String()) > 4<<10 {
				t.Errorf("the token shows, or the error is %d bytes long:\n%.3000s", len(line.String()), all)
			}
		})
	}
}

// --routing-header names reach the run request's routing_headers.
func TestSwebenchRoutingHeaders(t *testing.T) {
	root := t.TempDir()
	svc := swebenchtest.New(t, "succeeded")
	if out, err := runApp(t, swebenchArgs(t, svc, root, "sb", "--routing-header", "X-Session-ID", "--routing-header", "X-Sticky")...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := string(svc.Request()["routing_headers"]); got != `["X-Session-ID","X-Sticky"]` {
		t.Errorf("routing_headers %s", got)
	}
	var rec schemas.SWEBenchRun
	if b, _ := os.ReadFile(filepath.Join(root, "sb", schemas.SWEBenchRunFile)); b == nil || !strings.Contains(string(b), `"X-Sticky"`) || !strings.Contains(string(b), `"official_instances": false`) {
		t.Errorf("record %s %+v", b, rec)
	}
}

// replay --config --mode both whose service run fails after the performance
// run completed exits 3, not 2: something was done. A mistake in the accuracy
// part is refused before the performance run (2, nothing done).
func TestReplayModeBothExitStatus(t *testing.T) {
	root := t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	svc := swebenchtest.New(t, "agent:1", "failed")
	t.Setenv("AGENTRACE_CACHE", p("cache"))
	t.Setenv("DATASET", filepath.Join("..", "..", "testdata", "refparity", "00-base.jsonl"))
	t.Setenv("ENDPOINT", simServer(t))
	t.Setenv("SWEBENCH_URL", svc.URL())
	t.Setenv("SB_TOKEN", svc.Token)
	os.WriteFile(p("instances.jsonl"), []byte(`{"instance_id":"a"}`+"\n"), 0o644)
	ex, err := os.ReadFile(filepath.Join("..", "..", "replay", "refconfig", "testdata", "qwen_agentic_benchmark.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := p("qwen.yaml")
	os.WriteFile(cfg, []byte(strings.Replace(string(ex), "        workers: 10\n", "        workers: 10\n        poll_interval_s: 0.001\n", 1)), 0o644)

	t.Setenv("OUT", p("refused"))
	out, err := runApp(t, "replay", "--config", cfg, "--no-delays", "--concurrency", "2", "--mode", "both", "--swebench-token-env", "SB_TOKEN")
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "give --instances") {
		t.Errorf("no instances: status %d, %v\n%s", exitCode(err), err, out)
	}
	if _, err := os.Stat(p("refused")); err == nil {
		t.Error("a refused --mode both ran its performance run")
	}

	t.Setenv("OUT", p("run"))
	out, err = runApp(t, "replay", "--config", cfg, "--no-delays", "--concurrency", "2", "--mode", "both",
		"--instances", p("instances.jsonl"), "--swebench-token-env", "SB_TOKEN")
	if exitCode(err) != exitIncomplete || !strings.Contains(err.Error(), "ended with status failed") || !strings.Contains(err.Error(), "the performance run at") {
		t.Fatalf("status %d, %v\n%s", exitCode(err), err, out)
	}
	if m := readManifest(t, p("run")); m.State != schemas.RunComplete {
		t.Errorf("performance run %s", m.State)
	}
}

// After a signal, an error that said "interrupted: context canceled" says
// "interrupted" once.
func TestInterruptedSaidOnce(t *testing.T) {
	var line bytes.Buffer
	printError(&line, interrupted{commandError{path: "swebench", err: errors.New("swebench: interrupted: context canceled; service run r cancelled")}})
	if got := line.String(); got != "agentrace swebench: error: interrupted; service run r cancelled\n" {
		t.Errorf("%q", got)
	}
}
