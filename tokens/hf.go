package tokens

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// hfFile is the part of a Hugging Face tokenizer.json that encoding needs.
type hfFile struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         *hfModel        `json:"model"`
}

type hfAddedToken struct {
	ID int `json:"id"`
	configAdded
}

type hfModel struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	ContinuingSubwordPrefix string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         string          `json:"end_of_word_suffix"`
	ByteFallback            bool            `json:"byte_fallback"`
}

// loadHF reads a Hugging Face tokenizer.json and adds the tokens of the
// config's added_tokens_decoder that it lacks (addConfigTokens).
func loadHF(ctx context.Context, path string, cfg *config) (*Tokenizer, error) {
	var f hfFile
	data, err := readJSONFile(ctx, path, tokenizerFileLimit, &f)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %q: %w", path, err)
	}
	t, err := buildHF(&f, cfg)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %q: %w", path, err)
	}
	t.id.TokenizerSHA256 = sha256Hex(data)
	return t, nil
}

func buildHF(f *hfFile, cfg *config) (*Tokenizer, error) {
	if f.Model == nil {
		return nil, fmt.Errorf("no model section")
	}
	if f.Model.Type != "BPE" {
		return nil, fmt.Errorf("unsupported model type %q: only byte-level BPE is supported", f.Model.Type)
	}
	if f.Model.ContinuingSubwordPrefix != "" || f.Model.EndOfWordSuffix != "" {
		return nil, fmt.Errorf("unsupported BPE options continuing_subword_prefix/end_of_word_suffix")
	}
	if isNull(f.Model.Vocab) {
		return nil, fmt.Errorf("model has no vocabulary")
	}
	t := &Tokenizer{}
	var err error
	byteLevel := false
	if t.pre, byteLevel, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if !byteLevel {
		return nil, fmt.Errorf("unsupported pre_tokenizer: only byte-level BPE (a ByteLevel pre-tokenizer) is supported")
	}
	if t.normalize, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	vocab, err := scanVocab(f.Model.Vocab)
	if err != nil {
		return nil, err
	}
	if len(vocab) == 0 {
		return nil, fmt.Errorf("model has an empty vocabulary")
	}
	maxID := int32(-1)
	for _, id := range vocab {
		maxID = max(maxID, id)
	}
	pairs, err := scanMerges(f.Model.Merges)
	if err != nil {
		return nil, err
	}
	m := &bpe{vocab: vocab, wholeWord: f.Model.IgnoreMerges, merges: make(map[uint64]merge, len(pairs))}
	if err := m.setBytes(); err != nil {
		return nil, err
	}
	for rank, p := range pairs {
		a, b := p[0], p[1]
		ia, okA := vocab[a]
		ib, okB := vocab[b]
		im, okM := vocab[a+b]
		if !okA || !okB || !okM {
			return nil, fmt.Errorf("merge %d (%q %q) uses a token missing from the vocabulary", rank, a, b)
		}
		k := pairKey(ia, ib)
		if _, dup := m.merges[k]; !dup {
			m.merges[k] = merge{rank: int32(rank), id: im}
		}
	}
	t.model = m
	added := make([]addedToken, 0, len(f.AddedTokens))
	for _, a := range f.AddedTokens {
		if err := checkTokenID(int64(a.ID)); err != nil {
			return nil, fmt.Errorf("added_tokens: %s: %w", excerpt(a.Content), err)
		}
		added = append(added, a.token(a.ID))
	}
	if added, err = addConfigTokens(added, cfg, vocab, maxID); err != nil {
		return nil, err
	}
	for _, tok := range added {
		tok.normalized = tok.normalized && !tok.special
		if tok.normalized {
			t.normAdded.add(tok)
		} else {
			t.rawAdded.add(tok)
		}
		maxID = max(maxID, int32(tok.id))
	}
	t.addedFromConfig = len(added) - len(f.AddedTokens)
	t.vocabSize = int(maxID) + 1
	if t.prefix, t.suffix, err = parsePostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	return t, nil
}

// setBytes fills byteID from the vocabulary; byte-level BPE needs all 256.
func (m *bpe) setBytes() error {
	for b := 0; b < 256; b++ {
		id, ok := m.vocab[string([]byte{byte(b)})]
		if !ok {
			return fmt.Errorf("vocabulary lacks the token for byte 0x%02x", b)
		}
		m.byteID[b] = id
	}
	return nil
}

