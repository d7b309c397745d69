package tokens

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unsafe"

	"github.com/agentrace/agentrace/internal/infile"
)

// TokenizeOptions are the inputs of Tokenize (the `agentrace tokenize` command).
type TokenizeOptions struct {
	Tokenizer string    // tokenizer folder for Load
	JSONL     string    // JSON Lines input file ("-" for In); "" counts text instead
	Files     []string  // text files to count when JSONL is ""; none means In
	IDs       bool      // in text mode, print {"n", "ids"} lines instead of bare counts
	In        io.Reader // standard input
	Out       io.Writer // results
}

// TokenizeLine is one input line of Tokenize's JSONL mode: a text, or messages
// to render with the chat template first.
type TokenizeLine struct {
	Text                *string                    `json:"text"`
	Messages            json.RawMessage            `json:"messages"`
	Tools               json.RawMessage            `json:"tools"`
	AddGenerationPrompt bool                       `json:"add_generation_prompt"`
	ChatTemplateKwargs  map[string]json.RawMessage `json:"chat_template_kwargs"`
}

// TokenizeResult is one output line of Tokenize's JSONL mode; Text is the
// rendered template for message input.
type TokenizeResult struct {
	N    int     `json:"n"`
	IDs  []int   `json:"ids"`
	Text *string `json:"text,omitempty"`
}

// Tokenize loads the tokenizer and counts tokens. In JSONL mode each input line
// {"text": ...} or {"messages": [...], "tools": [...], "add_generation_prompt":
// bool, "chat_template_kwargs": {...}} gives one output line {"n", "ids"} (plus
// "text", the rendered template, for messages); the text is encoded with
// special-token strings recognized and nothing added. Otherwise it prints the
// count of each file's text (of In's when there are no files), followed by the
// file name when there are several (with IDs: {"n", "ids"} lines, with "file"
// when there are several).
func Tokenize(ctx context.Context, o TokenizeOptions) error {
	// Loading takes a second or two: an interrupt meanwhile returns at once.
	var tok *Tokenizer
	loaded := make(chan error, 1)
	go func() {
		var err error
		tok, err = Load(ctx, o.Tokenizer)
		loaded <- err
	}()
	select {
	case err := <-loaded:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	w := bufio.NewWriterSize(o.Out, 1<<20)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var err error
	if o.JSONL != "" {
		err = tokenizeJSONL(ctx, tok, o, w, enc)
	} else {
		err = tokenizeFiles(ctx, tok, o, w, enc)
	}
	// Lines before a bad one are written out too.
	if ferr := w.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("tokenize: write: %w", ferr)
	}
	return err
}

func tokenizeFiles(ctx context.Context, tok *Tokenizer, o TokenizeOptions, w *bufio.Writer, enc *json.Encoder) error {
	emit := func(name string, data []byte) error {
		// The text is the file's bytes, not a copy of them (they are not touched
		// again): a copy of hundreds of MB is a long pause nothing can interrupt.
		text := unsafe.String(unsafe.SliceData(data), len(data))
		ids, err := encodeContext(ctx, func() ([]int, error) { return tok.EncodeErr(text, false) })
		if err != nil {
			return err
		}
		if o.IDs && len(o.Files) <= 1 {
			return enc.Encode(TokenizeResult{N: len(ids), IDs: ids})
		}
		if o.IDs {
			return enc.Encode(struct {
				File string `json:"file"`
				TokenizeResult
			}{name, TokenizeResult{N: len(ids), IDs: ids}})
		}
		w.WriteString(strconv.Itoa(len(ids)))
		if len(o.Files) > 1 {
			w.WriteString("\t" + name)
		}
		return w.WriteByte('\n')
	}
	if len(o.Files) == 0 {
		data, err := io.ReadAll(o.In)
		if err != nil {
			return fmt.Errorf("tokenize: read standard input: %w", err)
		}
		return emit("-", data)
	}
	for _, f := range o.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := infile.ReadFile(ctx, f, infile.LargeFile)
		if err != nil {
			return fmt.Errorf("tokenize: %w", err)
		}
		if err := emit(f, data); err != nil {
			return err
		}
	}
	return nil
}

// encodeContext runs encode (a whole file's text: a minute for hundreds of MB) so
// that an interrupt returns at once, with ctx's error: the command then ends, and
// the encoding is dropped with the process (in a library caller, its goroutine
// finishes the text, then ends).
func encodeContext(ctx context.Context, encode func() ([]int, error)) ([]int, error) {
	if ctx.Done() == nil {
		return encode()
	}
	type result struct {
		ids []int
		err error
	}
	done := make(chan result, 1)
	go func() {
		ids, err := encode()
		done <- result{ids, err}
	}()
	select {
	case r := <-done:
		return r.ids, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func tokenizeJSONL(ctx context.Context, tok *Tokenizer, o TokenizeOptions, w *bufio.Writer, enc *json.Encoder) error {
	in, name := o.In, "standard input"
	if o.JSONL != "-" {
		f, err := infile.Open(o.JSONL)
		if err != nil {
			return fmt.Errorf("tokenize: %w", err)
		}
		defer f.Close()
		in, name = f, o.JSONL
	}
	r := bufio.NewReaderSize(in, 1<<20)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			res, lerr := tokenizeLine(tok, line)
			if lerr != nil {
				return fmt.Errorf("tokenize %s line %d: %w", name, n, lerr)
			}
			if err := enc.Encode(res); err != nil {
				return fmt.Errorf("tokenize: write: %w", err)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tokenize: read %s: %w", name, err)
		}
	}
}

func tokenizeLine(tok *Tokenizer, line []byte) (TokenizeResult, error) {
	var l TokenizeLine
	if err := json.Unmarshal(line, &l); err != nil {
		return TokenizeResult{}, fmt.Errorf("not a JSON object: %w", err)
	}
	switch {
	case l.Text != nil && len(l.Messages) > 0:
		return TokenizeResult{}, errors.New(`give "text" or "messages", not both`)
	case l.Text != nil:
		ids, err := tok.EncodeErr(*l.Text, false)
		if err != nil {
			return TokenizeResult{}, err
		}
		return TokenizeResult{N: len(ids), IDs: ids}, nil
	case len(l.Messages) > 0:
		var kw map[string]any
		if len(l.ChatTemplateKwargs) > 0 {
			kw = make(map[string]any, len(l.ChatTemplateKwargs))
			for k, v := range l.ChatTemplateKwargs {
				kw[k] = v
			}
		}
		text, err := tok.Render(l.Messages, l.Tools, l.AddGenerationPrompt, kw)
		if err != nil {
			return TokenizeResult{}, err
		}
		ids, err := tok.EncodeErr(text, false)
		if err != nil {
			return TokenizeResult{}, err
		}
		return TokenizeResult{N: len(ids), IDs: ids, Text: &text}, nil
	}
	return TokenizeResult{}, errors.New(`neither "text" nor "messages"`)
}
