package jsontext

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// decodeAny builds a value with the scanner's pull API, shaped as encoding/json
// (with UseNumber) decodes into an interface: the oracle of FuzzScanner.
func decodeAny(s *Scanner) (any, error) {
	switch s.Peek() {
	case '{':
		m := map[string]any{}
		err := s.Object(func(key []byte) error {
			v, err := decodeAny(s)
			k, _ := Unquote(key)
			m[k] = v
			return err
		})
		return m, err
	case '[':
		a := []any{}
		err := s.Array(func(int) error {
			v, err := decodeAny(s)
			a = append(a, v)
			return err
		})
		return a, err
	case '"':
		tok, err := s.String()
		if err != nil {
			return nil, err
		}
		v, _ := Unquote(tok)
		return v, nil
	}
	v, err := s.Value()
	if err != nil {
		return nil, err
	}
	switch v[0] {
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'n':
		return nil, nil
	}
	return json.Number(v), nil
}

// stdDecode is encoding/json's value of data, numbers as their text.
func stdDecode(data []byte) (any, error) {
	if !json.Valid(data) {
		return nil, errors.New("invalid JSON")
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

func TestValid(t *testing.T) {
	for _, tc := range []struct {
		in           string
		json, python bool
		msg          string // an error's text for the JSON dialect
	}{
		{`{"a":[1,2.5e-3,-0,true,false,null,{}],"b":"\u00e9\ud83d\ude00\n\"\\\/"}`, true, true, ""},
		{` [ 1 , 2 ] `, true, true, ""},
		{`{"a":1,"a":2}`, true, true, ""},
		{`NaN`, false, true, "invalid JSON at byte 1: unexpected 'N'"},
		{`[Infinity, -Infinity]`, false, true, "invalid JSON at byte 2: unexpected 'I'"},
		{`-NaN`, false, false, "bad number"},
		{`nan`, false, false, "bad literal"},
		{`{"a":1}` + "\x00 garbage", false, false, "invalid JSON at byte 8: trailing data after the value"},
		{"{}\x00", false, false, "trailing data after the value"},
		{"null\x00", false, false, "trailing data after the value"},
		{`{"a":1,}`, false, false, `expected a key, found '}'`},
		{`[1,]`, false, false, `unexpected ']'`},
		{`{"a" 1}`, false, false, "expected ':' after key"},
		{`[1 2]`, false, false, `expected ',' or ']', found '2'`},
		{`{"a":1 "b":2}`, false, false, `expected ',' or '}', found '"'`},
		{`01`, false, false, "trailing data"},
		{`1.`, false, false, "bad number"},
		{`"\u12"`, false, false, `bad \u escape`},
		{`"\x"`, false, false, `bad escape \x`},
		{"\"a\x01\"", false, false, "control character in string"},
		{`"abc`, false, false, "unterminated string"},
		{`[`, false, false, "unexpected end of input"},
		{``, false, false, "unexpected end of input"},
		{strings.Repeat("1", 4301), true, false, ""},
		{strings.Repeat("1", 4300), true, true, ""},
		{strings.Repeat("1", 4301) + ".5", true, true, ""},
		{strings.Repeat("[", 1000) + strings.Repeat("]", 1000), true, true, ""},
		{strings.Repeat("[", 1001) + strings.Repeat("]", 1001), true, false, ""},
		{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), false, false, "nested too deeply"},
	} {
		if got := Valid([]byte(tc.in), JSON); got != tc.json {
			t.Errorf("Valid(%.40q, JSON) = %v", tc.in, got)
		}
		if got := Valid([]byte(tc.in), Python); got != tc.python {
			t.Errorf("Valid(%.40q, Python) = %v", tc.in, got)
		}
		if got := json.Valid([]byte(tc.in)); got != tc.json {
			t.Errorf("the case %.40q is wrong: json.Valid says %v", tc.in, got)
		}
		s := NewScanner([]byte(tc.in), JSON)
		_, err := s.Document()
		if tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%.40q: error %v, want %q", tc.in, err, tc.msg)
		}
	}
}

