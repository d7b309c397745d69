package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/percentile"
	"github.com/agentrace/agentrace/schemas"
)

// DomainStats are the figures of one domain (or of the whole dataset), in the shape
// of the published dataset table.
type DomainStats struct {
	Domain         string `json:"domain"`
	Trajectories   int    `json:"trajectories"`
	ClientTurns    int    `json:"client_turns"`
	AssistantTurns int    `json:"assistant_turns"`
	// TurnsPerTrajectory counts client turns per trajectory.
	TurnsPerTrajectory percentile.Summary `json:"turns_per_trajectory"`
	// HistoryBytes is the size of the last client turn's (unsalted) messages array
	// per trajectory, in bytes.
	HistoryBytes percentile.Summary `json:"history_bytes_last_turn"`
	// Delay is delay_seconds per client turn; Delay.Total is the total delay, and
	// DelayPerTrajectory the sum per trajectory, in seconds.
	Delay              percentile.Summary `json:"delay_seconds"`
	DelayPerTrajectory percentile.Summary `json:"delay_seconds_per_trajectory"`
	// SystemPrompts counts distinct system prompts; SystemBytes is the system prompt
	// size per trajectory; SharedPrefixBytes is the longest byte prefix common to
	// the first requests' (unsalted) messages arrays of all the trajectories: what a
	// prefix cache can share across trajectories before salting.
	SystemPrompts     int                `json:"distinct_system_prompts"`
	SystemBytes       percentile.Summary `json:"system_prompt_bytes"`
	SharedPrefixBytes int64              `json:"shared_prefix_bytes"`
	// ToolCalls is the total number of tool calls; ToolCallsPerTrajectory their
	// distribution.
	ToolCalls              int                `json:"tool_calls"`
	ToolCallsPerTrajectory percentile.Summary `json:"tool_calls_per_trajectory"`
	// ISL is the input tokens per client turn (when the dataset was ingested with a
	// tokenizer); nil otherwise.
	ISL *percentile.Summary `json:"isl,omitempty"`
}

// Stats are a dataset's statistics per domain and in total.
type Stats struct {
	Dataset     string        `json:"dataset"`
	ContentHash string        `json:"content_hash"`
	Tokenizer   string        `json:"tokenizer,omitempty"`
	Domains     []DomainStats `json:"domains"`
	Total       DomainStats   `json:"total"`
}

// ComputeStats computes d's statistics; it stops, with ctx's error, once ctx is
// done.
func ComputeStats(ctx context.Context, d *datasets.Dataset) (Stats, error) {
	st := Stats{Dataset: d.Dir, ContentHash: d.Manifest.ContentHash, Tokenizer: d.Manifest.Tokenizer}
	for _, dom := range []string{schemas.DomainCoding, schemas.DomainWorkflow} {
		var idx []int
		for i := range d.Conversations {
			if d.Conversations[i].Domain == dom {
				idx = append(idx, i)
			}
		}
		if len(idx) > 0 {
			ds, err := domainStats(ctx, d, dom, idx)
			if err != nil {
				return st, err
			}
			st.Domains = append(st.Domains, ds)
		}
	}
	all := make([]int, len(d.Conversations))
	for i := range all {
		all[i] = i
	}
	var err error
	st.Total, err = domainStats(ctx, d, "total", all)
	return st, err
}

func domainStats(ctx context.Context, d *datasets.Dataset, name string, idx []int) (DomainStats, error) {
	s := DomainStats{Domain: name, Trajectories: len(idx)}
	var turns, hist, delays, delaySum, sysBytes, calls, isl []float64
	systems := map[string]bool{}
	var prefix []byte
	first := true
	for _, i := range idx {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		c := &d.Conversations[i]
		s.ClientTurns += int(c.ClientTurns)
		s.AssistantTurns += int(c.AssistantTurns)
		s.ToolCalls += int(c.ToolCallCount)
		turns = append(turns, float64(c.ClientTurns))
		hist = append(hist, float64(c.HistoryBytes))
		delaySum = append(delaySum, c.DelaySeconds)
		calls = append(calls, float64(c.ToolCallCount))
		if c.HasSystem {
			systems[c.System] = true
			sysBytes = append(sysBytes, float64(len(c.System)))
		}
		ts := d.ConversationTurns(i)
		for k := range ts {
			delays = append(delays, ts[k].DelaySeconds)
			if ts[k].ISL != nil {
				isl = append(isl, float64(*ts[k].ISL))
			}
		}
		if len(ts) > 0 {
			req := d.RequestMessages(&ts[0], datasets.BodyOptions{})
			if first {
				prefix, first = req, false
			} else {
				n := 0
				for n < len(prefix) && n < len(req) && prefix[n] == req[n] {
					n++
				}
				prefix = prefix[:n]
			}
		}
	}
	s.TurnsPerTrajectory = percentile.Summarize(turns)
	s.HistoryBytes = percentile.Summarize(hist)
	s.Delay = percentile.Summarize(delays)
	s.DelayPerTrajectory = percentile.Summarize(delaySum)
	s.SystemPrompts = len(systems)
	s.SystemBytes = percentile.Summarize(sysBytes)
	s.SharedPrefixBytes = int64(len(prefix))
	s.ToolCallsPerTrajectory = percentile.Summarize(calls)
	if len(isl) > 0 {
		dist := percentile.Summarize(isl)
		s.ISL = &dist
	}
	return s, nil
}

