package score

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/schemas"
)

// TestRecorded: the counting runs record (scores.json's osl block, else the
// published summary's agentrace block) is found, agreed on, and its tokenizer
// found again by its digest from the folders above the runs.
func TestRecorded(t *testing.T) {
	vocab := []byte(`{"model":{"type":"BPE"}}`)
	sum := sha256.Sum256(vocab)
	use := &schemas.TokenizerUse{Name: "tk", Spec: filepath.Join(".cache", "tokenizers", "tk"), File: "tokenizer.json",
		TokenizerSHA256: hex.EncodeToString(sum[:]), TemplateSHA256: "t"}
	scoresWith := func(source string, u *schemas.TokenizerUse) map[string]any {
		return map[string]any{"scores.json": map[string]any{"osl": map[string]any{"source": source, "tokenizer": u}}}
	}
	summaryWith := func(source string) map[string]any {
		return map[string]any{"performance/result_summary.json": map[string]any{"agentrace": map[string]any{"token_source": source}}}
	}
	for _, tc := range []struct {
		name  string
		runs  map[string]map[string]any // run folder under the sweep: file: JSON
		vocab []byte                    // the tokenizer.json at .cache/tokenizers/tk above the sweep; nil: none
		want  string                    // Counting.String(), "" for nil
		found bool                      // Dir found
		err   string
	}{
		{name: "tokenizer found above the runs", runs: map[string]map[string]any{"c1": scoresWith("tokenizer:tk", use), "c8": scoresWith("tokenizer:tk", use)},
			vocab: vocab, want: "tokenizer tk (tokenizer.json sha256 " + use.TokenizerSHA256[:12] + ")", found: true},
		{name: "another tokenizer at the recorded place", runs: map[string]map[string]any{"c1": scoresWith("tokenizer:tk", use)},
			vocab: []byte(`{"model":{"type":"BPE","other":1}}`), want: "tokenizer tk (tokenizer.json sha256 " + use.TokenizerSHA256[:12] + ")"},
		{name: "tokenizer absent", runs: map[string]map[string]any{"c1": scoresWith("tokenizer:tk", use)},
			want: "tokenizer tk (tokenizer.json sha256 " + use.TokenizerSHA256[:12] + ")"},
		{name: "server usage", runs: map[string]map[string]any{"c1": scoresWith("server_usage", nil), "c8": scoresWith("server_usage", nil)},
			vocab: vocab, want: "the server's usage counts"},
		{name: "published summary only", runs: map[string]map[string]any{"c1": summaryWith("server_usage")}, want: "the server's usage counts"},
		{name: "a reference summary records nothing", runs: map[string]map[string]any{"c1": {"performance/result_summary.json": map[string]any{"system_tps": 1}}}},
		{name: "nothing recorded", runs: map[string]map[string]any{"c1": {}}},
		{name: "two ways", runs: map[string]map[string]any{"c1": scoresWith("server_usage", nil), "c8": scoresWith("tokenizer:tk", use)},
			err: "counted in 2 ways"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			sweep := filepath.Join(root, "demo", "runs")
			for run, files := range tc.runs {
				files[schemas.TurnLogFile] = nil
				for name, v := range files {
					p := filepath.Join(sweep, run, filepath.FromSlash(name))
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					b, err := json.Marshal(v)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, b, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			tokDir := filepath.Join(root, ".cache", "tokenizers", "tk")
			if tc.vocab != nil {
				if err := os.MkdirAll(tokDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(tokDir, "tokenizer.json"), tc.vocab, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Recorded([]string{sweep})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Recorded: %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if c != nil {
					t.Fatalf("Recorded: %s, want nothing recorded", c)
				}
				return
			}
			if c == nil || c.String() != tc.want {
				t.Fatalf("Recorded: %v, want %s", c, tc.want)
			}
			if c.ServerUsage() {
				return
			}
			if !tc.found {
				if c.Dir != "" {
					t.Fatalf("Dir %q, want none found (tried %v)", c.Dir, c.Tried)
				}
				if len(c.Tried) == 0 {
					t.Fatal("no place tried named")
				}
				return
			}
			abs, err := filepath.Abs(c.Dir)
			if err != nil || abs != tokDir {
				t.Fatalf("Dir %q (%s), want %s", c.Dir, abs, tokDir)
			}
			if same, err := c.Same(tokDir); err != nil || !same {
				t.Fatalf("Same(%s) = %v, %v; want true", tokDir, same, err)
			}
			if same, _ := c.Same(""); same {
				t.Fatal("Same(server usage) = true for a tokenizer's counts")
			}
			if got := c.RunsNamed(); !strings.Contains(got, "c1") {
				t.Fatalf("RunsNamed %q", got)
			}
		})
	}
}
