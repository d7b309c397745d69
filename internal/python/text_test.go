package python

import (
	"encoding/json"
	"os"
	"testing"
)

// TestTextCorpus checks IsSpace, IsWord, IsDigit, DigitValue and Lower on every
// code point CPython's Unicode data assigns, against CPython's str.isspace(), re's
// \w and \d, unicodedata.decimal() and str.lower() (testdata/text.json, made by
// testdata/gen_text.py). Lower is checked one code point at a time: on longer
// strings Python also lowercases a final capital sigma to ς, which Lower does not.
func TestTextCorpus(t *testing.T) {
	data, err := os.ReadFile("testdata/text.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Unicode                      string
		Assigned, Space, Word, Digit [][2]rune
		Decimal                      [][2]int
		Lower                        [][]rune
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	set := func(rs [][2]rune) []bool {
		b := make([]bool, 0x110000)
		for _, x := range rs {
			for r := x[0]; r <= x[1]; r++ {
				b[r] = true
			}
		}
		return b
	}
	assigned, space, word, digit := set(c.Assigned), set(c.Space), set(c.Word), set(c.Digit)
	lower := map[rune]string{}
	for _, l := range c.Lower {
		lower[l[0]] = string(l[1:])
	}
	decimal := map[rune]int{}
	for _, d := range c.Decimal {
		decimal[rune(d[0])] = d[1]
	}
	n, bad := 0, 0
	for r := rune(0); r < 0x110000; r++ {
		if !assigned[r] {
			continue
		}
		n++
		want, ok := lower[r]
		if !ok {
			want = string(r)
		}
		for _, e := range []struct {
			what     string
			got, exp any
		}{
			{"IsSpace", IsSpace(r), space[r]}, {"IsWord", IsWord(r), word[r]}, {"IsDigit", IsDigit(r), digit[r]}, {"Lower", Lower(string(r)), want},
		} {
			if e.got != e.exp && bad < 20 {
				t.Errorf("%s(%U) = %v, CPython (Unicode %s) %v", e.what, r, e.got, c.Unicode, e.exp)
				bad++
			}
		}
		if v, ok := decimal[r]; ok && DigitValue(r) != v {
			t.Errorf("DigitValue(%U) = %d, CPython %d", r, DigitValue(r), v)
		}
	}
	if n < 250000 {
		t.Fatalf("only %d assigned code points", n)
	}
}