// TestValidPandas: the Pandas dialect (what pandas' read_json takes in a line, as
// recorded from the reference's loader in testdata/refparity files 83-98) is JSON
// plus NaN, Infinity, -Infinity and raw control characters inside strings; lowercase
// nan and inf, and control characters outside strings, stay refused.
func TestValidPandas(t *testing.T) {
	for _, tc := range []struct {
		in     string
		pandas bool
	}{
		{`{"a":[1,2.5e-3,-0,true,false,null,{}],"b":"\u00e9\n\"\\\/"}`, true},
		{`{"d":NaN,"e":Infinity,"f":-Infinity,"g":[NaN,{"h":Infinity}]}`, true},
		{"{\"c\":\"a\x01b\x1fc\td\re\x00\"}", true},
		{"{\"na\x01me\":1}", true},
		{`{"d":nan}`, false},
		{`{"d":inf}`, false},
		{`{"d":-NaN}`, false},
		{`{"d":Inf}`, false},
		{"{\"a\":1,\x01\"b\":2}", false},
		{`"\x"`, false},
		{"\"a\x01", false},
		{"\"a\\", false},
		{`"\u12"`, false},
	} {
		if got := Valid([]byte(tc.in), Pandas); got != tc.pandas {
			t.Errorf("Valid(%q, Pandas) = %v, want %v", tc.in, got, tc.pandas)
		}
		if tc.pandas && Valid([]byte(tc.in), JSON) != json.Valid([]byte(tc.in)) {
			t.Errorf("Valid(%q, JSON) disagrees with encoding/json", tc.in)
		}
	}
}

func TestPullAPI(t *testing.T) {
	data := []byte(` {"choices": [{"delta": {"content": "a\nb"}}, {"delta": null}], "usage": {"n": 1}, "x": [1, "y"]} `)
	s := NewScanner(data, JSON)
	var content string
	var usage []byte
	sawNull := false
	err := s.Object(func(key []byte) error {
		switch string(key) {
		case `"choices"`:
			return s.Array(func(i int) error {
				return s.Object(func(key []byte) error {
					if s.Null() {
						sawNull = i == 1
						return nil
					}
					return s.Object(func(key []byte) error {
						tok, err := s.String()
						content, _ = Unquote(tok)
						return err
					})
				})
			})
		case `"usage"`:
			var err error
			usage, err = s.Value()
			return err
		}
		_, err := s.Value()
		return err
	})
	if err != nil || s.End() != nil {
		t.Fatal(err, s.End())
	}
	if content != "a\nb" || string(usage) != `{"n": 1}` || !sawNull {
		t.Fatalf("content %q usage %s null %v", content, usage, sawNull)
	}
	// A callback's error stops the scan and is returned as is.
	stop := errors.New("stop")
	s = NewScanner(data, JSON)
	if err := s.Object(func([]byte) error { return stop }); err != stop {
		t.Fatalf("got %v", err)
	}
	// Reading the wrong kind is an error that says what was found.
	s = NewScanner([]byte(`[1]`), JSON)
	if err := s.Object(func([]byte) error { return nil }); err == nil || !strings.Contains(err.Error(), `expected an object, found '['`) {
		t.Fatalf("got %v", err)
	}
	s = NewScanner([]byte(`  `), JSON)
	if _, err := s.String(); err == nil || !strings.Contains(err.Error(), "unexpected end of input, expected a string") {
		t.Fatalf("got %v", err)
	}
	// LimitDepth counts the containers the pull API opens and those skipped.
	s = NewScanner([]byte(`[[[1]]]`), JSON)
	s.LimitDepth(2)
	err = s.Array(func(int) error { _, err := s.Value(); return err })
	if err == nil || !strings.Contains(err.Error(), "nested too deeply") {
		t.Fatalf("got %v", err)
	}
}

func TestFieldsLastWins(t *testing.T) {
	data := []byte(`{"name": "a", "x": [1, {"name": "inner"}], "n\u0061me": "b", "arguments": NaN, "name": "c"}`)
	keys := []string{"name", "arguments", "absent"}
	vals := make([][]byte, 3)
	s := NewScanner(data, Python)
	if err := s.Fields(keys, vals); err != nil {
		t.Fatal(err)
	}
	if string(vals[0]) != `"c"` || string(vals[1]) != "NaN" || vals[2] != nil {
		t.Fatalf("%q", vals)
	}
	vals = make([][]byte, 3)
	if !Lookup([]byte(`{"a":1, "n\u0061me" : "b"}`), keys, vals) || string(vals[0]) != `"b"` {
		t.Fatalf("%q", vals)
	}
	if Lookup([]byte(`[1]`), keys, vals) {
		t.Fatal("Lookup of an array")
	}
	s = NewScanner(data, JSON)
	if err := s.Fields(keys, vals); err == nil {
		t.Fatal("NaN accepted by the JSON dialect")
	}
}

