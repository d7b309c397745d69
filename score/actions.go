package score

import (
	"strings"
	"unicode/utf8"

	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/python"
	"github.com/agentrace/agentrace/score/runread"
)

// executableAction maps an executable's normalized name to the action it counts
// as (spec §8's alias table); ok is false for executables the table does not list.
func executableAction(exe string) (action string, ok bool) {
	switch exe {
	case "python", "python2", "python3", "py":
		return "python", true
	case "pip", "pip3":
		return "pip", true
	case "pytest":
		return "pytest", true
	case "pylint":
		return "pylint", true
	case "sphinx-build", "sphinx-quickstart":
		return "sphinx", true
	case "cython":
		return "cython", true
	case "make":
		return "make", true
	case "conda":
		return "conda", true
	case "cat", "less", "more":
		return "cat", true
	case "head":
		return "head", true
	case "tail":
		return "tail", true
	case "wc":
		return "wc", true
	case "diff":
		return "diff", true
	case "grep", "egrep", "fgrep", "rg", "ag":
		return "grep", true
	case "sed":
		return "sed", true
	case "awk", "gawk":
		return "awk", true
	case "tr":
		return "tr", true
	case "sort":
		return "sort", true
	case "uniq":
		return "uniq", true
	case "cut":
		return "cut", true
	case "find", "locate":
		return "find", true
	case "ls":
		return "ls", true
	case "xargs":
		return "xargs", true
	case "cp":
		return "cp", true
	case "mv":
		return "mv", true
	case "rm":
		return "rm", true
	case "mkdir":
		return "mkdir", true
	case "touch":
		return "touch", true
	case "tee":
		return "tee", true
	case "source", ".":
		return "source", true
	case "which":
		return "which", true
	case "alias":
		return "alias", true
	case "unset":
		return "unset", true
	case "export":
		return "export", true
	case "git":
		return "git", true
	case "curl", "wget":
		return "curl", true
	case "true":
		return "true", true
	case "false":
		return "false", true
	case "timeout":
		return "timeout", true
	case "date":
		return "date", true
	case "apt-get", "apt":
		return "apt", true
	case "yum":
		return "yum", true
	}
	return "", false
}

// isShellWrapper tells whether a leading token only wraps the real command.
func isShellWrapper(tok string) bool {
	switch tok {
	case "env", "time", "nice", "sudo", "exec", "command":
		return true
	}
	return false
}

// CommandActions returns the normalized actions of one bash command line (spec §8):
// quoted spans ('...', "..." with backslash escapes, `...`) become a space; the rest
// is split into stages on ||, |, &&, ; and newlines; in each stage leading VAR=value
// tokens and the wrappers env, time, nice, sudo, exec and command are dropped; the
// first token's basename is lower-cased, a trailing .N or .N.N is stripped, and the
// result is mapped through the alias table. Unknown executables are dropped.
func CommandActions(command string) []string {
	return appendCommandActions(nil, command)
}

func appendCommandActions(dst []string, command string) []string {
	command = blankQuoted(command)
	for len(command) > 0 {
		stage, rest := nextStage(command)
		command = rest
		if a, ok := stageAction(stage); ok {
			dst = append(dst, a)
		}
	}
	return dst
}

// blankQuoted replaces every quoted span by a single space, scanning left to right
// as the reference's regular expression '[^']*'|"(?:[^"\\]|\\.)*"|`[^`]*` does: a
// quote that is never closed (or, for "...", whose escape is a backslash before a
// newline or the end) is left as an ordinary character.
func blankQuoted(s string) string {
	if strings.IndexAny(s, "'\"`") < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	i, last := 0, 0
	for i < len(s) {
		c := s[i]
		if c != '\'' && c != '"' && c != '`' {
			i++
			continue
		}
		end := quotedEnd(s, i)
		if end < 0 {
			i++
			continue
		}
		b.WriteString(s[last:i])
		b.WriteByte(' ')
		i, last = end, end
	}
	b.WriteString(s[last:])
	return b.String()
}

// quotedEnd returns the index just past the quoted span opening at s[i], or -1 when
// no span opens there.
func quotedEnd(s string, i int) int {
	q := s[i]
	if q != '"' {
		j := strings.IndexByte(s[i+1:], q)
		if j < 0 {
			return -1
		}
		return i + 1 + j + 1
	}
	for j := i + 1; j < len(s); {
		switch s[j] {
		case '"':
			return j + 1
		case '\\':
			// \\. : the escaped character may be anything but a newline.
			if j+1 >= len(s) || s[j+1] == '\n' {
				return -1
			}
			j += 2
			// a multi-byte character after the backslash: step over the rest of it.
			for j < len(s) && s[j]&0xC0 == 0x80 {
				j++
			}
		default:
			j++
		}
	}
	return -1
}

