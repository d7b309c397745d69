package main

import (
	"fmt"
	"strings"

	"github.com/agentrace/agentrace/internal/redact"
	"github.com/urfave/cli/v3"
)

// The kinds of problem a message tells.
const (
	// kindWarning: something is off and the command went on (a figure left out,
	// an input line tolerated).
	kindWarning = "warning"
	// kindNote: something the user should know that is not wrong (a secret kept
	// secret, an interrupt being honoured).
	kindNote = "note"
	// kindError: what ended the command, or one item of many that failed.
	kindError = "error"
)

// problemLine is the one format of every problem message a user is shown (a
// stage hands its notes and warnings over as values, internal/notice):
// "agentrace CMD: KIND: MSG" ("agentrace: KIND: MSG" without a command), on one
// line, secrets masked (internal/redact). cmd is the command's path ("log dump";
// a leading "agentrace" is dropped, so a urfave FullName does too); kind is
// kindWarning, kindNote or kindError. A message that begins with its own
// command's name ("report: no run given", as a stage's error reads) says it once.
func problemLine(cmd, kind, msg string) string {
	cmd = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(cmd), "agentrace"))
	msg = redact.Text(strings.TrimSpace(msg))
	if cmd == "" {
		return "agentrace: " + kind + ": " + msg
	}
	msg = strings.TrimPrefix(msg, cmd+": ")
	return "agentrace " + cmd + ": " + kind + ": " + msg
}

// problem prints what is not an error, the one way every command and stage does
// (problemLine): "agentrace CMD: warning: MSG" (kind kindWarning, kindNote or
// kindError for one item of many), on standard error, secrets masked. An error
// that ends the command is printed by main as "agentrace CMD: error: MSG".
func problem(c *cli.Command, kind, msg string) {
	fmt.Fprintln(c.Root().ErrWriter, problemLine(c.FullName(), kind, msg)) // FullName: "agentrace log dump"
}
