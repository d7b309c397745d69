package score

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// bashCall builds a tool_calls JSON array with one bash call whose arguments are
// the JSON string of {"command": cmd}.
func bashCall(cmd string) []byte {
	args, _ := json.Marshal(map[string]string{"command": cmd})
	b, _ := json.Marshal([]map[string]any{{"id": "c1", "type": "function",
		"function": map[string]any{"name": "bash", "arguments": string(args)}}})
	return b
}

func TestCommandActionsSpecVectors(t *testing.T) {
	// Spec §8 test vectors (reference unit tests).
	tests := []struct {
		cmd  string
		want []string
	}{
		{`CUDA_VISIBLE_DEVICES=0 /usr/bin/python3 -m pytest`, []string{"python"}},
		{`cd /testbed && python -m pytest tests/ -x 2>&1 | tail -20`, []string{"python", "tail"}},
		{`python3.10 setup.py build; pip3 install -e .`, []string{"python", "pip"}},
		{`sudo env FOO=1 time nice grep -rn "a\|b" src | head -5`, []string{"grep", "head"}},
		{`echo "x && y" ; cat foo.txt`, []string{"cat"}},
		{`rg pattern || egrep x y`, []string{"grep", "grep"}},
		{`ls -la && find . -name "*.py" | xargs wc -l`, []string{"ls", "find", "xargs"}},
		{`source venv/bin/activate && . ~/.bashrc`, []string{"source", "source"}},
		{`A=1 B=2`, nil},
	}
	for _, tt := range tests {
		if got := CommandActions(tt.cmd); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("CommandActions(%q) = %q, want %q", tt.cmd, got, tt.want)
		}
		// The same through a bash tool call.
		if got := ToolCallsActions(bashCall(tt.cmd)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ToolCallsActions(bash %q) = %q, want %q", tt.cmd, got, tt.want)
		}
	}
}

func TestCommandActionsTricky(t *testing.T) {
	// What the spec's algorithm gives on shell syntax it does not parse: quoted spans
	// vanish, separators split even inside $(...) and subshells, and the first token
	// of each stage is taken as is.
	tests := []struct {
		name, cmd string
		want      []string
	}{
		{"heredoc body lines are stages", "cat <<'EOF' > f.py\nimport os\nprint(1)\nEOF\npython f.py",
			[]string{"cat", "python"}},
		{"heredoc unquoted marker", "cat > /tmp/t.sh << EOF\ngrep x y\nEOF", []string{"cat", "grep"}},
		{"subshell paren sticks to the token", "(cd src && ls) | wc -l", []string{"wc"}},
		{"command substitution splits at its pipe", "echo $(ls | head -1)", []string{"head"}},
		{"substitution as first token", "$(which python) -V", nil},
		{"escaped double quote inside quotes", `grep "a\"b|c" f | sort`, []string{"grep", "sort"}},
		{"escaped quote outside quotes opens a span", `echo \"x | cat\" ; ls`, []string{"ls"}},
		{"single quotes keep no escapes", `sed 's/a\'/b/' f; wc`, []string{"sed", "wc"}},
		{"backticks", "echo `date | tr a b` && date", []string{"date"}},
		{"unclosed quote is an ordinary character", `grep "unclosed | tail`, []string{"grep", "tail"}},
		{"backslash-newline breaks a double-quoted span", "echo \"a\\\nb\" | sort", []string{"sort"}},
		{"line continuation splits", "python -m pytest \\\n  tests/ -x", []string{"python"}},
		{"background & is not a separator", "sleep 1 & ls", nil},
		{"version suffixes", "python3.11 -V; pip3.9 list; python3.10.4 x; gawk.1.2.3 y", []string{"python", "pip", "python"}},
		{"upper case and path", "/USR/BIN/GREP x; ./Make", []string{"grep", "make"}},
		{"wrappers only once in front", "time sudo -E ls", nil},
		{"env assignment needs a name", "=1 ls; 1A=2 ls; _A=1 ls", []string{"ls"}},
		{"redirection glued to the name", "ls>out; cat<in", nil},
		{"tabs and vertical tabs split", "\tgrep\vx", []string{"grep"}},
		{"file separator is whitespace in Python", "grep\x1cx", []string{"grep"}},
		{"non-breaking space is whitespace", "grep\u00a0x", []string{"grep"}},
		{"dotted i lowercases to two code points", "P\u0130P install", nil},
		{"kelvin sign lowercases to k", "\u212Aill", nil},
		{"arabic-indic version digits", "python3.\u0661\u0660 x", []string{"python"}},
		{"empty", "", nil},
		{"only separators", "|| && ; |\n", nil},
		{"triple pipe", "ls ||| wc", []string{"ls", "wc"}},
		{"dot source", ". venv/bin/activate", []string{"source"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CommandActions(tt.cmd); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CommandActions(%q) = %q, want %q", tt.cmd, got, tt.want)
			}
		})
	}
}

