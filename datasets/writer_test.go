package datasets

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/s2"
)

// TestFastSnappyRoundTrip compresses pages below and above splitSnappyBytes
// (the larger ones in two halves on two goroutines) and checks that each is one
// valid Snappy block giving the page back, whatever the bytes: text that repeats
// across the cut, random bytes that do not compress, and mixes.
func TestFastSnappyRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	text := bytes.Repeat([]byte(`{"role":"tool","content":"def f(x):\n    return x + 1\n"} `), 20000)
	random := make([]byte, 3<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	mixed := append(append([]byte(nil), text[:200<<10]...), random[:200<<10]...)
	cases := []struct {
		name string
		page []byte
	}{
		{"empty", nil},
		{"tiny", []byte("ab")},
		{"below split", text[:splitSnappyBytes-1]},
		{"at split", text[:splitSnappyBytes]},
		{"odd length", text[:splitSnappyBytes*3+7]},
		{"text 1 MB", text[:1<<20]},
		{"random 3 MB", random},
		{"text then random", mixed},
		{"random then text", append(append([]byte(nil), random[:150<<10]...), text[:150<<10]...)},
	}
	c := &fastSnappy{}
	var dst []byte
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			// dst is reused, as parquet-go does, so that a stale byte would show.
			dst, err = c.Encode(dst[:0], tc.page)
			if err != nil {
				t.Fatal(err)
			}
			if n, err := s2.DecodedLen(dst); err != nil || n != len(tc.page) {
				t.Fatalf("decoded length %d (%v), want %d", n, err, len(tc.page))
			}
			got, err := s2.Decode(nil, dst)
			if err != nil {
				t.Fatalf("s2.Decode: %v", err)
			}
			if !bytes.Equal(got, tc.page) {
				t.Fatalf("round trip differs (%d bytes back of %d)", len(got), len(tc.page))
			}
			back, err := c.Decode(nil, dst)
			if err != nil || !bytes.Equal(back, tc.page) {
				t.Fatalf("fastSnappy.Decode: %v", err)
			}
			// The halves, whatever GOMAXPROCS is where the test runs.
			halves, err := s2.Decode(nil, c.encodeHalves(nil, tc.page))
			if err != nil || !bytes.Equal(halves, tc.page) {
				t.Fatalf("encodeHalves does not decode back (%v)", err)
			}
		})
	}
}
