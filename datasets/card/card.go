// Package card writes a dataset card: what a maintainer hands to reviewers with a
// version of the benchmark's dataset. A card folder holds CARD.md (for people),
// card.json (the same figures, for tools) and plots/ (ISL by client turn per
// domain, and the OSL histogram of the recorded assistant turns, PNG and SVG).
//
// The figures are the published dataset table's, per domain and in total:
// trajectories, client turns (user and tool rows, each one request) and assistant
// turns, with the counts that explain them (user and tool rows apart, tool
// messages, trajectories that end on a client turn); turns per trajectory; ISL per
// client turn (as counted at ingest with a tokenizer) and OSL per recorded
// assistant turn (counted here with a tokenizer, as the rules count a response);
// history growth per client turn; delays. Then the content hash and the
// provenance: every input file with its SHA-256 and dataset_metadata records, the
// tools and tokenizers, the dates. Percentiles use the rules' lower method.
package card

import (
	"context"
	_ "embed"
	"fmt"
	"path/filepath"
	"runtime"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/percentile"
	"github.com/agentrace/agentrace/schemas"
	"github.com/sourcegraph/conc/pool"
)

// Version is the version of card.json.
const Version = "2"

// File names of a card folder.
const (
	MarkdownFile = "CARD.md"
	JSONFile     = "card.json"
	PlotsDir     = "plots"
)

// Card is card.json.
type Card struct {
	Version string      `json:"card_version"`
	Name    string      `json:"name"`
	Dataset DatasetInfo `json:"dataset"`
	// Domains are coding, workflow (those present), then "total".
	Domains []Domain `json:"domains"`
	// Published compares the dataset with the benchmark's published figures.
	Published  Comparison `json:"published_comparison"`
	Provenance Provenance `json:"provenance"`
	Plots      []Plot     `json:"plots"`
	// Rules states how every figure is counted.
	Rules []string `json:"counting_rules"`
	Notes []string `json:"notes,omitempty"`
}

// DatasetInfo identifies the dataset.
type DatasetInfo struct {
	Path          string `json:"path"`
	ContentHash   string `json:"content_hash"`
	SchemaVersion string `json:"schema_version"`
	ToolVersion   string `json:"tool_version"`
	CreatedAt     string `json:"created_at"`
	// ISLTokenizer names the tokenizer that counted ISL at ingest ("" when none).
	ISLTokenizer string `json:"isl_tokenizer,omitempty"`
}

// Provenance is where the dataset and the card come from.
type Provenance struct {
	Inputs        []schemas.DatasetInput `json:"inputs"`
	CardWrittenAt string                 `json:"card_written_at"`
	CardTool      string                 `json:"card_tool"`
	// OSLTokenizer names the tokenizer that counted OSL ("" when none).
	OSLTokenizer string `json:"osl_tokenizer,omitempty"`
}

// Domain is the figures of one domain, or of all ("total").
type Domain struct {
	Domain       string `json:"domain"`
	Trajectories int    `json:"trajectories"`
	Rows         int    `json:"rows"`
	// ClientTurns = UserTurns + ToolTurns: the rows replay issues as requests.
	ClientTurns int `json:"client_turns"`
	UserTurns   int `json:"user_turns"`
	ToolTurns   int `json:"tool_turns"`
	// ToolMessages counts tool results (a tool row with N results is one client
	// turn and N tool messages).
	ToolMessages   int `json:"tool_messages"`
	AssistantTurns int `json:"assistant_turns"`
	ToolCalls      int `json:"tool_calls"`
	// EndOnClientTurn counts trajectories whose last row is a client row (their
	// last request has no recorded answer): ClientTurns - AssistantTurns when
	// every conversation alternates.
	EndOnClientTurn int `json:"trajectories_ending_on_a_client_turn"`
	SystemPrompts   int `json:"distinct_system_prompts"`
	// TurnsPerTrajectory counts client turns per trajectory.
	TurnsPerTrajectory percentile.Summary `json:"client_turns_per_trajectory"`
	// ISL is input tokens per client turn (nil when not counted at ingest).
	ISL *percentile.Summary `json:"isl,omitempty"`
	// OSL is output tokens per recorded assistant turn (nil without a tokenizer);
	// AssistantBytes its size in bytes (content, reasoning and tool calls).
	OSL            *percentile.Summary `json:"osl,omitempty"`
	AssistantBytes percentile.Summary  `json:"assistant_bytes"`
	// HistoryBytes is each trajectory's last request size (its unsalted messages
	// array); Growth how requests grow turn by turn.
	HistoryBytes percentile.Summary `json:"history_bytes_last_turn"`
	Growth       Growth             `json:"growth"`
	// Delay is delay_seconds per client turn; DelayPerTrajectory their sum per
	// trajectory; DelayTotal the domain's sum, in seconds.
	Delay              percentile.Summary `json:"delay_seconds"`
	DelayPerTrajectory percentile.Summary `json:"delay_seconds_per_trajectory"`
	DelayTotal         float64            `json:"delay_seconds_total"`

	// oslValues and byteValues are the per-turn values behind OSL and
	// AssistantBytes, for the histogram.
	oslValues, byteValues []float64
}

