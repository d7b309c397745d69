package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"
)

// MinSecret is the length below which a value is not masked as a substring: a
// value of one to three bytes ("1", "on") is no secret worth the name, and masking
// it in every text would garble the text. Such a value is still never recorded
// where it is a value (a header's value in a manifest).
const MinSecret = 4

// Scrubber masks the secrets one command was given wherever they appear. Its
// zero value knows none (and a nil *Scrubber is one): it then masks only what
// URL and Text find by form. Secrets are added before the command starts its
// work; the methods that mask are then safe for concurrent use.
type Scrubber struct {
	secrets []string
	cuts    []string // the secrets whose start is masked at the end of a text (Secrets)
	r       *strings.Replacer
}

// Add makes secret and the forms it travels in (percent-escaped for a query or a
// path, JSON-escaped, with or without the solidus) known: each is masked wherever
// it appears.
func (s *Scrubber) Add(secret string) { s.add(secret, true) }

// add adds secret's forms; cut tells whether their starts are masked at the end of
// a text too.
func (s *Scrubber) add(secret string, cut bool) {
	forms := []string{secret, url.QueryEscape(secret), url.PathEscape(secret), jsonEscaped(secret, true), jsonEscaped(secret, false)}
	// Some servers' JSON escapes the solidus too.
	forms = append(forms, strings.ReplaceAll(jsonEscaped(secret, false), "/", `\/`))
	for _, f := range forms {
		if len(f) >= MinSecret && !s.knows(f) {
			s.secrets = append(s.secrets, f)
			if cut {
				s.cuts = append(s.cuts, f)
			}
		}
	}
	// Longest first: a secret that holds another is masked whole.
	for _, l := range [][]string{s.secrets, s.cuts} {
		sort.SliceStable(l, func(i, j int) bool { return len(l[i]) > len(l[j]) })
	}
	pairs := make([]string, 0, 2*len(s.secrets))
	for _, f := range s.secrets {
		pairs = append(pairs, f, Mask)
	}
	s.r = strings.NewReplacer(pairs...)
}

// jsonEscaped is v as a JSON string holds it, without the quotes (html: with <, >
// and & escaped, as encoding/json writes them by default).
func jsonEscaped(v string, html bool) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	if enc.Encode(v) != nil {
		return v
	}
	q := strings.TrimSuffix(b.String(), "\n")
	return q[1 : len(q)-1]
}

func (s *Scrubber) knows(f string) bool {
	for _, k := range s.secrets {
		if k == f {
			return true
		}
	}
	return false
}

// AddHeader makes a request header's value known, and the credential it carries
// after an authorization scheme ("Bearer TOKEN": TOKEN too; "Basic B64": the
// decoded user:password and the password too).
func (s *Scrubber) AddHeader(value string) {
	value = strings.TrimSpace(value)
	scheme, cred, ok := strings.Cut(value, " ")
	if !ok || !isToken(scheme) {
		s.Add(value)
		return
	}
	// Cut short, "Bearer TOKEN" is masked from TOKEN on: a text ending in
	// "Bearer" holds no secret.
	s.add(value, false)
	cred = strings.TrimSpace(cred)
	s.Add(cred)
	if strings.EqualFold(scheme, "Basic") {
		if b, err := base64.StdEncoding.DecodeString(cred); err == nil {
			user, pw, _ := strings.Cut(string(b), ":")
			s.addUser(user, pw)
		}
	}
}

