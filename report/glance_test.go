package report

import (
	"strings"
	"testing"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/curve"
)

// TTFT against ISL: log axes (the domains' ISLs lie orders of magnitude apart),
// a colour per concurrency named in the legend, the domain by the glyph.
func TestTTFTvsISLLogAxesByConcurrency(t *testing.T) {
	var pts []*curve.Point
	for _, c := range []int{1, 8, 64} {
		p := &curve.Point{Concurrency: c}
		for i, isl := range []float64{300, 3000, 30000, 120000} {
			d := schemas.DomainCoding
			if i%2 == 0 {
				d = schemas.DomainWorkflow
			}
			p.Samples = append(p.Samples, metrics.TurnSample{InWindow: true, Domain: d, ISL: isl, TTFTMs: float64(c) * isl / 1000})
		}
		pts = append(pts, p)
	}
	fig, err := TTFTvsISLPlot([]*curve.System{{Name: "sys", Points: pts}})
	if err != nil {
		t.Fatal(err)
	}
	svg := string(fig.SVG)
	for _, want := range []string{"c=1", "c=8", "c=64", "coding", "workflow", "ISL (input tokens, log scale)", "TTFT (ms, log scale)", ">100000<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the TTFT-ISL plot lacks %q", want)
		}
	}
}

// The system is named from its runs (model, what served it), not "runs".
func TestSystemName(t *testing.T) {
	pt := func(model, endpoint, desc string) *schemas.RunManifest {
		return &schemas.RunManifest{Config: schemas.RunConfig{Model: model, Endpoint: endpoint}, EndpointDescription: desc}
	}
	for _, tc := range []struct {
		pts  *schemas.RunManifest
		args []string
		want string
	}{
		{pt("Qwen/Qwen3.6-35B-A3B", "http://127.0.0.1:1", "embedded sim (agentrace demo): profile h200-qwen3.6-35b-a3b, speedup 60, fidelity 0.9"),
			[]string{"demo-out/runs"}, "Qwen/Qwen3.6-35B-A3B on embedded sim (agentrace demo): profile h200-qwen3.6-35b-a3b"},
		{pt("moonshotai/Kimi-K3", "https://gpu-7.example:8000/v1", ""), []string{"sweep"}, "moonshotai/Kimi-K3 on gpu-7.example:8000"},
		{pt("", "", ""), []string{"x/sweep-a/"}, "sweep-a"},
		{nil, []string{"a", "b"}, "runs"},
	} {
		if got := systemName(tc.pts, tc.args); got != tc.want {
			t.Errorf("systemName(%v) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