// Growth is how requests grow with the client turn's position in its trajectory.
type Growth struct {
	// BytesPerTurn and ISLPerTurn are least-squares slopes of request bytes and ISL
	// over the client turn index (ISL nil when not counted).
	BytesPerTurn float64  `json:"request_bytes_per_turn"`
	ISLPerTurn   *float64 `json:"isl_tokens_per_turn,omitempty"`
	// ByTurn gives, per client turn index, how many trajectories reach it and the
	// mean and p90 of their request bytes and ISL.
	ByTurn []TurnPoint `json:"by_turn"`
}

// TurnPoint is one client turn index of Growth.
type TurnPoint struct {
	Index        int      `json:"index"`
	Trajectories int      `json:"trajectories"`
	BytesMean    float64  `json:"request_bytes_mean"`
	BytesP90     float64  `json:"request_bytes_p90"`
	ISLMean      *float64 `json:"isl_mean,omitempty"`
	ISLP90       *float64 `json:"isl_p90,omitempty"`
}

// Comparison sets this dataset's figures beside the published ones.
type Comparison struct {
	Source  string   `json:"source"`
	Figures []Figure `json:"figures"`
	// Matches is true when every figure matches: this is the published dataset's
	// shape.
	Matches bool `json:"matches"`
}

// Figure is one published figure and this dataset's.
type Figure struct {
	Name      string `json:"name"`
	Published int    `json:"published"`
	Dataset   int    `json:"dataset"`
	Match     bool   `json:"match"`
}

// Plot is one figure of the card.
type Plot struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Caption string `json:"caption"`
	PNG     string `json:"png"`
	SVG     string `json:"svg"`
}

// OSLCounter counts a response's output tokens as the rules do
// (*tokens.Tokenizer is one).
type OSLCounter interface {
	Name() string
	CountOSL(r schemas.Response) (int, error)
}

// Options configure Build.
type Options struct {
	// Dataset is the dataset directory.
	Dataset string
	// OSL counts the recorded assistant turns' output tokens; nil leaves OSL out.
	OSL OSLCounter
	// Now is the card's date (time.Now when zero).
	Now time.Time
}

