package synth

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// codingSystem is the short system prompt of every coding trajectory.
const codingSystem = "You are a careful software engineer. You solve programming tasks by running commands in a Linux shell through the bash tool."

// bashTools is the tool definition sent with every coding client turn.
const bashTools = `[{"type": "function", "function": {"name": "bash", "description": "Run a command in a bash shell and return its exit code and output", "parameters": {"type": "object", "properties": {"command": {"type": "string", "description": "The command line to run"}}, "required": ["command"]}}}]`

// cmdKind is a kind of shell action an agent takes; each has a command generator
// and an output generator.
type cmdKind int

const (
	cmdFind cmdKind = iota
	cmdGrep
	cmdCat
	cmdSedView
	cmdLs
	cmdHead
	cmdWc
	cmdGitLog
	cmdGitStatus
	cmdGitDiff
	cmdWriteScript // cat <<'EOF' > reproduce.py ... EOF && python reproduce.py
	cmdRunScript
	cmdPyEdit // python - <<'EOF' edit
	cmdSedEdit
	cmdPytest
	cmdPip
	cmdEcho
)

// Phases of a coding trajectory and the command mix of each. The mix follows what
// SWE-style agents do: explore with grep/sed -n/find/cat, reproduce with a script,
// edit with heredocs or sed -i, test with pytest, review with git diff.
var (
	explorePhase = newWeighted(
		choice[cmdKind]{cmdGrep, 30}, choice[cmdKind]{cmdSedView, 26}, choice[cmdKind]{cmdFind, 12},
		choice[cmdKind]{cmdCat, 14}, choice[cmdKind]{cmdLs, 5}, choice[cmdKind]{cmdGitLog, 2},
		choice[cmdKind]{cmdGitStatus, 2}, choice[cmdKind]{cmdHead, 4}, choice[cmdKind]{cmdWc, 2},
		choice[cmdKind]{cmdEcho, 1})
	reproducePhase = newWeighted(
		choice[cmdKind]{cmdWriteScript, 30}, choice[cmdKind]{cmdRunScript, 22}, choice[cmdKind]{cmdSedView, 18},
		choice[cmdKind]{cmdGrep, 14}, choice[cmdKind]{cmdPip, 8}, choice[cmdKind]{cmdCat, 6},
		choice[cmdKind]{cmdEcho, 2})
	editPhase = newWeighted(
		choice[cmdKind]{cmdSedView, 20}, choice[cmdKind]{cmdPyEdit, 11}, choice[cmdKind]{cmdSedEdit, 7},
		choice[cmdKind]{cmdRunScript, 18}, choice[cmdKind]{cmdPytest, 14}, choice[cmdKind]{cmdGrep, 13},
		choice[cmdKind]{cmdCat, 5}, choice[cmdKind]{cmdGitDiff, 5}, choice[cmdKind]{cmdWriteScript, 4},
		choice[cmdKind]{cmdPip, 3})
	reviewPhase = newWeighted(
		choice[cmdKind]{cmdGitDiff, 28}, choice[cmdKind]{cmdPytest, 28}, choice[cmdKind]{cmdRunScript, 18},
		choice[cmdKind]{cmdSedView, 12}, choice[cmdKind]{cmdCat, 8}, choice[cmdKind]{cmdGitStatus, 6})
)

// Median output bytes per command kind; sizes are log-normal around them, which
// makes the overall tool-output size distribution heavy-tailed like real traces
// (median about 400 bytes, p90 about 2 KB, p99 about 8 KB).
var outputMedian = [...]float64{
	cmdFind: 161, cmdGrep: 403, cmdCat: 1612, cmdSedView: 806, cmdLs: 186, cmdHead: 434,
	cmdWc: 37, cmdGitLog: 310, cmdGitStatus: 124, cmdGitDiff: 558, cmdWriteScript: 99,
	cmdRunScript: 186, cmdPyEdit: 0, cmdSedEdit: 0, cmdPytest: 682, cmdPip: 434, cmdEcho: 25,
}

