package tokens

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
)

// stdVocabMerges reads a vocabulary and merges with encoding/json: the oracle of
// scanVocab and scanMerges.
func stdVocabMerges(t *testing.T, vocabJSON, mergesJSON []byte) (map[string]int32, [][2]string) {
	t.Helper()
	var v map[string]int32
	if err := json.Unmarshal(vocabJSON, &v); err != nil {
		t.Fatal(err)
	}
	vocab := map[string]int32{}
	for k, id := range v {
		raw, ok := appendByteLevel(nil, []byte(k))
		if !ok {
			t.Fatalf("%q not byte-level", k)
		}
		vocab[string(raw)] = id
	}
	var m []json.RawMessage
	if err := json.Unmarshal(mergesJSON, &m); err != nil {
		t.Fatal(err)
	}
	var merges [][2]string
	for _, e := range m {
		var pair []string
		var s string
		if json.Unmarshal(e, &s) == nil {
			pair = strings.Split(s, " ")
		} else if err := json.Unmarshal(e, &pair); err != nil {
			t.Fatal(err)
		}
		a, _ := appendByteLevel(nil, []byte(pair[0]))
		b, _ := appendByteLevel(nil, []byte(pair[1]))
		merges = append(merges, [2]string{string(a), string(b)})
	}
	return vocab, merges
}

func TestScanVocabMerges(t *testing.T) {
	vocabJSON := []byte(` { "a" : 0, "b":1, "ab":2, "\u0120x":3, "\u0120":4, "x":5, "\u0120\u0078" : 6, "c\/" : 7, "abĠx": 8, "Ġa": 9 } `)
	mergesJSON := []byte(`["a b", ["\u0120", "x"], [ "a" , "b" ], "\u0120 x", ["ab", "\u0120x"], ["\u0120", "a"]]`)
	wantV, wantM := stdVocabMerges(t, vocabJSON, mergesJSON)
	v, err := scanVocab(vocabJSON)
	if err != nil || !reflect.DeepEqual(v, wantV) {
		t.Fatalf("scanVocab = %v, %v; want %v", v, err, wantV)
	}
	m, err := scanMerges(mergesJSON)
	if err != nil || !reflect.DeepEqual(m, wantM) {
		t.Fatalf("scanMerges = %q, %v; want %q", m, err, wantM)
	}
	if m, err := scanMerges([]byte(`null`)); err != nil || m != nil {
		t.Fatalf("null merges: %v %v", m, err)
	}
	for _, tc := range []struct{ vocab, merges, err string }{
		{`{"a": 1.5}`, `[]`, "bad id"},
		{`{"a": -1}`, `[]`, "bad id"},
		{`{"a": "1"}`, `[]`, "bad id"},
		{`{"日": 1}`, `[]`, "not in byte-level form"},
		{`{"a": 1}` + "\x00", `[]`, "trailing data"},
		{`{"a": 1}`, `[]` + "\x00", "trailing data"},
		{`{"a": 1}`, `null x`, "trailing data"},
		{`{"a": 1,}`, `[]`, "invalid JSON"},
		{`{"a": 1}`, `["a"]`, "not two tokens separated by a space"},
		{`{"a": 1}`, `["a b c"]`, "not two tokens separated by a space"},
		{`{"a": 1}`, `[["a"]]`, "merge 0 is not a pair"},
		{`{"a": 1}`, `[["a", "b", "c"]]`, "merge 0 is not a pair"},
		{`{"a": 1}`, `[["a", 1]]`, "expected a string"},
		{`{"a": 1}`, `[1]`, "neither"},
		{`{"a": 1}`, `["日 a"]`, "not in byte-level form"},
		{`{"a": 1}`, ``, "unexpected end of input"},
	} {
		_, err := scanVocab([]byte(tc.vocab))
		if err == nil {
			_, err = scanMerges([]byte(tc.merges))
		}
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s %s: error %v, want %q", tc.vocab, tc.merges, err, tc.err)
		}
	}
}

// qwen3File is the real tokenizer's tokenizer.json, its vocabulary and merges
// left raw.
func qwen3File(t testing.TB) *hfFile {
	t.Helper()
	var f hfFile
	if _, err := readJSONFile(t.Context(), filepath.Join(testenv.Tokenizer(t), HFTokenizerFile), tokenizerFileLimit, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

// TestScanQwen3 reads the real tokenizer's vocabulary and merges both ways.
func TestScanQwen3(t *testing.T) {
	f := qwen3File(t)
	wantV, wantM := stdVocabMerges(t, f.Model.Vocab, f.Model.Merges)
	v, err := scanVocab(f.Model.Vocab)
	if err != nil || !reflect.DeepEqual(v, wantV) {
		t.Fatalf("scanVocab: %v (%d entries, want %d)", err, len(v), len(wantV))
	}
	m, err := scanMerges(f.Model.Merges)
	if err != nil || !reflect.DeepEqual(m, wantM) {
		t.Fatalf("scanMerges: %v (%d merges, want %d)", err, len(m), len(wantM))
	}
}

// BenchmarkScanVocabMerges reads the Qwen3 vocabulary and merges (the part of
// BenchmarkLoad that is JSON scanning).
func BenchmarkScanVocabMerges(b *testing.B) {
	f := qwen3File(b)
	b.SetBytes(int64(len(f.Model.Vocab) + len(f.Model.Merges)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := scanVocab(f.Model.Vocab); err != nil {
			b.Fatal(err)
		}
		if _, err := scanMerges(f.Model.Merges); err != nil {
			b.Fatal(err)
		}
	}
}
