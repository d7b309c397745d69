package checker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The checker validates its files with pydantic in lax mode. These helpers read a
// decoded value as pydantic's lax mode reads a field of that type: an int accepts
// a whole float and an integer string, a float accepts a numeric string, a string
// accepts only a string. Decoded values are normalised first: integers are int64
// (or uint64 past int64), other numbers float64, as Python's json and yaml give
// int and float.

// readJSON reads file as JSON. ok is false when the file is absent or unreadable;
// perr is the parse error when it is not JSON.
func (c *run) readJSON(file string) (doc any, found bool, perr error) {
	b, err := c.readFile(file)
	if err != nil {
		return nil, false, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, true, err
	}
	if dec.More() {
		return nil, true, fmt.Errorf("extra data after the JSON value")
	}
	return normalize(doc), true, nil
}

// readYAML reads file as YAML.
func (c *run) readYAML(file string) (doc any, found bool, perr error) {
	b, err := c.readFile(file)
	if err != nil {
		return nil, false, err
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, true, err
	}
	return normalize(doc), true, nil
}

func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return u
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case int:
		return int64(x)
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	}
	return v
}

// isInt reports a JSON/YAML integer that is not a boolean (Python's isinstance int
// minus bool, as the checker tests it).
func isInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}

// isNumber is the checker's _as_float: a number that is not a boolean.
func isNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// laxInt reads v as pydantic's lax int.
func laxInt(v any) (int64, bool) {
	if i, ok := isInt(v); ok {
		return i, true
	}
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case float64:
		if !math.IsInf(x, 0) && !math.IsNaN(x) && x == math.Trunc(x) {
			return int64(x), true
		}
	case string:
		s := strings.TrimSpace(x)
		if i, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64); err == nil && !strings.HasPrefix(s, "_") {
			return i, true
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && !math.IsInf(f, 0) {
			return int64(f), true
		}
	}
	return 0, false
}

// laxFloat reads v as pydantic's lax float, which is also Python's float() on the
// values JSON and YAML give: numbers, booleans, numeric strings.
func laxFloat(v any) (float64, bool) {
	if f, ok := isNumber(v); ok {
		return f, true
	}
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err == nil {
			return f, true
		}
	}
	return 0, false
}

// laxBool reads v as pydantic's lax bool.
func laxBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case int64:
		if x == 0 || x == 1 {
			return x == 1, true
		}
	case float64:
		if x == 0 || x == 1 {
			return x == 1, true
		}
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "1", "on", "t", "true", "y", "yes":
			return true, true
		case "0", "off", "f", "false", "n", "no":
			return false, true
		}
	}
	return false, false
}

// intText is an integer of any size as its decimal text (seeds exceed int64).
func intText(v any) (string, bool) {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10), true
		}
	case string:
		s := strings.TrimSpace(x)
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return s, true
		}
		if _, err := strconv.ParseUint(s, 10, 64); err == nil {
			return s, true
		}
	}
	return "", false
}

// fields validates the fields of one object the way a pydantic model with
// extra="allow" does, collecting one problem per failing field ("loc: problem").
type fields struct {
	prefix   string
	problems []string
}

func (f *fields) add(loc, problem string) {
	if f.prefix != "" {
		loc = f.prefix + "." + loc
	}
	f.problems = append(f.problems, loc+": "+problem)
}

func (f *fields) child(loc string) *fields {
	p := loc
	if f.prefix != "" {
		p = f.prefix + "." + loc
	}
	return &fields{prefix: p}
}

func (f *fields) merge(c *fields) { f.problems = append(f.problems, c.problems...) }

// eachObject reads l, the list at key, as pydantic reads a list of models: an
// element that is not an object is "expected an object" at key.N; read reads
// each other one's fields into its own fields, whose problems join f's.
func (f *fields) eachObject(l []any, key string, read func(nf *fields, m map[string]any)) {
	for i, e := range l {
		nf := f.child(fmt.Sprintf("%s.%d", key, i))
		if m, ok := e.(map[string]any); ok {
			read(nf, m)
		} else {
			nf.add("", "expected an object")
		}
		f.merge(nf)
	}
}

// presence is how a field may be left out: opt (absent or null), req (neither),
// def (a default when absent, but null is refused, as a pydantic field typed
// without None).
type presence int

const (
	opt presence = iota
	req
	def
)

// read reads field key of m with conv: nil when absent, null (each an error as
// mode says) or refused by conv (an error naming want, what was expected).
func read[T any](f *fields, m map[string]any, key string, mode presence, want string, conv func(any) (T, bool)) *T {
	v, ok := m[key]
	if !ok || v == nil {
		if mode == req || (mode == def && ok) {
			f.add(key, missingOrNull(ok))
		}
		return nil
	}
	x, good := conv(v)
	if !good {
		f.add(key, fmt.Sprintf("expected %s, got %v", want, v))
		return nil
	}
	return &x
}

// Int reads an int field; nil when absent, null, or refused.
func (f *fields) Int(m map[string]any, key string, mode presence) *int64 {
	return read(f, m, key, mode, "a whole number", laxInt)
}

func (f *fields) Float(m map[string]any, key string, mode presence) *float64 {
	return read(f, m, key, mode, "a number", laxFloat)
}

func (f *fields) Str(m map[string]any, key string, mode presence) *string {
	return read(f, m, key, mode, "a string", func(v any) (string, bool) { s, ok := v.(string); return s, ok })
}

func (f *fields) Bool(m map[string]any, key string, mode presence) *bool {
	return read(f, m, key, mode, "true or false", laxBool)
}

// Map reads a mapping field; present is false when absent or null.
func (f *fields) Map(m map[string]any, key string, mode presence) (map[string]any, bool) {
	mm := read(f, m, key, mode, "an object", func(v any) (map[string]any, bool) { x, ok := v.(map[string]any); return x, ok })
	if mm == nil {
		return nil, false
	}
	return *mm, true
}

func (f *fields) List(m map[string]any, key string, mode presence) ([]any, bool) {
	l := read(f, m, key, mode, "a list", func(v any) ([]any, bool) { x, ok := v.([]any); return x, ok })
	if l == nil {
		return nil, false
	}
	return *l, true
}

func missingOrNull(present bool) string {
	if present {
		return "null where a value is required"
	}
	return "required, but missing"
}
