package replay

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/redact"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// TestHeaderValuesNeverRecorded: the value of every --header is a secret, whatever
// its name (X-Custom-Auth, X-Password, X-Api-Credential carry none of the words
// a name-based rule looks for): the server gets it, the manifest records the
// header's name only, and no file of the run holds it. A header declared public
// is recorded with its value.
func TestHeaderValuesNeverRecorded(t *testing.T) {
	d := makeDataset(t, chat("a", 2), chat("b", 1))
	f := newFake(t)
	dir := filepath.Join(t.TempDir(), "run")
	secrets := []string{"custom-auth-value-1", "password-value-2", "credential-value-3", "tenant-value-4"}
	var progress testenv.SyncBuffer
	opts := Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 2, NoDelays: true, Progress: &progress, Events: eventLines(&progress),
		Headers:       []string{"X-Custom-Auth: " + secrets[0], "X-Password:" + secrets[1], "x-api-credential: Bearer " + secrets[2], "X-Tenant: " + secrets[3], "X-Trace-Tag: public-tag-value"},
		PublicHeaders: []string{"x-trace-tag"}}
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	for _, s := range f.requests() {
		if s.headers.Get("X-Custom-Auth") != secrets[0] || s.headers.Get("X-Api-Credential") != "Bearer "+secrets[2] || s.headers.Get("X-Trace-Tag") != "public-tag-value" {
			t.Fatalf("the server got headers %v", s.headers)
		}
	}
	// Only the header whose name does not look secret gets a note.
	if note := "note [public-header]: the value of header X-Tenant is kept secret"; !strings.Contains(progress.String(), note) {
		t.Errorf("progress lacks %q:\n%s", note, progress.String())
	}
	if strings.Count(progress.String(), "is kept secret") != 1 {
		t.Errorf("notes on headers:\n%s", progress.String())
	}
	m, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"X-Custom-Auth": redact.Mask, "X-Password": redact.Mask, "X-Api-Credential": redact.Mask, "X-Tenant": redact.Mask, "X-Trace-Tag": "public-tag-value"}
	if fmt.Sprint(m.Config.Headers) != fmt.Sprint(want) {
		t.Errorf("manifest headers %v, want %v", m.Config.Headers, want)
	}
	if n, leaks := testenv.Leaks(t, dir, secrets...); n < 3 || len(leaks) > 0 {
		t.Errorf("%d files read; leaks: %v", n, leaks)
	}
	// A public header that names no --header is a typo, refused.
	opts.Out, opts.PublicHeaders = filepath.Join(t.TempDir(), "run"), []string{"X-Trace-Tga"}
	if _, err := Run(context.Background(), opts); err == nil || !strings.Contains(err.Error(), `public header "X-Trace-Tga": no header of that name`) {
		t.Errorf("a public header naming no header: %v", err)
	}
	// Credentials cannot be declared public.
	opts.Headers, opts.PublicHeaders = append(opts.Headers, "Authorization: Basic eDp5"), []string{"authorization"}
	if _, err := Run(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "it carries credentials") {
		t.Errorf("Authorization declared public: %v", err)
	}
	// A malformed header is refused without quoting it.
	opts.PublicHeaders, opts.Headers = nil, []string{"Authorization Bearer " + secrets[0]}
	if _, err := Run(context.Background(), opts); err == nil || strings.Contains(err.Error(), secrets[0]) {
		t.Errorf("a malformed header: %v", err)
	}
}

