package redact

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
		{"http://user:secret@host:8000/v1", "http://<redacted>@host:8000/v1"},
		{"https://sk-token@api.example.com", "https://<redacted>@api.example.com"},
		{"http://user:p%40ss@host/", "http://<redacted>@host/"},
		{"https://h/v1?api_key=abc&model=x", "https://h/v1?api_key=<redacted>&model=x"},
		{"https://h/v1?token=abc&sig=zz", "https://h/v1?token=<redacted>&sig=<redacted>"},
		{"not a url user:secret@host", "not a url user:secret@host"},
		{"::bad http://u:secret@h", "::bad http://<redacted>@h"},
	} {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	in := `Get "http://user:secret@10.0.0.1:8000/v1/models": dial tcp; also https://tok@x.y/z and mailto-free a@b`
	got := Text(in, "sk-key")
	if strings.Contains(got, "secret") || strings.Contains(got, "tok@") {
		t.Errorf("Text left a secret: %q", got)
	}
	if !strings.Contains(got, "http://<redacted>@10.0.0.1:8000/v1/models") || !strings.Contains(got, "a@b") {
		t.Errorf("Text = %q", got)
	}
	if got := Text("key sk-key in text", "sk-key", ""); got != "key <redacted> in text" {
		t.Errorf("Text with a secret = %q", got)
	}
	if got := Text(`Post "https://h/v1/chat/completions?model=m&api_key=abc123&x=1": EOF`); got != `Post "https://h/v1/chat/completions?model=m&api_key=<redacted>&x=1": EOF` {
		t.Errorf("Text with a query secret = %q", got)
	}
	if got := Text(Text(in)); got != Text(in) {
		t.Errorf("Text is not idempotent: %q", got)
	}
}

// TestURLWithUnescapedPassword: a password holding a character that should have
// been percent-encoded makes the URL fail to parse (or parse with the secret as
// its host or fragment); the user information is masked all the same.
func TestURLWithUnescapedPassword(t *testing.T) {
	for _, c := range []string{"#", " ", "/", "?", `"`, "%zz"} {
		pw := "pa" + c + "ssw0rd-secret"
		for _, raw := range []string{
			"http://user:" + pw + "@host:8000/v1",
			"https://" + pw + "@host/v1?api_key=k3y",
		} {
			got := URL(raw)
			if strings.Contains(got, "ssw0rd-secret") || strings.Contains(got, "pa"+c) || strings.Contains(got, "k3y") {
				t.Errorf("URL(%q) = %q: the password shows", raw, got)
			}
			if !strings.Contains(got, "<redacted>@host") {
				t.Errorf("URL(%q) = %q: want the host after the mask", raw, got)
			}
		}
	}
	// An @ after the host is taken for user information: masked, never shown.
	if got := URL("http://host/v1/@x"); got != "http://<redacted>@x" {
		t.Errorf("URL with @ in the path = %q", got)
	}
}

func TestScrubber(t *testing.T) {
	var sc Scrubber
	sc.Add("sk-live-KEY/1+2")
	sc.AddHeader("X-Custom-Auth-value")
	sc.AddHeader("Bearer tok-BEARER")
	sc.AddHeader("Basic " + base64.StdEncoding.EncodeToString([]byte("hdr-user:hdr-pass")))
	sc.AddURL("http://url-user:p#ss w/rd?x@host:8000/v1")
	sc.AddURL("https://tok-USERONLY@host/v1")
	sc.AddHeader("1") // too short to mask as a substring
	basic := base64.StdEncoding.EncodeToString([]byte("url-user:p#ss w/rd?x"))
	for _, tc := range []struct{ in, gone string }{
		{`{"error":"bad key sk-live-KEY/1+2"}`, "sk-live-KEY/1+2"},
		{`{"error":"bad key sk-live-KEY\/1+2"}`, `sk-live-KEY\/1+2`}, // JSON-escaped
		{`?api=sk-live-KEY%2F1%2B2`, "sk-live-KEY%2F1%2B2"},          // query-escaped
		{"echo X-Custom-Auth-value", "X-Custom-Auth-value"},
		{"401: token tok-BEARER invalid", "tok-BEARER"},
		{"got user hdr-user:hdr-pass", "hdr-pass"},
		{"Authorization: Basic " + basic, basic},
		{"password p#ss w/rd?x was wrong", "p#ss w/rd?x"},
		{"the user tok-USERONLY", "tok-USERONLY"},
	} {
		got := sc.Secrets(tc.in)
		if strings.Contains(got, tc.gone) || !strings.Contains(got, Mask) {
			t.Errorf("Secrets(%q) = %q: %q shows", tc.in, got, tc.gone)
		}
	}
	// A text cut in the middle of a secret keeps none of it.
	if got := sc.Secrets("HTTP 401: bad key sk-live-K"); got != "HTTP 401: bad key "+Mask {
		t.Errorf("Secrets of a cut secret = %q", got)
	}
	if got := sc.Secrets("use Bearer"); got != "use Bearer" {
		t.Errorf("Secrets of a text ending in an auth scheme = %q", got)
	}
	if got := sc.Secrets("turn 1 of 10, user url-user, http://a:b@h"); got != "turn 1 of 10, user url-user, http://a:b@h" {
		t.Errorf("Secrets changed what is not a known secret: %q", got)
	}
	if got := sc.Text("turn 1, http://a:b@h"); got != "turn 1, http://<redacted>@h" {
		t.Errorf("Text = %q", got)
	}
	var nilSc *Scrubber
	if got := nilSc.Text("x http://a:b@h"); got != "x http://<redacted>@h" || nilSc.Secrets("y") != "y" {
		t.Errorf("a nil Scrubber: %q", got)
	}
	base := fs.ErrNotExist
	err := sc.Error(fmt.Errorf("open tok-BEARER: %w", base))
	if err.Error() != "open <redacted>: file does not exist" || !errors.Is(err, base) {
		t.Errorf("Error = %v (unwraps to the cause: %v)", err, errors.Is(err, base))
	}
	if sc.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
	var b strings.Builder
	fmt.Fprintf(sc.Writer(&b), "line tok-BEARER\n")
	if b.String() != "line <redacted>\n" {
		t.Errorf("Writer wrote %q", b.String())
	}
}
