package redact

import (
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
