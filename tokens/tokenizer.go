package tokens

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentrace/agentrace/internal/infile"
)

// Tokenizer is a loaded reference tokenizer with its chat template. It is safe for
// concurrent use.
type Tokenizer struct {
	name      string
	model     *bpe
	normalize func(string) string // nil: none
	pre       preTokenizer        // nil: the whole text is one word
	rawAdded  addedSet            // added tokens matched in the raw text
	normAdded addedSet            // added tokens matched after normalization
	prefix    []int               // added around a sequence when addSpecial is set
	suffix    []int
	vocabSize int
	// chunk, when set, cuts the text into pieces encoded independently
	// (Kimi's slicing of long runs).
	chunk func(text string, emit func(string))

	template *chatTemplate // nil when the folder has no chat template
	// pythonTemplate names the Python chat encoder a folder without a Jinja
	// template ships (DeepSeek-V4's encoding/encoding_dsv4.py), "" for none.
	pythonTemplate string

	id              Identity
	addedFromConfig int // added tokens only tokenizer_config.json lists

	baseOnce sync.Once // the OSL baseline, rendered once
	base     int
	baseErr  error
}

// Files Load looks for in a tokenizer folder.
const (
	HFTokenizerFile = "tokenizer.json"
	TiktokenFile    = "tiktoken.model"
	ConfigFile      = "tokenizer_config.json"
	TemplateFile    = "chat_template.jinja"
	noTokenizerMsg  = "no " + HFTokenizerFile + " or " + TiktokenFile
)

// The most Load reads of each file of a tokenizer folder (infile.ReadFile):
// far above any real model's (Qwen3.6's tokenizer.json is 13 MB, its config
// 9 KB, its template 8 KB; Gemma 3's tokenizer.json 33 MB), far below what
// would exhaust memory.
const (
	tokenizerFileLimit int64 = 256 << 20 // tokenizer.json, tiktoken.model
	configFileLimit    int64 = 16 << 20  // tokenizer_config.json
	templateLimit      int64 = 1 << 20   // chat_template.jinja, or the config's chat_template
	refLimit           int64 = 4 << 10   // a hub cache's refs/REVISION: a commit id
)

// Identity is what a loaded tokenizer is: where it was found and the SHA-256
// of the files that decide its counts. A ruleset records its model's digests
// (rulesets.Ruleset.Tokenizer): counts made with any other files are a stand-in.
type Identity struct {
	// Name is the config's name_or_path, else the folder's name.
	Name string `json:"name"`
	// Spec is what the tokenizer was asked for (a folder or a model id); Dir is
	// the folder it was read from.
	Spec string `json:"spec,omitempty"`
	Dir  string `json:"dir,omitempty"`
	// File is the vocabulary file read (tokenizer.json or tiktoken.model) and
	// TokenizerSHA256 its digest.
	File            string `json:"file"`
	TokenizerSHA256 string `json:"tokenizer_sha256"`
	// TemplateFrom is where the chat template was read (chat_template.jinja or
	// tokenizer_config.json's chat_template), TemplateSHA256 the digest of its
	// text as read; both "" without a template.
	TemplateFrom   string `json:"template_from,omitempty"`
	TemplateSHA256 string `json:"template_sha256,omitempty"`
}

// Load reads the tokenizer spec names (Resolve: a local folder or file, or a
// Hugging Face model id in the local hub cache at DefaultRevision): a Hugging
// Face tokenizer.json (byte-level BPE) or a tiktoken-style rank file named
// tiktoken.model, plus tokenizer_config.json, as transformers loads them: the
// config's added_tokens_decoder entries that tokenizer.json lacks are added,
// and the chat template is chat_template.jinja when present, else the config's.
// A folder whose tokenizer is Python code (Kimi's tokenization_kimi.py, loaded
// with trust_remote_code) is refused. Each file is read as an input is
// (infile: a regular file, at most a size limit for its kind), and reading
// stops, with ctx's error, once ctx is done.
func Load(ctx context.Context, spec string) (*Tokenizer, error) {
	dir, err := Resolve(spec, "")
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t, err := LoadDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	t.id.Spec = spec
	return t, nil
}