func TestEachElementAndMember(t *testing.T) {
	var got []string
	EachElement([]byte(`[1, "two", [3], {"4": 4}, 5]`), func(i int, v []byte) bool {
		got = append(got, string(v))
		return i < 3
	})
	if strings.Join(got, "|") != `1|"two"|[3]|{"4": 4}` {
		t.Fatalf("%q", got)
	}
	got = got[:0]
	EachMember([]byte(`{"a": 1, "b\"": [Infinity]}`), func(k, v []byte) { got = append(got, string(k)+"="+string(v)) })
	if strings.Join(got, "|") != `"a"=1|"b\""=[Infinity]` {
		t.Fatalf("%q", got)
	}
	for _, tc := range []struct {
		in   string
		kind Kind
	}{{` "x"`, String}, {`{}`, Object}, {"\n[", Array}, {`true`, Bool}, {`false`, Bool}, {`null`, Null}, {`-1`, Number}, {`NaN`, Number}, {` `, Nothing}} {
		if k := KindOf([]byte(tc.in)); k != tc.kind {
			t.Errorf("KindOf(%q) = %v, want %v", tc.in, k, tc.kind)
		}
	}
}

// elementMembersBoth walks arr with EachElementMembers and with EachElement then
// EachMember on each object element, writing both walks as text.
func elementMembersBoth(arr []byte) (one, two string) {
	var a, b []string
	EachElementMembers(arr, func(i int, v []byte, ms []Member) bool {
		a = append(a, fmt.Sprintf("%d:%s", i, v))
		if ms != nil {
			a = append(a, "{")
			for _, m := range ms {
				a = append(a, string(m.Key)+"="+string(m.Val))
			}
			a = append(a, "}")
		}
		return true
	})
	EachElement(arr, func(i int, v []byte) bool {
		b = append(b, fmt.Sprintf("%d:%s", i, v))
		if KindOf(v) == Object {
			b = append(b, "{")
			EachMember(v, func(k, val []byte) { b = append(b, string(k)+"="+string(val)) })
			b = append(b, "}")
		}
		return true
	})
	return strings.Join(a, "|"), strings.Join(b, "|")
}

func TestEachElementMembers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[]`, ``},
		{` [ {} , {"a" : 1} ]`, `0:{}|{|}|1:{"a" : 1}|{|"a"=1|}`},
		{`[1, "x\"]", [{"n": 2}], {"k\"": {"in": "}"}, "v": [3]}, null]`, `0:1|1:"x\"]"|2:[{"n": 2}]|3:{"k\"": {"in": "}"}, "v": [3]}|{|"k\""={"in": "}"}|"v"=[3]|}|4:null`},
		{`{"a": 1}`, ``},
	} {
		one, two := elementMembersBoth([]byte(tc.in))
		if one != tc.want || one != two {
			t.Errorf("EachElementMembers(%s) = %q, want %q (EachElement and EachMember: %q)", tc.in, one, tc.want, two)
		}
	}
	// A false from fn stops the walk.
	n := 0
	EachElementMembers([]byte(`[{}, {}, {}]`), func(i int, _ []byte, _ []Member) bool { n++; return i < 1 })
	if n != 2 {
		t.Errorf("walk went on after false: %d calls", n)
	}
}

// FuzzEachElementMembers: on every value the pandas dialect accepts,
// EachElementMembers' single pass gives what EachElement and then EachMember on
// each object element give.
func FuzzEachElementMembers(f *testing.F) {
	for _, s := range []string{`[{"a":1,"b":"}"},2,[{}],{}]`, `[{"id":"c\"1","function":{"name":"f","arguments":"{\"x\": 1}"}}]`, `[ ]`, `{"a":[]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !Valid(data, Pandas) {
			return
		}
		if one, two := elementMembersBoth(data); one != two {
			t.Fatalf("EachElementMembers(%q) = %q, EachElement and EachMember %q", data, one, two)
		}
	})
}

// TestUnquote: decoding matches encoding/json, including lone surrogates and
// invalid UTF-8 (U+FFFD), and Verbatim only passes tokens that need no decoding.
func TestUnquote(t *testing.T) {
	for _, tok := range []string{`""`, `"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u00E9"`, `"\ud83d\ude00"`, `"\ud800"`,
		`"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud83d\ude00\ud83d"`, "\"bad \xff utf8 \xe2\x82\"", "\"\xed\xa0\x80\"", `"\ud800\ud800\udc00"`} {
		var want string
		if err := json.Unmarshal([]byte(tok), &want); err != nil {
			t.Fatal(err)
		}
		if got, ok := Unquote([]byte(tok)); !ok || got != want {
			t.Errorf("Unquote(%s) = %q, want %q", tok, got, want)
		}
		if body, ok := Verbatim([]byte(tok)); ok && string(body) != want {
			t.Errorf("Verbatim(%s) = %q, but it decodes to %q", tok, body, want)
		}
	}
	if _, ok := Unquote([]byte(`1`)); ok {
		t.Error("Unquote of a number")
	}
}