// Build computes a dataset's card.
func Build(ctx context.Context, o Options) (*Card, error) {
	d, err := datasets.Open(ctx, o.Dataset)
	if err != nil {
		return nil, err
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	m := d.Manifest
	c := &Card{Version: Version, Name: filepath.Base(filepath.Clean(o.Dataset)),
		Dataset: DatasetInfo{Path: o.Dataset, ContentHash: m.ContentHash, SchemaVersion: m.SchemaVersion,
			ToolVersion: m.ToolVersion, CreatedAt: m.CreatedAt, ISLTokenizer: m.Tokenizer},
		Provenance: Provenance{Inputs: m.Inputs, CardWrittenAt: now.UTC().Format(time.RFC3339),
			CardTool: "agentrace " + schemas.ToolVersion}}
	if c.Provenance.Inputs == nil {
		c.Provenance.Inputs = []schemas.DatasetInput{}
	}
	var osl [][]float64 // per conversation, per assistant message
	if o.OSL != nil {
		c.Provenance.OSLTokenizer = o.OSL.Name()
		if osl, err = countOSL(ctx, d, o.OSL); err != nil {
			return nil, err
		}
	}
	for _, dom := range []string{schemas.DomainCoding, schemas.DomainWorkflow, "total"} {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var idx []int
		for i := range d.Conversations {
			if dom == "total" || d.Conversations[i].Domain == dom {
				idx = append(idx, i)
			}
		}
		if len(idx) > 0 || dom == "total" {
			c.Domains = append(c.Domains, domain(d, dom, idx, osl))
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.Published = compare(c.Domains)
	c.Rules = countingRules
	if m.Tokenizer == "" {
		c.Notes = append(c.Notes, "ISL was not counted: the dataset was ingested without a tokenizer (ingesting it with one counts it); the growth figures use request bytes.")
	}
	if o.OSL == nil {
		c.Notes = append(c.Notes, "OSL was not counted: a tokenizer counts the recorded assistant turns' output tokens.")
	}
	return c, nil
}

// countingRules say how the card counts, in CARD.md and card.json.
var countingRules = []string{
	"A trajectory is one conversation of the dataset; it is a workflow trajectory when its id matches ^sim_\\d+$, else a coding trajectory.",
	"A client turn is a user or tool row: one request replay sends. A tool row with N tool results is one client turn and N tool messages.",
	"An assistant turn is an assistant row: the recorded answer that follows a client turn (its ground truth).",
	"A trajectory ending on a client turn has one more client turn than assistant turns; for alternating conversations, client turns - assistant turns = trajectories ending on a client turn.",
	"ISL is the input tokens of a client turn's salted (repeat 1) messages and tools rendered with the chat template and a generation prompt, as counted at ingest; OSL is a recorded assistant turn counted as the rules count a response (content, reasoning and tool calls; tokens of [user \"\", assistant] minus [user \"\", assistant \"\"]).",
	"Request bytes are the size of a client turn's unsalted messages array; history bytes the last client turn's.",
	"Percentiles use the rules' lower method: v[floor(p/100 (n-1))] of the sorted values; std_dev is the population standard deviation.",
}

// countOSL counts every assistant message's output tokens.
func countOSL(ctx context.Context, d *datasets.Dataset, counter OSLCounter) ([][]float64, error) {
	out := make([][]float64, len(d.Conversations))
	p := pool.New().WithErrors().WithContext(ctx).WithMaxGoroutines(runtime.GOMAXPROCS(0))
	for i := range d.Conversations {
		p.Go(func(ctx context.Context) error {
			msgs := d.Messages(i)
			for k := range msgs {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if msgs[k].Role != schemas.RoleAssistant {
					continue
				}
				r, err := Response(&msgs[k])
				if err != nil {
					return fmt.Errorf("conversation %q turn %d: %w", msgs[k].ConversationID, msgs[k].Turn, err)
				}
				n, err := counter.CountOSL(r)
				if err != nil {
					return fmt.Errorf("count output tokens of conversation %q turn %d: %w", msgs[k].ConversationID, msgs[k].Turn, err)
				}
				out[i] = append(out[i], float64(n))
			}
			return nil
		})
	}
	return out, p.Wait()
}

// Response is a recorded assistant message as a response, the way the rules count
// its output: content, reasoning and tool calls (arguments kept as their string, or
// as the raw JSON when they are not a string).
func Response(m *schemas.Message) (schemas.Response, error) {
	var r schemas.Response
	if m.Content != nil {
		r.Content = *m.Content
	}
	if m.ReasoningContent != nil {
		r.Reasoning = *m.ReasoningContent
	}
	if m.ToolCalls == "" {
		return r, nil
	}
	calls, err := datasets.ToolCalls(m.ToolCalls)
	if err != nil {
		return r, fmt.Errorf("tool_calls: %w", err)
	}
	if len(calls) > 0 {
		r.ToolCalls = calls
	}
	return r, nil
}

func domain(d *datasets.Dataset, name string, idx []int, osl [][]float64) Domain {
	s := Domain{Domain: name, Trajectories: len(idx)}
	var turns, hist, delays, delaySum, isl, oslv, abytes []float64
	systems := map[string]bool{}
	var byTurnBytes, byTurnISL [][]float64
	var xs, ys, islY []float64 // (client index, request bytes / ISL) pairs
	islAll := true
	for _, i := range idx {
		c := &d.Conversations[i]
		s.Rows += int(c.Rows)
		s.ClientTurns += int(c.ClientTurns)
		s.AssistantTurns += int(c.AssistantTurns)
		s.ToolCalls += int(c.ToolCallCount)
		if c.HasSystem {
			systems[c.System] = true
		}
		turns = append(turns, float64(c.ClientTurns))
		hist = append(hist, float64(c.HistoryBytes))
		delaySum = append(delaySum, c.DelaySeconds)
		s.DelayTotal += c.DelaySeconds
		msgs := d.Messages(i)
		for k := range msgs {
			switch msgs[k].Role {
			case schemas.RoleTool:
				s.ToolMessages++
			case schemas.RoleAssistant:
				abytes = append(abytes, float64(assistantBytes(&msgs[k])))
			}
		}
		if n := len(msgs); n > 0 && msgs[n-1].Role != schemas.RoleAssistant {
			s.EndOnClientTurn++
		}
		if osl != nil {
			oslv = append(oslv, osl[i]...)
		}
		ts := d.ConversationTurns(i)
		for k := range ts {
			t := &ts[k]
			if t.Role == schemas.RoleTool {
				s.ToolTurns++
			} else {
				s.UserTurns++
			}
			delays = append(delays, t.DelaySeconds)
			for len(byTurnBytes) <= k {
				byTurnBytes = append(byTurnBytes, nil)
				byTurnISL = append(byTurnISL, nil)
			}
			byTurnBytes[k] = append(byTurnBytes[k], float64(t.HistoryBytes))
			xs, ys = append(xs, float64(k)), append(ys, float64(t.HistoryBytes))
			if t.ISL == nil {
				islAll = false
			} else {
				v := float64(*t.ISL)
				isl = append(isl, v)
				islY = append(islY, v)
				byTurnISL[k] = append(byTurnISL[k], v)
			}
		}
	}
	s.SystemPrompts = len(systems)
	s.TurnsPerTrajectory = percentile.Summarize(turns)
	s.HistoryBytes = percentile.Summarize(hist)
	s.Delay = percentile.Summarize(delays)
	s.DelayPerTrajectory = percentile.Summarize(delaySum)
	s.AssistantBytes = percentile.Summarize(abytes)
	s.byteValues = abytes
	if osl != nil {
		dist := percentile.Summarize(oslv)
		s.OSL = &dist
		s.oslValues = oslv
	}
	islAll = islAll && len(isl) > 0
	if islAll {
		dist := percentile.Summarize(isl)
		s.ISL = &dist
	}
	s.Growth.BytesPerTurn = slope(xs, ys)
	if islAll {
		v := slope(xs, islY)
		s.Growth.ISLPerTurn = &v
	}
	s.Growth.ByTurn = []TurnPoint{}
	for k := range byTurnBytes {
		b := byTurnBytes[k]
		tp := TurnPoint{Index: k, Trajectories: len(b)}
		bd := percentile.Summarize(b)
		tp.BytesMean, tp.BytesP90 = bd.Mean, bd.P90
		if islAll {
			id := percentile.Summarize(byTurnISL[k])
			tp.ISLMean, tp.ISLP90 = &id.Mean, &id.P90
		}
		s.Growth.ByTurn = append(s.Growth.ByTurn, tp)
	}
	return s
}

// assistantBytes is the size of what an assistant turn says: content, reasoning
// and tool calls.
func assistantBytes(m *schemas.Message) int {
	n := len(m.ToolCalls)
	if m.Content != nil {
		n += len(*m.Content)
	}
	if m.ReasoningContent != nil {
		n += len(*m.ReasoningContent)
	}
	return n
}

// slope is the least-squares slope of y over x (0 when x does not vary).
func slope(x, y []float64) float64 {
	n := float64(len(x))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / den
}

// compare sets the dataset's figures beside the published ones
// (datasets.PublishedTable): trajectories and client turns, per domain and in all.
func compare(domains []Domain) Comparison {
	source, table := datasets.PublishedTable()
	got := map[string]*Domain{}
	for i := range domains {
		got[domains[i].Domain] = &domains[i]
	}
	c := Comparison{Source: source, Matches: true}
	add := func(name string, published, dataset int) {
		fig := Figure{Name: name, Published: published, Dataset: dataset, Match: published == dataset}
		c.Matches = c.Matches && fig.Match
		c.Figures = append(c.Figures, fig)
	}
	var trajectories, clientTurns int
	for _, p := range table {
		trajectories += p.Trajectories
		clientTurns += p.ClientTurns
	}
	tot := got["total"]
	if tot == nil {
		tot = &Domain{}
	}
	add("trajectories", trajectories, tot.Trajectories)
	add("client_turns", clientTurns, tot.ClientTurns)
	for _, p := range table {
		d := got[p.Domain]
		if d == nil {
			d = &Domain{}
		}
		add(p.Domain+"_trajectories", p.Trajectories, d.Trajectories)
		add(p.Domain+"_client_turns", p.ClientTurns, d.ClientTurns)
	}
	return c
}