// LoadDir is Load of a folder (or a file in it) already resolved.
func LoadDir(ctx context.Context, dir string) (*Tokenizer, error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		dir = filepath.Dir(dir)
	} else if err != nil {
		return nil, fmt.Errorf("load tokenizer %q: %w", dir, err)
	}
	cfg, err := readConfig(ctx, dir)
	if err != nil {
		return nil, err
	}
	var t *Tokenizer
	hf := filepath.Join(dir, HFTokenizerFile)
	tk := filepath.Join(dir, TiktokenFile)
	file := HFTokenizerFile
	switch {
	case exists(hf):
		t, err = loadHF(ctx, hf, cfg)
	case exists(tk):
		if py := pythonTokenizer(dir, cfg); py != "" && (cfg == nil || cfg.PatStr == "") {
			return nil, fmt.Errorf("load tokenizer %q: its tokenizer is Python code (%s over %s, which transformers runs with trust_remote_code): "+
				"agentrace runs no Python and does not reproduce it, so it cannot count as this model does (Kimi K3's tokenizer is such a folder; see docs/tokenizers.md). "+
				"To count with %s as a stand-in anyway, copy %s and %s to a folder of their own and add the split pattern to the config as \"pat_str\"",
				dir, py, TiktokenFile, TiktokenFile, TiktokenFile, ConfigFile)
		}
		file = TiktokenFile
		t, err = loadTiktoken(ctx, tk, cfg)
	default:
		if py := pythonTokenizer(dir, cfg); py != "" {
			return nil, fmt.Errorf("load tokenizer %q: %s, and its tokenizer is Python code (%s), which agentrace does not run", dir, noTokenizerMsg, py)
		}
		return nil, fmt.Errorf("load tokenizer %q: %s", dir, noTokenizerMsg)
	}
	if err != nil {
		return nil, err
	}
	t.name = filepath.Base(filepath.Clean(dir))
	if model, ok := hubModel(dir); ok {
		t.name = model
	}
	if cfg != nil && cfg.NameOrPath != "" {
		t.name = cfg.NameOrPath
	}
	t.id.Name, t.id.Dir, t.id.File = t.name, dir, file
	src, from, err := templateSource(ctx, dir, cfg)
	if err != nil {
		return nil, err
	}
	if src != "" {
		if t.template, err = newChatTemplate(src, cfg); err != nil {
			return nil, fmt.Errorf("load tokenizer %q: chat template: %w", dir, err)
		}
		t.id.TemplateFrom, t.id.TemplateSHA256 = from, sha256Hex([]byte(src))
	} else {
		t.pythonTemplate = pythonChatEncoder(dir)
	}
	return t, nil
}

// Identity returns what the tokenizer is (see Identity).
func (t *Tokenizer) Identity() Identity { return t.id }

// AddedFromConfig is the number of added tokens that only tokenizer_config.json
// lists (Load adds them as transformers does).
func (t *Tokenizer) AddedFromConfig() int { return t.addedFromConfig }

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Name is the tokenizer's name: the config's name_or_path, else the folder's name.
func (t *Tokenizer) Name() string { return t.name }

// VocabSize is the number of ids, added tokens included.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// Encode returns the token ids of text. Added and special tokens written in the
// text (such as "<|im_start|>") always become their single ids, as in Hugging
// Face's encode; addSpecial also adds the post-processor's tokens (a BOS for
// some models, nothing for Qwen). Encode is safe for concurrent use.
//
// A tokenizer whose split pattern has no hand-written matcher can fail on a
// text (a pattern that backtracks without end, PatternError): Encode and Count
// panic with that error, and the calls that return errors (EncodeErr, the
// counts of the rules, ISLCounter, Tokenize) return it.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	ids, err := t.EncodeErr(text, addSpecial)
	if err != nil {
		panic(err)
	}
	return ids
}

// EncodeErr is Encode that returns the encoding's error (a PatternError)
// instead of panicking.
func (t *Tokenizer) EncodeErr(text string, addSpecial bool) (ids []int, err error) {
	defer recoverEncode(&err)
	return t.encode(text, addSpecial), nil
}

// encode is Encode, panicking with an encodeAbort on an error.
func (t *Tokenizer) encode(text string, addSpecial bool) []int {
	ids := make([]int, 0, len(text)/3+len(t.prefix)+len(t.suffix)+1)
	if addSpecial {
		ids = append(ids, t.prefix...)
	}
	if t.chunk != nil {
		t.chunk(text, func(part string) { ids = t.rawAdded.split(ids, part, t.encodeRawPart) })
	} else {
		ids = t.rawAdded.split(ids, text, t.encodeRawPart)
	}
	if addSpecial {
		ids = append(ids, t.suffix...)
	}
	return ids
}

// Count is len(Encode(text, false)).
func (t *Tokenizer) Count(text string) int { return len(t.Encode(text, false)) }

// encodeRawPart encodes text between raw added tokens: normalize, then split on
// the normalized added tokens, then pre-tokenize and BPE.
func (t *Tokenizer) encodeRawPart(dst []int, s string) []int {
	if t.normalize != nil {
		s = t.normalize(s)
	}
	return t.normAdded.split(dst, s, t.encodeWords)
}