// nextStage splits off the text before the first separator (||, |, &&, ; or a
// newline) and returns it with what follows the separator. With no separator left
// the whole string is the stage and rest is empty.
func nextStage(s string) (stage, rest string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '|':
			if i+1 < len(s) && s[i+1] == '|' {
				return s[:i], s[i+2:]
			}
			return s[:i], s[i+1:]
		case '&':
			if i+1 < len(s) && s[i+1] == '&' {
				return s[:i], s[i+2:]
			}
		case ';', '\n':
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// stageAction normalizes the executable of one stage: its first token (Python's
// str.split) after leading VAR=value tokens and wrappers.
func stageAction(stage string) (string, bool) {
	exe := ""
	for rest := stage; ; {
		var tok string
		tok, rest = nextField(rest)
		if tok == "" {
			return "", false
		}
		if !isEnvAssignment(tok) && !isShellWrapper(tok) {
			exe = tok
			break
		}
	}
	if i := strings.LastIndexByte(exe, '/'); i >= 0 {
		exe = exe[i+1:]
	}
	exe = stripVersionSuffix(python.Lower(exe))
	return executableAction(exe)
}

// nextField returns the first run of non-whitespace of s (Python's notion of
// whitespace) and what follows it; tok is "" when s has none.
func nextField(s string) (tok, rest string) {
	start := -1
	for i, r := range s {
		if python.IsSpace(r) {
			if start >= 0 {
				return s[start:i], s[i:]
			}
		} else if start < 0 {
			start = i
		}
	}
	if start < 0 {
		return "", ""
	}
	return s[start:], ""
}

// isEnvAssignment matches ^[A-Za-z_][A-Za-z0-9_]*= .
func isEnvAssignment(tok string) bool {
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c == '=':
			return i > 0
		case c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z'):
		case '0' <= c && c <= '9':
			if i == 0 {
				return false
			}
		default:
			return false
		}
	}
	return false
}

// stripVersionSuffix removes the leftmost match of \.\d+(\.\d+)?$ (Unicode digits):
// one or two trailing ".digits" groups, two when there are two.
func stripVersionSuffix(s string) string {
	// Walk back over at most two ".digits" groups that end the string.
	end := len(s)
	cut := -1
	for groups := 0; groups < 2; groups++ {
		j := end
		digits := 0
		for j > 0 {
			r, size := utf8.DecodeLastRuneInString(s[:j])
			if !python.IsDigit(r) {
				break
			}
			j -= size
			digits++
		}
		if digits == 0 || j == 0 || s[j-1] != '.' {
			break
		}
		cut = j - 1
		end = j - 1
	}
	if cut < 0 {
		return s
	}
	return s[:cut]
}

// ToolCallsActions returns the actions of the bash tool calls in a JSON array of
// tool calls (an assistant message's tool_calls): calls whose function.name is
// "bash", arguments decoded (a JSON string is parsed; invalid JSON is skipped), the
// "command" argument or else "cmd". Nothing that is not of that shape counts.
func ToolCallsActions(toolCallsJSON []byte) []string {
	return appendToolCallsActions(nil, toolCallsJSON)
}

func appendToolCallsActions(dst []string, toolCallsJSON []byte) []string {
	// As json.loads reads them: nothing counts from invalid JSON, nor from JSON
	// that is not a list.
	if jsontext.KindOf(toolCallsJSON) != jsontext.Array || !jsontext.Valid(toolCallsJSON, jsontext.Python) {
		return dst
	}
	jsontext.EachElement(toolCallsJSON, func(_ int, call []byte) bool {
		if name, args, ok := runread.SplitToolCall(call); ok && jsontext.StringIs(name, "bash") {
			if cmd, ok := bashArgsCommand(args); ok {
				dst = appendCommandActions(dst, cmd)
			}
		}
		return true
	})
	return dst
}

// bashArgsCommand extracts the command from a bash call's arguments: a JSON object,
// or a string holding one (parsed as json.loads would; anything else is skipped);
// its "command" when truthy, else its "cmd", which must be a string.
func bashArgsCommand(args []byte) (string, bool) {
	if jsontext.KindOf(args) == jsontext.String {
		text, _ := jsontext.Unquote(args)
		args = []byte(text)
	}
	keys := [...]string{"command", "cmd"}
	var vals [len(keys)][]byte
	s := jsontext.NewScanner(args, jsontext.Python)
	if s.Peek() != '{' || s.Fields(keys[:], vals[:]) != nil || s.End() != nil {
		return "", false
	}
	v := vals[0]
	if !jsontext.Truthy(v) {
		v = vals[1]
	}
	return jsontext.Unquote(v)
}
