package curve

import (
	"math"
	"sort"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/score"
)

// publishedMetric is one metric a published result summary gives: the point's
// field and how the summary holds it.
type publishedMetric struct {
	name string
	// same tells that the published field is the rules' metric itself, so a
	// re-derived value more than 1% away is shown beside it; the stat blocks
	// (TTFT, TPOT, latency) are the reference's, over other turns than the rules'
	// window metrics, and are only filled in.
	same bool
	of   func(p *Point) *metrics.Num
	read func(s map[string]any) (float64, bool)
}

// percentileMs reads a stat block's percentile (nanoseconds) in milliseconds.
func percentileMs(block, pct string) func(s map[string]any) (float64, bool) {
	return func(s map[string]any) (float64, bool) {
		f, ok := score.SummaryNumber(s, block, "percentiles", pct)
		return f / 1e6, ok
	}
}

// publishedMetrics are the metrics a point shows as published when nothing
// re-derives them. system_tps, e2e_avg_interactivity and tps_per_user are the
// submission checker's figures of the summary (score.ReadSummaryFigures: derived
// from its totals, the summary's own fields only compared with them, by
// metric-consistency-*), the summary's own field only where the checker derives
// none (PublishedConsistency reports the checker's error then).
var publishedMetrics = []publishedMetric{
	{"system_tps", true, func(p *Point) *metrics.Num { return &p.SystemTPS }, func(s map[string]any) (float64, bool) {
		f := score.ReadSummaryFigures(s)
		return checkerOrStored(f.SystemTPS, f.HasSystemTPS, f.StoredSystemTPS)
	}},
	{"e2e_avg_interactivity", true, func(p *Point) *metrics.Num { return &p.E2EAvgInteractivity }, func(s map[string]any) (float64, bool) {
		f := score.ReadSummaryFigures(s)
		return checkerOrStored(f.Interactivity, f.HasInteractivity, f.StoredInteractivity)
	}},
	{"tps_per_user", true, func(p *Point) *metrics.Num { return &p.TPSPerUser }, func(s map[string]any) (float64, bool) {
		f := score.ReadSummaryFigures(s)
		return checkerOrStored(f.TPSPerUser, f.HasTPSPerUser, f.StoredTPSPerUser)
	}},
	{"ttft_p50_ms", false, func(p *Point) *metrics.Num { return &p.TTFTP50Ms }, percentileMs("ttft", "50.0")},
	{"ttft_p90_ms", false, func(p *Point) *metrics.Num { return &p.TTFTP90Ms }, percentileMs("ttft", "90.0")},
	{"ttft_p99_ms", false, func(p *Point) *metrics.Num { return &p.TTFTP99Ms }, percentileMs("ttft", "99.0")},
	{"tpot_p50_ms", false, func(p *Point) *metrics.Num { return &p.TPOTP50Ms }, percentileMs("tpot", "50.0")},
	{"tpot_p90_ms", false, func(p *Point) *metrics.Num { return &p.TPOTP90Ms }, percentileMs("tpot", "90.0")},
	{"tpot_p99_ms", false, func(p *Point) *metrics.Num { return &p.TPOTP99Ms }, percentileMs("tpot", "99.0")},
	{"latency_p50_ms", false, func(p *Point) *metrics.Num { return &p.LatencyP50Ms }, percentileMs("latency", "50.0")},
	{"latency_p90_ms", false, func(p *Point) *metrics.Num { return &p.LatencyP90Ms }, percentileMs("latency", "90.0")},
	{"latency_p99_ms", false, func(p *Point) *metrics.Num { return &p.LatencyP99Ms }, percentileMs("latency", "99.0")},
}

// checkerOrStored is the checker's figure when it has one, else the summary's
// own field.
func checkerOrStored(v float64, has bool, stored *float64) (float64, bool) {
	if has {
		return v, true
	}
	if stored != nil {
		return *stored, true
	}
	return 0, false
}

// publishedTolerance is the relative difference past which a re-derived metric
// is shown beside its published value (the rules' 1%).
const publishedTolerance = 0.01

// applyPublished fills, from a reference run's or submission point's published
// result summary, each metric the point could not re-derive (no token counts:
// system_tps, interactivity, TPOT, ...), listing it in AsPublished; a metric
// re-derived more than 1% away from its published value keeps the re-derived one
// and has the published one in PublishedDiffers.
func (p *Point) applyPublished() {
	if len(p.PublishedSummary) == 0 {
		return
	}
	s, err := score.DecodeSummary(p.PublishedSummary)
	if err != nil {
		return
	}
	for _, m := range publishedMetrics {
		pub, ok := m.read(s)
		if !ok {
			continue
		}
		v := m.of(p)
		switch {
		case !v.Valid():
			*v = metrics.Num(pub)
			p.AsPublished = append(p.AsPublished, m.name)
		case m.same && math.Abs(float64(*v)-pub) > publishedTolerance*math.Max(math.Abs(float64(*v)), math.Abs(pub)):
			if p.PublishedDiffers == nil {
				p.PublishedDiffers = map[string]float64{}
			}
			p.PublishedDiffers[m.name] = pub
		}
	}
	sort.Strings(p.AsPublished)
}

// IsAsPublished tells whether the point's metric name is as published.
func (p *Point) IsAsPublished(name string) bool {
	for _, a := range p.AsPublished {
		if a == name {
			return true
		}
	}
	return false
}
