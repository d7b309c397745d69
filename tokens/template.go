package tokens

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/ardanlabs/jinja"
)

// chatTemplate is a compiled chat template and the values transformers hands
// every render: the tokenizer's special tokens (bos_token, eos_token, ...).
//
// Rendering uses github.com/ardanlabs/jinja, which implements the Jinja subset
// chat templates use with Hugging Face's defaults (trim_blocks, lstrip_blocks,
// raise_exception, strftime_now, a tojson that neither escapes non-ASCII nor
// HTML characters). Two differences from Python remain inside that library and
// are bridged here: its tojson writes floats in Go's %g form and escapes U+2028
// and U+2029, where Python writes repr(float) ("1.0", "1234567.0") and keeps the
// characters. Such values are handed to the template as placeholder strings that
// are swapped back after rendering (see valueBuilder). JSON objects are handed
// over as ordered dicts, so tojson keeps their key order, as Python does.
type chatTemplate struct {
	tmpl     *jinja.Template
	specials map[string]string
	// tojson prints one value as the template's tojson filter does (ISLCounter's
	// native rendering of known templates).
	tojson *jinja.Template
	// qwen3 is set when the template is exactly the Qwen3 one (isQwen3Template).
	qwen3 bool
	// loop is the template rewritten for ISLCounter's incremental rendering, nil
	// when its structure does not allow it (loopTemplateOf).
	loop *loopTemplate
}

func newChatTemplate(src string, c *config) (*chatTemplate, error) {
	norm := jinjaSource(src)
	if strings.Contains(norm, "__agentrace") {
		return nil, errors.New("it uses a name agentrace keeps for itself (__agentrace...)")
	}
	if err := checkNesting(norm); err != nil {
		return nil, err
	}
	tmpl, err := jinja.Compile(norm)
	if err != nil {
		return nil, err
	}
	tojson, err := jinja.Compile("{{ v | tojson }}")
	if err != nil {
		return nil, err
	}
	ct := &chatTemplate{tmpl: tmpl, specials: map[string]string{}, tojson: tojson, qwen3: isQwen3Template(norm), loop: loopTemplateOf(tmpl, norm)}
	// Instrumented after loopTemplateOf has read the template as written.
	if err := instrumentTemplate(tmpl); err != nil {
		return nil, err
	}
	if ct.loop != nil {
		if err := instrumentTemplate(ct.loop.tmpl); err != nil {
			return nil, err
		}
	}
	for _, k := range specialTokenKeys {
		if v, ok := c.specialToken(k); ok {
			ct.specials[k] = v
			if hasPlaceholderRunes([]byte(v)) {
				ct.loop = nil // the incremental render's markers could not be told apart
			}
		}
	}
	return ct, nil
}