// FuzzScanner checks the JSON dialect against encoding/json: the same inputs are
// valid, and the values read with the pull API are the values encoding/json
// decodes. The Python dialect accepts exactly the texts that are JSON once its
// constants are written as null (within its depth and integer-digit limits).
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e-3,-0,true,false,null,{}],"b":"\u00e9\ud83d\ude00\n\"\\\/"}`, `{"a":1,"a":2}`,
		`NaN`, `[-Infinity]`, `{"a":1}` + "\x00 garbage", "{}\x00", `"\ud800"`, "\"\xff\"", `1E1000`, `[1,]`, `{"k\u0041": 1, "kA": 2}`,
		`[Infinity,-Infinity,NaN]`, `{NaN:1}`, `-NaN`, `1NaN`, `[- Infinity]`, `{"a":"NaN\"Infinity"}`, `nan`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, stdErr := stdDecode(data)
		s := NewScanner(data, JSON)
		got, err := decodeAny(&s)
		if err == nil {
			err = s.End()
		}
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("%q: scanner error %v, encoding/json error %v", data, err, stdErr)
		}
		var se *SyntaxError
		if err != nil && (!errors.As(err, &se) || se.Offset < 0 || se.Offset > len(data)) {
			t.Fatalf("%q: error %v is not a SyntaxError within the input", data, err)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: scanner %#v, encoding/json %#v", data, got, want)
		}
		if Valid(data, JSON) != (err == nil) {
			t.Fatalf("%q: Valid disagrees with the pull API", data)
		}
		// The span helpers never panic, and on a valid value see what the
		// validating scanner sees.
		var spans, seen []string
		EachMember(data, func(k, v []byte) { spans = append(spans, string(k)+"="+string(v)) })
		EachElement(data, func(i int, v []byte) bool { spans = append(spans, string(v)); return true })
		if err == nil {
			s := NewScanner(data, JSON)
			switch s.Peek() {
			case '{':
				_ = s.Members(func(k, v []byte) { seen = append(seen, string(k)+"="+string(v)) })
			case '[':
				_ = s.Array(func(int) error { v, err := s.Value(); seen = append(seen, string(v)); return err })
			}
			if !reflect.DeepEqual(spans, seen) {
				t.Fatalf("%q: span helpers %q, scanner %q", data, spans, seen)
			}
		}
		// Python's grammar is JSON's with three more literals for a value: within
		// its limits, a text is Python JSON exactly when the same text with each
		// constant outside a string written as null is JSON. (null, unlike a
		// string or a number, can be neither a key nor part of a longer token, so
		// the swap changes nothing else.)
		if depth(data) <= PythonMaxDepth && !hasLongInt(data) {
			sub := constantsAsNull(data)
			if py, js := Valid(data, Python), Valid(sub, JSON); py != js {
				t.Fatalf("%q: the Python dialect says %v, JSON with its constants as null (%q) %v", data, py, sub, js)
			}
		}
	})
}

// constantsAsNull writes null in place of NaN, Infinity and -Infinity wherever
// they stand outside a string.
func constantsAsNull(data []byte) []byte {
	out := make([]byte, 0, len(data))
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out = append(out, c)
			switch c {
			case '\\':
				if i+1 < len(data) {
					i++
					out = append(out, data[i])
				}
			case '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
		}
		matched := false
		for _, k := range []string{"-Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(data[i:], []byte(k)) {
				out, i, matched = append(out, "null"...), i+len(k)-1, true
				break
			}
		}
		if !matched {
			out = append(out, c)
		}
	}
	return out
}

// hasLongInt reports whether data holds a run of more than PythonMaxIntDigits
// digits.
func hasLongInt(data []byte) bool {
	n := 0
	for _, c := range data {
		if n++; !isDigit(c) {
			n = 0
		}
		if n > PythonMaxIntDigits {
			return true
		}
	}
	return false
}

// depth is the most brackets open at once (strings ignored: an upper bound).
func depth(data []byte) int {
	d, most := 0, 0
	for _, c := range data {
		switch c {
		case '[', '{':
			d++
			most = max(most, d)
		case ']', '}':
			d--
		}
	}
	return most
}

// FuzzUnquote checks string decoding against encoding/json on any string token
// the scanner accepts.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"a\"b"`, `"\u00e9\/\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`, "\"\xff\"", `"\u2028"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, tok []byte) {
		s := NewScanner(tok, JSON)
		got, err := s.String()
		if err != nil || s.End() != nil {
			return
		}
		var want string
		if err := json.Unmarshal(tok, &want); err != nil {
			t.Fatalf("%q: the scanner accepts a string encoding/json refuses: %v", tok, err)
		}
		if u, _ := Unquote(got); u != want {
			t.Fatalf("Unquote(%q) = %q, encoding/json %q", tok, u, want)
		}
		if body, ok := Verbatim(got); ok && (string(body) != want || !utf8.Valid(body)) {
			t.Fatalf("Verbatim(%q) = %q, want %q", tok, body, want)
		}
	})
}

// pyCase is one line of testdata/python/corpus.jsonl (see gen.py there).
type pyCase struct {
	In     string `json:"in"`
	OK     bool   `json:"ok"`
	Why    string `json:"why"`
	Out    any    `json:"out"`
	Truthy bool   `json:"truthy"`
}

// TestPythonCorpus checks the Python dialect against Python's json.loads: the
// verdicts, the values read (strings, numbers, Python's constants, duplicate keys:
// the last value in the first key's place), and Truthy against Python's bool().
// Where Python keeps a lone surrogate in a string, a Go string holds U+FFFD.
func TestPythonCorpus(t *testing.T) {
	f, err := os.Open("testdata/python/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n, accepted := 0, 0
	for sc.Scan() {
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		var c pyCase
		if err := d.Decode(&c); err != nil {
			t.Fatal(err)
		}
		n++
		in := []byte(c.In)
		s := NewScanner(in, Python)
		got, err := decodePython(&s)
		if err == nil {
			err = s.End()
		}
		if (err == nil) != c.OK {
			t.Errorf("%.60q: scanner error %v, Python %v (%s)", c.In, err, c.OK, c.Why)
			continue
		}
		if Valid(in, Python) != c.OK {
			t.Errorf("%.60q: Valid disagrees with Python", c.In)
		}
		if !c.OK {
			continue
		}
		accepted++
		if want := normalizePython(c.Out); !reflect.DeepEqual(got, want) {
			t.Errorf("%.60q:\n scanner %v\n Python  %v", c.In, got, want)
		}
		if Truthy(in) != c.Truthy {
			t.Errorf("Truthy(%.60q) = %v, Python's bool() %v", c.In, !c.Truthy, c.Truthy)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 3000 || accepted < 1000 {
		t.Fatalf("only %d cases (%d accepted)", n, accepted)
	}
}

// decodePython reads a value with the pull API into the corpus's tagged form.
func decodePython(s *Scanner) (any, error) {
	switch s.Peek() {
	case '{':
		var members []any
		at := map[string]int{}
		err := s.Object(func(key []byte) error {
			v, err := decodePython(s)
			k, _ := Unquote(key)
			if i, ok := at[k]; ok {
				members[i].([]any)[1] = v
			} else {
				at[k] = len(members)
				members = append(members, []any{codePoints(k), v})
			}
			return err
		})
		return []any{"dict", orEmpty(members)}, err
	case '[':
		var elems []any
		err := s.Array(func(int) error {
			v, err := decodePython(s)
			elems = append(elems, v)
			return err
		})
		return []any{"list", orEmpty(elems)}, err
	case '"':
		tok, err := s.String()
		if err != nil {
			return nil, err
		}
		v, _ := Unquote(tok)
		return []any{"str", codePoints(v)}, nil
	}
	v, err := s.Value()
	if err != nil {
		return nil, err
	}
	switch text := string(v); {
	case text == "null":
		return []any{"null"}, nil
	case text == "true" || text == "false":
		return []any{"bool", text == "true"}, nil
	case text == "NaN" || text == "Infinity" || text == "-Infinity" || strings.ContainsAny(text, ".eE"):
		x, _ := strconv.ParseFloat(strings.TrimSuffix(text, "inity"), 64) // ParseFloat reads NaN and Inf
		return []any{"float", floatKey(x)}, nil
	default:
		i, ok := new(big.Int).SetString(text, 10)
		if !ok {
			return nil, errors.New("bad integer " + text)
		}
		return []any{"int", i.String()}, nil
	}
}

func orEmpty(a []any) []any {
	if a == nil {
		return []any{}
	}
	return a
}

func codePoints(s string) []any {
	cps := []any{}
	for _, r := range s {
		cps = append(cps, json.Number(strconv.Itoa(int(r))))
	}
	return cps
}

func floatKey(x float64) string {
	if math.IsNaN(x) {
		return "nan"
	}
	return strconv.FormatUint(math.Float64bits(x), 16)
}

// normalizePython maps the corpus's tagged value onto decodePython's form:
// floats by their bits, surrogate code points to U+FFFD.
func normalizePython(v any) any {
	a := v.([]any)
	switch a[0] {
	case "float":
		x, err := strconv.ParseFloat(a[1].(string), 64)
		if err != nil {
			panic(err)
		}
		return []any{"float", floatKey(x)}
	case "str":
		return []any{"str", surrogatesToFFFD(a[1].([]any))}
	case "list":
		out := []any{}
		for _, e := range a[1].([]any) {
			out = append(out, normalizePython(e))
		}
		return []any{"list", out}
	case "dict":
		out := []any{}
		for _, m := range a[1].([]any) {
			kv := m.([]any)
			out = append(out, []any{surrogatesToFFFD(kv[0].([]any)), normalizePython(kv[1])})
		}
		return []any{"dict", out}
	}
	return v
}

func surrogatesToFFFD(cps []any) []any {
	out := []any{}
	for _, c := range cps {
		if n, _ := c.(json.Number).Int64(); n >= 0xD800 && n <= 0xDFFF {
			c = json.Number(strconv.Itoa(0xFFFD))
		}
		out = append(out, c)
	}
	return out
}

// walkNumbers is EachNumber's oracle: the number tokens found by walking the
// value's nesting with KindOf, EachElement and EachMember.
func walkNumbers(v []byte, out *[]string) {
	switch KindOf(v) {
	case Number:
		*out = append(*out, string(bytes.TrimSpace(v)))
	case Array:
		EachElement(v, func(_ int, e []byte) bool {
			walkNumbers(e, out)
			return true
		})
	case Object:
		EachMember(v, func(_, m []byte) { walkNumbers(m, out) })
	}
}

func TestEachNumber(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`12`, `12`},
		{` -0.5e+3 `, `-0.5e+3`},
		{`"1" `, ``},
		{`[1, "2", [3.5, {"4": -4}], true, false, null, 5]`, `1|3.5|-4|5`},
		{`{"a\"1": "x\\", "b": [NaN, Infinity, -Infinity], "c2": {"d": 1e999}}`, `NaN|Infinity|-Infinity|1e999`},
		{`{"arguments": "{\"n\": 12, \"s\": \"-3\"}", "id": 7}`, `7`},
		{`[]`, ``},
	} {
		var got []string
		EachNumber([]byte(tc.in), func(tok []byte) { got = append(got, string(tok)) })
		if strings.Join(got, "|") != tc.want {
			t.Errorf("EachNumber(%s) = %q, want %q", tc.in, got, tc.want)
		}
		// The validating scan counts the same tokens.
		s := NewScanner([]byte(tc.in), Pandas)
		if _, err := s.Document(); err != nil || s.Numbers() != len(got) {
			t.Errorf("Scanner.Numbers() after %s = %d (%v), want %d", tc.in, s.Numbers(), err, len(got))
		}
	}
}

// FuzzEachNumber: on every value the pandas dialect accepts, EachNumber's single
// pass finds the tokens the walk of the nesting finds, in the same order, and the
// validating scan counts as many (Scanner.Numbers).
func FuzzEachNumber(f *testing.F) {
	for _, s := range []string{`[1,"2",{"3":4.5e-1}]`, `{"a":"\"1\\","b":[NaN,-Infinity]}`, ` 7 `, `{"k":[[],{},[-0]]}`, `"\\\"9"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !Valid(data, Pandas) {
			return
		}
		var got, want []string
		EachNumber(data, func(tok []byte) { got = append(got, string(tok)) })
		walkNumbers(data, &want)
		if !reflect.DeepEqual(got, want) && (len(got) > 0 || len(want) > 0) {
			t.Fatalf("EachNumber(%q) = %q, the walk %q", data, got, want)
		}
		s := NewScanner(data, Pandas)
		if _, err := s.Document(); err != nil || s.Numbers() != len(want) {
			t.Fatalf("Scanner.Numbers() after %q = %d (%v), the walk found %d", data, s.Numbers(), err, len(want))
		}
	})
}