// TestEchoedSecretsMasked: a server that echoes what it was sent (the Authorization
// header with the API key or the endpoint's Basic credentials, the other headers)
// in an error frame, a 401 body and its completions: the run's files (turns.arrows,
// turns.parquet, manifest.json), its progress lines and its summary hold none of
// it, the rows say <redacted> where it was.
func TestEchoedSecretsMasked(t *testing.T) {
	const (
		key    = "sk-live-echoed-KEY"
		hdr    = "x-custom-echoed-value"
		user   = "url-user"
		passwd = "p@ss/w?rd #echoed"
	)
	t.Setenv("AGENTRACE_TEST_KEY", key)
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + passwd))
	// The default dataloader seed (42) starts the second of two conversations first.
	d := makeDataset(t, chat("deny", 1), chat("ok", 2))
	f := newFake(t)
	f.fault = func(w http.ResponseWriter, r *http.Request, s seen) bool {
		echo := r.Header.Get("Authorization") + " " + r.Header.Get("X-Custom-Auth")
		if u, p, ok := r.BasicAuth(); ok {
			echo += " " + u + ":" + p
		}
		js, _ := json.Marshal(echo)
		if s.session == "deny" {
			http.Error(w, `{"error":{"message":"invalid credentials: `+string(js[1:len(js)-1])+`"}}`, http.StatusUnauthorized)
			return true
		}
		args, _ := json.Marshal(string(js))
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"error\":{\"message\":\"rejected %s\"}}\n\n", js[1:len(js)-1])
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":%s,\"content\":%s}}]}\n\n", js, js)
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":%s}}]}}]}\n\n", args)
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		return true
	}
	withUser := strings.Replace(f.srv.URL, "http://", "http://"+user+":"+url.PathEscape(passwd)+"@", 1)
	for _, tc := range []struct {
		name    string
		o       Options
		secrets []string
	}{
		{"api key", Options{Endpoint: f.srv.URL, APIKeyEnv: "AGENTRACE_TEST_KEY"}, []string{key, hdr}},
		{"url password", Options{Endpoint: withUser}, []string{passwd, basic, url.PathEscape(passwd), hdr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			var progress testenv.SyncBuffer
			o := tc.o
			// One trajectory at a time: "ok" succeeds before "deny" is refused, so
			// the 401 is a failed turn, not a refused run.
			o.Data, o.Dataset, o.Out, o.Concurrency, o.NoDelays, o.Progress, o.Events = d, "mem", dir, 1, true, &progress, eventLines(&progress)
			o.Headers = []string{"X-Custom-Auth: " + hdr}
			sum, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			sawAuth := false
			for _, s := range f.requests() {
				sawAuth = sawAuth || s.headers.Get("Authorization") == "Basic "+basic || s.headers.Get("Authorization") == "Bearer "+key
			}
			if !sawAuth {
				t.Fatal("the server never got the credentials")
			}
			recs := byKey(t, readLog(t, dir))
			ok, deny := recs["ok#1"], recs["deny#1"]
			if !strings.Contains(ok.Warnings, "error_frame: rejected") || !strings.Contains(ok.Warnings, redact.Mask) || !strings.Contains(ok.OutputContent, redact.Mask) ||
				!strings.Contains(ok.OutputReasoning, redact.Mask) || !strings.Contains(ok.OutputToolCalls, redact.Mask) {
				t.Errorf("echoing row: warnings %q, content %q, reasoning %q, tool calls %q", ok.Warnings, ok.OutputContent, ok.OutputReasoning, ok.OutputToolCalls)
			}
			if deny.Status != schemas.StatusError || !strings.Contains(deny.Error, "HTTP 401") || !strings.Contains(deny.Error, redact.Mask) {
				t.Errorf("401 row: %s %q", deny.Status, deny.Error)
			}
			if !json.Valid([]byte(ok.OutputToolCalls)) {
				t.Errorf("masked tool calls are not JSON: %s", ok.OutputToolCalls)
			}
			if n, leaks := testenv.Leaks(t, dir, tc.secrets...); n < 3 || len(leaks) > 0 {
				t.Errorf("%d files read; leaks: %v", n, leaks)
			}
			for _, s := range tc.secrets {
				if strings.Contains(progress.String()+sum.String(), s) {
					t.Errorf("the progress lines or the summary hold %q", s)
				}
			}
		})
	}
}

// TestUnparsableEndpointPasswordNeverShown: a password that holds a character
// it should have percent-encoded (#, a space, /, ?, ") makes the endpoint fail to
// parse, or parse with the secret as its host: it is refused, and the error shows
// no part of the password.
func TestUnparsableEndpointPasswordNeverShown(t *testing.T) {
	d := makeDataset(t, chat("a", 1))
	for _, c := range []string{"#", " ", "/", "?", `"`} {
		for _, ep := range []string{
			"http://user:s3cr" + c + "t-pass@127.0.0.1:1/v1",
			"https://s3cr" + c + "t-pass@127.0.0.1:1",
		} {
			_, err := Run(context.Background(), Options{Data: d, Endpoint: ep, Out: filepath.Join(t.TempDir(), "run"), Concurrency: 1})
			if err == nil {
				t.Fatalf("endpoint %q accepted", ep)
			}
			if msg := err.Error(); strings.Contains(msg, "s3cr") || strings.Contains(msg, "t-pass") || !strings.Contains(msg, "percent-encode") {
				t.Errorf("endpoint %q: error %q", ep, msg)
			}
		}
	}
}

// TestCutSecretsMasked: what the log keeps of a server's text is cut at a limit
// (a 401 body at 2 KiB, an error frame's message at 200 bytes): a secret the cut
// falls in leaves none of its start behind.
func TestCutSecretsMasked(t *testing.T) {
	const key = "sk-cut-in-the-middle-KEY"
	t.Setenv("AGENTRACE_TEST_KEY", key)
	// "frame" succeeds first (the default dataloader seed, 42, starts the second
	// of two conversations first), so the 401 of "body" is a failed turn, not a
	// refused run.
	d := makeDataset(t, chat("body", 1), chat("frame", 1))
	f := newFake(t)
	f.fault = func(w http.ResponseWriter, r *http.Request, s seen) bool {
		if s.session == "body" {
			http.Error(w, strings.Repeat("x", 2048-10)+key, http.StatusUnauthorized)
			return true
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"error\":{\"message\":%q}}\n\n", strings.Repeat("y", 190)+key)
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		return true
	}
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 1, NoDelays: true, APIKeyEnv: "AGENTRACE_TEST_KEY"}); err != nil {
		t.Fatal(err)
	}
	recs := byKey(t, readLog(t, dir))
	body, frame := recs["body#1"], recs["frame#1"]
	if !strings.HasSuffix(body.Error, "x"+redact.Mask+"...") || !strings.Contains(frame.Warnings, "y"+redact.Mask) {
		t.Errorf("cut texts: error %q..., warnings %q", body.Error[len(body.Error)-40:], frame.Warnings)
	}
	if n, leaks := testenv.Leaks(t, dir, key[:6]); n < 3 || len(leaks) > 0 {
		t.Errorf("%d files read; leaks: %v", n, leaks)
	}
}
