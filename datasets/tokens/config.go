package tokens

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/agentrace/agentrace/internal/infile"
)

// config is the part of tokenizer_config.json that counting needs.
type config struct {
	NameOrPath   string                     `json:"name_or_path"`
	PatStr       string                     `json:"pat_str"` // tiktoken folders: the split pattern (our extension)
	ChatTemplate json.RawMessage            `json:"chat_template"`
	AddedTokens  map[string]configAdded     `json:"added_tokens_decoder"`
	Tokens       map[string]json.RawMessage `json:"-"` // bos_token, eos_token, ... as given
}

type configAdded struct {
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// specialTokenKeys are the config entries a chat template may refer to by name.
var specialTokenKeys = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// readConfig reads dir/tokenizer_config.json; a missing file gives nil.
func readConfig(dir string) (*config, error) {
	path := filepath.Join(dir, ConfigFile)
	data, err := infile.ReadFile(path, infile.SmallFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load tokenizer config %q: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("load tokenizer config %q: %w", path, errTruncated)
	}
	var c config
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("load tokenizer config %q: not valid JSON (truncated?): %w", path, err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, fmt.Errorf("load tokenizer config %q: %w", path, err)
	}
	c.Tokens = make(map[string]json.RawMessage)
	for _, k := range specialTokenKeys {
		if v, ok := all[k]; ok {
			c.Tokens[k] = v
		}
	}
	return &c, nil
}

// specialToken returns a config token entry (a string, or an object with
// "content") as a string.
func (c *config) specialToken(key string) (string, bool) {
	if c == nil {
		return "", false
	}
	raw, ok := c.Tokens[key]
	if !ok || isNull(raw) {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Content, true
	}
	return "", false
}

// templateSource returns the chat template: chat_template.jinja when present,
// else the config's chat_template (a string, or a list of named templates of
// which "default" is taken).
func templateSource(dir string, c *config) (string, error) {
	path := filepath.Join(dir, TemplateFile)
	if data, err := infile.ReadFile(path, infile.SmallFile); err == nil {
		return string(data), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("load chat template %q: %w", path, err)
	}
	if c == nil || isNull(c.ChatTemplate) {
		return "", nil
	}
	var s string
	if json.Unmarshal(c.ChatTemplate, &s) == nil {
		return s, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(c.ChatTemplate, &named); err != nil {
		return "", fmt.Errorf("load tokenizer config in %q: chat_template is neither a string nor a list of named templates", dir)
	}
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, nil
		}
	}
	if len(named) > 0 {
		return named[0].Template, nil
	}
	return "", nil
}