// jinjaSource applies what Jinja2's lexer does to a template source before
// parsing: line boundaries (as Python's str.splitlines sees them) become "\n",
// and one trailing newline is dropped (keep_trailing_newline is false).
func jinjaSource(src string) string {
	var b strings.Builder
	b.Grow(len(src))
	for i := 0; i < len(src); {
		r, w := decodeRune(src[i:])
		switch r {
		case '\r':
			if strings.HasPrefix(src[i:], "\r\n") {
				w = 2
			}
			b.WriteByte('\n')
		case '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			b.WriteByte('\n')
		default:
			b.WriteString(src[i : i+w])
		}
		i += w
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ErrNoTemplate is returned by Render and the counts that need a template when
// the tokenizer folder has none.
var ErrNoTemplate = errors.New("tokenizer has no chat template")

// Render renders the chat template as transformers.apply_chat_template(messages,
// tools=tools, add_generation_prompt=..., **kwargs) does, with tokenize=False.
// messagesJSON is a JSON array of OpenAI-style messages; toolsJSON a JSON array
// of tools, or empty (or null) for none. Object key order is kept. A message's
// null or absent content is rendered as "", as the reference client does (the
// wire form omits null content; Qwen's templates call string methods on it). kwargs are the extra template variables
// (chat_template_kwargs, such as enable_thinking); a value that is
// json.RawMessage or []byte is taken as JSON.
func (t *Tokenizer) Render(messagesJSON, toolsJSON []byte, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	if t.template == nil {
		if t.pythonTemplate != "" {
			return "", fmt.Errorf("%w: its chat template is Python code (%s, which the model's serving code runs), and agentrace runs no Python (docs/tokenizers.md, DeepSeek-V4)", ErrNoTemplate, t.pythonTemplate)
		}
		return "", ErrNoTemplate
	}
	var vb valueBuilder
	vb.check(messagesJSON)
	vb.check(toolsJSON)
	for _, v := range kwargs {
		switch x := v.(type) {
		case json.RawMessage:
			vb.check(x)
		case []byte:
			vb.check(x)
		case string:
			vb.check([]byte(x))
		}
	}
	messages, err := vb.fromJSON(messagesJSON)
	if err != nil {
		return "", fmt.Errorf("render chat template: messages: %w", err)
	}
	if !messages.IsList() {
		return "", fmt.Errorf("render chat template: messages are not a JSON array")
	}
	for _, m := range messages.AsList().Items {
		if err := messageValue(m); err != nil {
			return "", err
		}
	}
	tools := jinja.None()
	if len(bytes.TrimSpace(toolsJSON)) > 0 {
		if tools, err = vb.fromJSON(toolsJSON); err != nil {
			return "", fmt.Errorf("render chat template: tools: %w", err)
		}
	}
	return t.renderValues(&vb, messages, tools, addGenerationPrompt, kwargs)
}

// messageValue checks that a message is an object and gives it the content ""
// when it has none (or null), as Render passes messages to the template.
func messageValue(m jinja.Value) error {
	if !m.IsDict() {
		return fmt.Errorf("render chat template: a message is not a JSON object")
	}
	if c, ok := m.AsDict().Get("content"); !ok || c.IsNone() {
		m.AsDict().Set("content", jinja.NewString(""))
	}
	return nil
}

// renderValues is Render of messages and tools already made template values
// by vb (which then restores its placeholders in the output).
func (t *Tokenizer) renderValues(vb *valueBuilder, messages, tools jinja.Value, addGenerationPrompt bool, kwargs map[string]any) (string, error) {
	return t.renderWith(t.template.tmpl, vb, messages, tools, addGenerationPrompt, kwargs, nil)
}

// renderWith is renderValues with tmpl (the template or its rewritten form)
// and extra variables.
func (t *Tokenizer) renderWith(tmpl *jinja.Template, vb *valueBuilder, messages, tools jinja.Value, addGenerationPrompt bool, kwargs map[string]any, extra map[string]jinja.Value) (string, error) {
	data := make(map[string]jinja.Value, len(t.template.specials)+len(kwargs)+len(extra)+11)
	for k, v := range extra {
		data[k] = v
	}
	for k, v := range t.template.specials {
		data[k] = jinja.NewString(v)
	}
	for k, v := range kwargs {
		val, err := vb.fromGo(v)
		if err != nil {
			return "", fmt.Errorf("render chat template: kwarg %q: %w", k, err)
		}
		data[k] = val
	}
	data["messages"] = messages
	data["tools"] = tools
	data["add_generation_prompt"] = jinja.NewBool(addGenerationPrompt)
	var budget renderBudget
	budget.set(data)
	out, err := tmpl.RenderValues(data)
	if err != nil {
		return "", fmt.Errorf("render chat template: %w", err)
	}
	return vb.restore(out), nil
}

// valueBuilder turns JSON into template values, keeping object key order, and
// puts placeholders where the template library would print a value differently
// from Python (see chatTemplate).
type valueBuilder struct {
	subst []string // replacement of placeholder i
	// off disables placeholders when the input already holds placeholder runes
	// (see check).
	off     bool
	lineSep bool // the JSON being read may hold U+2028 or U+2029
}

// Placeholders are built from noncharacters, which text does not carry.
const (
	phOpen  = "\uFDD0"
	phClose = "\uFDD1"
)

func (vb *valueBuilder) placeholder(repl string) string {
	vb.subst = append(vb.subst, repl)
	return phOpen + strconv.Itoa(len(vb.subst)-1) + phClose
}

func (vb *valueBuilder) check(data []byte) {
	if bytes.Contains(data, []byte(phOpen)) || bytes.Contains(data, []byte(phClose)) {
		vb.off = true
	}
}

// restore swaps placeholders back: a quoted one (written by tojson) becomes the
// bare replacement, an unquoted one too.
func (vb *valueBuilder) restore(s string) string {
	if len(vb.subst) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, phOpen)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.Index(s[i:], phClose)
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		n, err := strconv.Atoi(s[i+len(phOpen) : i+j])
		if err != nil || n >= len(vb.subst) {
			b.WriteString(s[:i+j+len(phClose)])
			s = s[i+j+len(phClose):]
			continue
		}
		end := i + j + len(phClose)
		repl := vb.subst[n]
		start := i
		if strings.HasPrefix(repl, "\x00num:") {
			repl = repl[len("\x00num:"):]
			// A number written by tojson as a string: drop the quotes.
			if i > 0 && s[i-1] == '"' && end < len(s) && s[end] == '"' {
				start, end = i-1, end+1
			}
		}
		b.WriteString(s[:start])
		b.WriteString(repl)
		s = s[end:]
	}
}

func (vb *valueBuilder) fromJSON(data []byte) (jinja.Value, error) {
	// U+2028 and U+2029, raw or escaped, are rare: look for them once.
	vb.lineSep = bytes.Contains(data, []byte("\u2028")) || bytes.Contains(data, []byte("\u2029")) ||
		bytes.Contains(data, []byte(`\u2028`)) || bytes.Contains(data, []byte(`\u2029`))
	s := jsontext.NewScanner(data, jsontext.JSON)
	v, err := vb.scan(&s)
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return jinja.Undefined(), err
	}
	return v, nil
}

