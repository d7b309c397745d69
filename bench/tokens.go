package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentrace/agentrace/tokens"
)

// benchTokenizer times Qwen3 encoding of every text of the shared sample
// (message contents, reasoning, tool outputs and tool-call arguments) by
// package tokens against @lenml/tokenizers, the JS reference, on the same
// texts: three alternating runs of each, each side's best. The Go side loads a
// fresh tokenizer per run (a cold word cache) and encodes on one goroutine; the
// JS side's time is its encoding alone, measured inside node after loading.
// Hugging Face's Rust tokenizers (Node binding) is timed once for context, and
// the ids of all three are compared.
func benchTokenizer(env Env) (Row, error) {
	row := Row{Name: "tokenizer: Qwen3 encode of every sample text vs @lenml/tokenizers", Goal: ">= 5x (JS time / agentrace time)"}
	if env.Shared == "" || env.JS == "" || env.Tokenizer == "" {
		return row, errors.New("needs AGENTRACE_SHARED (the sample), AGENTRACE_JS and AGENTRACE_TOKENIZER")
	}
	texts, err := tokenizerSampleTexts(env)
	if err != nil {
		return row, err
	}
	input := filepath.Join(env.Work, "tokenizer-texts.jsonl")
	var in bytes.Buffer
	size := 0
	for _, s := range texts {
		line, _ := json.Marshal(map[string]string{"text": s})
		in.Write(line)
		in.WriteByte('\n')
		size += len(s)
	}
	if err := os.WriteFile(input, in.Bytes(), 0o644); err != nil {
		return row, err
	}
	var goBest, jsBest time.Duration
	var goIDs, jsIDs [][]int
	for range 3 {
		tok, err := tokens.Load(context.Background(), env.Tokenizer)
		if err != nil {
			return row, err
		}
		ids := make([][]int, len(texts))
		start := time.Now()
		for i, s := range texts {
			ids[i] = tok.Encode(s, false)
		}
		if d := time.Since(start); goBest == 0 || d < goBest {
			goBest = d
		}
		goIDs = ids
		js, d, err := runTokenizerJS(env, "tokenizer-ids.mjs", input, len(texts))
		if err != nil {
			return row, err
		}
		if jsBest == 0 || d < jsBest {
			jsBest = d
		}
		jsIDs = js
	}
	hfIDs, hf, err := runTokenizerJS(env, "tokenizer-hf.mjs", input, len(texts))
	if err != nil {
		return row, err
	}
	equalJS, equalHF, ntok := 0, 0, 0
	for i := range texts {
		ntok += len(goIDs[i])
		if slices.Equal(goIDs[i], jsIDs[i]) {
			equalJS++
		}
		if slices.Equal(goIDs[i], hfIDs[i]) {
			equalHF++
		}
	}
	ratio := jsBest.Seconds() / goBest.Seconds()
	row.Measured = fmt.Sprintf("agentrace %.0f ms, @lenml/tokenizers %.0f ms (%d texts, %.1f MB, %d tokens; ids equal %d/%d; HF Rust tokenizers via Node %.0f ms, ids equal %d/%d)",
		tokenizerMS(goBest), tokenizerMS(jsBest), len(texts), float64(size)/1e6, ntok, equalJS, len(texts), tokenizerMS(hf), equalHF, len(texts))
	row.Ratio = fmt.Sprintf("%.1fx", ratio)
	row.Met = ratio >= 5 && equalHF == len(texts)
	return row, nil
}

func tokenizerMS(d time.Duration) float64 { return d.Seconds() * 1000 }

// tokenizerSampleTexts extracts the texts with the reference script (the sample's
// tool_calls and tool_results fields are Python literals).
func tokenizerSampleTexts(env Env) ([]string, error) {
	cmd := exec.Command("python3", filepath.Join(env.Root, "testdata", "py", "chat_template_ref.py"), "texts",
		env.sample())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("chat_template_ref.py texts: %v: %s", err, stderr.Bytes())
	}
	var texts []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, err
		}
		texts = append(texts, l.Text)
	}
	return texts, sc.Err()
}

// runTokenizerJS runs a testdata/js tokenizer script on the JSONL input and
// returns its ids and its own encoding time.
func runTokenizerJS(env Env, script, input string, n int) ([][]int, time.Duration, error) {
	f, err := os.Open(input)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	cmd := exec.Command("node", filepath.Join(env.JS, script), filepath.Join(env.Tokenizer, tokens.HFTokenizerFile))
	cmd.Dir = env.JS
	cmd.Stdin = f
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %v: %s", script, err, stderr.Bytes())
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) != n+1 {
		return nil, 0, fmt.Errorf("%s: %d lines for %d texts", script, len(lines), n)
	}
	ids := make([][]int, n)
	for i := range n {
		var l struct{ IDs []int }
		if err := json.Unmarshal(lines[i], &l); err != nil {
			return nil, 0, fmt.Errorf("%s line %d: %v", script, i+1, err)
		}
		ids[i] = l.IDs
	}
	var last struct {
		EncodeMS float64 `json:"encode_ms"`
	}
	if err := json.Unmarshal(lines[n], &last); err != nil {
		return nil, 0, fmt.Errorf("%s: %v", script, err)
	}
	return ids, time.Duration(last.EncodeMS * float64(time.Millisecond)), nil
}
