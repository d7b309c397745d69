// Package redact keeps secrets out of everything agentrace writes or prints:
// manifests, reports, logs and error messages. A secret is the user information of a
// URL (http://user:secret@host: the user name too, since tokens are often passed
// that way), a query parameter whose name looks secret (?api_key=..., ?token=...),
// and any string the caller knows to be secret (an API key).
//
//	shown := redact.URL(endpoint)      // "http://<redacted>@host:8000/v1"
//	msg := redact.Text(err.Error())    // every URL's user information masked
//
// Commands keep the real value only where it is used (the HTTP client) and record
// or print the redacted form.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "<redacted>"

// URL returns raw with its user information and secret-looking query values
// replaced by Mask. A string that does not parse as a URL is scrubbed as Text.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return Text(raw)
	}
	user := u.User != nil
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = query(u.RawQuery)
	}
	s := u.String()
	if user {
		if i := strings.Index(s, "://"); i >= 0 {
			s = s[:i+3] + Mask + "@" + s[i+3:]
		}
	}
	return s
}

// query masks the values of secret-looking parameters of a raw query, keeping the
// rest as it was written.
func query(raw string) string {
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		if name, err := url.QueryUnescape(k); err == nil && SecretName(name) {
			parts[i] = k + "=" + Mask
		}
	}
	return strings.Join(parts, "&")
}

// SecretName reports whether a header or parameter name looks like it carries a
// secret: authorization, cookies, keys, tokens, passwords, signatures.
func SecretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "cookie", "key", "token", "secret", "password", "passwd", "sig", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// userinfo matches the user information of a URL inside free text; secretParam a
// secret-looking query parameter's value.
var (
	userinfo    = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#@\s"'<>]+@`)
	secretParam = regexp.MustCompile(`(?i)([?&][^=&\s"'#]*(?:auth|key|token|secret|password|passwd|sig|credential)[^=&\s"'#]*=)[^&\s"'#]+`)
)

// Text returns s with the user information of every URL in it, the values of
// secret-looking query parameters, and every non-empty secret given replaced by
// Mask.
func Text(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, Mask)
		}
	}
	if strings.Contains(s, "=") {
		s = secretParam.ReplaceAllString(s, "${1}"+Mask)
	}
	if !strings.Contains(s, "@") {
		return s
	}
	return userinfo.ReplaceAllStringFunc(s, func(m string) string {
		i := strings.Index(m, "://")
		if m[i+3:len(m)-1] == Mask {
			return m
		}
		return m[:i+3] + Mask + "@"
	})
}