// isToken tells whether w looks like an authorization scheme: letters, digits, - and _.
func isToken(w string) bool {
	if w == "" {
		return false
	}
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// AddURL makes the user information of a URL known: the password, user:password
// (as written and decoded) and its Basic form (base64, as an Authorization header
// carries it). A user name with a password is an identity, not a secret, and is
// masked only inside URLs (URL, Text); a user name without a password is the
// credential (https://TOKEN@host) and is known. A URL that does not parse as
// written (a password holding #, /, ?, a space or a quote) is read as looseUserinfo
// does: everything between "://" and the last "@".
func (s *Scrubber) AddURL(raw string) {
	if _, info, _, ok := looseUserinfo(raw); ok {
		s.Add(info)
		user, pw, _ := strings.Cut(info, ":")
		s.addUser(user, pw)
		if u, err := url.PathUnescape(user); err == nil {
			p, _ := url.PathUnescape(pw)
			s.addUser(u, p)
		}
		return
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return
	}
	pw, _ := u.User.Password()
	s.Add(u.User.String())
	s.addUser(u.User.Username(), pw)
}

// addUser makes a user name and password known as AddURL says.
func (s *Scrubber) addUser(user, pw string) {
	if pw == "" {
		s.Add(user)
		return
	}
	s.Add(pw)
	s.Add(user + ":" + pw)
	s.Add(base64.StdEncoding.EncodeToString([]byte(user + ":" + pw)))
}

// Secrets returns x with every known secret masked, and nothing else changed: for
// what a server sent (output text), where a URL is content, not a secret. A text
// cut short at a limit (an output, an error body read to a limit) may end in the
// start of a secret: an end of x that is the first MinSecret bytes or more of a
// secret is masked too.
func (s *Scrubber) Secrets(x string) string {
	if s == nil || s.r == nil || x == "" {
		return x
	}
	x = s.r.Replace(x)
	for _, sec := range s.cuts {
		for k := min(len(sec)-1, len(x)); k >= MinSecret; k-- {
			if strings.HasSuffix(x, sec[:k]) {
				return x[:len(x)-k] + Mask
			}
		}
	}
	return x
}

// Text returns x with every known secret masked, then what Text masks by form:
// for messages, errors and warnings.
func (s *Scrubber) Text(x string) string { return Text(s.Secrets(x)) }

// Error returns err with its message masked as Text masks it; errors.Is and
// errors.As still see err. A nil err stays nil.
func (s *Scrubber) Error(err error) error {
	if err == nil {
		return nil
	}
	if m := s.Text(err.Error()); m != err.Error() {
		return &scrubbed{msg: m, err: err}
	}
	return err
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// Writer returns w with everything written to it masked as Text masks it. Each
// Write is masked on its own: write whole messages.
func (s *Scrubber) Writer(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	return &writer{s: s, w: w}
}

type writer struct {
	s *Scrubber
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, w.s.Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ExcerptBytes is the most of a text from elsewhere (a server's error body, a
// file's content) that a message quotes.
const ExcerptBytes = 2 << 10

// Excerpt is what a message quotes of a text from elsewhere, b: trimmed, at most
// ExcerptBytes of it, cut on a character boundary and ending in "..." where it
// was cut, with what Text masks masked (a known secret cut at the limit
// included). A reader is quoted with ReadExcerpt.
func (s *Scrubber) Excerpt(b []byte) string {
	b = bytes.TrimSpace(b)
	cut := len(b) > ExcerptBytes
	if cut {
		n := ExcerptBytes
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		b = b[:n]
	}
	x := s.Text(string(b))
	if cut {
		x += "..."
	}
	return x
}

// ReadExcerpt reads at most ExcerptBytes+1 bytes of r and returns their
// Excerpt: a server's error body is quoted so, however long it is.
func (s *Scrubber) ReadExcerpt(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, ExcerptBytes+1))
	return s.Excerpt(b)
}

// Copy copies src to dst with every known secret masked as Secrets masks it
// (its end excepted: a stream is not cut short), in bounded memory: a secret
// split between two reads is masked whole. It returns the number of bytes
// written.
func (s *Scrubber) Copy(dst io.Writer, src io.Reader) (int64, error) {
	if s == nil || s.r == nil {
		return io.Copy(dst, src)
	}
	longest := len(s.secrets[0])
	buf := make([]byte, 0, 64<<10+longest)
	next := make([]int, len(s.secrets))
	var n int64
	for {
		m, rerr := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if rerr != nil && rerr != io.EOF {
			return n, rerr
		}
		done, out := s.mask(buf, rerr == io.EOF, next)
		w, err := dst.Write(out)
		n += int64(w)
		if err != nil {
			return n, err
		}
		buf = buf[:copy(buf, buf[done:])]
		if rerr == io.EOF {
			return n, nil
		}
	}
}

// mask masks the secrets in b as the Replacer of Secrets does (at each position
// from the left, the first secret, longest first, that starts there), as far as
// b tells: up to its end when last, else up to where a secret could start that
// runs past b's end. It returns how much of b it consumed and what that became.
// next is scratch space, one int a secret.
func (s *Scrubber) mask(b []byte, last bool, next []int) (int, []byte) {
	limit := len(b) // a match must start before limit to be certain
	if !last {
		limit = len(b) - len(s.secrets[0]) + 1
	}
	for i := range next {
		next[i] = -2 // not looked for
	}
	var out []byte
	p := 0
	for p < limit {
		q, k := -1, -1
		for i, f := range s.secrets {
			if next[i] == -1 || next[i] >= p {
				// known: none left, or the next one at or after p
			} else if j := bytes.Index(b[p:], []byte(f)); j < 0 {
				next[i] = -1
			} else {
				next[i] = p + j
			}
			if next[i] >= 0 && (q < 0 || next[i] < q) {
				q, k = next[i], i
			}
		}
		if q < 0 || q >= limit {
			break
		}
		out = append(append(out, b[p:q]...), Mask...)
		p = q + len(s.secrets[k])
	}
	end := max(limit, p)
	if end > p {
		out = append(out, b[p:end]...)
	}
	return end, out
}