func (t *Tokenizer) encodeWords(dst []int, s string) []int {
	if s == "" {
		return dst
	}
	if t.pre == nil {
		return t.model.encodeWord(dst, s)
	}
	if m, ok := t.pre.(*matchSplit); ok && m.simple() {
		// The common case, without a closure per word.
		for i := 0; i < len(s); {
			j := m.m.matchAt(s, i)
			dst = t.model.encodeWord(dst, s[i:j])
			i = j
		}
		return dst
	}
	t.pre.split(s, func(w string) { dst = t.model.encodeWord(dst, w) })
	return dst
}

// addedToken is one entry of added_tokens.
type addedToken struct {
	content    string
	id         int
	special    bool
	lstrip     bool
	rstrip     bool
	singleWord bool
	normalized bool
}

// addedSet finds added tokens in text, leftmost first and longest among those
// starting at the same place, as Hugging Face's AddedVocabulary does.
type addedSet struct {
	byFirst [256][]addedToken // by first byte, longest first
	any     bool
	// first is the first byte of every token when they all share one (then the
	// scan jumps between its occurrences); firstMany is set when they do not.
	first     byte
	firstMany bool
	// maxLen is the longest token's length; context is set when a token looks
	// beyond its own bytes (lstrip, rstrip, single_word).
	maxLen  int
	context bool
}

func (a *addedSet) add(tok addedToken) {
	if tok.content == "" {
		return
	}
	if a.any && tok.content[0] != a.first {
		a.firstMany = true
	}
	if !a.any {
		a.first = tok.content[0]
	}
	a.maxLen = max(a.maxLen, len(tok.content))
	a.context = a.context || tok.lstrip || tok.rstrip || tok.singleWord
	l := a.byFirst[tok.content[0]]
	i := 0
	for i < len(l) && len(l[i].content) >= len(tok.content) {
		i++
	}
	l = append(l, addedToken{})
	copy(l[i+1:], l[i:])
	l[i] = tok
	a.byFirst[tok.content[0]] = l
	a.any = true
}

// split calls part for the text between tokens and appends the ids of tokens.
func (a *addedSet) split(dst []int, s string, part func([]int, string) []int) []int {
	if !a.any {
		return part(dst, s)
	}
	last := a.walk(s, func(between string, tok *addedToken, _ int) {
		dst = part(dst, between)
		dst = append(dst, tok.id)
	})
	return part(dst, s[last:])
}

// walk calls found for each token of s, with the text between it and the
// previous one (lstrip and rstrip applied) and where the token ends, and returns
// where the text after the last token starts.
func (a *addedSet) walk(s string, found func(between string, tok *addedToken, end int)) int {
	last := 0 // end of the previous token
	for i := 0; i < len(s); i++ {
		if !a.firstMany {
			j := strings.IndexByte(s[i:], a.first)
			if j < 0 {
				break
			}
			i += j
		}
		cands := a.byFirst[s[i]]
		for k := range cands {
			tok := &cands[k]
			if !strings.HasPrefix(s[i:], tok.content) {
				continue
			}
			start, end := i, i+len(tok.content)
			if tok.singleWord && (isWordBefore(s, start) || isWordAfter(s, end)) {
				continue
			}
			if tok.lstrip {
				start = last + len(strings.TrimRightFunc(s[last:start], isSpaceRune))
			}
			if tok.rstrip {
				end = len(s) - len(strings.TrimLeftFunc(s[end:], isSpaceRune))
			}
			found(s[last:start], tok, end)
			last = end
			i = end - 1
			break
		}
	}
	return last
}

func isSpaceRune(r rune) bool { return isWhiteSpace(r) }

func isWordRune(r rune) bool {
	return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 0x7f && (isLetterOrNumber(r))
}

func isWordBefore(s string, i int) bool {
	if i == 0 {
		return false
	}
	r := lastRune(s[:i])
	return isWordRune(r)
}

func isWordAfter(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	return isWordRune(firstRune(s[i:]))
}

var errTruncated = errors.New("file is empty or truncated")

// readJSONFile reads the JSON file at path (at most limit bytes, as
// infile.ReadFile) into v and returns its bytes: an empty file is errTruncated,
// one that does not parse says it may be cut short.
func readJSONFile(ctx context.Context, path string, limit int64, v any) ([]byte, error) {
	data, err := infile.ReadFile(ctx, path, limit)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errTruncated
	}
	if err := json.Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("not valid JSON (truncated?): %w", err)
	}
	return data, nil
}