func TestToolCallsActionsShapes(t *testing.T) {
	tests := []struct {
		name, calls string
		want        []string
	}{
		{"arguments as object", `[{"function":{"name":"bash","arguments":{"command":"ls"}}}]`, []string{"ls"}},
		{"cmd key", `[{"function":{"name":"bash","arguments":"{\"cmd\":\"git status\"}"}}]`, []string{"git"}},
		{"empty command falls back to cmd", `[{"function":{"name":"bash","arguments":{"command":"","cmd":"ls"}}}]`, []string{"ls"}},
		{"zero command falls back to cmd", `[{"function":{"name":"bash","arguments":{"command":0.0,"cmd":"ls"}}}]`, []string{"ls"}},
		{"non-string truthy command", `[{"function":{"name":"bash","arguments":{"command":["ls"],"cmd":"ls"}}}]`, nil},
		{"NaN command is truthy", `[{"function":{"name":"bash","arguments":"{\"command\": NaN, \"cmd\": \"ls\"}"}}]`, nil},
		{"NaN elsewhere still parses", `[{"function":{"name":"bash","arguments":"{\"x\": -Infinity, \"command\": \"ls\"}"}}]`, []string{"ls"}},
		{"invalid JSON skipped", `[{"function":{"name":"bash","arguments":"{\"command\": \"ls\""}},{"function":{"name":"bash","arguments":"{\"command\":\"cat\"}"}}]`, []string{"cat"}},
		{"other tools ignored", `[{"function":{"name":"str_replace_editor","arguments":"{\"command\":\"view\"}"}}]`, nil},
		{"name case matters", `[{"function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}}]`, nil},
		{"key case matters", `[{"Function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]`, nil},
		{"duplicate keys: last wins", `[{"function":{"name":"bash","arguments":"{\"command\":\"ls\",\"command\":\"cat\"}"}}]`, []string{"cat"}},
		{"not a list", `{"function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}`, nil},
		{"function not an object", `[{"function":"bash"}]`, nil},
		{"several calls in order", `[{"function":{"name":"bash","arguments":"{\"command\":\"ls; cat x\"}"}},{"function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]`, []string{"ls", "cat", "ls"}},
		{"empty", ``, nil},
		{"escaped key in arguments", `[{"function":{"name":"bash","arguments":"{\"comm\\u0061nd\":\"ls\"}"}}]`, []string{"ls"}},
		{"escaped name", `[{"function":{"name":"b\u0061sh","arguments":{"command":"ls"}}}]`, []string{"ls"}},
		{"duplicate function: last wins", `[{"function":{"name":"x"},"function":{"name":"bash","arguments":{"command":"ls"}}}]`, []string{"ls"}},
		{"one bad call invalidates all", `[{"function":{"name":"bash","arguments":{"command":"ls"}}}, {"x": tru}]`, nil},
		{"non-object items skipped", `[1, "bash", null, [], {"function":{"name":"bash","arguments":{"cmd":"cat"}}}]`, []string{"cat"}},
		{"arguments JSON with trailing text", `[{"function":{"name":"bash","arguments":"{\"command\":\"ls\"} x"}}]`, nil},
		{"arguments a JSON list", `[{"function":{"name":"bash","arguments":"[\"ls\"]"}}]`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToolCallsActions([]byte(tt.calls)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestModelIntentSpecVectors(t *testing.T) {
	tests := []struct {
		reasoning, content string
		want               string // "" = none
	}{
		{"", "final intent: i042", "I042"},
		{"", "I001 then I002", "I002"},
		{"I003", "I004", "I003"},
		{"maybe I003", "intent: I004", "I004"},
		{"", "XI042 I0420 I042.", "I042"},
		{"", "Intent:I7", ""},
		// Own cases.
		{"", "INTENT:   i123 and later intent: I999", "I123"},
		{"", "intent:\n\tI555", "I555"},
		{"", "myintent: I111 I222", "I222"},      // \b before intent fails
		{"", "intent: I1234", ""},                // \b after the digits fails, no bare match either
		{"", "_I042 I042_ I042", "I042"},         // _ is a word character
		{"", "ıntent: ı042", "I042"},             // dotless i folds to i in Python's re
		{"", "İNTENT: İ042", "İ042"},             // İ lower-cases to i; upper() keeps İ
		{"", "intent: I٠٤٢", "I٠٤٢"},             // Unicode digits are \d
		{"", "éI042", ""},                        // é is a word character
		{"", "I042é", ""},                        //
		{"no code here", "", ""},                 //
		{"I100", "intent: I200", "I200"},         // explicit beats bare, across fields
		{"I100 I101", "I200", "I101"},            // last bare of reasoning
		{"", "intent:\u00a0I300", "I300"},        // NBSP is \s
		{"", "intent:\x1cI301", "I301"},          // so is FS
		{"", "intent : I302 then I303", "I303"},  // no space allowed before the colon
		{"", "I0420I042", ""},                    // digits glued
		{"", "(I042)", "I042"},                   //
		{"", strings.Repeat("I", 3) + "123", ""}, // III123: \b fails inside the word
		{"", "intent: i042", "I042"},             // code upper-cased
		{"", "intent: x I042", "I042"},           // explicit fails, bare matches
	}
	for _, tt := range tests {
		got, ok := ModelIntent(tt.reasoning, tt.content)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("ModelIntent(%q, %q) = %q, %v; want %q", tt.reasoning, tt.content, got, ok, tt.want)
		}
	}
}

func TestGroundTruthIntents(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`["i001","I002",null,""]`, []string{"I001", "I002"}}, // spec vector
		{`["I002","i002","I001"]`, []string{"I001", "I002"}},
		{`"I001"`, nil},
		{`null`, nil},
		{``, nil},
		{`[1, true, {"a":"I001"}]`, nil},
	}
	for _, tt := range tests {
		if got := GroundTruthIntents([]byte(tt.in)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("GroundTruthIntents(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMultisetJaccard(t *testing.T) {
	tests := []struct {
		a, b []string
		want float64
	}{
		{[]string{"python"}, []string{"python"}, 1},
		{[]string{"python", "python"}, []string{"python"}, 0.5},
		{[]string{"ls", "cat"}, []string{"cat", "grep", "grep"}, 0.25},
		{[]string{"ls"}, nil, 0},
		{nil, nil, 0},
	}
	for _, tt := range tests {
		if got := MultisetJaccard(tt.a, tt.b); got != tt.want {
			t.Errorf("MultisetJaccard(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func BenchmarkToolCallsActions(b *testing.B) {
	calls := bashCall("cd /testbed && python -m pytest tests/ -x 2>&1 | tail -20; git diff")
	b.ReportAllocs()
	for b.Loop() {
		ToolCallsActions(calls)
	}
}

// FuzzToolCallsActions checks ToolCallsActions against refToolCallsActions, a
// restatement of the reference's _bash_actions over values decoded by
// encoding/json, on every input inside the restatement's domain.
func FuzzToolCallsActions(f *testing.F) {
	for _, s := range []string{`[{"function":{"name":"bash","arguments":"{\"command\":\"ls | wc\"}"}}]`, `{"a":[1,2,{"b":null}]}`,
		`[{"function":{"name":"bash","arguments":{"command":"","cmd":"cat x; ls"}}}]`, `[{"function":{"name":"bash","arguments":"{\"command\":0e5,\"cmd\":\"ls\"}"}}]`,
		`[{"function":{"name":"b\u0061sh","arguments":"{\"command\":\"ls\",\"command\":\"cat\"}"}}, 1]`, `[{"function":{"name":"bash","arguments":"{\"command\":\"ls\"} x"}}]`,
		`"\ud83d\ude00"`, `[1e5, -0.5, true]`, `{"a":"\u00"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := ToolCallsActions(data)
		want, known := refToolCallsActions(data)
		if known && !reflect.DeepEqual(got, want) {
			t.Fatalf("ToolCallsActions(%q) = %q, the restatement %q", data, got, want)
		}
	})
}

// refToolCallsActions restates the reference's _bash_actions (json.loads of the
// document and of string arguments) with encoding/json. known is false for input
// it cannot restate: Python's NaN and Infinity, integers of more than 4300 digits
// and nesting past 1000 levels, where json.loads differs from encoding/json.
func refToolCallsActions(doc []byte) (actions []string, known bool) {
	calls, ok := loads(doc)
	if !ok {
		return nil, inDomain(doc)
	}
	list, ok := calls.([]any)
	if !ok {
		return nil, true
	}
	for _, c := range list {
		call, ok := c.(map[string]any)
		if !ok || !truthy(call["function"]) {
			continue
		}
		fn, ok := call["function"].(map[string]any)
		if !ok || fn["name"] != "bash" {
			continue
		}
		args := fn["arguments"]
		if s, ok := args.(string); ok {
			v, ok := loads([]byte(s))
			if !inDomain([]byte(s)) {
				return nil, false
			}
			if !ok {
				continue
			}
			args = v
		}
		a, ok := args.(map[string]any)
		if !ok {
			continue
		}
		cmd := a["command"]
		if !truthy(cmd) {
			cmd = a["cmd"]
		}
		if s, ok := cmd.(string); ok {
			actions = appendCommandActions(actions, s)
		}
	}
	return actions, inDomain(doc)
}

func loads(b []byte) (any, bool) {
	if !json.Valid(b) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	return v, d.Decode(&v) == nil
}

// truthy is Python's bool() of a decoded value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64) // 1e-400 is 0.0; a huge integer, +Inf
		return f != 0
	}
	panic(v)
}

// inDomain tells whether json.loads and encoding/json agree on b for certain.
func inDomain(b []byte) bool {
	if bytes.Contains(b, []byte("NaN")) || bytes.Contains(b, []byte("Infinity")) {
		return false
	}
	run, depth, most := 0, 0, 0
	for _, c := range b {
		if run++; c < '0' || c > '9' {
			run = 0
		}
		switch c {
		case '[', '{':
			depth++
			most = max(most, depth)
		case ']', '}':
			depth--
		}
		if run > 4300 || most > 1000 {
			return false
		}
	}
	return true
}