// StatsOptions configures WriteStats.
type StatsOptions struct {
	Dataset string
	JSON    bool
}

// WriteStats writes the statistics of a dataset directory to w, as a table or as
// JSON.
func WriteStats(ctx context.Context, w io.Writer, o StatsOptions) error {
	d, err := datasets.Open(ctx, o.Dataset)
	if err != nil {
		return err
	}
	st, err := ComputeStats(ctx, d)
	if err != nil {
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	cols := append(append([]DomainStats(nil), st.Domains...), st.Total)
	fmt.Fprintf(w, "dataset %s (content hash %s)\n\n", st.Dataset, st.ContentHash)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	line := func(label string, f func(s *DomainStats) string) {
		fmt.Fprintf(tw, "%s\t", label)
		for i := range cols {
			fmt.Fprintf(tw, "%s\t", f(&cols[i]))
		}
		fmt.Fprintln(tw)
	}
	line("", func(s *DomainStats) string { return s.Domain })
	line("trajectories", func(s *DomainStats) string { return fmt.Sprint(s.Trajectories) })
	line("client turns", func(s *DomainStats) string { return fmt.Sprint(s.ClientTurns) })
	line("assistant turns", func(s *DomainStats) string { return fmt.Sprint(s.AssistantTurns) })
	dist := func(label, unit string, get func(s *DomainStats) *percentile.Summary, format string) {
		for _, p := range []struct {
			name string
			v    func(d *percentile.Summary) float64
		}{
			{"min", func(d *percentile.Summary) float64 { return d.Min }},
			{"median", func(d *percentile.Summary) float64 { return d.Median }},
			{"p90", func(d *percentile.Summary) float64 { return d.P90 }},
			{"max", func(d *percentile.Summary) float64 { return d.Max }},
			{"mean", func(d *percentile.Summary) float64 { return d.Mean }},
		} {
			line(fmt.Sprintf("%s %s%s", label, p.name, unit), func(s *DomainStats) string {
				d := get(s)
				if d == nil || d.N == 0 {
					return "-"
				}
				return fmt.Sprintf(format, p.v(d))
			})
		}
	}
	dist("client turns/trajectory", "", func(s *DomainStats) *percentile.Summary { return &s.TurnsPerTrajectory }, "%.0f")
	dist("history at last turn", " (bytes)", func(s *DomainStats) *percentile.Summary { return &s.HistoryBytes }, "%.0f")
	dist("delay/turn", " (s)", func(s *DomainStats) *percentile.Summary { return &s.Delay }, "%.3f")
	line("total delay (s)", func(s *DomainStats) string { return fmt.Sprintf("%.1f", s.Delay.Total) })
	line("distinct system prompts", func(s *DomainStats) string { return fmt.Sprint(s.SystemPrompts) })
	line("system prompt mean (bytes)", func(s *DomainStats) string { return fmt.Sprintf("%.0f", s.SystemBytes.Mean) })
	line("shared prefix (bytes)", func(s *DomainStats) string { return fmt.Sprint(s.SharedPrefixBytes) })
	line("tool calls", func(s *DomainStats) string { return fmt.Sprint(s.ToolCalls) })
	dist("tool calls/trajectory", "", func(s *DomainStats) *percentile.Summary { return &s.ToolCallsPerTrajectory }, "%.0f")
	if st.Total.ISL != nil {
		dist("ISL/turn", " (tokens)", func(s *DomainStats) *percentile.Summary { return s.ISL }, "%.0f")
	}
	return tw.Flush()
}