// byteLevel is GPT-2's reversible map from bytes to printable runes.
var byteToRune, runeToByte = func() (b2r [256]rune, r2b map[rune]byte) {
	r2b = make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// typed is the "type" field of a tokenizer.json component.
type typed struct {
	Type string `json:"type"`
}

func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

// parseNormalizer builds the normalizer; nil means none.
func parseNormalizer(raw json.RawMessage) (func(string) string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch t.Type {
	case "NFC":
		return nfc, nil
	case "NFD":
		return normForm(norm.NFD), nil
	case "NFKC":
		return normForm(norm.NFKC), nil
	case "NFKD":
		return normForm(norm.NFKD), nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Strip":
		var s struct {
			Left  bool `json:"strip_left"`
			Right bool `json:"strip_right"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("normalizer Strip: %w", err)
		}
		return func(x string) string {
			if s.Left {
				x = strings.TrimLeftFunc(x, unicode.IsSpace)
			}
			if s.Right {
				x = strings.TrimRightFunc(x, unicode.IsSpace)
			}
			return x
		}, nil
	case "Prepend":
		var p struct {
			Prepend string `json:"prepend"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("normalizer Prepend: %w", err)
		}
		return func(x string) string {
			if x == "" {
				return x
			}
			return p.Prepend + x
		}, nil
	case "Replace":
		var r struct {
			Pattern struct {
				String *string `json:"String"`
			} `json:"pattern"`
			Content string `json:"content"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		if r.Pattern.String == nil {
			return nil, fmt.Errorf("normalizer Replace: only string patterns are supported")
		}
		old := *r.Pattern.String
		return func(x string) string { return strings.ReplaceAll(x, old, r.Content) }, nil
	case "Sequence":
		var s struct {
			Normalizers []json.RawMessage `json:"normalizers"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("normalizer Sequence: %w", err)
		}
		var fs []func(string) string
		for _, n := range s.Normalizers {
			f, err := parseNormalizer(n)
			if err != nil {
				return nil, err
			}
			if f != nil {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			return nil, nil
		}
		return func(x string) string {
			for _, f := range fs {
				x = f(x)
			}
			return x
		}, nil
	}
	return nil, fmt.Errorf("unsupported normalizer %q", t.Type)
}

func normForm(f norm.Form) func(string) string {
	return func(s string) string {
		// Most text is already normalized; checking first avoids a copy.
		if f.IsNormalString(s) {
			return s
		}
		return f.String(s)
	}
}

// parsePostProcessor returns the ids added before and after a single sequence.
func parsePostProcessor(raw json.RawMessage) (prefix, suffix []int, err error) {
	if isNull(raw) {
		return nil, nil, nil
	}
	var t typed
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, nil, fmt.Errorf("post_processor: %w", err)
	}
	switch t.Type {
	case "ByteLevel":
		return nil, nil, nil
	case "TemplateProcessing":
		var tp struct {
			Single []struct {
				SpecialToken *struct {
					ID string `json:"id"`
				} `json:"SpecialToken"`
				Sequence *struct {
					ID string `json:"id"`
				} `json:"Sequence"`
			} `json:"single"`
			SpecialTokens map[string]struct {
				IDs []int `json:"ids"`
			} `json:"special_tokens"`
		}
		if err := json.Unmarshal(raw, &tp); err != nil {
			return nil, nil, fmt.Errorf("post_processor TemplateProcessing: %w", err)
		}
		seen := false
		for _, p := range tp.Single {
			switch {
			case p.Sequence != nil:
				seen = true
			case p.SpecialToken != nil:
				st, ok := tp.SpecialTokens[p.SpecialToken.ID]
				if !ok {
					return nil, nil, fmt.Errorf("post_processor: special token %q has no ids", p.SpecialToken.ID)
				}
				if seen {
					suffix = append(suffix, st.IDs...)
				} else {
					prefix = append(prefix, st.IDs...)
				}
			}
		}
		return prefix, suffix, nil
	case "BertProcessing", "RobertaProcessing":
		var bp struct {
			Sep [2]any `json:"sep"`
			Cls [2]any `json:"cls"`
		}
		if err := json.Unmarshal(raw, &bp); err != nil {
			return nil, nil, fmt.Errorf("post_processor %s: %w", t.Type, err)
		}
		cls, ok1 := bp.Cls[1].(float64)
		sep, ok2 := bp.Sep[1].(float64)
		if !ok1 || !ok2 {
			return nil, nil, fmt.Errorf("post_processor %s: bad cls/sep", t.Type)
		}
		return []int{int(cls)}, []int{int(sep)}, nil
	case "Sequence":
		var s struct {
			Processors []json.RawMessage `json:"processors"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, nil, fmt.Errorf("post_processor Sequence: %w", err)
		}
		for _, p := range s.Processors {
			pre, suf, err := parsePostProcessor(p)
			if err != nil {
				return nil, nil, err
			}
			prefix = append(prefix, pre...)
			suffix = append(suffix, suf...)
		}
		return prefix, suffix, nil
	}
	return nil, nil, fmt.Errorf("unsupported post_processor %q", t.Type)
}

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

func isLetterOrNumber(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }
