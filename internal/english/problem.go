package english

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentrace/agentrace/internal/redact"
)

// The kinds of problem a message tells.
const (
	// Warning: something is off and the command went on (a figure left out, an
	// input line tolerated).
	Warning = "warning"
	// Note: something the user should know that is not wrong (a secret kept
	// secret, an interrupt being honoured).
	Note = "note"
	// Error: what ended the command, or one item of many that failed.
	Error = "error"
)

// Problem is the one format of every problem message a user is shown, as the
// command line and the demo print them (a stage hands its notes and warnings
// over as values, internal/notice): "agentrace CMD: KIND: MSG" ("agentrace: KIND: MSG"
// without a command), on one line, secrets masked (internal/redact). cmd is the
// command's path ("log dump"; a leading "agentrace" is dropped, so a urfave
// FullName does too); kind is Warning, Note or Error. A message that begins with
// its own command's name ("report: no run given", as a stage's error reads) says
// it once.
func Problem(cmd, kind, msg string) string {
	cmd = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(cmd), "agentrace"))
	msg = redact.Text(strings.TrimSpace(msg))
	if cmd == "" {
		return "agentrace: " + kind + ": " + msg
	}
	msg = strings.TrimPrefix(msg, cmd+": ")
	return "agentrace " + cmd + ": " + kind + ": " + msg
}

// Fprint writes Problem(cmd, kind, msg) and a newline to w (nothing when w is nil).
func Fprint(w io.Writer, cmd, kind, msg string) {
	if w != nil {
		fmt.Fprintln(w, Problem(cmd, kind, msg))
	}
}

// Fprintf is Fprint of a formatted message.
func Fprintf(w io.Writer, cmd, kind, format string, a ...any) {
	Fprint(w, cmd, kind, fmt.Sprintf(format, a...))
}
