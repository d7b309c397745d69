package redact

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// chunkReader returns its text in reads of the sizes given, in turn.
type chunkReader struct {
	s     string
	sizes []int
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := min(max(r.sizes[r.i%len(r.sizes)], 1), len(p), len(r.s))
	r.i++
	copy(p, r.s[:n])
	r.s = r.s[n:]
	return n, nil
}

func streamScrubber() *Scrubber {
	sc := new(Scrubber)
	sc.Add("tok-secret")
	sc.AddHeader("Bearer sk-LIVE-0042")
	return sc
}

// Copy masks what Secrets masks in the whole text, whatever the reads' sizes: a
// secret split between two reads included.
func TestCopy(t *testing.T) {
	sc := streamScrubber()
	big := strings.Repeat("x", 70<<10)
	for _, in := range []string{
		"",
		"no secret here",
		"tok-secret",
		`{"phase":"agent tok-secret","echo":"Bearer sk-LIVE-0042"}`,
		big + "tok-secret" + big + "tok-sec",
		strings.Repeat("tok-secre", 9000) + "t",
		strings.Repeat("sk-LIVE-0042 ", 20000),
	} {
		want := sc.r.Replace(in)
		for _, sizes := range [][]int{{1}, {3, 7}, {5, 1, 64 << 10}, {1 << 20}} {
			var out bytes.Buffer
			n, err := sc.Copy(&out, &chunkReader{s: in, sizes: sizes})
			if err != nil || out.String() != want || n != int64(len(want)) {
				t.Errorf("Copy of %d bytes in reads of %v: %d bytes, %v; differs from Secrets: %v", len(in), sizes, n, err, out.String() != want)
			}
		}
	}
	var out bytes.Buffer
	if _, err := sc.Copy(&out, iotest.ErrReader(io.ErrUnexpectedEOF)); err != io.ErrUnexpectedEOF {
		t.Errorf("a read error: %v", err)
	}
	var none *Scrubber
	if _, err := none.Copy(&out, strings.NewReader("tok-secret")); err != nil || !strings.HasSuffix(out.String(), "tok-secret") {
		t.Errorf("a nil Scrubber copies as is: %q %v", out.String(), err)
	}
}

// A secret that overlaps itself, in a text made of it, still moves the copy on.
func TestCopySelfOverlapping(t *testing.T) {
	sc := new(Scrubber)
	sc.Add("abab")
	in := strings.Repeat("ab", 200<<10)
	var out bytes.Buffer
	if _, err := sc.Copy(&out, &chunkReader{s: in, sizes: []int{4096}}); err != nil || strings.Contains(out.String(), "abab") {
		t.Errorf("%v; a secret shows: %v", err, strings.Contains(out.String(), "abab"))
	}
}

func FuzzCopy(f *testing.F) {
	f.Add("ok tok-secret ok", uint8(3), uint8(1))
	f.Add("Bearer sk-LIVE-0042", uint8(1), uint8(9))
	f.Fuzz(func(t *testing.T, in string, a, b uint8) {
		sc := streamScrubber()
		var out bytes.Buffer
		if _, err := sc.Copy(&out, &chunkReader{s: in, sizes: []int{int(a), int(b)}}); err != nil {
			t.Fatal(err)
		}
		if out.String() != sc.r.Replace(in) {
			t.Fatalf("Copy %q, Secrets %q", out.String(), sc.r.Replace(in))
		}
	})
}

// Excerpt quotes at most ExcerptBytes of a text, cut on a character boundary,
// scrubbed, a secret cut at the limit included.
func TestExcerpt(t *testing.T) {
	sc := streamScrubber()
	body := strings.Repeat("é", 1500) + "tok-secret " + strings.Repeat("y", 60<<20)
	got := sc.ReadExcerpt(strings.NewReader(body))
	if len(got) > ExcerptBytes+len("...") || !strings.HasSuffix(got, "...") || strings.Contains(got, "tok-") {
		t.Errorf("excerpt of %d bytes, ends %q", len(got), got[max(len(got)-40, 0):])
	}
	cut := strings.Repeat("z", ExcerptBytes-5) + "tok-secret"
	if got := sc.ReadExcerpt(strings.NewReader(cut)); strings.Contains(got, "tok-") || !strings.HasSuffix(got, Mask+"...") {
		t.Errorf("a secret cut at the limit: %q", got[len(got)-30:])
	}
	if got := sc.Excerpt([]byte("  HTTP 500 http://u:pw@h tok-secret\n")); got != "HTTP 500 http://"+Mask+"@h "+Mask {
		t.Errorf("short excerpt %q", got)
	}
}
