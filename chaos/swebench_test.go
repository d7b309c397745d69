package chaos

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrace/agentrace/replay/swebench/swebenchtest"
)

// TestChaosSWEBenchSignalDuringDownload: `agentrace swebench` signalled while it
// downloads the artifacts of a run the service says succeeded exits 130 or 143
// within promptExit, says it was interrupted (once, never "context canceled"),
// claims no result (no "SWE-bench: resolved" line, no swe_bench_results.json)
// and leaves no temporary file; the token the service echoes shows nowhere.
func TestChaosSWEBenchSignalDuringDownload(t *testing.T) {
	chaos(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			h := &harness{t: t}
			root := t.TempDir()
			svc := swebenchtest.New(t, "agent:1", "succeeded")
			svc.Echo = true
			svc.Result = `{"submitted_instances":1,"resolved_instances":1,"resolved_ids":["a"]}`
			started := make(chan struct{}, 1)
			svc.Hook = func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.HasSuffix(r.URL.Path, "/artifacts/swe_bench_agent.log") {
					return false
				}
				io.WriteString(w, "agent log "+svc.Token+"\n")
				w.(http.Flusher).Flush()
				select {
				case started <- struct{}{}:
				default:
				}
				<-r.Context().Done() // a slow download, until the client goes
				return true
			}
			inst := filepath.Join(root, "i.jsonl")
			if err := os.WriteFile(inst, []byte(`{"instance_id":"a"}`+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(root, "sb")
			pr := h.start(spec{budget: small, env: []string{"SB_TOKEN=" + svc.Token}}, "agentrace", "swebench", "--service", svc.URL(),
				"--auth-token-env", "SB_TOKEN", "--endpoint", "http://127.0.0.1:1", "--model", "m", "--instances", inst,
				"--poll-interval", "10ms", "--out", out)
			select {
			case <-started:
			case <-pr.done:
				t.Fatalf("ended (exit %d) before the download:\n%s", pr.exitCode, tail(pr.stderr.String()))
			case <-time.After(minute):
				pr.kill()
				t.Fatal("no artifact download within a minute")
			}
			sent := time.Now()
			pr.signal(sig)
			pr.wait(minute)
			took := time.Since(sent)
			pr.expectExit(128 + int(sig))
			if took > promptExit {
				t.Errorf("took %v to exit after %s", took, sig)
			}
			stderr, stdout := pr.stderr.String(), pr.stdout.String()
			if strings.Contains(stdout, "SWE-bench: resolved") || strings.Count(stderr, "interrupted") != 1 ||
				!strings.Contains(stderr, "interrupted while downloading the artifacts of service run run_1") || strings.Contains(stderr+stdout, "context canceled") {
				t.Errorf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(out, "swe_bench_results.json")); err == nil {
				t.Error("an interrupted download claimed a result")
			}
			if strings.Contains(stderr+stdout, svc.Token) {
				t.Error("the token shows")
			}
			_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
				if err == nil && !info.IsDir() {
					if b, _ := os.ReadFile(p); strings.Contains(string(b), svc.Token) {
						t.Errorf("%s holds the token", p)
					}
				}
				return nil
			})
			noTemps(t, root)
		})
	}
}
