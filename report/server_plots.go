package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/curve"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// serverBins is a point's scraped quantities in timelineBins bins of its run's
// clock, as its in-flight timeline: KV usage (mean), running and waiting (each
// endpoint's mean, summed) and the prefix-cache hit rate (hits over queries
// counted between consecutive scrapes, at the later one); NaN where a bin has
// nothing.
type serverBins struct {
	kv, running, waiting, hit []float64
	width                     float64 // ns
}

func binsOf(pt *curve.Point) (serverBins, bool) {
	var end int64
	for _, e := range pt.ServerSeries {
		for _, s := range e.Q {
			if len(s) > 0 {
				end = max(end, s[len(s)-1].T)
			}
		}
	}
	for _, iv := range pt.Flight {
		end = max(end, iv[1])
	}
	if end <= 0 || len(pt.ServerSeries) == 0 {
		return serverBins{}, false
	}
	b := serverBins{width: float64(end) / timelineBins}
	bin := func(t int64) int { return min(max(int(float64(t)/b.width), 0), timelineBins-1) }
	nan := func() []float64 {
		v := make([]float64, timelineBins)
		for i := range v {
			v[i] = math.NaN()
		}
		return v
	}
	meanBins := func(s []curve.Scrape) (sum []float64, n []int) {
		sum, n = make([]float64, timelineBins), make([]int, timelineBins)
		for _, x := range s {
			sum[bin(x.T)] += x.V
			n[bin(x.T)]++
		}
		return sum, n
	}
	b.kv, b.running, b.waiting, b.hit = nan(), nan(), nan(), nan()
	kvSum, kvN := make([]float64, timelineBins), make([]int, timelineBins)
	hits, queries := make([]float64, timelineBins), make([]float64, timelineBins)
	for _, e := range pt.ServerSeries {
		s, n := meanBins(e.Q[schemas.QuantityKVUsage])
		for i := range s {
			kvSum[i] += s[i]
			kvN[i] += n[i]
		}
		for _, g := range []struct {
			q   string
			dst []float64
		}{{schemas.QuantityRunning, b.running}, {schemas.QuantityWaiting, b.waiting}} {
			s, n := meanBins(e.Q[g.q])
			for i := range s {
				if n[i] > 0 {
					if math.IsNaN(g.dst[i]) {
						g.dst[i] = 0
					}
					g.dst[i] += s[i] / float64(n[i])
				}
			}
		}
		delta := func(s []curve.Scrape, dst []float64) {
			for k := 1; k < len(s); k++ {
				d := s[k].V - s[k-1].V
				if d < 0 {
					d = s[k].V
				}
				dst[bin(s[k].T)] += d
			}
		}
		delta(e.Q[schemas.QuantityPrefixHits], hits)
		if q := e.Q[schemas.QuantityPrefixQueries]; len(q) > 0 {
			delta(q, queries)
		} else {
			delta(e.Q[schemas.QuantityPrefixHits], queries)
			delta(e.Q[schemas.QuantityPrefixMisses], queries)
		}
	}
	for i := range timelineBins {
		if kvN[i] > 0 {
			b.kv[i] = kvSum[i] / float64(kvN[i])
		}
		if queries[i] > 0 {
			b.hit[i] = hits[i] / queries[i]
		}
	}
	return b, true
}

// ServerTimelinePlots draws, for every point of the first system that scraped
// its server's metrics, the server's KV-cache usage, requests running and
// waiting, and prefix-cache hit rate over the run, on the clock of the
// in-flight plot; nil when no point has any.
func ServerTimelinePlots(systems []*curve.System) ([]Figure, error) {
	if len(systems) == 0 {
		return nil, nil
	}
	pts := slices.Clone(systems[0].Points)
	slices.SortFunc(pts, func(a, b *curve.Point) int { return a.Concurrency - b.Concurrency })
	x := "time since the run started (s)"
	kv := newPlot(titled(systems, "Server KV-cache usage over time"), x, "KV-cache usage (1 = full)")
	load := newPlot(titled(systems, "Server requests running and waiting over time"), x, "requests")
	hit := newPlot(titled(systems, "Server prefix-cache hit rate over time"), x, "hits / queries")
	drawn := 0
	for i, pt := range pts {
		b, ok := binsOf(pt)
		if !ok {
			continue
		}
		c := regionColor(pt.Region)
		if pt.Region == "" {
			c = systemColor(i)
		}
		label := fmt.Sprintf("c=%d", pt.Concurrency)
		add := func(p *plot.Plot, ys []float64, dashed bool, legend string) error {
			var xy plotter.XYs
			for k, y := range ys {
				if !math.IsNaN(y) {
					xy = append(xy, plotter.XY{X: (float64(k) + 0.5) * b.width / 1e9, Y: y})
				}
			}
			if len(xy) == 0 {
				return nil
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			l.Color, l.Width = c, vg.Points(1.2)
			if dashed {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			}
			p.Add(l)
			if legend != "" {
				p.Legend.Add(legend, l)
			}
			return nil
		}
		for _, a := range []struct {
			p      *plot.Plot
			ys     []float64
			dashed bool
			legend string
		}{{kv, b.kv, false, label}, {load, b.running, false, label}, {load, b.waiting, true, ""}, {hit, b.hit, false, label}} {
			if err := add(a.p, a.ys, a.dashed, a.legend); err != nil {
				return nil, err
			}
		}
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	var figs []Figure
	for _, f := range []struct {
		p                    *plot.Plot
		name, title, caption string
	}{
		{kv, "server_kv_usage_over_time", "Server KV-cache usage over time", "KV-cache usage the server reported (vLLM's kv_cache_usage_perc, SGLang's token_usage, ...), mean over its endpoints' scrapes in each of " + fmt.Sprint(timelineBins) + " bins of the run; same clock as the in-flight plot. Server-reported, not a rules metric."},
		{load, "server_requests_over_time", "Server requests running and waiting over time", "Requests the server reported running (solid) and waiting in its queue (dashed), summed over its endpoints, per bin. Server-reported, not a rules metric."},
		{hit, "server_prefix_hit_rate_over_time", "Server prefix-cache hit rate over time", "Prefix-cache hits over queries counted by the server between consecutive scrapes, per bin (empty where nothing was looked up). Server-reported, not a rules metric."},
	} {
		f.p.Y.Min = 0
		padAxes(f.p)
		f.p.Y.Min = 0
		fig, err := render(f.name, f.title, captioned(systems, f.caption), f.p)
		if err != nil {
			return nil, err
		}
		figs = append(figs, fig)
	}
	return figs, nil
}
