package card

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/percentile"
)

// maxMetadataBytes caps each dataset_metadata record shown in CARD.md (card.json
// has them whole).
const maxMetadataBytes = 2000

// Markdown renders the card as CARD.md.
func Markdown(c *Card) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Dataset card: %s\n\n", c.Name)
	w("Content hash `%s`, schema version %s, ingested by agentrace %s on %s. Card written %s by %s.\n\n",
		c.Dataset.ContentHash, c.Dataset.SchemaVersion, c.Dataset.ToolVersion, orDash(c.Dataset.CreatedAt),
		c.Provenance.CardWrittenAt, c.Provenance.CardTool)

	doms := c.Domains
	header := func(first string) {
		w("| %s |", first)
		for _, d := range doms {
			w(" %s |", d.Domain)
		}
		w("\n|---|")
		for range doms {
			w("---:|")
		}
		w("\n")
	}
	row := func(label string, f func(d *Domain) string) {
		w("| %s |", label)
		for i := range doms {
			w(" %s |", f(&doms[i]))
		}
		w("\n")
	}
	count := func(f func(d *Domain) int) func(d *Domain) string {
		return func(d *Domain) string { return thousands(float64(f(d)), 0) }
	}

	w("## The published table's figures\n\n")
	header("")
	row("trajectories", count(func(d *Domain) int { return d.Trajectories }))
	row("client turns (user + tool rows)", count(func(d *Domain) int { return d.ClientTurns }))
	row("&nbsp;&nbsp;user turns", count(func(d *Domain) int { return d.UserTurns }))
	row("&nbsp;&nbsp;tool turns", count(func(d *Domain) int { return d.ToolTurns }))
	row("assistant turns", count(func(d *Domain) int { return d.AssistantTurns }))
	row("trajectories ending on a client turn", count(func(d *Domain) int { return d.EndOnClientTurn }))
	row("tool messages (results)", count(func(d *Domain) int { return d.ToolMessages }))
	row("tool calls", count(func(d *Domain) int { return d.ToolCalls }))
	row("rows", count(func(d *Domain) int { return d.Rows }))
	row("distinct system prompts", count(func(d *Domain) int { return d.SystemPrompts }))
	w("\n")

	w("## Compared with the published figures\n\n")
	w("| figure | published | this dataset | match |\n|---|---:|---:|---|\n")
	for _, f := range c.Published.Figures {
		m := "yes"
		if !f.Match {
			m = "**no**"
		}
		w("| %s | %s | %s | %s |\n", strings.ReplaceAll(f.Name, "_", " "), thousands(float64(f.Published), 0), thousands(float64(f.Dataset), 0), m)
	}
	if c.Published.Matches {
		w("\nEvery figure matches: this dataset has the published dataset's shape.\n")
	} else {
		w("\nNot every figure matches: this is not the published dataset (or the counting differs; see the counting rules).\n")
	}
	w("\nSource: %s.\n\n", c.Published.Source)

	dist := func(title, unit string, get func(d *Domain) *percentile.Summary, decimals int, note string) {
		w("## %s\n\n", title)
		if note != "" {
			w("%s\n\n", note)
		}
		w("| %s | n | min | p50 | p90 | p99 | max | mean | std dev |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n", unit)
		for i := range doms {
			d := get(&doms[i])
			if d == nil || d.N == 0 {
				w("| %s | - | | | | | | | |\n", doms[i].Domain)
				continue
			}
			w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", doms[i].Domain, thousands(float64(d.N), 0),
				thousands(d.Min, decimals), thousands(d.Median, decimals), thousands(d.P90, decimals), thousands(d.P99, decimals),
				thousands(d.Max, decimals), thousands(d.Mean, max(decimals, 1)), thousands(d.StdDev, max(decimals, 1)))
		}
		w("\n")
	}
	dist("Client turns per trajectory", "domain", func(d *Domain) *percentile.Summary { return &d.TurnsPerTrajectory }, 0, "")
	if c.Dataset.ISLTokenizer != "" {
		dist("ISL: input tokens per client turn", "domain", func(d *Domain) *percentile.Summary { return d.ISL }, 0,
			"Counted at ingest with "+c.Dataset.ISLTokenizer+" over each client turn's salted (repeat 1) messages and tools.")
	} else {
		w("## ISL: input tokens per client turn\n\nNot counted: the dataset was ingested without a tokenizer.\n\n")
	}
	if c.Provenance.OSLTokenizer != "" {
		dist("OSL: output tokens per recorded assistant turn", "domain", func(d *Domain) *percentile.Summary { return d.OSL }, 0,
			"Counted with "+c.Provenance.OSLTokenizer+" as the rules count a response (content, reasoning and tool calls). "+
				"A reference model's answers differ: this is the dataset's own answers, the ground truth.")
	} else {
		w("## OSL: output tokens per recorded assistant turn\n\nNot counted: a tokenizer counts it.\n\n")
	}
	dist("Assistant turn size", "bytes", func(d *Domain) *percentile.Summary { return &d.AssistantBytes }, 0, "Content, reasoning and tool calls of each recorded assistant turn.")

	w("## History growth\n\n")
	w("| domain | request bytes per turn (slope) | ISL tokens per turn (slope) | last-turn history p50 | p90 | max (bytes) |\n|---|---:|---:|---:|---:|---:|\n")
	for i := range doms {
		d := &doms[i]
		islSlope := "-"
		if d.Growth.ISLPerTurn != nil {
			islSlope = thousands(*d.Growth.ISLPerTurn, 1)
		}
		w("| %s | %s | %s | %s | %s | %s |\n", d.Domain, thousands(d.Growth.BytesPerTurn, 0), islSlope,
			thousands(d.HistoryBytes.Median, 0), thousands(d.HistoryBytes.P90, 0), thousands(d.HistoryBytes.Max, 0))
	}
	w("\nSlopes are least-squares fits over (client turn index, value) of every client turn; card.json has the mean and p90 at every index.\n\n")

	dist("Delays: seconds before each client turn", "domain", func(d *Domain) *percentile.Summary { return &d.Delay }, 3, "")
	w("| domain | total delay (s) | per trajectory p50 | p90 | max (s) |\n|---|---:|---:|---:|---:|\n")
	for i := range doms {
		d := &doms[i]
		w("| %s | %s | %s | %s | %s |\n", d.Domain, thousands(d.DelayTotal, 1), thousands(d.DelayPerTrajectory.Median, 1),
			thousands(d.DelayPerTrajectory.P90, 1), thousands(d.DelayPerTrajectory.Max, 1))
	}
	w("\n")

	w("## Plots\n\n")
	for _, p := range c.Plots {
		w("### %s\n\n![%s](%s)\n\n%s ([SVG](%s))\n\n", p.Title, p.Title, p.PNG, p.Caption, p.SVG)
	}

	w("## Provenance\n\n")
	w("| input | format | SHA-256 | bytes | lines |\n|---|---|---|---:|---:|\n")
	for _, in := range c.Provenance.Inputs {
		p := in.Path
		if in.AbsPath != "" {
			p = in.AbsPath
		}
		w("| `%s` | %s | `%s` | %s | %s |\n", p, in.Format, in.SHA256, thousands(float64(in.Bytes), 0), thousands(float64(in.Lines), 0))
	}
	w("\n")
	for _, in := range c.Provenance.Inputs {
		for _, md := range in.Metadata {
			s := string(md)
			var v any
			if json.Unmarshal(md, &v) == nil {
				if pretty, err := json.MarshalIndent(v, "", "  "); err == nil {
					s = string(pretty)
				}
			}
			if len(s) > maxMetadataBytes {
				s = s[:maxMetadataBytes] + "\n… (cut; card.json has it whole)"
			}
			w("`dataset_metadata` record of `%s`:\n\n```json\n%s\n```\n\n", in.Path, s)
		}
	}
	tok := []string{}
	if c.Dataset.ISLTokenizer != "" {
		tok = append(tok, "ISL counted at ingest with "+c.Dataset.ISLTokenizer)
	}
	if c.Provenance.OSLTokenizer != "" {
		tok = append(tok, "OSL counted with "+c.Provenance.OSLTokenizer)
	}
	if len(tok) > 0 {
		w("%s.\n\n", strings.Join(tok, "; "))
	}
	w("## Counting rules\n\n")
	for _, r := range c.Rules {
		w("- %s\n", r)
	}
	if len(c.Notes) > 0 {
		w("\n## Notes\n\n")
		for _, n := range c.Notes {
			w("- %s\n", n)
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// thousands formats v with the given decimals and thousands separators, "-" when
// it is not a number.
func thousands(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return english.Thousands(v, decimals)
}
