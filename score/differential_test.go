package score

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/schemas"
)

// This file restates spec §8 independently, with Go's regexp package over ASCII
// text (where RE2 and Python's re agree), and checks the scorer against it on
// random datasets and random reference event logs.

// specRules holds the restatement's regular expressions and alias table.
type specRules struct {
	quoted, sep, env, version, intent, bare *regexp.Regexp
	aliases                                 map[string]string
}

func newSpecRules() *specRules {
	s := &specRules{
		quoted:  regexp.MustCompile("'[^']*'|\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`"),
		sep:     regexp.MustCompile(`\|\||\||&&|;|\n`),
		env:     regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`),
		version: regexp.MustCompile(`\.\d+(\.\d+)?$`),
		intent:  regexp.MustCompile(`(?i)\bintent:\s*(I\d{3})\b`),
		bare:    regexp.MustCompile(`\bI(\d{3})\b`),
		aliases: map[string]string{},
	}
	for _, group := range []string{
		"python:python,python2,python3,py", "pip:pip,pip3", "pytest:pytest", "pylint:pylint",
		"sphinx:sphinx-build,sphinx-quickstart", "cython:cython", "make:make", "conda:conda",
		"cat:cat,less,more", "head:head", "tail:tail", "wc:wc", "diff:diff", "grep:grep,egrep,fgrep,rg,ag",
		"sed:sed", "awk:awk,gawk", "tr:tr", "sort:sort", "uniq:uniq", "cut:cut", "find:find,locate", "ls:ls",
		"xargs:xargs", "cp:cp", "mv:mv", "rm:rm", "mkdir:mkdir", "touch:touch", "tee:tee", "source:source,.",
		"which:which", "alias:alias", "unset:unset", "export:export", "git:git", "curl:curl,wget",
		"true:true", "false:false", "timeout:timeout", "date:date", "apt:apt-get,apt", "yum:yum",
	} {
		action, names, _ := strings.Cut(group, ":")
		for _, n := range strings.Split(names, ",") {
			s.aliases[n] = action
		}
	}
	return s
}

func (sp *specRules) commandActions(cmd string) []string {
	var out []string
	for _, stage := range sp.sep.Split(sp.quoted.ReplaceAllString(cmd, " "), -1) {
		toks := strings.Fields(stage)
		for len(toks) > 0 && (sp.env.MatchString(toks[0]) || map[string]bool{"env": true, "time": true, "nice": true, "sudo": true, "exec": true, "command": true}[toks[0]]) {
			toks = toks[1:]
		}
		if len(toks) == 0 {
			continue
		}
		exe := toks[0][strings.LastIndex(toks[0], "/")+1:]
		exe = sp.version.ReplaceAllString(strings.ToLower(exe), "")
		if a := sp.aliases[exe]; a != "" {
			out = append(out, a)
		}
	}
	return out
}

// specCall is a tool call as the generator knows it.
type specCall struct {
	Name string
	Args string // the arguments string (JSON text, maybe invalid)
}

func (sp *specRules) callsActions(calls []specCall) []string {
	var out []string
	for _, c := range calls {
		if c.Name != "bash" {
			continue
		}
		var args map[string]any
		if json.Unmarshal([]byte(c.Args), &args) != nil {
			continue
		}
		cmd, _ := args["command"].(string)
		if cmd == "" {
			cmd, _ = args["cmd"].(string)
			if _, isStr := args["cmd"].(string); !isStr {
				continue
			}
		}
		out = append(out, sp.commandActions(cmd)...)
	}
	return out
}

func (sp *specRules) modelIntent(reasoning, content string) *string {
	for _, s := range []string{reasoning, content} {
		if m := sp.intent.FindStringSubmatch(s); m != nil {
			c := strings.ToUpper(m[1])
			return &c
		}
	}
	for _, s := range []string{reasoning, content} {
		if ms := sp.bare.FindAllStringSubmatch(s, -1); ms != nil {
			c := "I" + ms[len(ms)-1][1]
			return &c
		}
	}
	return nil
}

func specRound4(x float64) float64 {
	s := new(big.Float).SetFloat64(x).Text('f', 4) // exact value, ties to even
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

func specJaccard(a, b []string) float64 {
	ca, cb := map[string]int{}, map[string]int{}
	for _, x := range a {
		ca[x]++
	}
	for _, x := range b {
		cb[x]++
	}
	inter, union := 0, 0
	seen := map[string]bool{}
	for _, k := range append(append([]string{}, a...), b...) {
		if seen[k] {
			continue
		}
		seen[k] = true
		inter += min(ca[k], cb[k])
		union += max(ca[k], cb[k])
	}
	return float64(inter) / float64(union)
}

// Generator.

type genRow struct {
	role    string
	calls   []specCall // assistant
	intents []any      // assistant of workflow: strings and nils
}

type genOutput struct {
	content, reasoning string
	calls              []specCall
}

func randCommand(r *rand.Rand) string {
	words := []string{"python3.10", "/usr/bin/python3", "python", "py", "pip3", "pytest", "grep", "egrep", "rg",
		"cat", "less", "head", "tail", "sed", "gawk", "ls", "find", "xargs", "git", "wget", "cd", "echo", "mkdir",
		"sudo", "env", "time", "nice", "exec", "command", "FOO=1", "A_B=x", "1X=2", "make", "./make", "Sort",
		"-la", "-rn", "src/", "tests/", "*.py", "2>&1", ">", "out.txt", ".", "source", "apt-get", "unknown",
		"$(ls", "|head)", "(cd", "x)", "\\", "<<EOF", "EOF", "python3.11.2", "tool.1", "GIT"}
	seps := []string{" ", " ", " ", " | ", " && ", "; ", "\n", " || ", "|", "&", " & ", "\n\t"}
	quotes := []string{`"a | b"`, `'x && y'`, "`date | tr a b`", `"esc \" q | p"`, `"unclosed`, `'open`, "`tick", `"a\\"`, `\"`}
	var b strings.Builder
	n := 1 + r.IntN(10)
	for i := 0; i < n; i++ {
		switch r.IntN(6) {
		case 0:
			b.WriteString(quotes[r.IntN(len(quotes))])
		default:
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteString(seps[r.IntN(len(seps))])
	}
	return b.String()
}

func randCalls(r *rand.Rand) []specCall {
	var calls []specCall
	for n := r.IntN(3); n > 0; n-- {
		cmd := randCommand(r)
		key := "command"
		if r.IntN(4) == 0 {
			key = "cmd"
		}
		args, _ := json.Marshal(map[string]string{key: cmd})
		c := specCall{Name: "bash", Args: string(args)}
		switch r.IntN(8) {
		case 0:
			c.Name = "str_replace_editor"
		case 1:
			c.Args = c.Args[:len(c.Args)/2] // invalid JSON
		case 2:
			c.Args = `{"command": "", "cmd": ` + strconv.Quote(cmd) + `}`
		}
		calls = append(calls, c)
	}
	return calls
}

func randText(r *rand.Rand) string {
	words := []string{"ok", "I042", "i042", "I001", "I0420", "XI042", "I042.", "(I007)", "intent:", "Intent: I100",
		"INTENT:I200", "intent: i300", "intent:  I301x", "intent : I302", "final", "I999_", "_I998", "\n", "route", "I7"}
	var parts []string
	for n := r.IntN(8); n > 0; n-- {
		parts = append(parts, words[r.IntN(len(words))])
	}
	return strings.Join(parts, " ")
}

// chunks splits s into 1..4 pieces.
func chunks(r *rand.Rand, s string) []string {
	if s == "" || r.IntN(3) == 0 {
		return []string{s}
	}
	var out []string
	for len(s) > 0 {
		n := 1 + r.IntN(len(s))
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// eventsFor writes a complete event's data for an output: streamed (chunks and
// tool-call deltas) or whole.
func eventData(r *rand.Rand, o genOutput) []any {
	if r.IntN(3) == 0 {
		var calls []any
		for i, c := range o.calls {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("c%d", i), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Args}})
		}
		var tc any
		if calls != nil {
			tc = calls
		}
		var reasoning any
		if o.reasoning != "" {
			reasoning = o.reasoning
		}
		return []any{"TextModelOutput", o.content, reasoning, tc}
	}
	// Streamed: each call's name first, then its arguments in pieces, the calls'
	// deltas interleaved at random.
	type pending struct {
		idx    int
		pieces []string
	}
	var ps []*pending
	var deltas [][]any
	for i, c := range o.calls {
		deltas = append(deltas, []any{map[string]any{"index": i, "id": fmt.Sprintf("c%d", i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}})
		ps = append(ps, &pending{i, chunks(r, c.Args)})
	}
	for len(ps) > 0 {
		k := r.IntN(len(ps))
		p := ps[k]
		deltas = append(deltas, []any{map[string]any{"index": p.idx, "function": map[string]any{"arguments": p.pieces[0]}}})
		if p.pieces = p.pieces[1:]; len(p.pieces) == 0 {
			ps = append(ps[:k], ps[k+1:]...)
		}
	}
	var tc any
	if deltas != nil {
		tc = deltas
	}
	var reasoning any
	if o.reasoning != "" {
		reasoning = chunks(r, o.reasoning)
	}
	return []any{"TextModelOutput", chunks(r, o.content), reasoning, tc}
}

func TestDifferentialRandomRuns(t *testing.T) {
	sp := newSpecRules()
	iterations := 150
	if testing.Short() {
		iterations = 30
	}
	for it := 0; it < iterations; it++ {
		seed := uint64(it)
		r := rand.New(rand.NewPCG(seed, 42))
		// A random dataset.
		var convs []conv
		gen := map[string][]genRow{}
		for c := 0; c < 2+r.IntN(5); c++ {
			id := fmt.Sprintf("repo__case-%d", c)
			workflow := r.IntN(2) == 0
			if workflow {
				id = fmt.Sprintf("sim_%03d", c)
			}
			var rows []row
			var grs []genRow
			rows = append(rows, row{role: "user", content: "task"})
			grs = append(grs, genRow{role: "user"})
			for k := 0; k < 1+r.IntN(4); k++ {
				gr := genRow{role: "assistant"}
				ar := row{role: "assistant", content: "x"}
				if workflow {
					pool := []any{"I042", "i001", "I100", "I999", nil, "", "I200"}
					for n := r.IntN(3); n > 0; n-- {
						gr.intents = append(gr.intents, pool[r.IntN(len(pool))])
					}
					b, _ := json.Marshal(gr.intents)
					ar.intents = string(b)
					if gr.intents == nil && r.IntN(2) == 0 {
						ar.intents = ""
					}
				} else {
					gr.calls = randCalls(r)
					var tcs []any
					for i, c := range gr.calls {
						tcs = append(tcs, map[string]any{"id": fmt.Sprintf("g%d", i), "type": "function",
							"function": map[string]any{"name": c.Name, "arguments": c.Args}})
					}
					if tcs != nil {
						b, _ := json.Marshal(tcs)
						ar.toolCalls = string(b)
					}
				}
				rows = append(rows, ar)
				grs = append(grs, gr)
				next := "tool"
				if workflow || r.IntN(4) == 0 {
					next = "user"
				}
				if r.IntN(5) > 0 {
					rows = append(rows, row{role: next, content: "result"})
					grs = append(grs, genRow{role: next})
				}
			}
			convs = append(convs, conv{id, rows})
			gen[id] = grs
		}
		truth := NewTruth(buildDataset(t, convs))

		// A random reference event log over 1..3 repeats.
		type key struct {
			conv   string
			repeat int
			turn   int32
		}
		outputs := map[key]*genOutput{}
		issuedKeys := map[key]bool{}
		var lines [][]byte
		ts := int64(0)
		emit := func(typ, uuid, sid string, turn int32, data any) {
			ts++
			b, _ := json.Marshal(map[string]any{"event_type": typ, "timestamp_ns": ts, "sample_uuid": uuid,
				"conversation_id": sid, "turn": turn, "data": data})
			lines = append(lines, b)
		}
		uuid := 0
		repeats := 1 + r.IntN(3)
		for rep := 1; rep <= repeats; rep++ {
			for _, c := range convs {
				sid := c.id
				if rep > 1 {
					sid = fmt.Sprintf("%s__repeat_%d", c.id, rep)
				}
				failed := false
				for i, gr := range gen[c.id] {
					if gr.role == "assistant" {
						continue
					}
					turn := int32(i + 1)
					uuid++
					u := fmt.Sprintf("u%d", uuid)
					k := key{c.id, rep, turn}
					issuedKeys[k] = true
					if failed || r.IntN(8) == 0 {
						emit("sample.issued", u, sid, turn, []any{"PromptData"})
						emit("error.generic", u, sid, turn, []any{"ErrorData", "Failure", "x"})
						emit("sample.complete", u, sid, turn, nil)
						failed = true
						continue
					}
					o := &genOutput{content: randText(r), reasoning: randText(r), calls: randCalls(r)}
					outputs[k] = o
					issue := func() { emit("sample.issued", u, sid, turn, []any{"PromptData"}) }
					complete := func() { emit("sample.complete", u, sid, turn, eventData(r, *o)) }
					if r.IntN(6) == 0 {
						complete()
						issue()
					} else {
						issue()
						emit("sample.recv_first", u, sid, turn, nil)
						complete()
					}
					if r.IntN(6) == 0 {
						emit("sample.complete", u, sid, turn, nil) // a late null never erases
					}
				}
			}
		}
		ref, err := readReferenceEvents(context.Background(), bytes.NewReader(bytes.Join(lines, []byte("\n"))), truth)
		if err != nil {
			t.Fatal(err)
		}
		got := ScoreAccuracy(truth, ref.Attempts)

		// The restatement.
		type expect struct {
			assistantTurn int32
			workflow      bool
			intents       []string
			actions       []string
		}
		expected := map[[2]any]expect{}
		for _, c := range convs {
			grs := gen[c.id]
			for i := 0; i+1 < len(grs); i++ {
				if (grs[i].role == "user" || grs[i].role == "tool") && grs[i+1].role == "assistant" {
					e := expect{assistantTurn: int32(i + 2), workflow: strings.HasPrefix(c.id, "sim_")}
					set := map[string]bool{}
					for _, v := range grs[i+1].intents {
						if s, ok := v.(string); ok && s != "" {
							set[strings.ToUpper(s)] = true
						}
					}
					for s := range set {
						e.intents = append(e.intents, s)
					}
					sort.Strings(e.intents)
					e.actions = sp.callsActions(grs[i+1].calls)
					expected[[2]any{c.id, int32(i + 1)}] = e
				}
			}
		}
		var keys []key
		issued := 0
		for k := range issuedKeys {
			e, ok := expected[[2]any{k.conv, k.turn}]
			if !ok {
				continue
			}
			issued++
			if (e.workflow && len(e.intents) > 0) || (!e.workflow && len(e.actions) > 0) {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := keys[i], keys[j]
			if a.conv != b.conv {
				return a.conv < b.conv
			}
			if a.repeat != b.repeat {
				return a.repeat < b.repeat
			}
			return a.turn < b.turn
		})
		var total float64
		observed := 0
		var perTurn []float64
		for _, k := range keys {
			e := expected[[2]any{k.conv, k.turn}]
			o := outputs[k]
			if o != nil {
				observed++
			} else {
				o = &genOutput{}
			}
			var s float64
			if e.workflow {
				if code := sp.modelIntent(o.reasoning, o.content); code != nil {
					for _, c := range e.intents {
						if c == *code {
							s = 1
						}
					}
				}
			} else {
				s = specJaccard(e.actions, sp.callsActions(o.calls))
			}
			perTurn = append(perTurn, specRound4(s))
			total += s
		}
		wantTurns := schemas.TurnCounts{Issued: issued, Expected: len(keys), Observed: observed, Missing: len(keys) - observed, Scored: len(keys)}
		if got.Turns != wantTurns {
			t.Fatalf("seed %d: turns %+v, want %+v", seed, got.Turns, wantTurns)
		}
		if len(keys) > 0 {
			if want := specRound4(total / float64(len(keys))); got.Score != want {
				t.Fatalf("seed %d: score %v, want %v", seed, got.Score, want)
			}
		}
		for i, p := range got.PerTurn {
			k := keys[i]
			if p.ConversationID != k.conv || int(p.Repeat) != k.repeat || p.ClientTurn != k.turn || p.Score != perTurn[i] {
				t.Fatalf("seed %d: per_turn %d = %+v, want %v score %v", seed, i, p, k, perTurn[i])
			}
		}
	}
}

// TestDifferentialCommands compares the actions of many random commands.
func TestDifferentialCommands(t *testing.T) {
	sp := newSpecRules()
	r := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 20000; i++ {
		cmd := randCommand(r)
		got, want := CommandActions(cmd), sp.commandActions(cmd)
		if len(got) != len(want) || (len(got) > 0 && strings.Join(got, " ") != strings.Join(want, " ")) {
			t.Fatalf("CommandActions(%q) = %q, restatement %q", cmd, got, want)
		}
		text := randText(r) + " " + randText(r)
		text2 := randText(r)
		g, ok := ModelIntent(text, text2)
		w := sp.modelIntent(text, text2)
		if ok != (w != nil) || (ok && g != *w) {
			t.Fatalf("ModelIntent(%q, %q) = %q %v, restatement %v", text, text2, g, ok, w)
		}
	}
}
