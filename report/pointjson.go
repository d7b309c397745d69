package report

import (
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/score/curve"
)

// PointJSON is one element of points.json, the report's public contract: a
// point's place on its curve, its measured figures, what its evaluation found
// (gates, declared files, the checker's findings, published figures), the
// server's telemetry over its window, and a note on its scores. The field names
// are the contract; it holds nothing of how the point was read.
type PointJSON struct {
	System      string `json:"system"`
	RunDir      string `json:"run_dir"`
	Concurrency int    `json:"concurrency"`
	metrics.Point
	curve.Judgement
	curve.ServerTelemetry
	ScoresNote string `json:"scores_note,omitempty"`
	// Region is the point's region, null outside every region (as in
	// points.parquet); it comes last in each element.
	Region *string `json:"region"`
}

// NewPointJSON is the points.json element of an evaluated point.
func NewPointJSON(p *curve.Point) PointJSON {
	var region *string
	if p.Region != "" {
		region = &p.Region
	}
	return PointJSON{System: p.System, RunDir: p.RunDir, Concurrency: p.Concurrency, Region: region,
		Point: p.Point, Judgement: p.Judgement, ServerTelemetry: p.ServerTelemetry, ScoresNote: p.ScoresNote}
}
