package synth

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
)

// DefaultShape is the shape that follows the published MLPerf agentic dataset.
const DefaultShape = "mlperf-agentic"

// Shape is what a synthetic dataset aims at: how many trajectories of each
// domain at scale 1 and how many client turns they have in all.
type Shape struct {
	Name string
	// Coding and Workflow are the numbers of trajectories at scale 1.
	Coding, Workflow int
	// CodingTurns and WorkflowTurns are the total client turns at scale 1.
	CodingTurns, WorkflowTurns int
	// Shapes of the per-trajectory client-turn counts: log-normal (median, sigma),
	// clamped to [min, max], then nudged to hit the totals exactly.
	CodingMedian, CodingSigma     float64
	CodingMin, CodingMax          int
	WorkflowMedian, WorkflowSigma float64
	WorkflowMin, WorkflowMax      int
	// TargetOSL is the per-turn mean output length (Qwen3 tokens) the assistant
	// turns are calibrated to.
	TargetOSL float64
}

// Shapes lists the built-in shapes. DefaultShape's trajectories and client
// turns at scale 1 are the published table's (datasets.PublishedTable).
func Shapes() []Shape {
	p := map[string]datasets.PublishedDomain{}
	_, table := datasets.PublishedTable()
	for _, d := range table {
		p[d.Domain] = d
	}
	coding, workflow := p[schemas.DomainCoding], p[schemas.DomainWorkflow]
	return []Shape{{
		Name:   DefaultShape,
		Coding: coding.Trajectories, Workflow: workflow.Trajectories,
		CodingTurns: coding.ClientTurns, WorkflowTurns: workflow.ClientTurns,
		CodingMedian: 125, CodingSigma: 0.5, CodingMin: 24, CodingMax: 360,
		WorkflowMedian: 8.4, WorkflowSigma: 0.3, WorkflowMin: 3, WorkflowMax: 24,
		TargetOSL: 395,
	}}
}

// LookupShape returns the shape called name.
func LookupShape(name string) (Shape, error) {
	var names []string
	for _, p := range Shapes() {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Shape{}, fmt.Errorf("unknown synth shape %q (known: %s)", name, strings.Join(names, ", "))
}

// Options configure a generation.
type Options struct {
	Shape string  // shape name; DefaultShape when ""
	Scale float64 // multiplies both domains' trajectory counts; > 0
	// CodingScale and WorkflowScale, when > 0, replace Scale for one domain (the
	// demo wants few long coding trajectories and more short workflow ones).
	CodingScale, WorkflowScale float64
	Seed                       uint64
	// Domains restricts the output to some domains (schemas.DomainCoding,
	// schemas.DomainWorkflow); all when empty.
	Domains []string
	// Overwrite lets WriteFile replace an existing file, only one agentrace wrote
	// (internal/outguard: its first line names an agentrace generator).
	Overwrite bool
}

// Summary counts what a generation wrote.
type Summary struct {
	Conversations int `json:"conversations"`
	Coding        int `json:"coding"`
	Workflow      int `json:"workflow"`
	Rows          int `json:"rows"`
	CodingTurns   int `json:"coding_client_turns"`
	WorkflowTurns int `json:"workflow_client_turns"`
	Bytes         int64
}

// ClientTurns is the total number of client turns.
func (s Summary) ClientTurns() int { return s.CodingTurns + s.WorkflowTurns }

// Plan is the size of each domain for a shape and scale: the number of
// trajectories and their client-turn counts, in output order.
type Plan struct {
	Shape Shape
	// CodingScale and WorkflowScale are the scales each domain was drawn at.
	CodingScale, WorkflowScale float64
	CodingTurns                []int
	WorkflowTurns              []int
}

// scaled returns round(n*scale), at least 1 when scale > 0.
func scaled(n int, scale float64) int {
	return max(1, int(math.Round(float64(n)*scale)))
}

// NewPlan draws the per-trajectory client-turn counts of both domains.
func NewPlan(o Options) (Plan, error) {
	name := o.Shape
	if name == "" {
		name = DefaultShape
	}
	p, err := LookupShape(name)
	if err != nil {
		return Plan{}, err
	}
	cs, ws := o.Scale, o.Scale
	if o.CodingScale > 0 {
		cs = o.CodingScale
	}
	if o.WorkflowScale > 0 {
		ws = o.WorkflowScale
	}
	for _, sc := range []float64{cs, ws} {
		if !(sc > 0) || math.IsInf(sc, 0) || sc > 100 {
			return Plan{}, fmt.Errorf("synth scale %v: must be > 0 and at most 100", sc)
		}
	}
	r := rand.New(rand.NewPCG(o.Seed, 0x706c616e)) // the plan's own stream
	nc, nw := scaled(p.Coding, cs), scaled(p.Workflow, ws)
	tc := int(math.Round(float64(p.CodingTurns) * float64(nc) / float64(p.Coding)))
	tw := int(math.Round(float64(p.WorkflowTurns) * float64(nw) / float64(p.Workflow)))
	pl := Plan{Shape: p, CodingScale: cs, WorkflowScale: ws,
		CodingTurns:   stratifiedCounts(r, nc, p.CodingMedian, p.CodingSigma, p.CodingMin, p.CodingMax, tc),
		WorkflowTurns: stratifiedCounts(r, nw, p.WorkflowMedian, p.WorkflowSigma, p.WorkflowMin, p.WorkflowMax, tw),
	}
	if len(o.Domains) > 0 {
		if !containsDomain(o.Domains, schemas.DomainCoding) {
			pl.CodingTurns = nil
		}
		if !containsDomain(o.Domains, schemas.DomainWorkflow) {
			pl.WorkflowTurns = nil
		}
		for _, d := range o.Domains {
			if d != schemas.DomainCoding && d != schemas.DomainWorkflow {
				return Plan{}, fmt.Errorf("synth domain %q: want %s or %s", d, schemas.DomainCoding, schemas.DomainWorkflow)
			}
		}
	}
	return pl, nil
}

func containsDomain(ds []string, d string) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

// conversationRand is the random stream of one conversation: it depends only on the
// seed, the domain and the conversation's index within its domain.
func conversationRand(seed uint64, domain, index int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(domain)<<32|uint64(index)))
}

