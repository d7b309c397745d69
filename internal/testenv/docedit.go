package testenv

import (
	"encoding/json"
	"os"
	"testing"

	"go.yaml.in/yaml/v3"
)

// DocAt is the value at path in a decoded JSON or YAML document: object keys are
// strings, list indices any number (float64, int64, int or json.Number).
func DocAt(t testing.TB, doc any, path []any) any {
	t.Helper()
	for _, k := range path {
		switch d := doc.(type) {
		case map[string]any:
			doc = d[k.(string)]
		case []any:
			doc = d[docIndex(t, k)]
		default:
			t.Fatalf("no %v in the document", path)
		}
	}
	return doc
}

// DocEdit edits a decoded document at path (a test corpus's edit): op "delete"
// removes the key, "merge" adds value's keys to the object there, any other op
// sets value.
func DocEdit(t testing.TB, doc any, path []any, op string, value any) {
	t.Helper()
	parent, last := DocAt(t, doc, path[:len(path)-1]), path[len(path)-1]
	switch p := parent.(type) {
	case map[string]any:
		k := last.(string)
		switch op {
		case "delete":
			delete(p, k)
		case "merge":
			for mk, mv := range value.(map[string]any) {
				p[k].(map[string]any)[mk] = mv
			}
		default:
			p[k] = value
		}
	case []any:
		i := docIndex(t, last)
		if op == "merge" {
			for mk, mv := range value.(map[string]any) {
				p[i].(map[string]any)[mk] = mv
			}
		} else {
			p[i] = value
		}
	default:
		t.Fatalf("%v is not in a container", path)
	}
}

func docIndex(t testing.TB, k any) int {
	t.Helper()
	switch x := k.(type) {
	case float64:
		return int(x)
	case int64:
		return int(x)
	case int:
		return x
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i)
		}
	}
	t.Fatalf("list index %v is not a whole number", k)
	return 0
}

// EditYAML edits the YAML file at path in place as DocEdit edits a document
// (op "delete" removes the key at keys, any other op sets value there).
func EditYAML(t testing.TB, file string, keys []any, op string, value any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	DocEdit(t, doc, keys, op, value)
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
