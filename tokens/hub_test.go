package tokens

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hubSnapshot writes a model snapshot with a tiny tokenizer into hub at commit
// and points refs/ref at it (no ref when ref is "").
func hubSnapshot(t *testing.T, hub, model, ref, commit string) string {
	t.Helper()
	repo := filepath.Join(hub, "models--"+strings.ReplaceAll(model, "/", "--"))
	snap := filepath.Join(repo, "snapshots", commit)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, HFTokenizerFile), []byte(tinyTokenizer(`[]`)), 0o644); err != nil {
		t.Fatal(err)
	}
	if ref != "" {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, "refs", ref)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, "refs", ref), []byte(commit+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

// TestResolve finds tokenizers as from_pretrained does offline: a local folder,
// else a model id in the hub cache chosen by HF_HUB_CACHE, HF_HOME or HOME, at
// a branch, a tag or a commit; and fails naming every path tried and the fetch
// command.
func TestResolve(t *testing.T) {
	const (
		c1 = "1111111111111111111111111111111111111111"
		c2 = "2222222222222222222222222222222222222222"
	)
	root := t.TempDir()
	hub := filepath.Join(root, "hub")
	main := hubSnapshot(t, hub, "Org/Model-1.5", "main", c1)
	dev := hubSnapshot(t, hub, "Org/Model-1.5", "refs/pr/3", c2)
	home := filepath.Join(root, "home")
	homeSnap := hubSnapshot(t, filepath.Join(home, ".cache", "huggingface", "hub"), "Org/Home", "main", c1)
	hfHome := filepath.Join(root, "hfhome")
	hfHomeSnap := hubSnapshot(t, filepath.Join(hfHome, "hub"), "Org/Home", "main", c2)
	local := filepath.Dir(filepath.Dir(main)) // a folder that exists

	tests := []struct {
		name              string
		spec, rev         string
		hubCache, hfHome  string
		want              string
		wantErr           []string
		wantErrNotContain string
	}{
		{name: "local folder", spec: local, want: local},
		{name: "model id at main", spec: "Org/Model-1.5", hubCache: hub, want: main},
		{name: "model id at a ref", spec: "Org/Model-1.5", rev: "refs/pr/3", hubCache: hub, want: dev},
		{name: "model id at a commit", spec: "Org/Model-1.5", rev: c2, hubCache: hub, want: dev},
		{name: "HF_HOME/hub", spec: "Org/Home", hfHome: hfHome, want: hfHomeSnap},
		{name: "HOME/.cache/huggingface/hub", spec: "Org/Home", want: homeSnap},
		{name: "absent model", spec: "Qwen/Qwen3.6-35B-A3B", hubCache: hub, wantErr: []string{
			"Qwen/Qwen3.6-35B-A3B (no such file or folder)",
			filepath.Join(hub, "models--Qwen--Qwen3.6-35B-A3B", "refs", "main") + " (no such file or folder)",
			"hf download Qwen/Qwen3.6-35B-A3B tokenizer.json tokenizer_config.json chat_template.jinja",
			"does not use the network"}},
		{name: "absent revision", spec: "Org/Model-1.5", rev: "v2", hubCache: hub, wantErr: []string{
			filepath.Join(hub, "models--Org--Model-1.5", "refs", "v2"), "hf download Org/Model-1.5 --revision v2 tokenizer.json"}},
		{name: "absent commit", spec: "Org/Model-1.5", rev: "3333333333333333333333333333333333333333", hubCache: hub, wantErr: []string{
			filepath.Join(hub, "models--Org--Model-1.5", "snapshots", "3333333333333333333333333333333333333333")}},
		{name: "not a model id", spec: "no/such/folder", hubCache: hub, wantErr: []string{"no/such/folder (no such file or folder)", "Hugging Face model id"},
			wantErrNotContain: "hf download"},
		{name: "revision of a local folder", spec: local, rev: "v1", wantErr: []string{"applies only to a Hugging Face model id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HF_HUB_CACHE", tt.hubCache)
			t.Setenv("HF_HOME", tt.hfHome)
			t.Setenv("XDG_CACHE_HOME", "")
			t.Setenv("HOME", home)
			got, err := Resolve(tt.spec, tt.rev)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Resolve = %s, want an error", got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if tt.wantErrNotContain != "" && strings.Contains(err.Error(), tt.wantErrNotContain) {
					t.Errorf("error %q holds %q", err, tt.wantErrNotContain)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Resolve = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	// Load takes a model id too, and records what it was asked for.
	t.Setenv("HF_HUB_CACHE", hub)
	tok, err := Load(context.Background(), "Org/Model-1.5")
	if err != nil {
		t.Fatal(err)
	}
	if id := tok.Identity(); id.Spec != "Org/Model-1.5" || id.Dir != main || id.File != HFTokenizerFile || len(id.TokenizerSHA256) != 64 {
		t.Errorf("identity %+v", id)
	}
}

// TestConfigAddedTokens: tokens only tokenizer_config.json lists become single
// tokens with the config's ids, as transformers adds them; a config entry for a
// token tokenizer.json has keeps its id.
func TestConfigAddedTokens(t *testing.T) {
	dir := writeDir(t, map[string]string{
		HFTokenizerFile: tinyTokenizer(`[]`),
		ConfigFile: `{"added_tokens_decoder": {
			"300": {"content": "<think>", "special": false, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false},
			"301": {"content": "</think>", "special": false, "normalized": false, "lstrip": false, "rstrip": false, "single_word": false}},
			"eos_token": "<|eos|>"}`,
	})
	tok, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := tok.AddedFromConfig(); n != 3 {
		t.Errorf("%d tokens added from the config, want 3 (<think>, </think>, eos)", n)
	}
	got := tok.Encode("a<think>b</think><|eos|>", false)
	want := []int{'a', 300, 'b', 301, 302}
	if !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
}

// TestPythonTokenizerRefused: a folder whose tokenizer is Python code (Kimi's
// tokenization_kimi.py over tiktoken.model) is refused with what to do.
func TestPythonTokenizerRefused(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"auto_map": {TiktokenFile: "YQ== 0\n", ConfigFile: `{"auto_map": {"AutoTokenizer": ["tokenization_kimi.TikTokenTokenizer", null]}}`},
		"py file":  {TiktokenFile: "YQ== 0\n", "tokenization_kimi.py": "pat_str = 'x'\n"},
		"no vocab": {ConfigFile: `{"auto_map": {"AutoTokenizer": ["tokenization_kimi.TikTokenTokenizer", null]}}`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(context.Background(), writeDir(t, files))
			if err == nil || !strings.Contains(err.Error(), "tokenization_kimi.py") || !strings.Contains(err.Error(), "Python") {
				t.Errorf("Load: %v, want a refusal naming tokenization_kimi.py", err)
			}
		})
	}
}

// TestPythonChatEncoder: a folder whose chat template is Python code
// (DeepSeek-V4's encoding/encoding_dsv4.py beside tokenizer.json) loads and
// encodes, and every count that needs the template says why it cannot.
func TestPythonChatEncoder(t *testing.T) {
	dir := writeDir(t, map[string]string{HFTokenizerFile: tinyTokenizer(`[]`)})
	if err := os.Mkdir(filepath.Join(dir, "encoding"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "encoding", "encoding_dsv4.py"), []byte("def encode_messages(messages, thinking_mode):\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := tok.Count("hello"); n != 5 {
		t.Errorf("Count = %d, want 5", n)
	}
	_, err = tok.CountISL([]byte(`[{"role":"user","content":"hi"}]`), nil, nil)
	if !errors.Is(err, ErrNoTemplate) || !strings.Contains(err.Error(), "encoding/encoding_dsv4.py") || !strings.Contains(err.Error(), "Python") {
		t.Errorf("CountISL: %v, want ErrNoTemplate naming encoding/encoding_dsv4.py", err)
	}
}