// codingOSL is the log-normal (median, sigma) of an assistant turn's output length in
// tokens (reasoning plus tool call); calibrated so that the mean per-turn OSL of
// the coding turns is about 395 Qwen3 tokens.
const (
	codingOSLMedian = 324.0
	codingOSLSigma  = 0.75
	maxReasoning    = 6000 // approximate tokens
)

// codingConversation generates one coding trajectory with the given number of
// client turns (the first user turn plus clientTurns-1 tool turns).
func codingConversation(r *rand.Rand, index, clientTurns int) []row {
	t := newTask(r, index)
	rows := make([]row, 0, 2*clientTurns)
	user := prDescription(r, t)
	rows = append(rows, row{ConversationID: t.id, Turn: 1, Role: roleUser, Content: &user, System: codingSystem, Tools: bashTools})
	callN := 0
	for i := range clientTurns {
		turn := len(rows) + 1
		var kinds []cmdKind
		final := i == clientTurns-1
		if !final {
			ph := phaseFor(float64(i) / float64(clientTurns))
			kinds = append(kinds, ph.draw(r))
			if r.IntN(200) == 0 {
				kinds = append(kinds, ph.draw(r))
			}
		}
		var calls []toolCall
		var outs []string
		for _, k := range kinds {
			cmd, out := command(r, t, k)
			calls = append(calls, bashCall(r, &callN, cmd))
			outs = append(outs, out)
		}
		if final {
			calls = append(calls, bashCall(r, &callN, "echo TASK_COMPLETE && git add -A && git diff --cached"))
		}
		target := int(logNormal(r, codingOSLMedian, codingOSLSigma))
		for _, c := range calls {
			target -= approxTokens(c.Function.Arguments) + 12
		}
		reasoning := prose(r, t, clampInt(target, 6, maxReasoning))
		rows = append(rows, row{ConversationID: t.id, Turn: turn, Role: roleAssistant, ReasoningContent: reasoning, ToolCalls: calls})
		if final {
			break
		}
		results := make([]toolResult, len(calls))
		for j, c := range calls {
			results[j] = toolResult{ToolCallID: c.ID, Content: outs[j]}
		}
		d := toolDelay(r)
		rows = append(rows, row{ConversationID: t.id, Turn: turn + 1, Role: roleTool, Tools: bashTools, ToolResults: results, DelaySeconds: &d})
	}
	return rows
}

func phaseFor(x float64) weighted[cmdKind] {
	switch {
	case x < 0.25:
		return explorePhase
	case x < 0.4:
		return reproducePhase
	case x < 0.9:
		return editPhase
	default:
		return reviewPhase
	}
}

func bashCall(r *rand.Rand, n *int, cmd string) toolCall {
	*n++
	return toolCall{
		ID:   fmt.Sprintf("call_%d_%06x", *n, r.Uint32()&0xffffff),
		Type: "function",
		Function: toolFunction{Name: "bash", Arguments: mustJSON(struct {
			Command string `json:"command"`
		}{cmd})},
	}
}

