package main

import (
	"bytes"
	"encoding/base64"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestSecretsNeverWritten greps every output for secrets: an API key
// (--api-key-env), a secret header and a password in the endpoint URL
// (http://user:secret@host) reach the server, and never a file, a report, the
// printed output or an error message.
func TestSecretsNeverWritten(t *testing.T) {
	const (
		key      = "sk-very-secret-key"
		password = "url-pass-secret"
		user     = "url-user-secret"
		header   = "hdr-token-secret"
	)
	secrets := []string{key, password, user, header}
	t.Setenv("AGENTRACE_TEST_KEY", key)
	root := t.TempDir()
	p := func(s string) string { return filepath.Join(root, s) }
	var printed bytes.Buffer
	run := func(args ...string) error {
		out, err := runApp(t, args...)
		printed.WriteString(out)
		if err != nil {
			printError(&printed, err)
		}
		return err
	}
	if err := run("synth", "--scale", "0.01", "--domain", "workflow", "--seed", "5", "--out", p("traces.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := run("ingest", "--out", p("ds"), p("traces.jsonl")); err != nil {
		t.Fatal(err)
	}

	// The simulated server behind a proxy that records the Authorization headers.
	simURL := simServer(t)
	target, _ := url.Parse(simURL)
	var mu sync.Mutex
	auths := map[string]int{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths[r.Header.Get("Authorization")]++
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	withUser := strings.Replace(front.URL, "http://", "http://"+user+":"+password+"@", 1)

	common := []string{"--dataset", p("ds"), "--concurrency", "2", "--no-delays", "--header", "X-Api-Token: " + header}
	// Basic credentials from the URL.
	if err := run(append([]string{"replay", "--endpoint", withUser, "--out", p("run-basic")}, common...)...); err != nil {
		t.Fatal(err)
	}
	// An API key too: it wins, as with net/http.
	if err := run(append([]string{"replay", "--endpoint", withUser + "/v1", "--out", p("run-key"), "--api-key-env", "AGENTRACE_TEST_KEY"}, common...)...); err != nil {
		t.Fatal(err)
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	if auths[basic] == 0 || auths["Bearer "+key] == 0 || len(auths) != 2 {
		t.Errorf("Authorization headers the server saw: %v", auths)
	}
	for _, r := range []string{"run-basic", "run-key"} {
		// the verdict of a tiny unofficial run does not pass: exit status 1
		if err := run("score", p(r)); err != nil && exitCode(err) != exitNo {
			t.Fatal(err)
		}
		if err := run("log", "dump", p(r)); err != nil {
			t.Fatal(err)
		}
	}
	if err := run("report", "--out", p("rep"), p("run-basic"), p("run-key")); err != nil && exitCode(err) != exitNo {
		t.Fatal(err)
	}
	// Errors: an endpoint that does not answer, a malformed one.
	closed := "http://" + user + ":" + password + "@127.0.0.1:1/v1?api_key=" + key
	if err := run(append([]string{"replay", "--endpoint", closed, "--out", p("run-closed")}, common...)...); err == nil {
		t.Error("a replay against a closed port succeeded")
	}
	if err := run(append([]string{"replay", "--endpoint", "ftp://" + user + ":" + password + "@h", "--out", p("run-bad")}, common...)...); err == nil {
		t.Error("a replay against an ftp endpoint succeeded")
	}
	if !strings.Contains(printed.String(), "<redacted>@") {
		t.Errorf("the errors do not show the redacted endpoint:\n%s", printed.String())
	}

	for _, s := range secrets {
		if strings.Contains(printed.String(), s) {
			t.Errorf("the printed output holds %q:\n%s", s, printed.String())
		}
	}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds %q", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 15 {
		t.Errorf("only %d files written: the test checked too little", files)
	}
}
