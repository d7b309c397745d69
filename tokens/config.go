package tokens

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/internal/infile"
)

// config is the part of tokenizer_config.json that counting needs.
type config struct {
	NameOrPath   string                 `json:"name_or_path"`
	PatStr       string                 `json:"pat_str"` // tiktoken folders: the split pattern (our extension)
	ChatTemplate json.RawMessage        `json:"chat_template"`
	AddedTokens  map[string]configAdded `json:"added_tokens_decoder"`
	// AdditionalSpecial are extra special tokens (strings or token objects).
	AdditionalSpecial []json.RawMessage `json:"additional_special_tokens"`
	// AutoMap names the Python classes transformers imports with
	// trust_remote_code (a tokenizer written in Python: Kimi's).
	AutoMap map[string]json.RawMessage `json:"auto_map"`
	Tokens  map[string]json.RawMessage `json:"-"` // bos_token, eos_token, ... as given
}

// configAdded is an added token as tokenizer_config.json's added_tokens_decoder
// writes it under its id, and tokenizer.json's added_tokens beside its id
// (hfAddedToken).
type configAdded struct {
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// token is the added token a has, with id.
func (a configAdded) token(id int) addedToken {
	return addedToken{content: a.Content, id: id, special: a.Special, lstrip: a.LStrip, rstrip: a.RStrip, singleWord: a.SingleWord, normalized: a.Normalized}
}

// specialTokenKeys are the config entries a chat template may refer to by name.
var specialTokenKeys = []string{"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}

// readConfig reads dir/tokenizer_config.json; a missing file gives nil.
func readConfig(ctx context.Context, dir string) (*config, error) {
	path := filepath.Join(dir, ConfigFile)
	var c config
	data, err := readJSONFile(ctx, path, configFileLimit, &c)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load tokenizer config %q: %w", path, err)
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
	return tokenString(raw)
}

// tokenString reads a token given as a string or as an object with "content".
func tokenString(raw json.RawMessage) (string, bool) {
	if isNull(raw) {
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

// addConfigTokens adds to added (tokenizer.json's added_tokens) what
// transformers adds when it loads a fast tokenizer
// (PreTrainedTokenizerFast.__init__): each added_tokens_decoder entry of the
// config that tokenizer.json lacks or lists with other options (in id order;
// an entry with the same content replaces the file's), then each special token
// the config names (eos_token, additional_special_tokens, ...) that is still
// missing, as a special token. Qwen3.5's and Qwen3.6's tokenizer.json lists 26
// added tokens and their tokenizer_config.json 33: <think>, <tool_response> and
// others are single tokens only with the config's. A token keeps the config's id
// (the one the model was trained with); a token named only as a special token
// takes its vocabulary id, else the next free id.
func addConfigTokens(added []addedToken, c *config, vocab map[string]int32, maxID int32) ([]addedToken, error) {
	if c == nil {
		return added, nil
	}
	at := make(map[string]int, len(added))
	for i, a := range added {
		at[a.content] = i
		maxID = max(maxID, int32(a.id))
	}
	ids := make([]int, 0, len(c.AddedTokens))
	byID := make(map[int]configAdded, len(c.AddedTokens))
	for idS, a := range c.AddedTokens {
		id, err := parseTokenID(idS)
		if err != nil {
			return nil, fmt.Errorf("%s: added_tokens_decoder: %w", ConfigFile, err)
		}
		ids = append(ids, id)
		byID[id] = a
	}
	sort.Ints(ids)
	for _, id := range ids {
		a := byID[id]
		tok := a.token(id)
		if i, ok := at[a.Content]; ok {
			added[i] = tok
			continue
		}
		at[a.Content] = len(added)
		added = append(added, tok)
		maxID = max(maxID, int32(id))
	}
	var named []string
	for _, k := range specialTokenKeys {
		if v, ok := c.specialToken(k); ok {
			named = append(named, v)
		}
	}
	for _, raw := range c.AdditionalSpecial {
		if v, ok := tokenString(raw); ok {
			named = append(named, v)
		}
	}
	for _, v := range named {
		if _, ok := at[v]; ok || v == "" {
			continue
		}
		id, ok := vocab[v]
		if !ok {
			maxID++
			id = maxID
		}
		at[v] = len(added)
		added = append(added, addedToken{content: v, id: int(id), special: true})
	}
	return added, nil
}

// maxTokenID is the largest id a vocabulary may hold (ids are int32).
const maxTokenID = math.MaxInt32

// parseTokenID reads an added token's id as added_tokens_decoder keys it.
func parseTokenID(s string) (int, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		switch {
		case errors.Is(err, strconv.ErrRange) && strings.HasPrefix(s, "-"):
			return 0, fmt.Errorf("id %s is negative: a token id is 0 or more", excerpt(s))
		case errors.Is(err, strconv.ErrRange):
			return 0, fmt.Errorf("id %s is over %d, the largest a token id may be", excerpt(s), maxTokenID)
		}
		return 0, fmt.Errorf("id %s is not a whole number", excerpt(s))
	}
	return int(id), checkTokenID(id)
}

// checkTokenID says what is wrong with an added token's id, if anything.
func checkTokenID(id int64) error {
	switch {
	case id < 0:
		return fmt.Errorf("id %d is negative: a token id is 0 or more", id)
	case id > maxTokenID:
		return fmt.Errorf("id %d is over %d, the largest a token id may be", id, maxTokenID)
	}
	return nil
}

// pythonTokenizer returns the Python source a folder's tokenizer is written in
// (the module auto_map's AutoTokenizer names, else a tokenization_*.py beside
// the files), or "".
func pythonTokenizer(dir string, c *config) string {
	if c != nil {
		if raw, ok := c.AutoMap["AutoTokenizer"]; ok {
			var names []*string
			var one string
			if json.Unmarshal(raw, &names) != nil {
				names = nil
				if json.Unmarshal(raw, &one) == nil {
					names = []*string{&one}
				}
			}
			for _, n := range names {
				if n == nil || *n == "" {
					continue
				}
				mod, _, _ := strings.Cut(*n, ".")
				if _, name, ok := strings.Cut(mod, "--"); ok {
					mod = name // "org/repo--module": code of another repository
				}
				return mod + ".py"
			}
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "tokenization_*.py")); len(files) > 0 {
		return filepath.Base(files[0])
	}
	return ""
}

// pythonChatEncoder returns the Python chat encoder of a folder that has no
// Jinja template (DeepSeek-V3.2's and V4's encoding/encoding_dsv*.py, whose
// encode_messages the serving engines call), relative to dir; "" for none.
func pythonChatEncoder(dir string) string {
	for _, pattern := range []string{"encoding/encoding_*.py", "encoding_*.py"} {
		if files, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(pattern))); len(files) > 0 {
			rel, err := filepath.Rel(dir, files[0])
			if err != nil {
				return files[0]
			}
			return filepath.ToSlash(rel)
		}
	}
	return ""
}

// templateSource returns the chat template and where it came from:
// chat_template.jinja when present (as transformers reads it), else the
// config's chat_template (a string, or a list of named templates of which
// "default" is taken).
func templateSource(ctx context.Context, dir string, c *config) (src, from string, err error) {
	src, from, err = templateText(ctx, dir, c)
	if err == nil && int64(len(src)) > templateLimit {
		return "", "", fmt.Errorf("load chat template in %q (%s): %d bytes, the limit is %d", dir, from, len(src), templateLimit)
	}
	return src, from, err
}

func templateText(ctx context.Context, dir string, c *config) (src, from string, err error) {
	path := filepath.Join(dir, TemplateFile)
	if data, err := infile.ReadFile(ctx, path, templateLimit); err == nil {
		return string(data), TemplateFile, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", "", fmt.Errorf("load chat template %q: %w", path, err)
	}
	if c == nil || isNull(c.ChatTemplate) {
		return "", "", nil
	}
	from = ConfigFile + " chat_template"
	var s string
	if json.Unmarshal(c.ChatTemplate, &s) == nil {
		return s, from, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(c.ChatTemplate, &named); err != nil {
		return "", "", fmt.Errorf("load tokenizer config in %q: chat_template is neither a string nor a list of named templates", dir)
	}
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, from, nil
		}
	}
	if len(named) > 0 {
		return named[0].Template, from, nil
	}
	return "", "", nil
}
