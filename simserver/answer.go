package simserver

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
)

// OutputLength is the distribution of synthetic answers' lengths in tokens: a
// log-normal with the given mean and shape Sigma, clamped to [Min, Max].
type OutputLength struct {
	Mean  float64
	Sigma float64
	Min   int
	Max   int
}

// DefaultOutputLength has a mean of 400 tokens, inside the rules' OSL windows.
var defaultOutputLength = OutputLength{Mean: 400, Sigma: 0.6, Min: 8, Max: 4096}

// DefaultOutputLength returns the default synthetic answer length distribution.
func DefaultOutputLength() OutputLength { return defaultOutputLength }

func (o OutputLength) draw(r *rand.Rand) int {
	if o.Sigma <= 0 {
		return max(o.Min, min(o.Max, int(math.Round(o.Mean))))
	}
	mu := math.Log(o.Mean) - o.Sigma*o.Sigma/2
	n := int(math.Round(math.Exp(mu + o.Sigma*r.NormFloat64())))
	return max(o.Min, min(o.Max, n))
}

// Recorded is the assistant message a dataset recorded after a client turn.
type Recorded struct {
	Content   string
	Reasoning string
	ToolCalls []answerCall
}

// requestKey is a deterministic 64-bit identity of a request: seed, session id,
// message count and the last message's raw JSON, so fault and fidelity draws repeat across
// runs whatever the arrival order.
func requestKey(seed int64, session string, req *chatRequest) uint64 {
	h := mix(uint64(seed), hashString(fnvOffset, session))
	h = mix(h, uint64(len(req.Messages)))
	if n := len(req.Messages); n > 0 {
		h = mix(h, hashString(fnvOffset, string(req.Messages[n-1])))
	}
	return h
}

// vocabulary of synthetic text.
var synthWords = strings.Fields(`the a to of and in is it that this for on with as we be
	file test function value error check fix change code line return call module import
	class method let me look at run see output should now need first then next update
	config path name list result case issue expected actual behaviour implementation
	parser request response token cache field data string number index handle update`)

var synthCommands = []string{
	"ls -la", "git status", "git diff", "cat setup.py", "grep -rn 'def ' --include=*.py . | head -20",
	"find . -name '*.py' | head -20", "python -m pytest -x -q", "sed -n '1,80p' README.rst",
	"pip list", "wc -l *.py", "head -50 setup.cfg", "tail -40 CHANGELOG.md",
}

// synthText appends about n pseudo-tokens of words to b.
func synthText(b *strings.Builder, r *rand.Rand, n int) {
	for got := 0; got < n; {
		w := synthWords[r.IntN(len(synthWords))]
		if b.Len() > 0 {
			if r.IntN(12) == 0 {
				b.WriteString(".")
				got++
			}
			b.WriteByte(' ')
		}
		b.WriteString(w)
		got += (len(w) + maxWordPiece - 1) / maxWordPiece
	}
}

// toolInfo is what the sim reads of a request's tool definitions.
type toolInfo struct {
	Type     string `json:"type"`
	Function struct {
		Name       string `json:"name"`
		Parameters struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"parameters"`
	} `json:"function"`
}

// synthesize makes a synthetic answer of about n tokens: reasoning, then a call
// of the request's first tool when it offers tools (a shell command when the tool
// takes one), else reasoning and content.
func synthesize(r *rand.Rand, req *chatRequest, n int, callID string) answer {
	var tools []toolInfo
	if len(req.Tools) > 0 {
		_ = json.Unmarshal(req.Tools, &tools) // checked when the request was parsed
	}
	choice := strings.Trim(string(bytes.TrimSpace(req.ToolChoice)), `"`)
	var a answer
	var b strings.Builder
	if len(tools) > 0 && tools[0].Function.Name != "" && choice != "none" {
		synthText(&b, r, max(1, n-12))
		a.Reasoning = b.String()
		t := tools[0].Function
		args := "{}"
		for _, key := range []string{"command", "cmd"} {
			if _, ok := t.Parameters.Properties[key]; ok {
				args = `{"` + key + `": ` + strconv.Quote(synthCommands[r.IntN(len(synthCommands))]) + `}`
				break
			}
		}
		a.ToolCalls = []answerCall{{ID: callID, Name: t.Name, Arguments: args}}
		return a
	}
	synthText(&b, r, max(1, n*3/5))
	a.Reasoning = b.String()
	b.Reset()
	synthText(&b, r, max(1, n-n*3/5-6))
	a.Content = b.String()
	return a
}

var intentCode = regexp.MustCompile(`(?i)\bI(\d{3})\b`)

// perturb changes a recorded answer the way a less accurate model would: another
// shell command in each call that carries one, other intent codes, or else a
// reordered content; the rest is kept.
func perturb(r *rand.Rand, rec Recorded) answer {
	a := answer{Reasoning: rec.Reasoning, Content: rec.Content}
	changed := false
	for _, c := range rec.ToolCalls {
		var args map[string]any
		if json.Unmarshal([]byte(c.Arguments), &args) == nil {
			for _, key := range []string{"command", "cmd"} {
				if old, ok := args[key].(string); ok {
					args[key] = otherCommand(r, old)
					if b, err := json.Marshal(args); err == nil {
						c.Arguments = string(b)
						changed = true
					}
					break
				}
			}
		}
		a.ToolCalls = append(a.ToolCalls, c)
	}
	swap := func(s string) string {
		return intentCode.ReplaceAllStringFunc(s, func(m string) string {
			old, _ := strconv.Atoi(m[1:])
			changed = true
			return "I" + pad3((old+1+r.IntN(998))%1000)
		})
	}
	a.Content = swap(a.Content)
	a.Reasoning = swap(a.Reasoning)
	if !changed {
		if lines := strings.Split(a.Content, "\n"); len(lines) > 1 {
			for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
				lines[i], lines[j] = lines[j], lines[i]
			}
			a.Content = strings.Join(lines, "\n")
		} else {
			a.Content = "Let me reconsider. " + a.Content
		}
	}
	return a
}

func pad3(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 3 {
		s = "0" + s
	}
	return s
}

// otherCommand returns a plausible shell command whose program differs from old's.
func otherCommand(r *rand.Rand, old string) string {
	first := func(s string) string {
		if i := strings.LastIndex(s, "&&"); i >= 0 && strings.HasPrefix(strings.TrimSpace(s), "cd ") {
			s = s[i+2:]
		}
		f := strings.Fields(s)
		if len(f) == 0 {
			return ""
		}
		return f[0]
	}
	o := first(old)
	k := r.IntN(len(synthCommands))
	for i := range synthCommands {
		c := synthCommands[(k+i)%len(synthCommands)]
		if first(c) != o {
			return c
		}
	}
	return synthCommands[k]
}

func itoa(n int) string { return strconv.Itoa(n) }
