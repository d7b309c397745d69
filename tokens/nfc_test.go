package tokens

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/agentrace/agentrace/internal/testenv"
)

var updateNFC = flag.Bool("update-nfc", false, "rewrite testdata/tokens/nfc-hf.json from Hugging Face's normalizer (needs the npm packages)")

// sweepRunes are every code point U+0000-U+2FFFF and U+E0000-U+E01FF but the
// surrogates.
func sweepRunes() []rune {
	var rs []rune
	for r := rune(0); r <= 0x2FFFF; r++ {
		if r < 0xD800 || r > 0xDFFF {
			rs = append(rs, r)
		}
	}
	for r := rune(0xE0000); r <= 0xE01FF; r++ {
		rs = append(rs, r)
	}
	return rs
}

// nfcContexts put a code point where normalization could move, compose or
// block: alone; between a letter and a mark that composes with it (U+0301);
// after and before marks it may be reordered with (U+0315 class 232, U+0323
// 220, U+0334 1, Hebrew 18 and 10, U+093C 7, U+094D 9); between Hangul jamo
// and between the parts of two-starter compositions (U+0B47 U+0B3E, U+11935
// U+11930); after a space, twice in a word, before two marks, after a digit.
// "|" (a starter that composes with nothing) separates them in one string.
var nfcContexts = []string{
	"%", "e%\u0301", "a\u0315%", "a%\u0323", "%\u0301", "\u0301%", " %x", "x%%y",
	"1%\u0334", "\u05b8%\u05b0", "\u1100%\u1161", "\u0b47%\u0b3e", "%\U00011930",
	"a%\u093c", "a\u094d%", "%\u0308\u0301", "\U00011935%",
}

// nfcSweepText is the sweep's text for r: nfcContexts with r for each %.
func nfcSweepText(r rune) string {
	return strings.ReplaceAll(strings.Join(nfcContexts, "|"), "%", string(r))
}

// nfcRecord is testdata/tokens/nfc-hf.json: what Hugging Face's NFC
// normalizer (tokenizers 0.23.2) made of each sweep text, as the texts where
// it differs from Go's NFC and the SHA-256 of every result, in order, each
// followed by "\n".
type nfcRecord struct {
	Oracle     string            `json:"oracle"`
	Texts      int               `json:"texts"`
	SHA256     string            `json:"sha256"`
	Exceptions map[string]string `json:"exceptions"` // code point (U+XXXX) to the result
}

func nfcRecordPath(t testing.TB) string {
	return filepath.Join(testenv.RepoRoot(t), "testdata", "tokens", "nfc-hf.json")
}

// TestNFCAsHuggingFace: nfc equals Hugging Face's NFC normalizer on every code
// point of the sweep in every context (its recorded outcomes: no node
// needed), including the marks Unicode added after 9.0, which Go's NFC
// reorders or composes and Hugging Face's leaves.
func TestNFCAsHuggingFace(t *testing.T) {
	data, err := os.ReadFile(nfcRecordPath(t))
	if err != nil {
		t.Fatal(err)
	}
	var rec nfcRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	rs := sweepRunes()
	if rec.Texts != len(rs) {
		t.Fatalf("record holds %d texts, the sweep %d", rec.Texts, len(rs))
	}
	h := sha256.New()
	bad, late := 0, 0
	for _, r := range rs {
		s := nfcSweepText(r)
		got := nfc(s)
		want, ok := rec.Exceptions[codePoint(r)]
		if ok {
			late++
		} else {
			want = norm.NFC.String(s)
		}
		if got != want {
			if bad++; bad <= 10 {
				t.Errorf("%s: nfc %+q, Hugging Face %+q", codePoint(r), got, want)
			}
		}
		h.Write([]byte(got + "\n"))
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != rec.SHA256 {
		t.Errorf("sha256 of the results %s, Hugging Face's %s", sum, rec.SHA256)
	}
	t.Logf("NFC equal to Hugging Face's (%s) on %d of %d code points, %d of them where Go's NFC differs", rec.Oracle, len(rs)-bad, len(rs), late)
}

// TestNFCOracle runs Hugging Face's normalizer itself on the sweep and
// compares with the record (-update-nfc rewrites it).
func TestNFCOracle(t *testing.T) {
	dir, node := testenv.JSModule(t, "tokenizers")
	rs := sweepRunes()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, r := range rs {
		if err := enc.Encode(map[string]string{"text": nfcSweepText(r)}); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(node, filepath.Join(dir, "normalize-hf.mjs"))
	cmd.Dir, cmd.Stdin = dir, &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("normalize-hf.mjs: %v: %s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(rs) {
		t.Fatalf("normalize-hf.mjs returned %d lines for %d texts", len(lines), len(rs))
	}
	rec := nfcRecord{Oracle: "Hugging Face tokenizers 0.23.2 (npm), NFC normalizer", Texts: len(rs), Exceptions: map[string]string{}}
	h := sha256.New()
	bad := 0
	for i, r := range rs {
		var l struct{ NFC string }
		if err := json.Unmarshal([]byte(lines[i]), &l); err != nil {
			t.Fatal(err)
		}
		s := nfcSweepText(r)
		if l.NFC != norm.NFC.String(s) {
			rec.Exceptions[codePoint(r)] = l.NFC
		}
		if got := nfc(s); got != l.NFC {
			if bad++; bad <= 10 {
				t.Errorf("%s: nfc %+q, Hugging Face %+q", codePoint(r), got, l.NFC)
			}
		}
		h.Write([]byte(l.NFC + "\n"))
	}
	rec.SHA256 = hex.EncodeToString(h.Sum(nil))
	t.Logf("NFC equal to Hugging Face's on %d of %d code points; Go's NFC differs from it on %d", len(rs)-bad, len(rs), len(rec.Exceptions))
	if *updateNFC {
		data, err := json.MarshalIndent(rec, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(nfcRecordPath(t), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func codePoint(r rune) string { return fmt.Sprintf("U+%04X", r) }
