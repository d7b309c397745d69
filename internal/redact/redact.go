// Package redact keeps secrets out of everything agentrace writes or prints:
// manifests, turn logs, reports and messages. A secret is the user information of a
// URL (http://user:secret@host), a query parameter whose name looks secret
// (?api_key=..., ?token=...), and every value a command was given as a secret: an
// API key, the value of a request header, the password of an endpoint URL.
//
// Two tools. The functions URL and Text mask what can be told by its form (a URL's
// user information, a secret-looking query parameter), in any text. A Scrubber
// knows the secrets of one command (Add, AddHeader, AddURL, with the forms they
// travel in: Bearer, Basic, percent- and JSON-escaped) and masks every occurrence
// of each, wherever it appears: what a server echoes back (an error body, an
// error frame, a completion) included. Every sink of the command passes through
// it: its files (String, Secrets; Copy for a stream), its messages (Text, Error,
// Writer), and what a message quotes of a text from elsewhere, a server's error
// body or a file (Excerpt, ReadExcerpt: 2 KiB at most).
//
//	sc := new(redact.Scrubber)
//	sc.Add(apiKey)
//	sc.AddURL(endpoint)                 // user, password, their Basic form
//	shown := redact.URL(endpoint)       // "http://<redacted>@host:8000/v1"
//	row.Error = sc.Text(row.Error)      // known secrets and URL user information masked
//	return sc.Error(err)                // the same for an error, which still unwraps
//
// Commands keep the real value only where it is used (the HTTP client) and record
// or print the masked form.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a secret.
const Mask = "<redacted>"

// URL returns raw with its user information and secret-looking query values
// replaced by Mask. A URL whose user information holds a character that should
// have been percent-encoded (a password with #, /, ?, a space or a quote) does not
// parse as written, or parses with the secret in its host or fragment: then
// everything between "://" and the last "@" is masked, which may mask more than
// the user information but never less. A string without "://" is scrubbed as Text.
func URL(raw string) string {
	if pre, _, rest, ok := looseUserinfo(raw); ok {
		return pre + Mask + "@" + Text(rest)
	}
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

// looseUserinfo finds the user information of a URL that does not parse as
// written, or that parses without user information although an "@" follows its
// "://" (http://tok#en@host: the host "tok", the rest a fragment): it is what lies
// between "://" and the last "@". It returns the text up to "://" included, that
// user information and the rest after the "@"; ok is false for a URL that parses
// with its user information, or has no "@" after "://".
func looseUserinfo(raw string) (pre, userinfo, rest string, ok bool) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return "", "", "", false
	}
	tail := raw[i+3:]
	j := strings.LastIndexByte(tail, '@')
	if j < 0 {
		return "", "", "", false
	}
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return "", "", "", false
	}
	return raw[:i+3], tail[:j], tail[j+1:], true
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
