package ingest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// TestPandasLine: a line that pandas' reader takes but that is not JSON is
// rewritten into JSON of the same meaning for the reference (NaN as null, the
// infinities as overflowing numbers, raw control characters escaped), with a
// warning per kind; lowercase nan and inf, and lines that are not even pandas',
// are left to the strict error.
func TestPandasLine(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		warn    []string // substrings, one per warning, in order
	}{
		{`{"d": NaN, "a": [NaN, {"x": Infinity}], "b": -Infinity}`, `{"d": null, "a": [null, {"x": 1e999}], "b": -1e999}`,
			[]string{"NaN (2 on this line)", "Infinity or -Infinity (2 on this line)"}},
		{"{\"c\": \"a\x01b\tc\x1f\rd\", \"k\\\"NaN\": \"Infinity\\\\\"}", `{"c": "a\u0001b\u0009c\u001f\u000dd", "k\"NaN": "Infinity\\"}`,
			[]string{"raw control character U+0001, U+0009, U+000D, U+001F in a string"}},
		{`{"d": nan}`, "", nil},
		{`{"d": inf}`, "", nil},
		{`{"d": NaN`, "", nil},
		{"{\"c\": \"a\nb\"}", `{"c": "a\u000ab"}`, []string{"U+000A"}},
	} {
		out, warns, ok := pandasLine([]byte(tc.in))
		if ok != (tc.out != "") {
			t.Errorf("pandasLine(%q): ok %v", tc.in, ok)
			continue
		}
		if !ok {
			continue
		}
		if string(out) != tc.out {
			t.Errorf("pandasLine(%q) = %s, want %s", tc.in, out, tc.out)
		}
		if !json.Valid(out) {
			t.Errorf("pandasLine(%q) = %s: not JSON", tc.in, out)
		}
		if len(warns) != len(tc.warn) {
			t.Errorf("pandasLine(%q): warnings %q, want %d", tc.in, warns, len(tc.warn))
			continue
		}
		for i, w := range tc.warn {
			if !strings.Contains(warns[i], w) {
				t.Errorf("pandasLine(%q): warning %q lacks %q", tc.in, warns[i], w)
			}
		}
	}
}

// FuzzPandasLine: whatever pandas' dialect accepts is rewritten into valid JSON,
// and a line that is already JSON is never rewritten (ingest only calls pandasLine
// after the strict scan failed, but the rewrite must not change JSON's meaning).
func FuzzPandasLine(f *testing.F) {
	f.Add(`{"d": NaN, "a": [Infinity, -Infinity, "x\u0001"]}`)
	f.Add("{\"c\": \"a\x01b\"}")
	f.Add(`{"a": "NaN\\", "b": 1}`)
	f.Fuzz(func(t *testing.T, in string) {
		out, _, ok := pandasLine([]byte(in))
		if !ok {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("pandasLine(%q) = %q: not JSON", in, out)
		}
		if json.Valid([]byte(in)) && string(out) != in {
			t.Fatalf("pandasLine(%q) = %q: JSON rewritten", in, out)
		}
	})
}