// Metadata is the dataset_metadata record that opens a generated file: what
// made it and how, as it was made. Scale is the one scale of both domains; when
// they were drawn at different scales it is absent and CodingScale and
// WorkflowScale say each. Domains lists the domains written when not both.
type Metadata struct {
	Type          string   `json:"_type"`
	Generator     string   `json:"generator"`
	Version       string   `json:"version"`
	Shape         string   `json:"shape"`
	Scale         *float64 `json:"scale,omitempty"`
	CodingScale   *float64 `json:"coding_scale,omitempty"`
	WorkflowScale *float64 `json:"workflow_scale,omitempty"`
	Domains       []string `json:"domains,omitempty"`
	Seed          uint64   `json:"seed"`
	License       string   `json:"license"`
}

func metadata(pl Plan, o Options) Metadata {
	m := Metadata{Type: "dataset_metadata", Generator: outguard.TraceGenerator + " synth", Version: schemas.ToolVersion,
		Shape: pl.Shape.Name, Seed: o.Seed, License: "synthetic traces generated by agentrace; no third-party content"}
	cs, ws := pl.CodingScale, pl.WorkflowScale
	switch {
	case pl.CodingTurns == nil:
		m.WorkflowScale = &ws
	case pl.WorkflowTurns == nil:
		m.CodingScale = &cs
	case cs == ws:
		m.Scale = &cs
	default:
		m.CodingScale, m.WorkflowScale = &cs, &ws
	}
	if pl.CodingTurns == nil || pl.WorkflowTurns == nil {
		for _, d := range []struct {
			name  string
			turns []int
		}{{schemas.DomainCoding, pl.CodingTurns}, {schemas.DomainWorkflow, pl.WorkflowTurns}} {
			if d.turns != nil {
				m.Domains = append(m.Domains, d.name)
			}
		}
	}
	return m
}

// Generate writes the traces of o to w as flat JSONL: a dataset_metadata record,
// then the coding trajectories, then the workflow ones. It stops early when ctx is
// cancelled.
func Generate(ctx context.Context, w io.Writer, o Options) (Summary, error) {
	pl, err := NewPlan(o)
	if err != nil {
		return Summary{}, err
	}
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(metadata(pl, o)); err != nil {
		return Summary{}, err
	}
	var s Summary
	emit := func(rows []row) error {
		for i := range rows {
			if err := enc.Encode(&rows[i]); err != nil {
				return fmt.Errorf("write conversation %q turn %d: %w", rows[i].ConversationID, rows[i].Turn, err)
			}
		}
		s.Rows += len(rows)
		return ctx.Err()
	}
	for i, n := range pl.CodingTurns {
		if err := emit(codingConversation(conversationRand(o.Seed, 1, i), i, n)); err != nil {
			return s, err
		}
		s.Coding++
		s.CodingTurns += n
	}
	if len(pl.WorkflowTurns) > 0 {
		system := workflowSystem()
		for i, n := range pl.WorkflowTurns {
			if err := emit(workflowConversation(conversationRand(o.Seed, 2, i), i+1, n, system)); err != nil {
				return s, err
			}
			s.Workflow++
			s.WorkflowTurns += n
		}
	}
	s.Conversations = s.Coding + s.Workflow
	if err := bw.Flush(); err != nil {
		return s, err
	}
	s.Bytes = cw.n
	return s, nil
}

// WriteFile generates the traces of o into path atomically. An existing file is
// replaced only when o.Overwrite is set and agentrace wrote it.
func WriteFile(ctx context.Context, path string, o Options) (Summary, error) {
	var s Summary
	claim, err := outguard.Take(outguard.Output{Path: path, Kind: outguard.Traces, Overwrite: o.Overwrite})
	if err != nil {
		return Summary{}, fmt.Errorf("synth: %w", err)
	}
	defer claim.Release()
	err = claim.WriteFile(func(w io.Writer) error {
		var err error
		s, err = Generate(ctx, w, o)
		return err
	})
	if err != nil {
		return Summary{}, fmt.Errorf("synth %q: %w", path, err)
	}
	return s, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

const (
	roleUser      = schemas.RoleUser
	roleAssistant = schemas.RoleAssistant
	roleTool      = schemas.RoleTool
)

// row is one flat JSONL row (spec §1); field order is the order of the keys written.
type row struct {
	ConversationID   string       `json:"conversation_id"`
	Turn             int          `json:"turn"`
	Role             string       `json:"role"`
	Content          *string      `json:"content,omitempty"`
	System           string       `json:"system,omitempty"`
	Tools            rawJSON      `json:"tools,omitempty"`
	ReasoningContent string       `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCall   `json:"tool_calls,omitempty"`
	ToolResults      []toolResult `json:"tool_results,omitempty"`
	IntentCodes      []string     `json:"intent_codes,omitempty"`
	DelaySeconds     *float64     `json:"delay_seconds,omitempty"`
}

// rawJSON is a pre-serialized JSON value written verbatim.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type toolResult struct {
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// mustJSON encodes v (a struct of strings) as compact JSON without HTML escaping.
func mustJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("synth: encode %T: %v", v, err)) // only fixed struct types reach here
	}
	return strings.TrimSuffix(b.String(), "\n")
}
