package python

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"strconv"
	"testing"
)

// TestFloatsCorpus checks Float and FloatRepr against CPython's float() and repr()
// (testdata/floats.jsonl, made by testdata/gen.py).
func TestFloatsCorpus(t *testing.T) {
	f, err := os.Open("testdata/floats.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	parses, reprs := 0, 0
	for sc.Scan() {
		var c struct {
			Str   *string `json:"str"`
			OK    bool    `json:"ok"`
			Value *string `json:"value"`
			Hex   string  `json:"hex"`
			Repr  string  `json:"repr"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if c.Str != nil {
			parses++
			v, ok := Float(*c.Str)
			if ok != c.OK {
				t.Errorf("Float(%q): ok %v, Python %v", *c.Str, ok, c.OK)
				continue
			}
			if ok && !sameFloat(v, parseHex(t, *c.Value)) {
				t.Errorf("Float(%q) = %v, Python %s", *c.Str, v, *c.Value)
			}
			continue
		}
		reprs++
		if got := FloatRepr(parseHex(t, c.Hex)); got != c.Repr {
			t.Errorf("FloatRepr(%s) = %s, Python %s", c.Hex, got, c.Repr)
		}
	}
	if parses < 400 || reprs < 600 {
		t.Fatalf("only %d float() and %d repr() cases", parses, reprs)
	}
}

// parseHex reads float.hex()'s form (or nan, inf, -inf).
func parseHex(t *testing.T, s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

func sameFloat(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

func TestStrip(t *testing.T) {
	if got := Strip("\u00a0\x1c a b\u3000\n"); got != "a b" {
		t.Errorf("Strip = %q", got)
	}
}
