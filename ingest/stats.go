package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/percentile"
	"github.com/agentrace/agentrace/schemas"
)

// Dist summarizes a distribution. Percentiles use the rules' "lower" method:
// v[floor(p/100*(n-1))] of the sorted values.
type Dist struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
	Total  float64 `json:"total"`
}

func newDist(v []float64) Dist {
	if len(v) == 0 {
		return Dist{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	d := Dist{N: len(s), Min: s[0], Max: s[len(s)-1]}
	for _, x := range s {
		d.Total += x
	}
	d.Mean = d.Total / float64(len(s))
	pct := func(p float64) float64 { v, _ := percentile.Lower(s, p); return v }
	d.Median, d.P90 = pct(50), pct(90)
	return d
}

// DomainStats are the figures of one domain (or of the whole dataset), in the shape
// of the published dataset table.
type DomainStats struct {
	Domain         string `json:"domain"`
	Trajectories   int    `json:"trajectories"`
	ClientTurns    int    `json:"client_turns"`
	AssistantTurns int    `json:"assistant_turns"`
	// TurnsPerTrajectory counts client turns per trajectory.
	TurnsPerTrajectory Dist `json:"turns_per_trajectory"`
	// HistoryBytes is the size of the last client turn's (unsalted) messages array
	// per trajectory, in bytes.
	HistoryBytes Dist `json:"history_bytes_last_turn"`
	// Delay is delay_seconds per client turn; Delay.Total is the total delay, and
	// DelayPerTrajectory the sum per trajectory, in seconds.
	Delay              Dist `json:"delay_seconds"`
	DelayPerTrajectory Dist `json:"delay_seconds_per_trajectory"`
	// SystemPrompts counts distinct system prompts; SystemBytes is the system prompt
	// size per trajectory; SharedPrefixBytes is the longest byte prefix common to
	// the first requests' (unsalted) messages arrays of all the trajectories: what a
	// prefix cache can share across trajectories before salting.
	SystemPrompts     int   `json:"distinct_system_prompts"`
	SystemBytes       Dist  `json:"system_prompt_bytes"`
	SharedPrefixBytes int64 `json:"shared_prefix_bytes"`
	// ToolCalls is the total number of tool calls; ToolCallsPerTrajectory their
	// distribution.
	ToolCalls              int  `json:"tool_calls"`
	ToolCallsPerTrajectory Dist `json:"tool_calls_per_trajectory"`
	// ISL is the input tokens per client turn (when the dataset was ingested with a
	// tokenizer); nil otherwise.
	ISL *Dist `json:"isl,omitempty"`
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
	s.TurnsPerTrajectory = newDist(turns)
	s.HistoryBytes = newDist(hist)
	s.Delay = newDist(delays)
	s.DelayPerTrajectory = newDist(delaySum)
	s.SystemPrompts = len(systems)
	s.SystemBytes = newDist(sysBytes)
	s.SharedPrefixBytes = int64(len(prefix))
	s.ToolCallsPerTrajectory = newDist(calls)
	if len(isl) > 0 {
		dist := newDist(isl)
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
	dist := func(label, unit string, get func(s *DomainStats) *Dist, format string) {
		for _, p := range []struct {
			name string
			v    func(d *Dist) float64
		}{
			{"min", func(d *Dist) float64 { return d.Min }},
			{"median", func(d *Dist) float64 { return d.Median }},
			{"p90", func(d *Dist) float64 { return d.P90 }},
			{"max", func(d *Dist) float64 { return d.Max }},
			{"mean", func(d *Dist) float64 { return d.Mean }},
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
	dist("client turns/trajectory", "", func(s *DomainStats) *Dist { return &s.TurnsPerTrajectory }, "%.0f")
	dist("history at last turn", " (bytes)", func(s *DomainStats) *Dist { return &s.HistoryBytes }, "%.0f")
	dist("delay/turn", " (s)", func(s *DomainStats) *Dist { return &s.Delay }, "%.3f")
	line("total delay (s)", func(s *DomainStats) string { return fmt.Sprintf("%.1f", s.Delay.Total) })
	line("distinct system prompts", func(s *DomainStats) string { return fmt.Sprint(s.SystemPrompts) })
	line("system prompt mean (bytes)", func(s *DomainStats) string { return fmt.Sprintf("%.0f", s.SystemBytes.Mean) })
	line("shared prefix (bytes)", func(s *DomainStats) string { return fmt.Sprint(s.SharedPrefixBytes) })
	line("tool calls", func(s *DomainStats) string { return fmt.Sprint(s.ToolCalls) })
	dist("tool calls/trajectory", "", func(s *DomainStats) *Dist { return &s.ToolCallsPerTrajectory }, "%.0f")
	if st.Total.ISL != nil {
		dist("ISL/turn", " (tokens)", func(s *DomainStats) *Dist { return s.ISL }, "%.0f")
	}
	return tw.Flush()
}
