package chaos

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// echoServer is an OpenAI-compatible endpoint that echoes what it was sent: the
// Authorization header (the API key, or the Basic credentials of the URL's
// password, decoded too) and every other header, in an error frame and the
// completion of a 200 stream, and in the body of a 401 for every third request.
func echoServer(t *testing.T) *httptest.Server {
	var mu sync.Mutex
	n := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		var echo []string
		for k, v := range r.Header {
			echo = append(echo, k+": "+strings.Join(v, ","))
		}
		if u, p, ok := r.BasicAuth(); ok {
			echo = append(echo, u+":"+p)
		}
		js, _ := json.Marshal(strings.Join(echo, "; "))
		// every third request of a run (counted per credentials) from its sixth
		// on: by then a turn has succeeded, so the 401 is a failed turn, not a
		// server refusing the whole run
		mu.Lock()
		n[r.Header.Get("Authorization")]++
		c := n[r.Header.Get("Authorization")]
		mu.Unlock()
		if c > 5 && c%3 == 0 {
			http.Error(w, `{"error":{"message":"unauthorized: `+string(js[1:len(js)-1])+`"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"error\":{\"message\":%s}}\n\n", js)
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%s}}]}\n\n", js)
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestChaosSecrets: every secret a replay is given (an API key, --header values
// whatever their names, the endpoint's password and its Basic form), echoed back
// by the server in error frames, 401 bodies and completions, reaches no file
// (turns.arrows, turns.parquet, manifest.json, scores, the report and its
// turns.parquet, `log export`'s table) and no output of any command; a password
// that makes the endpoint unparsable is not shown in the error. The value of a
// header declared public is recorded.
func TestChaosSecrets(t *testing.T) {
	h := chaos(t)
	root := t.TempDir()
	_, ds := h.dataset(root)
	srv := echoServer(t)
	const (
		key    = "sk-chaos-api-KEY"
		auth   = "x-custom-auth-SECRET"
		passwd = "x-password-SECRET"
		cred   = "x-api-credential-SECRET"
		urlPw  = "url/pass?word SECRET"
	)
	basic := base64.StdEncoding.EncodeToString([]byte("agent:" + urlPw))
	secrets := []string{key, auth, passwd, cred, urlPw, url.PathEscape(urlPw), url.QueryEscape(urlPw), basic}
	common := []string{"--dataset", ds, "--concurrency", "4", "--no-delays", "--trajectories", "12",
		"--header", "X-Custom-Auth: " + auth, "--header", "X-Password: " + passwd, "--header", "X-Api-Credential: Bearer " + cred,
		"--header", "X-Trace-Tag: public-tag", "--public-header", "X-Trace-Tag", "--model", "m"}
	var procs []*proc
	run := func(want int, args ...string) *proc {
		p := h.run(spec{budget: small, env: []string{"AGENTRACE_CHAOS_KEY=" + key}}, minute, append([]string{"agentrace"}, args...)...)
		if want == 1 {
			p.expectExit(0, 1) // done, with a verdict that may say no
		} else {
			p.expectExit(want)
		}
		procs = append(procs, p)
		return p
	}
	withPw := strings.Replace(srv.URL, "http://", "http://agent:"+url.PathEscape(urlPw)+"@", 1)
	runKey, runPw := filepath.Join(root, "run-key"), filepath.Join(root, "run-pw")
	run(0, append([]string{"replay", "--endpoint", srv.URL, "--api-key-env", "AGENTRACE_CHAOS_KEY", "--out", runKey}, common...)...)
	run(0, append([]string{"replay", "--endpoint", withPw, "--out", runPw}, common...)...)
	for _, c := range []string{"#", " ", "/", "?", `"`} {
		bad := strings.Replace(srv.URL, "http://", "http://agent:"+strings.ReplaceAll(urlPw, " ", c)+"@", 1)
		run(2, append([]string{"replay", "--endpoint", bad, "--out", filepath.Join(root, "run-bad")}, common...)...)
	}
	dump := run(0, "log", "dump", runKey)
	run(0, "log", "dump", runPw)
	run(1, "score", runKey)
	run(1, "score", runPw)
	run(1, "report", "--out", filepath.Join(root, "report"), runKey, runPw)
	run(0, "log", "export", "--out", filepath.Join(root, "all-turns.parquet"), runKey, runPw)
	if !strings.Contains(dump.stdout.String(), "redacted") || !strings.Contains(dump.stdout.String(), "HTTP 401") {
		t.Errorf("the server's echo is not in the log (the test checked nothing):\n%s", tail(dump.stdout.String()))
	}
	files, leaks := testenv.Leaks(t, root, secrets...)
	for _, l := range leaks {
		t.Error(l)
	}
	if files < 20 {
		t.Errorf("only %d files: the test checked too little", files)
	}
	for _, p := range procs {
		for _, s := range secrets {
			if strings.Contains(p.stdout.String()+p.stderr.String(), s) {
				t.Errorf("%s printed %q", p.name, s)
			}
		}
	}
	if _, leaks := testenv.Leaks(t, filepath.Join(runKey, "manifest.json"), `"X-Trace-Tag": "public-tag"`); len(leaks) != 1 {
		t.Error("the manifest does not record the public header's value")
	}
}
