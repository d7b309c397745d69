package tokens

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	py "github.com/agentrace/agentrace/internal/python"
	"path/filepath"
	"strconv"

	"github.com/agentrace/agentrace/internal/infile"
)

// A tiktoken-style tokenizer folder (Kimi's kind) holds tiktoken.model, one
// "base64-token rank" pair per line, and tokenizer_config.json, whose
// added_tokens_decoder gives the special tokens. The split pattern is not in
// either file: it is taken from tokenizer_config.json's "pat_str" when present
// (an extension of ours), else it is Kimi's (PatternKimi). A folder whose
// tokenizer is Python code (tokenization_kimi.py) is refused unless the config
// gives pat_str: agentrace does not run the code and cannot know what it does. Ids beyond the ranks that the config
// does not name are Kimi's reserved tokens, "<|reserved_token_N|>", for 256 ids.
//
// Encoding follows tiktoken: a pre-token that is itself in the ranks is one
// token; otherwise the adjacent pair whose concatenation has the lowest rank
// merges first. Like Kimi's tokenizer, text is first cut into slices of at most
// 400,000 characters and runs of more than 25,000 consecutive whitespace or
// non-whitespace characters are cut.
const (
	kimiReserved           = 256
	tiktokenMaxChars       = 400_000
	tiktokenMaxConsecutive = 25_000
)

func loadTiktoken(ctx context.Context, path string, c *config) (*Tokenizer, error) {
	data, err := infile.ReadFile(ctx, path, tokenizerFileLimit)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %q: %w", path, err)
	}
	vocab := make(map[string]int32, 1<<18)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	line := 0
	maxID := int32(-1)
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		tokB64, rankS, ok := bytes.Cut(text, []byte(" "))
		if !ok {
			return nil, fmt.Errorf("load tokenizer %q line %d: want \"base64-token rank\"", path, line)
		}
		tok, err := base64.StdEncoding.DecodeString(string(tokB64))
		if err != nil {
			return nil, fmt.Errorf("load tokenizer %q line %d: token: %w", path, line, err)
		}
		rank, err := strconv.ParseInt(string(bytes.TrimSpace(rankS)), 10, 32)
		if err != nil || rank < 0 {
			return nil, fmt.Errorf("load tokenizer %q line %d: bad rank %s", path, line, excerpt(string(rankS)))
		}
		vocab[string(tok)] = int32(rank)
		maxID = max(maxID, int32(rank))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("load tokenizer %q: %w", path, err)
	}
	sum := sha256Hex(data)
	if len(vocab) == 0 {
		return nil, fmt.Errorf("load tokenizer %q: %w", path, errTruncated)
	}
	m := &bpe{vocab: vocab, wholeWord: true}
	if err := m.setBytes(); err != nil {
		return nil, fmt.Errorf("load tokenizer %q: %w", path, err)
	}
	// A pair of tokens merges into their concatenation when that is a token; its
	// rank is the concatenation's.
	m.merges = make(map[uint64]merge, len(vocab))
	for tok, id := range vocab {
		for k := 1; k < len(tok); k++ {
			a, okA := vocab[tok[:k]]
			if !okA {
				continue
			}
			if b, okB := vocab[tok[k:]]; okB {
				m.merges[pairKey(a, b)] = merge{rank: id, id: id}
			}
		}
	}
	t := &Tokenizer{model: m, chunk: kimiChunks}
	t.id.TokenizerSHA256 = sum
	pattern := tiktokenPattern(c)
	ms := &matchSplit{behavior: "Isolated"}
	if ms.m = handMatcher(pattern); ms.m == nil {
		if ms.re, err = compileRegexp(pattern); err != nil {
			return nil, fmt.Errorf("load tokenizer %q: split pattern %q: %w", path, pattern, err)
		}
	}
	t.pre = ms
	named := map[int]bool{}
	if c != nil {
		for idS, a := range c.AddedTokens {
			id, err := parseTokenID(idS)
			if err != nil {
				return nil, fmt.Errorf("load tokenizer config in %q: added_tokens_decoder: %w", filepath.Dir(path), err)
			}
			named[id] = true
			t.rawAdded.add(a.token(id)) // a tiktoken model matches every added token on the raw text
			maxID = max(maxID, int32(id))
		}
	}
	base := int(maxID) + 1
	if c != nil && len(c.AddedTokens) > 0 {
		base = len(vocab)
	}
	for id := base; id < base+kimiReserved; id++ {
		if !named[id] {
			t.rawAdded.add(addedToken{content: "<|reserved_token_" + strconv.Itoa(id) + "|>", id: id, special: true})
			maxID = max(maxID, int32(id))
		}
	}
	t.vocabSize = int(maxID) + 1
	return t, nil
}

// tiktokenPattern is the split pattern of a tiktoken folder: the config's
// pat_str, else Kimi's (Load has refused a folder whose tokenizer is Python
// code and that gives no pat_str).
func tiktokenPattern(c *config) string {
	if c != nil && c.PatStr != "" {
		return c.PatStr
	}
	return PatternKimi
}

// kimiChunks cuts text as Kimi's tokenizer does before encoding: slices of at
// most 400,000 characters, and within them no run of more than 25,000
// consecutive whitespace (Python's str.isspace) or non-whitespace characters.
func kimiChunks(text string, emit func(string)) {
	if len(text) <= tiktokenMaxConsecutive {
		emit(text) // fewer bytes than the limit in characters: nothing to cut
		return
	}
	chars, start := 0, 0
	for i := range text {
		if chars == tiktokenMaxChars {
			splitConsecutive(text[start:i], emit)
			start, chars = i, 0
		}
		chars++
	}
	splitConsecutive(text[start:], emit)
}

func splitConsecutive(s string, emit func(string)) {
	n, space, start := 0, false, 0
	first := true
	for i, r := range s {
		sp := py.IsSpace(r)
		if first {
			space, first = sp, false
		}
		if sp != space {
			n, space = 1, sp
			continue
		}
		n++
		if n > tiktokenMaxConsecutive {
			emit(s[start:i])
			start, n = i, 1
		}
	}
	emit(s[start:])
}
