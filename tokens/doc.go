// Package tokens counts tokens the way the benchmark rules do: with the model's
// reference tokenizer, through its official chat template, in pure Go.
//
// Load reads a Hugging Face tokenizer folder (tokenizer.json, the byte-level BPE of
// Qwen and DeepSeek models) or a tiktoken-style rank file (tiktoken.model, Kimi's
// kind), plus tokenizer_config.json for the added tokens and the Jinja chat template,
// as transformers loads them; Resolve finds the folder of a Hugging Face model id in
// the local hub cache, offline (hub.go), and Identity records the digests a ruleset
// compares with its model's (docs/tokenizers.md).
// Encode reproduces the Hugging Face tokenizers pipeline: added tokens matched in
// the raw text, the normalizer, the pre-tokenizer split patterns (hand-written
// matchers for the GPT-2, GPT-4 and Qwen patterns, which need lookahead that Go's
// regexp lacks; a backtracking regexp for any other pattern), then BPE with a
// cache of pre-token words. Render applies the chat template with the semantics of
// transformers.apply_chat_template, and CountISL, CountOSL and CountTPOTSuffix
// count as the rules' "Token counting" section says. ISLCounter gives CountISL's
// counts for a conversation's turns one after the other without re-tokenizing the
// history each time (a cache of the pieces between added tokens, each message's
// template values kept from turn to turn, and for the Qwen3 template a Go build
// of the rendered text; see isl.go and qwen3.go).
//
// A tokenizer folder is untrusted input: its files are read as inputs are
// (internal/infile, a size limit for each kind), a split pattern without a
// hand-written matcher runs with a match timeout (PatternError), and the chat
// template renders within depth, step and output budgets (budget.go,
// ErrRenderBudget). NFC is Hugging Face's, with Unicode 9.0's tables (nfc.go).
//
// A Tokenizer is safe for concurrent use.
package tokens