// command writes a command of kind k and its output.
func command(r *rand.Rand, t task, k cmdKind) (cmd, out string) {
	size := 0
	if m := outputMedian[k]; m > 0 {
		size = min(int(logNormal(r, m, 1.05)), 24000)
	}
	f := t.file(r)
	cd := ""
	if r.IntN(3) == 0 {
		cd = "cd /testbed && "
	}
	var b strings.Builder
	fill := func(line func() string) {
		for b.Len() < size {
			b.WriteString(line())
			b.WriteByte('\n')
		}
	}
	switch k {
	case cmdFind:
		cmd = fmt.Sprintf("find /testbed/%s -name \"*%s*\" -type f | head -%d", t.proj.pkg, pick(r, t.proj.nouns), 10+r.IntN(40))
		if r.IntN(2) == 0 {
			cmd = fmt.Sprintf("find /testbed -name \"*.py\" | xargs grep -l \"%s\" | head -20", t.fn(r))
		}
		fill(func() string { return "/testbed/" + t.proj.pkg + "/" + pick(r, t.proj.modules) + ".py" })
	case cmdGrep:
		fn := t.fn(r)
		switch r.IntN(3) {
		case 0:
			cmd = fmt.Sprintf("grep -rn \"def %s\" /testbed/%s", fn, t.proj.pkg)
		case 1:
			cmd = fmt.Sprintf("%sgrep -n \"%s\" %s | head -%d", cd, t.noun, f, 20+r.IntN(40))
		default:
			cmd = fmt.Sprintf("grep -rn \"%s(\" --include=*.py /testbed/%s /testbed/tests | grep -v test_ | head -40", fn, t.proj.pkg)
		}
		fill(func() string {
			return fmt.Sprintf("/testbed/%s:%d:%s", t.file(r), 1+r.IntN(1500), codeLine(r, t))
		})
	case cmdCat:
		cmd = "cat " + "/testbed/" + f
		if r.IntN(2) == 0 {
			cmd = fmt.Sprintf("cat -n /testbed/%s | head -%d", f, 60+r.IntN(200))
		}
		numbered(&b, r, t, size)
	case cmdSedView:
		a := 1 + r.IntN(900)
		cmd = fmt.Sprintf("%ssed -n '%d,%dp' %s", cd, a, a+20+r.IntN(80), f)
		fill(func() string { return codeLine(r, t) })
	case cmdLs:
		cmd = fmt.Sprintf("ls -la /testbed/%s/%s", t.proj.pkg, strings.Split(pick(r, t.proj.modules), "/")[0])
		fill(func() string {
			return fmt.Sprintf("-rw-r--r-- 1 root root %6d Jan %2d 10:%02d %s.py", 200+r.IntN(60000), 1+r.IntN(28), r.IntN(60), identifier(r, t.proj))
		})
	case cmdHead:
		cmd = fmt.Sprintf("head -%d /testbed/%s", 30+r.IntN(70), f)
		fill(func() string { return codeLine(r, t) })
	case cmdWc:
		cmd = fmt.Sprintf("wc -l /testbed/%s /testbed/%s", f, t.file(r))
		fill(func() string { return fmt.Sprintf("%5d /testbed/%s", 50+r.IntN(3000), t.file(r)) })
	case cmdGitLog:
		cmd = fmt.Sprintf("cd /testbed && git log --oneline -%d -- %s", 5+r.IntN(15), f)
		fill(func() string {
			return fmt.Sprintf("%07x %s", r.Uint32()&0xfffffff, capitalize(strings.TrimSuffix(sentence(r, t), ".")))
		})
	case cmdGitStatus:
		cmd = "cd /testbed && git status"
		b.WriteString("On branch main\nChanges not staged for commit:\n")
		fill(func() string { return "\tmodified:   " + t.file(r) })
	case cmdGitDiff:
		cmd = "cd /testbed && git diff"
		fmt.Fprintf(&b, "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n", f, f, f, f)
		fill(func() string {
			a := 1 + r.IntN(900)
			return fmt.Sprintf("@@ -%d,7 +%d,9 @@\n %s\n-%s\n+%s\n+%s\n %s", a, a, codeLine(r, t), codeLine(r, t), codeLine(r, t), codeLine(r, t), codeLine(r, t))
		})
	case cmdWriteScript:
		var s strings.Builder
		fmt.Fprintf(&s, "from %s import %s\n\n", t.proj.pkg, t.funcs[0])
		for range 3 + r.IntN(10) {
			s.WriteString(strings.TrimLeft(codeLine(r, t), " "))
			s.WriteByte('\n')
		}
		fmt.Fprintf(&s, "print(%s(%s))\n", t.funcs[0], t.noun)
		cmd = fmt.Sprintf("cat <<'EOF' > /testbed/reproduce_issue.py\n%sEOF\npython /testbed/reproduce_issue.py", s.String())
		traceback(&b, r, t, size)
	case cmdRunScript:
		cmd = cd + "python reproduce_issue.py"
		if cd == "" {
			cmd = "python /testbed/reproduce_issue.py"
		}
		if r.IntN(2) == 0 {
			traceback(&b, r, t, size)
		} else {
			fill(func() string {
				return fmt.Sprintf("%s: %s", t.noun, pick(r, []string{"ok", "None", "[]", "{}", "True", "3"}))
			})
		}
	case cmdPyEdit:
		cmd = fmt.Sprintf("cd /testbed && python - <<'EOF'\nimport re\npath = '%s'\nsrc = open(path).read()\nold = '''%s'''\nnew = '''%s\n%s'''\nassert old in src\nopen(path, 'w').write(src.replace(old, new, 1))\nEOF", f, codeLine(r, t), codeLine(r, t), codeLine(r, t))
	case cmdSedEdit:
		cmd = fmt.Sprintf("sed -i 's/%s(%s)/%s(%s, strict=False)/' /testbed/%s", t.fn(r), t.noun, t.fn(r), t.noun, f)
	case cmdPytest:
		test := fmt.Sprintf("tests/test_%s.py", pick(r, t.proj.nouns))
		cmd = fmt.Sprintf("cd /testbed && python -m pytest %s -x -q 2>&1 | tail -%d", test, 20+r.IntN(40))
		if r.IntN(3) == 0 {
			cmd = fmt.Sprintf("cd /testbed && python -m pytest %s -k %s -v", test, t.noun)
		}
		fmt.Fprintf(&b, "============================= test session starts ==============================\ncollected %d items\n\n", 5+r.IntN(300))
		fill(func() string {
			return fmt.Sprintf("%s::test_%s PASSED%s[%3d%%]", test, identifier(r, t.proj), strings.Repeat(" ", r.IntN(20)), r.IntN(101))
		})
		fmt.Fprintf(&b, "======================== %d passed in %.2fs ========================", 5+r.IntN(300), 0.1+r.Float64()*30)
	case cmdPip:
		cmd = "cd /testbed && pip install -e . -q 2>&1 | tail -5"
		fill(func() string {
			return fmt.Sprintf("Requirement already satisfied: %s>=%d.%d in /usr/local/lib/python3.11/site-packages", pick(r, []string{"numpy", "packaging", "pyparsing", "setuptools", "wheel"}), 1+r.IntN(3), r.IntN(20))
		})
	case cmdEcho:
		cmd = fmt.Sprintf("echo \"checking %s\" && python --version", t.noun)
		b.WriteString("checking " + t.noun + "\nPython 3.11.9")
	}
	code := 0
	if r.IntN(9) == 0 {
		code = 1
	}
	out = fmt.Sprintf("[exit code %d]\n", code)
	if b.Len() == 0 {
		out += "(no output)"
	} else {
		out += strings.TrimRight(b.String(), "\n")
	}
	return cmd, out
}

func numbered(b *strings.Builder, r *rand.Rand, t task, size int) {
	for n := 1; b.Len() < size; n++ {
		fmt.Fprintf(b, "%6d\t%s\n", n, codeLine(r, t))
	}
}

func traceback(b *strings.Builder, r *rand.Rand, t task, size int) {
	b.WriteString("Traceback (most recent call last):\n")
	for b.Len() < size-60 {
		fmt.Fprintf(b, "  File \"/testbed/%s\", line %d, in %s\n    %s\n", t.file(r), 1+r.IntN(1200), t.fn(r), strings.TrimLeft(codeLine(r, t), " "))
	}
	fmt.Fprintf(b, "%s: unexpected %s %q\n", t.exc, t.noun, identifier(r, t.proj))
}
