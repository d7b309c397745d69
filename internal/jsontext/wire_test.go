package jsontext

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// goJSON encodes s as encoding/json does with HTML escaping off.
func goJSON(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// msgspecString encodes s as the reference client's encoder (msgspec) does: the
// same escapes as encoding/json, except that U+2028 and U+2029 stay raw. It is
// built from encoding/json, an independent implementation, applied to the pieces
// between the separators.
func msgspecString(t testing.TB, s string) []byte {
	t.Helper()
	out := []byte{'"'}
	for {
		i := strings.IndexAny(s, "\u2028\u2029")
		piece := s
		if i >= 0 {
			piece = s[:i]
		}
		enc := goJSON(t, piece)
		out = append(out, enc[1:len(enc)-1]...)
		if i < 0 {
			return append(out, '"')
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		out = append(out, s[i:i+size]...)
		s = s[i+size:]
	}
}

var stringCases = []string{
	"", "plain", `quote " backslash \ slash /`, "tab\tnewline\nreturn\r", "\b\f\x00\x01\x1f\x7f",
	"café ünïcödé 日本語 😀", "<html> & 'amp'", "line\u2028sep\u2029para", "bad \xff utf8 \xe2\x82",
}

func TestAppendStringMatchesMsgspec(t *testing.T) {
	for _, s := range stringCases {
		if got, want := AppendString(nil, s), msgspecString(t, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range stringCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		if want := msgspecString(t, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		back, canonical, ok := DecodeStringCanonical(got)
		if !ok {
			t.Fatalf("DecodeStringCanonical(%s) failed", got)
		}
		if !utf8.ValidString(s) {
			return // invalid UTF-8 became \ufffd escapes: not the wire form of U+FFFD
		}
		if !canonical {
			t.Fatalf("DecodeStringCanonical(%s): not canonical", got)
		}
		if back != s {
			t.Fatalf("round trip of %q gave %q", s, back)
		}
	})
}

func FuzzDecodeString(f *testing.F) {
	for _, s := range []string{`""`, `"a\"b"`, `"\u00e9\/\ud83d\ude00"`, `"\ud800"`, `"\u2028"`, `"\u001F"`, `"\u001f"`, `"x\qy"`, `"\u12"`, `"a` + "\x01" + `"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, canonical, ok := DecodeStringCanonical(raw)
		var want string
		err := json.Unmarshal(raw, &want)
		isString := len(raw) > 1 && raw[0] == '"' && raw[len(raw)-1] == '"'
		if !utf8.Valid(raw) || !isString {
			return // lines are UTF-8-validated before decoding; non-strings are not asked
		}
		if (err == nil) != ok {
			t.Fatalf("DecodeString(%s): ok %v, encoding/json error %v", raw, ok, err)
		}
		if !ok {
			return
		}
		checkDecoded(t, "DecodeString", raw, got, want, canonical)
	})
}

// checkDecoded is the string decoders' oracle: what decoder made of the string
// token raw is encoding/json's want, and it said canonical exactly when
// AppendString writes the token back as it is.
func checkDecoded(t *testing.T, decoder string, raw []byte, got, want string, canonical bool) {
	t.Helper()
	if got != want {
		t.Fatalf("%s(%s) = %q, encoding/json %q", decoder, raw, got, want)
	}
	if enc := AppendString(nil, got); canonical != bytes.Equal(enc, raw) {
		t.Fatalf("%s(%s): canonical %v, but AppendString gives %s", decoder, raw, canonical, enc)
	}
}

func TestAppendCompact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b": 1, "a": [1, 2.50, -3e-7, true, null]}`, `{"b":1,"a":[1,2.5,-3e-7,true,null]}`},
		{` [ "caf\u00e9" , "\/" , {"k\u0041": "x"} ] `, `["café","/",{"kA":"x"}]`},
		{`"tab\there"`, `"tab\there"`},
		{`"line\u2028sep"`, "\"line\u2028sep\""},
		{`[-0, 1.0, 1E5, 1e16, 0.000001, 123456789012345678901234567890, -0.0]`, `[0,1.0,100000.0,1e16,1e-6,123456789012345678901234567890,-0.0]`},
		{`{"a": 1, "b": {"x": [], "x": {}}, "a": 2}`, `{"a":2,"b":{"x":{}}}`},
		{`{ }`, `{}`},
		{`[ ]`, `[]`},
	} {
		got := AppendCompact(nil, []byte(tc.in))
		if string(got) != tc.want {
			t.Errorf("AppendCompact(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if again := AppendCompact(nil, got); !bytes.Equal(again, got) {
			t.Errorf("AppendCompact is not idempotent on %s: %s", got, again)
		}
	}
}

func TestAppendPyFloat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1, "1.0"}, {0.95, "0.95"}, {1.5, "1.5"},
		{-2.25, "-2.25"}, {1e-7, "1e-7"}, {1e21, "1e21"}, {123456789, "123456789.0"},
		{0.30000000000000004, "0.30000000000000004"}, {1e15, "1000000000000000.0"}, {1e16, "1e16"},
		{1e-5, "0.00001"}, {1e-6, "1e-6"}, {0.0001, "0.0001"}, {123.456, "123.456"},
		{9007199254740992, "9007199254740992.0"}, {5e-324, "5e-324"},
		{1.7976931348623157e308, "1.7976931348623157e308"}, {100000, "100000.0"}, {8192, "8192.0"},
		{0.9500000000000001, "0.9500000000000001"}, {1234567890123456.8, "1234567890123456.8"},
		{1.2345678901234568e16, "1.2345678901234568e16"}, {0.00012345, "0.00012345"}, {1.25e-5, "0.0000125"},
		{math.Inf(1), "null"}, {math.NaN(), "null"},
	} {
		if got := AppendPyFloat(nil, tc.v); string(got) != tc.want {
			t.Errorf("AppendPyFloat(%v) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

// FuzzDecodeValidString: DecodeValidString never panics, and on a valid string
// token of valid UTF-8 it decodes as encoding/json does and says canonical exactly
// when AppendString writes the token back as it is.
func FuzzDecodeValidString(f *testing.F) {
	for _, s := range []string{`""`, `"a\"b\\c\/d"`, `"\u00e9 \n\t"`, `"x\u2028y"`, "\"x\u2028y\"", `"\ud83d\ude00 tail\n"`,
		`"\n\u0041"`, `"a\u001f"`, `"\/\u001f"`, `"\ud800\u0041"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, canon := DecodeValidString(raw)
		var want string
		if !utf8.Valid(raw) || len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' || json.Unmarshal(raw, &want) != nil {
			return
		}
		checkDecoded(t, "DecodeValidString", raw, got, want, canon)
	})
}

// FuzzAppendCompact: on any valid JSON, AppendCompact writes the value Python's
// json.loads reads from it (pyValue), as compact JSON, and is idempotent. Python's
// reading: an integer literal is an int (any size), any other number a float (one
// beyond float64's range is an infinity, which the reference's encoder writes as
// null), and a repeated key keeps its first place and takes its last value.
func FuzzAppendCompact(f *testing.F) {
	for _, s := range []string{`{"a": [1, "x\"y\\", {"b": "\u00e9\/"}], "c": null}`, `"\\\\"`, `[" \" ", "\\"]`, `{"k\u2028": "\ud83d\ude00"}`,
		`1E1000`, `[-0, 0.10, 1e-400, -1e400, ` + strings.Repeat("9", 300) + `]`, `{"a": 1, "b": 2, "a": {"x": 1, "x": 2.50}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || !utf8.Valid(raw) {
			return
		}
		got := AppendCompact(nil, raw)
		want := pyValue(t, raw, true)
		if v := pyValue(t, got, false); !reflect.DeepEqual(v, want) {
			t.Fatalf("AppendCompact(%s) = %s: %v, Python reads %v", raw, got, v, want)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, got); err != nil || !bytes.Equal(compact.Bytes(), got) {
			t.Fatalf("AppendCompact(%s) = %s: not compact JSON (%v)", raw, got, err)
		}
		if again := AppendCompact(nil, got); !bytes.Equal(again, got) {
			t.Fatalf("not idempotent: %s then %s", got, again)
		}
	})
}

// pyValue reads the valid JSON value raw with encoding/json's tokens into the
// value Python's json.loads makes of it: ints as decimal text, floats as
// float64, objects as [key, value] pairs in first-key order with the last value.
// encoded says to write non-finite floats as the encoder does (null).
func pyValue(t *testing.T, raw []byte, encoded bool) any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var read func() any
	read = func() any {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		switch x := tok.(type) {
		case json.Delim:
			var out []any
			if x == '[' {
				for d.More() {
					out = append(out, read())
				}
			} else {
				at := map[string]int{}
				for d.More() {
					k, _ := d.Token()
					v := read()
					if i, ok := at[k.(string)]; ok {
						out[i] = []any{k, v}
					} else {
						at[k.(string)] = len(out)
						out = append(out, []any{k, v})
					}
				}
			}
			d.Token() // ] or }
			return []any{string(x), out}
		case json.Number:
			if !strings.ContainsAny(string(x), ".eE") {
				n, _ := new(big.Int).SetString(string(x), 10)
				return "int " + n.String()
			}
			v, _ := strconv.ParseFloat(string(x), 64)
			if math.IsInf(v, 0) && encoded {
				return nil
			}
			return v
		}
		return tok
	}
	return read()
}

// FuzzCanonicalToken: on a valid string token of valid UTF-8, canonicalToken
// tells whether AppendString writes its value back as the same bytes.
func FuzzCanonicalToken(f *testing.F) {
	for _, s := range []string{`""`, `"a\"b"`, `"\u001f"`, `"\u001F"`, `"\u0008"`, `"\/"`, `"\u00e9"`, "\"\u2028\"", `"\u2028"`, `"\u000b"`, `"\u000a"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var s string
		if !utf8.Valid(raw) || len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' || json.Unmarshal(raw, &s) != nil {
			return
		}
		if got, want := canonicalToken(raw), bytes.Equal(AppendString(nil, s), raw); got != want {
			t.Fatalf("canonicalToken(%s) = %v, AppendString gives %s", raw, got, AppendString(nil, s))
		}
	})
}
