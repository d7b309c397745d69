package diff

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentrace/agentrace/internal/english"
)

// WriteText writes r for a person: one line per added, removed or changed
// conversation (with the first difference and its excerpts), then the per-domain
// table. r's warnings are the caller's to say.
func WriteText(w io.Writer, r *Result) error {
	fmt.Fprintf(w, "A: %s (content hash %s, %d conversations)\n", r.A.Path, short(r.A.ContentHash), r.A.Conversations)
	fmt.Fprintf(w, "B: %s (content hash %s, %d conversations)\n", r.B.Path, short(r.B.ContentHash), r.B.Conversations)
	order := "order unchanged"
	if r.Order.Changed {
		order = fmt.Sprintf("order changed (from position %d among common conversations: A has %s, B has %s)",
			r.Order.FirstPosition, r.Order.A, r.Order.B)
	}
	if r.Same {
		fmt.Fprintf(w, "same: %s, identical content, %s\n", english.Count(r.Unchanged, "conversation", "conversations"), order)
	} else {
		fmt.Fprintf(w, "different: %d added, %d removed, %d changed, %d unchanged; %s\n",
			r.Added, r.Removed, r.Changed, r.Unchanged, order)
	}
	for _, c := range r.RemovedConversations {
		fmt.Fprintf(w, "- removed  %s  (%s, %d client turns, %s history)\n", c.ConversationID, c.Domain, c.ClientTurns, bytesStr(c.HistoryBytes))
	}
	for _, c := range r.AddedConversations {
		fmt.Fprintf(w, "+ added    %s  (%s, %d client turns, %s history)\n", c.ConversationID, c.Domain, c.ClientTurns, bytesStr(c.HistoryBytes))
	}
	for _, c := range r.Changes {
		fmt.Fprintf(w, "~ changed  %s  (%s)", c.ConversationID, c.Domain)
		var what []string
		if len(c.Conversation) > 0 {
			what = append(what, strings.Join(c.Conversation, ", "))
		}
		if f := c.First; f != nil {
			side := 1
			if f.Role[1] == "" {
				side = 0
			}
			what = append(what, fmt.Sprintf("first difference at message %d (turn %d, %s): %s",
				f.Seq, f.Turn[side], f.Role[side], strings.Join(f.Fields, ", ")))
		}
		fmt.Fprintf(w, ": %s\n", strings.Join(what, "; "))
		if f := c.First; f != nil && f.Field != "" {
			fmt.Fprintf(w, "      A %s: %s\n", f.Field, strconv.Quote(f.Excerpt[0]))
			fmt.Fprintf(w, "      B %s: %s\n", f.Field, strconv.Quote(f.Excerpt[1]))
		}
		if c.Messages[0] != c.Messages[1] || c.ClientTurns[0] != c.ClientTurns[1] {
			fmt.Fprintf(w, "      messages %d -> %d, client turns %d -> %d\n", c.Messages[0], c.Messages[1], c.ClientTurns[0], c.ClientTurns[1])
		}
		fmt.Fprintf(w, "      %d message(s) differ", c.DifferingMessages)
		if c.DelayChanges > 0 {
			var ds []string
			for _, d := range c.Delays {
				ds = append(ds, fmt.Sprintf("turn %d %gs -> %gs", d.Turn, d.A, d.B))
			}
			more := ""
			if c.DelayChanges > len(c.Delays) {
				more = fmt.Sprintf(", and %d more", c.DelayChanges-len(c.Delays))
			}
			fmt.Fprintf(w, "; %d delay(s) changed: %s%s", c.DelayChanges, strings.Join(ds, ", "), more)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	rows := [][]string{{"", "A", "B", "change"}}
	for _, d := range r.Domains {
		rows = append(rows, []string{d.Domain, "", "", ""})
		row := func(label string, a, b float64, decimals int) {
			rows = append(rows, []string{"  " + label, english.Thousands(a, decimals), english.Thousands(b, decimals), signed(b-a, decimals)})
		}
		row("trajectories", float64(d.Trajectories[0]), float64(d.Trajectories[1]), 0)
		row("client turns", float64(d.ClientTurns[0]), float64(d.ClientTurns[1]), 0)
		row("assistant turns", float64(d.AssistantTurns[0]), float64(d.AssistantTurns[1]), 0)
		row("history bytes, last turns", float64(d.HistoryBytes[0]), float64(d.HistoryBytes[1]), 0)
		row("request bytes, all turns", float64(d.RequestBytes[0]), float64(d.RequestBytes[1]), 0)
		row("delay (s)", d.DelaySeconds[0], d.DelaySeconds[1], 1)
		if d.ISL[0] != nil && d.ISL[1] != nil {
			row("ISL tokens, all turns", float64(*d.ISL[0]), float64(*d.ISL[1]), 0)
			row("ISL mean per turn", *d.ISLMean[0], *d.ISLMean[1], 1)
		} else {
			rows = append(rows, []string{"  ISL", islNote(d.ISL[0] != nil), islNote(d.ISL[1] != nil), "-"})
		}
	}
	return writeTable(w, rows)
}

// writeTable writes rows with the first column left-aligned and the others
// right-aligned.
func writeTable(w io.Writer, rows [][]string) error {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				line.WriteString(c + pad)
			} else {
				line.WriteString("  " + pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func islNote(ok bool) string {
	if ok {
		return "counted"
	}
	return "not counted"
}

func signed(v float64, decimals int) string {
	s := english.Thousands(v, decimals)
	switch {
	case strings.Trim(s, "-0.,") == "":
		return strings.TrimPrefix(s, "-")
	case v > 0:
		return "+" + s
	}
	return s
}

func bytesStr(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