// scan reads one JSON value as a template value.
func (vb *valueBuilder) scan(s *jsontext.Scanner) (jinja.Value, error) {
	switch s.Peek() {
	case '{':
		d := jinja.NewDict()
		err := s.Object(func(key []byte) error {
			k, _ := jsontext.Unquote(key)
			v, err := vb.scan(s)
			d.AsDict().Set(vb.str(k), v)
			return err
		})
		return d, err
	case '[':
		var items []jinja.Value
		err := s.Array(func(int) error {
			v, err := vb.scan(s)
			items = append(items, v)
			return err
		})
		return jinja.NewList(items), err
	case '"':
		tok, err := s.String()
		if err != nil {
			return jinja.Undefined(), err
		}
		text, _ := jsontext.Unquote(tok)
		return jinja.NewString(vb.str(text)), nil
	}
	v, err := s.Value()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch v[0] {
	case 't':
		return jinja.NewBool(true), nil
	case 'f':
		return jinja.NewBool(false), nil
	case 'n':
		return jinja.None(), nil
	}
	return vb.number(string(v)), nil
}

// str replaces U+2028 and U+2029, which the library's tojson escapes and
// Python's keeps.
func (vb *valueBuilder) str(s string) string {
	if vb.off || !vb.lineSep || !strings.ContainsAny(s, "\u2028\u2029") {
		return s
	}
	s = strings.ReplaceAll(s, "\u2028", vb.placeholder("\u2028"))
	return strings.ReplaceAll(s, "\u2029", vb.placeholder("\u2029"))
}

// number converts a JSON number as Python's json.loads would (int or float) and
// uses a placeholder when the library would print it differently from Python.
func (vb *valueBuilder) number(s string) jinja.Value {
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return jinja.NewInt(i)
		}
		if vb.off {
			f, _ := strconv.ParseFloat(s, 64)
			return jinja.NewFloat(f)
		}
		// A Python int beyond int64: keep its digits.
		return jinja.NewString(vb.placeholder("\x00num:" + strings.TrimPrefix(s, "+")))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		if vb.off {
			return jinja.NewFloat(f)
		}
		// Python reads an out-of-range float as inf and writes it as Infinity.
		repl := "Infinity"
		if strings.HasPrefix(s, "-") {
			repl = "-Infinity"
		}
		return jinja.NewString(vb.placeholder("\x00num:" + repl))
	}
	py := pythonFloat(f)
	if vb.off || strconv.FormatFloat(f, 'g', -1, 64) == py && fmt.Sprintf("%g", f) == py {
		return jinja.NewFloat(f)
	}
	return jinja.NewString(vb.placeholder("\x00num:" + py))
}

// pythonFloat formats f as Python's repr(float) does: the shortest digits that
// round-trip, positional for exponents in [-4, 16), with ".0" for integral
// values, else scientific with a sign and at least two exponent digits.
func pythonFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return map[bool]string{true: "Infinity", false: "-Infinity"}[f > 0]
	}
	digits := strconv.FormatFloat(math.Abs(f), 'e', -1, 64) // d.ddde±XX
	mant, expS, _ := strings.Cut(digits, "e")
	exp, _ := strconv.Atoi(expS)
	sign := ""
	if math.Signbit(f) {
		sign = "-"
	}
	ds := strings.Replace(mant, ".", "", 1)
	if exp >= -4 && exp < 16 {
		var s string
		switch {
		case exp < 0:
			s = "0." + strings.Repeat("0", -exp-1) + ds
		case exp+1 >= len(ds):
			s = ds + strings.Repeat("0", exp+1-len(ds)) + ".0"
		default:
			s = ds[:exp+1] + "." + ds[exp+1:]
		}
		return sign + s
	}
	m := ds[:1]
	if len(ds) > 1 {
		m += "." + ds[1:]
	}
	es := "+"
	if exp < 0 {
		es, exp = "-", -exp
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
}

// fromGo converts a kwarg value; JSON given as json.RawMessage or []byte keeps
// its key order.
func (vb *valueBuilder) fromGo(v any) (jinja.Value, error) {
	switch x := v.(type) {
	case json.RawMessage:
		return vb.fromJSON(x)
	case []byte:
		return vb.fromJSON(x)
	case jinja.Value:
		return x, nil
	case float32:
		return vb.number(strconv.FormatFloat(float64(x), 'g', -1, 32)), nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e16 {
			return vb.number(strconv.FormatFloat(x, 'f', 1, 64)), nil
		}
		return vb.number(strconv.FormatFloat(x, 'g', -1, 64)), nil
	}
	return jinja.FromGoValue(v), nil
}

func decodeRune(s string) (rune, int) {
	r, w := utf8.DecodeRuneInString(s)
	return r, w
}