// TestNonFiniteSnapshotAndFlat: NaN and -Infinity in a snapshot (which the
// reference's converter reads with json.loads and writes back for pandas) and in
// its flat form give the same dataset, the one of the same files with null and
// -1e999 written in their place, with the warnings.
func TestNonFiniteSnapshotAndFlat(t *testing.T) {
	root := testenv.RepoRoot(t)
	dir := t.TempDir()
	hash := func(name, nan, ninf string) (string, []string) {
		b, err := os.ReadFile(filepath.Join(root, "testdata/ingest", name))
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(b), `"delay_seconds": 0.25`, `"delay_seconds": `+nan, 1)
		s = strings.Replace(s, `"delay_seconds": 2.5`, `"delay_seconds": `+ninf, 1)
		if s == string(b) {
			t.Fatalf("%s: nothing replaced", name)
		}
		in := filepath.Join(dir, nan+ninf+name)
		if err := os.WriteFile(in, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := Run(context.Background(), Options{Out: filepath.Join(dir, "out-"+nan+ninf+name), Inputs: []string{in}})
		if err != nil {
			t.Fatal(err)
		}
		return m.ContentHash, m.Warnings
	}
	snap, sw := hash("small.snapshot.jsonl", "NaN", "-Infinity")
	flat, fw := hash("small.flat.jsonl", "NaN", "-Infinity")
	want, _ := hash("small.flat.jsonl", "null", "-1e999")
	if snap != flat || flat != want {
		t.Errorf("content hash: snapshot %s, flat %s, with null and -1e999 %s", snap, flat, want)
	}
	for _, ws := range [][]string{sw, fw} {
		all := strings.Join(ws, "\n")
		if !strings.Contains(all, "NaN (1 on this line) is not JSON") || !strings.Contains(all, "Infinity or -Infinity (1 on this line) is not JSON") {
			t.Errorf("warnings:\n%s", all)
		}
	}
	// Raw control characters: the converter's json.loads refuses them.
	b, _ := os.ReadFile(filepath.Join(root, "testdata/ingest/small.snapshot.jsonl"))
	in := filepath.Join(dir, "ctl.snapshot.jsonl")
	os.WriteFile(in, []byte(strings.Replace(string(b), "second part", "second\x01part", 1)), 0o644)
	if _, err := Run(context.Background(), Options{Out: filepath.Join(dir, "ctl"), Inputs: []string{in}}); err == nil || !strings.Contains(err.Error(), "control character in string") {
		t.Errorf("a raw control character in a snapshot: %v", err)
	}
}

// TestSplicer: a record that raw newlines in a string split over several lines is
// joined as pandas' reader joins it (pieces stripped of whitespace, empty ones
// dropped, commas between), also when its lines come in different chunks; lines
// that never come together keep their own errors.
func TestSplicer(t *testing.T) {
	lines := []string{
		`{"conversation_id": "c", "turn": 1, "role": "user", "content": "a  `,
		"   b\t",
		`  c."}`,
		`{"conversation_id": "c", "turn": 2, "role": "assistant", "content": "ok"}`,
	}
	var items []item
	for i, l := range lines {
		if it := parseLine([]byte(l), int64(i+1), FormatFlat); it.err != nil || it.row != nil {
			items = append(items, it)
		}
	}
	for cut := 0; cut <= len(items); cut++ {
		sp := splicer{maxLine: DefaultMaxLineBytes}
		got := append(sp.feed(append([]item(nil), items[:cut]...)), sp.feed(append([]item(nil), items[cut:]...))...)
		got = append(got, sp.flush()...)
		if len(got) != 2 || got[0].row == nil || got[1].row == nil {
			t.Fatalf("cut %d: %d items %+v", cut, len(got), got)
		}
		if c := string(got[0].row.content); c != `"a,b,c."` || got[0].line != 1 || !strings.Contains(got[0].row.warnings[0], "over lines 1-3") {
			t.Errorf("cut %d: content %s line %d warnings %q", cut, c, got[0].line, got[0].row.warnings)
		}
	}

	dir := t.TempDir()
	in := filepath.Join(dir, "split.jsonl")
	os.WriteFile(in, []byte(strings.Join(lines[:2], "\n")+"\n\n"+strings.Join(lines[2:], "\n")+"\n"), 0o644)
	m, err := Run(context.Background(), Options{Out: filepath.Join(dir, "ds"), Inputs: []string{in}})
	if err != nil || !strings.Contains(strings.Join(m.Warnings, "\n"), "split.jsonl:1: conversation \"c\" turn 1 : a raw newline inside a string splits this record over lines 1-4") {
		t.Errorf("split record: %v %q", err, m.Warnings)
	}
	// Never closed: every line keeps its error.
	os.WriteFile(in, []byte(lines[0]+"\n"+lines[1]+"\n"+lines[3]+"\n"), 0o644)
	_, err = Run(context.Background(), Options{Out: filepath.Join(dir, "ds2"), Inputs: []string{in}})
	for _, want := range []string{"split.jsonl:1: invalid JSON at byte 64: unterminated string", "split.jsonl:2: invalid JSON at byte 4: unexpected 'b'"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("unclosed record: want %q in %v", want, err)
		}
	}
}
