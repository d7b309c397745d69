package testenv

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// CorpusOp is one edit a checker corpus case makes to a copy of a submission
// tree (testdata/checker-corpus): "set", "delete", "merge" or "move" a JSON
// value at Path (move: from From), "yaml-set" or "yaml-delete" a YAML key,
// "write" a file (a string as is, any other value as JSON), "mkdir", "remove",
// "rename" or "copy" (a folder) to To. In File and To, MODEL stands for the
// model folder and SYSTEM for its system folder; a File with glob characters
// edits every match.
type CorpusOp struct {
	Op    string `json:"op"`
	File  string `json:"file"`
	Path  []any  `json:"path"`
	From  []any  `json:"from"`
	Value any    `json:"value"`
	To    string `json:"to"`
}

// Apply makes the edit under root, model being the model folder relative to it.
// number, when set, gives the value a JSON number of the corpus or of an edited
// file stands for (the checker's reading of it); nil reads it as a float64.
func (op CorpusOp) Apply(t testing.TB, root, model string, number func(json.Number) any) {
	t.Helper()
	file := strings.Replace(op.File, "MODEL", model, 1)
	file = strings.Replace(file, "SYSTEM", filepath.Dir(model), 1)
	pattern := filepath.Join(root, filepath.FromSlash(file))
	files := []string{pattern}
	if strings.ContainsAny(pattern, "*?[") {
		files, _ = filepath.Glob(pattern)
		sort.Strings(files)
	}
	if len(files) == 0 {
		t.Fatalf("no file for %+v", op)
	}
	for _, f := range files {
		op.applyOne(t, root, model, f, number)
	}
}

func (op CorpusOp) applyOne(t testing.TB, root, model, file string, number func(json.Number) any) {
	t.Helper()
	write := func(b []byte) {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	value := numbers(op.Value, number)
	switch op.Op {
	case "write":
		if s, ok := value.(string); ok {
			write([]byte(s))
			return
		}
		b, err := json.MarshalIndent(value, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		write(b)
		return
	case "copy":
		to := filepath.Join(root, filepath.FromSlash(strings.Replace(op.To, "MODEL", model, 1)))
		if err := os.CopyFS(to, os.DirFS(file)); err != nil {
			t.Fatal(err)
		}
		return
	case "mkdir":
		if err := os.MkdirAll(file, 0o755); err != nil {
			t.Fatal(err)
		}
		return
	case "remove":
		if _, err := os.Lstat(file); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(file); err != nil {
			t.Fatal(err)
		}
		return
	case "rename":
		if err := os.Rename(file, filepath.Join(root, filepath.FromSlash(op.To))); err != nil {
			t.Fatal(err)
		}
		return
	case "yaml-set", "yaml-delete":
		EditYAML(t, file, op.Path, strings.TrimPrefix(op.Op, "yaml-"), value)
		return
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	doc = numbers(doc, number)
	if op.Op == "move" {
		value = DocAt(t, doc, op.From)
	}
	DocEdit(t, doc, op.Path, op.Op, value)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	write(out)
}

// numbers replaces, in a decoded document, each json.Number by number's value
// for it (nil: its float64).
func numbers(v any, number func(json.Number) any) any {
	switch x := v.(type) {
	case json.Number:
		if number != nil {
			return number(x)
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e, number)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e, number)
		}
	}
	return v
}
