package datasets

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/agentrace/agentrace/schemas"
)

// goJSON encodes s as encoding/json does with HTML escaping off: the independent
// implementation the wire encoding follows.
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

var stringCases = []string{
	"", "plain", `quote " backslash \ slash /`, "tab\tnewline\nreturn\r", "\b\f\x00\x01\x1f\x7f",
	"café ünïcödé 日本語 😀", "<html> & 'amp'", "line\u2028sep\u2029para", "bad \xff utf8 \xe2\x82",
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range stringCases {
		if got, want := AppendString(nil, s), goJSON(t, s); !bytes.Equal(got, want) {
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
		if want := goJSON(t, s); !bytes.Equal(got, want) {
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
		if got != want {
			t.Fatalf("DecodeString(%s) = %q, encoding/json %q", raw, got, want)
		}
		if enc := AppendString(nil, got); canonical != bytes.Equal(enc, raw) {
			t.Fatalf("DecodeString(%s): canonical %v, but AppendString gives %s", raw, canonical, enc)
		}
	})
}

func TestAppendCompact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b": 1, "a": [1, 2.50, -3e-7, true, null]}`, `{"b":1,"a":[1,2.50,-3e-7,true,null]}`},
		{` [ "caf\u00e9" , "\/" , {"k\u0041": "x"} ] `, `["café","/",{"kA":"x"}]`},
		{`"tab\there"`, `"tab\there"`},
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

func TestAppendWireKeyOrder(t *testing.T) {
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		m    schemas.Message
		want string
	}{
		{schemas.Message{Role: "user", Content: s("hi"), Name: s("n")}, `{"role":"user","content":"hi","name":"n"}`},
		{schemas.Message{Role: "assistant", ToolCalls: `[{"id":"1"}]`, ReasoningContent: s("r")}, `{"role":"assistant","tool_calls":[{"id":"1"}],"reasoning_content":"r"}`},
		{schemas.Message{Role: "tool", Content: s(`{"a":1}`), ContentJSON: true, ToolCallID: s("1")}, `{"role":"tool","content":{"a":1},"tool_call_id":"1"}`},
		{schemas.Message{Role: "assistant", Content: s(""), Name: s("a"), ToolCalls: `[]`, ToolCallID: s("x"), ReasoningContent: s("")},
			`{"role":"assistant","content":"","name":"a","tool_calls":[],"tool_call_id":"x","reasoning_content":""}`},
	} {
		if got := AppendWire(nil, &tc.m); string(got) != tc.want {
			t.Errorf("AppendWire = %s, want %s", got, tc.want)
		}
	}
}

func TestAppendFloat(t *testing.T) {
	for _, v := range []float64{0, 1, 0.95, 1.5, -2.25, 1e-7, 1e21, 123456789, 0.1 + 0.2} {
		if got, want := appendFloat(nil, v), goJSON(t, v); !bytes.Equal(got, want) {
			t.Errorf("appendFloat(%v) = %s, want %s", v, got, want)
		}
	}
}

func FuzzDecodeValidString(f *testing.F) {
	for _, s := range []string{`""`, `"a\"b\\c\/d"`, `"\u00e9 \n\t"`, `"x\u2028y"`, "\"x\u2028y\"", `"\ud83d\ude00 tail\n"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, wantCanon, ok := DecodeStringCanonical(raw)
		got, canon := DecodeValidString(raw)
		if !ok || !utf8.Valid(raw) {
			return
		}
		if got != want || canon != wantCanon {
			t.Fatalf("DecodeValidString(%s) = %q, %v; DecodeStringCanonical %q, %v", raw, got, canon, want, wantCanon)
		}
	})
}

func FuzzAppendCompact(f *testing.F) {
	for _, s := range []string{`{"a": [1, "x\"y\\", {"b": "\u00e9\/"}], "c": null}`, `"\\\\"`, `[" \" ", "\\"]`, `{"k\u2028": "\ud83d\ude00"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || !utf8.Valid(raw) {
			return
		}
		got := AppendCompact(nil, raw)
		var a, b any
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(got, &b); err != nil {
			t.Fatalf("AppendCompact(%s) = %s: %v", raw, got, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("AppendCompact(%s) = %s: another value", raw, got)
		}
		if again := AppendCompact(nil, got); !bytes.Equal(again, got) {
			t.Fatalf("not idempotent: %s then %s", got, again)
		}
	})
}

func FuzzCanonicalToken(f *testing.F) {
	for _, s := range []string{`""`, `"a\"b"`, `"\u001f"`, `"\u001F"`, `"\u0008"`, `"\/"`, `"\u00e9"`, "\"\u2028\"", `"\u2028"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, want, ok := DecodeStringCanonical(raw)
		if !ok || !utf8.Valid(raw) {
			return
		}
		if got := canonicalToken(raw); got != want {
			t.Fatalf("canonicalToken(%s) = %v, DecodeStringCanonical says %v", raw, got, want)
		}
	})
}
