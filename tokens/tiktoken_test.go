package tokens

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/internal/testenv"
	"golang.org/x/text/unicode/norm"
)

// writeQwenAsTiktoken converts the Qwen3 tokenizer into a tiktoken folder: its
// byte-level vocabulary decoded to raw bytes as a rank file (rank = id), its
// added tokens as the config's added_tokens_decoder, and its split pattern as
// pat_str. There is no real Kimi file to test with; this checks the tiktoken
// path against the BPE path on the same vocabulary.
func writeQwenAsTiktoken(t *testing.T, tok *Tokenizer) string {
	t.Helper()
	dir := t.TempDir()
	type entry struct {
		tok string
		id  int32
	}
	var entries []entry
	for s, id := range tok.model.vocab {
		entries = append(entries, entry{s, id})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].id < entries[j].id })
	var b bytes.Buffer
	for _, e := range entries {
		b.WriteString(base64.StdEncoding.EncodeToString([]byte(e.tok)))
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(int(e.id)))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, TiktokenFile), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	added := map[string]configAdded{}
	for _, l := range tok.rawAdded.byFirst {
		for _, a := range l {
			added[strconv.Itoa(a.id)] = configAdded{Content: a.content, Special: a.special}
		}
	}
	cfg, err := json.Marshal(map[string]any{"added_tokens_decoder": added, "pat_str": PatternQwen})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTiktokenMatchesBPE(t *testing.T) {
	t.Parallel()
	hf := loadQwen3(t)
	tk, err := Load(context.Background(), writeQwenAsTiktoken(t, hf))
	if err != nil {
		t.Fatal(err)
	}
	texts := append(sampleTexts(t), edgeCases()...)
	equal := 0
	for i, s := range texts {
		// Qwen normalizes to NFC before splitting; a tiktoken vocabulary has no
		// normalizer, so it gets the normalized text.
		a, b := hf.Encode(s, false), tk.Encode(norm.NFC.String(s), false)
		if slices.Equal(a, b) {
			equal++
		} else if equal+10 > i {
			t.Errorf("text %d %.60q: bpe %v, tiktoken %v", i, s, head(a), head(b))
		}
	}
	t.Logf("tiktoken path equal to the BPE path on %d of %d texts", equal, len(texts))
	if equal != len(texts) {
		t.Errorf("%d texts differ", len(texts)-equal)
	}
}

// TestKimiSplitMatchesRegex compares the hand-written matcher of Kimi's pattern
// with Python's regex module (VERSION1, which has class intersections) on the
// sample and the edge cases.
func TestKimiSplitMatchesRegex(t *testing.T) {
	t.Parallel()
	texts := append(sampleTexts(t), edgeCases()...)
	texts = append(texts, "中文English混合 Hello world\u0301x ABC\u0301d MyClass's x\n\n y ALLCAPS'S",
		"ǅungla ǈ ʰmod ˢup Ǆ\u0301", "ÀÉÎ\u0300õü'LL 'Ve", "日本語テキストと漢字カタカナ", "x\u0301\u0302\u0303 \u0301A")
	cmd := exec.Command(python(t, "regex"), filepath.Join(testenv.RepoRoot(t), "testdata", "py", "split_ref.py"), PatternKimi)
	out := runScript(t, "split_ref.py", cmd, textLines(texts))
	m := kimiMatcher{}
	i, equal := 0, 0
	for _, want := range decodeLines[struct{ Pieces []string }](t, out) {
		var got []string
		s := texts[i]
		for p := 0; p < len(s); {
			e := m.matchAt(s, p)
			got = append(got, s[p:e])
			p = e
		}
		if strings.Join(got, "\x00") == strings.Join(want.Pieces, "\x00") {
			equal++
		} else if i-equal < 10 {
			t.Errorf("text %d %.60q:\n  go    %q\n  regex %q", i, s, firstN(got), firstN(want.Pieces))
		}
		i++
	}
	t.Logf("Kimi split equal to Python regex on %d of %d texts", equal, len(texts))
	if equal != len(texts) {
		t.Errorf("%d of %d texts split differently", len(texts)-equal, len(texts))
	}
}

func firstN(s []string) string { return fmt.Sprintf("%q", s[:min(len(s), 16)]) }
