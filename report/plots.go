package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/internal/plotkit"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/curve"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure is one rendered plot, in PNG and SVG.
type Figure struct {
	// Name is the file stem (plots/<Name>.png, .svg) and the SVG element's id.
	Name    string
	Title   string
	Caption string
	PNG     []byte
	SVG     []byte
}

// regionColor is the colour of a region's points and bands.
func regionColor(region string) color.RGBA {
	switch region {
	case score.RegionLowLatency:
		return color.RGBA{R: 0x6a, G: 0x3d, B: 0x9a, A: 0xff}
	case score.RegionLow:
		return color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	case score.RegionMedium:
		return color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	case score.RegionHigh:
		return color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	case score.RegionMargin:
		return color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	}
	return color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
}

// systemColor is the colour of the i-th system's curve.
func systemColor(i int) color.RGBA {
	cs := []color.RGBA{
		{R: 0x22, G: 0x22, B: 0x22, A: 0xff},
		{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
		{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	}
	return cs[i%len(cs)]
}

func withAlpha(c color.RGBA, a uint8) color.NRGBA {
	return color.NRGBA{R: c.R, G: c.G, B: c.B, A: a}
}

// newPlot, niceTicks and render are the shared plot style (internal/plotkit), so
// that the report's figures and the dataset card's look alike.
func newPlot(title, x, y string) *plot.Plot { return plotkit.New(title, x, y) }

func niceTicks(lo, hi float64) []plot.Tick { return plotkit.NiceTicks(lo, hi) }

// render draws p as PNG and SVG.
func render(name, title, caption string, p *plot.Plot) (Figure, error) {
	f := Figure{Name: name, Title: title, Caption: caption}
	png, svg, err := plotkit.Render(p)
	if err != nil {
		return f, fmt.Errorf("plot %s: %w", name, err)
	}
	f.PNG, f.SVG = png, svg
	return f, nil
}

// stepXY returns a system's Pareto points ordered by e2e_avg_interactivity, the
// order in which the step curve is drawn (pre-step: on (x_i, x_i+1] the curve holds
// y_i+1, the value of the next lower concurrency when interactivity falls with
// load); points without both values are left out.
func stepXY(pts []*curve.Point) plotter.XYs {
	var xy plotter.XYs
	for _, p := range pts {
		if p.E2EAvgInteractivity.Valid() && p.SystemTPS.Valid() {
			xy = append(xy, paretoXY(p))
		}
	}
	slices.SortFunc(xy, func(a, b plotter.XY) int {
		if a.X != b.X {
			return cmp.Compare(a.X, b.X)
		}
		return cmp.Compare(b.Y, a.Y)
	})
	return xy
}

// paretoXY is a point's place in the Pareto plot, on the modelled hardware's
// clock when its run was against the simulated server.
func paretoXY(p *curve.Point) plotter.XY {
	return plotter.XY{X: float64(p.ModelledRate(p.E2EAvgInteractivity)), Y: float64(p.ModelledRate(p.SystemTPS))}
}

// ParetoPlot draws the agentic Pareto view: system_tps against
// e2e_avg_interactivity as a step function per system (§5.2), points labelled by
// concurrency and coloured by region.
func ParetoPlot(systems []*curve.System) (Figure, error) {
	p := newPlot(modelledTitle(systems, "Agentic Pareto curve (official step function, §5.2)"),
		"e2e_avg_interactivity (output tokens/s per turn)", "system_tps (output tokens/s)")
	p.Legend.Left = false
	seenRegion := map[string]bool{}
	// The data ranges, to tell when two labels would collide.
	var xr, yr [2]float64
	xr[0], yr[0] = math.Inf(1), math.Inf(1)
	xr[1], yr[1] = math.Inf(-1), math.Inf(-1)
	for _, s := range systems {
		for _, xy := range stepXY(s.Points) {
			xr = [2]float64{math.Min(xr[0], xy.X), math.Max(xr[1], xy.X)}
			yr = [2]float64{math.Min(yr[0], xy.Y), math.Max(yr[1], xy.Y)}
		}
	}
	for i, s := range systems {
		xy := stepXY(s.Points)
		if len(xy) == 0 {
			continue
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return Figure{}, err
		}
		line.StepStyle = plotter.PreStep
		line.Color = systemColor(i)
		line.Width = vg.Points(1.8)
		p.Add(line)
		if len(systems) > 1 {
			p.Legend.Add("step curve: "+s.Name, line)
		} else {
			p.Legend.Add("step curve", line)
		}
		var labels plotter.XYLabels
		for _, pt := range s.Points {
			if !pt.E2EAvgInteractivity.Valid() || !pt.SystemTPS.Valid() {
				continue
			}
			sc, err := plotter.NewScatter(plotter.XYs{paretoXY(pt)})
			if err != nil {
				return Figure{}, err
			}
			sc.GlyphStyle.Color = regionColor(pt.Region)
			sc.GlyphStyle.Radius = vg.Points(4.5)
			sc.GlyphStyle.Shape = glyphFor(i)
			p.Add(sc)
			if !seenRegion[pt.Region] {
				seenRegion[pt.Region] = true
				name := pt.Region
				if name == "" {
					name = "outside every region"
				}
				p.Legend.Add(name, sc)
			}
			labels.XYs = append(labels.XYs, paretoXY(pt))
			label := "c=" + strconv.Itoa(pt.Concurrency)
			if pt.WindowNote != "" {
				label += " (short window: noise)"
			}
			labels.Labels = append(labels.Labels, label)
		}
		if err := addPointLabels(p, labels, systemColor(i), xr, yr); err != nil {
			return Figure{}, err
		}
	}
	padAxes(p)
	return render("pareto", "Agentic Pareto curve", modelledCaption(systems,
		"system_tps (y) against e2e_avg_interactivity (x). The line is the official step function: going up in "+
			"concurrency (right to left), the curve holds the last measured throughput until the next point, so it never "+
			"shows a throughput at an interactivity that was not measured (no interpolation, no dominance filtering). "+
			"Points are labelled by concurrency and coloured by region; \"short window\" marks a point whose performance "+
			"window held too few turns for its throughput to be more than noise."+paretoNote(systems)), p)
}

// addPointLabels writes each point's label above right of it, or above left when
// an earlier label of the curve sits close enough to collide.
func addPointLabels(p *plot.Plot, labels plotter.XYLabels, c color.Color, xr, yr [2]float64) error {
	w, h := math.Max(xr[1]-xr[0], 1e-9), math.Max(yr[1]-yr[0], 1e-9)
	var placed []plotter.XY
	for k, xy := range labels.XYs {
		near := false
		for _, q := range placed {
			if math.Abs(q.X-xy.X)/w < 0.07 && math.Abs(q.Y-xy.Y)/h < 0.05 {
				near = true
			}
		}
		placed = append(placed, xy)
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{xy}, Labels: labels.Labels[k : k+1]})
		if err != nil {
			return err
		}
		l.TextStyle[0].Font.Size = 9
		l.TextStyle[0].Color = c
		l.TextStyle[0].XAlign = draw.XLeft
		l.TextStyle[0].YAlign = draw.YBottom
		l.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(3)}
		if near {
			l.TextStyle[0].XAlign = draw.XRight
			l.Offset.X = -vg.Points(5)
		}
		p.Add(l)
	}
	return nil
}

func glyphFor(i int) draw.GlyphDrawer {
	switch i % 3 {
	case 1:
		return draw.BoxGlyph{}
	case 2:
		return draw.TriangleGlyph{}
	}
	return draw.CircleGlyph{}
}

// padAxes widens the axes by 8% so labels and glyphs at the edges stay inside.
func padAxes(p *plot.Plot) {
	dx := (p.X.Max - p.X.Min) * 0.08
	dy := (p.Y.Max - p.Y.Min) * 0.08
	if dx == 0 {
		dx = math.Max(1, math.Abs(p.X.Max)*0.1)
	}
	if dy == 0 {
		dy = math.Max(1, math.Abs(p.Y.Max)*0.1)
	}
	p.X.Min -= dx
	p.X.Max += dx * 1.5
	p.Y.Min = math.Max(0, p.Y.Min-dy)
	p.Y.Max += dy
}

// log2Ticks labels powers of two.
func log2Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for v := 1.0; v <= hi*2; v *= 2 {
		if v >= lo/2 && v <= hi*1.01 {
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		}
	}
	return ts
}

// ConcurrencyPlot draws one metric against concurrency on a log-2 axis, with the
// regions shaded.
func ConcurrencyPlot(systems []*curve.System, name, metric, unit string, value func(*curve.Point) metrics.Num) (Figure, error) {
	p := newPlot(modelledTitle(systems, metric+" against concurrency"), "concurrency (active trajectories, log2 scale)", metric+" ("+unit+")")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.TickerFunc(log2Ticks)
	var ymax float64
	cmin, cmax := math.Inf(1), 0.0
	for _, s := range systems {
		for _, pt := range s.Points {
			if v := value(pt); v.Valid() {
				ymax = math.Max(ymax, float64(v))
			}
			cmin = math.Min(cmin, float64(pt.Concurrency))
			cmax = math.Max(cmax, float64(pt.Concurrency))
		}
	}
	if ymax == 0 {
		ymax = 1
	}
	ytop := ymax * 1.5 // headroom for the legend
	if len(systems) > 0 && systems[0].Regions != nil {
		rs := systems[0].Regions
		for _, nr := range rs.Named() {
			if nr.Range.Empty() {
				continue
			}
			lo := math.Max(0.5, float64(nr.Range.Start)-0.5)
			hi := float64(nr.Range.End) + 0.5
			if hi < cmin/1.5 || lo > cmax*1.5 {
				continue
			}
			lo, hi = math.Max(lo, cmin/1.4), math.Min(hi, cmax*1.4)
			poly, err := plotter.NewPolygon(plotter.XYs{{X: lo, Y: 0}, {X: hi, Y: 0}, {X: hi, Y: ytop}, {X: lo, Y: ytop}})
			if err != nil {
				return Figure{}, err
			}
			poly.Color = withAlpha(regionColor(nr.Name), 0x28)
			poly.LineStyle.Width = 0
			p.Add(poly)
			p.Legend.Add(nr.Name+" "+nr.Range.String(), poly)
		}
	}
	for i, s := range systems {
		var xy plotter.XYs
		pts := slices.Clone(s.Points)
		slices.SortFunc(pts, func(a, b *curve.Point) int { return a.Concurrency - b.Concurrency })
		for _, pt := range pts {
			if v := value(pt); v.Valid() && pt.Concurrency > 0 {
				xy = append(xy, plotter.XY{X: float64(pt.Concurrency), Y: float64(v)})
			}
		}
		if len(xy) == 0 {
			continue
		}
		line, pts2, err := plotter.NewLinePoints(xy)
		if err != nil {
			return Figure{}, err
		}
		line.StepStyle = plotter.PostStep
		line.Color = systemColor(i)
		line.Width = vg.Points(1.5)
		pts2.Color = systemColor(i)
		pts2.Shape = glyphFor(i)
		pts2.Radius = vg.Points(3.5)
		p.Add(line, pts2)
		if len(systems) > 1 {
			p.Legend.Add(s.Name+" (step)", line, pts2)
		} else {
			p.Legend.Add("measured, held as a step", line, pts2) // the report's title names the system
		}
	}
	p.X.Min, p.X.Max = cmin/1.4, cmax*1.4
	if cmin > cmax {
		p.X.Min, p.X.Max = 0.5, 2
	}
	p.Y.Min, p.Y.Max = 0, ytop
	return render(name, metric+" against concurrency", modelledCaption(systems,
		metric+" per point against concurrency (log2 axis), held as a step between measured points; shaded bands are the §5.5 regions."), p)
}

// ContextGrowthPlot draws ISL against client-turn index per domain: the median and
// a P10-P90 band over all completed window turns of all points.
func ContextGrowthPlot(systems []*curve.System) (Figure, error) {
	p := newPlot("Context growth: ISL by turn", "client turn index (0-based)", "ISL (input tokens)")
	byDomain := map[string]map[int]*metrics.Series{}
	for _, s := range systems[:1] {
		for _, pt := range s.Points {
			for _, t := range pt.Samples {
				if !t.InWindow || math.IsNaN(t.ISL) {
					continue
				}
				m := byDomain[t.Domain]
				if m == nil {
					m = map[int]*metrics.Series{}
					byDomain[t.Domain] = m
				}
				if m[t.ClientIndex] == nil {
					m[t.ClientIndex] = &metrics.Series{}
				}
				m[t.ClientIndex].Add(t.ISL)
			}
		}
	}
	domains := make([]string, 0, len(byDomain))
	for d := range byDomain {
		domains = append(domains, d)
	}
	slices.Sort(domains)
	for _, d := range domains {
		m := byDomain[d]
		idx := make([]int, 0, len(m))
		for i := range m {
			idx = append(idx, i)
		}
		slices.Sort(idx)
		var med, lo, hi plotter.XYs
		for _, i := range idx {
			s := m[i]
			med = append(med, plotter.XY{X: float64(i), Y: s.P(50)})
			lo = append(lo, plotter.XY{X: float64(i), Y: s.P(10)})
			hi = append(hi, plotter.XY{X: float64(i), Y: s.P(90)})
		}
		band := slices.Clone(lo)
		for j := len(hi) - 1; j >= 0; j-- {
			band = append(band, hi[j])
		}
		if len(band) >= 3 {
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return Figure{}, err
			}
			poly.Color = withAlpha(plotkit.DomainColor(d), 0x40)
			poly.LineStyle.Width = 0
			p.Add(poly)
			p.Legend.Add(d+" P10-P90", poly)
		}
		line, err := plotter.NewLine(med)
		if err != nil {
			return Figure{}, err
		}
		line.Color = plotkit.DomainColor(d)
		line.Width = vg.Points(2)
		p.Add(line)
		p.Legend.Add(d+" median", line)
	}
	if len(domains) == 0 {
		p.Title.Text += " (no ISL counts)"
	} else {
		padAxes(p)
	}
	p.Legend.Left = true
	return render("context_growth", "Context growth",
		"Input tokens per request against the client turn's position in its trajectory, per domain: median and P10-P90 band over the completed window turns of all points.", p)
}

// TTFTvsISLPlot scatters TTFT against ISL on log axes (the domains' ISLs lie
// orders of magnitude apart), coloured by concurrency, the domain by the glyph.
func TTFTvsISLPlot(systems []*curve.System) (Figure, error) {
	p := newPlot(titled(systems, "TTFT against ISL"), "ISL (input tokens)", "TTFT (ms)")
	type key struct {
		c      int
		domain string
	}
	groups := map[key]plotter.XYs{}
	var cs []int
	lo, hi := [2]float64{math.Inf(1), math.Inf(1)}, [2]float64{math.Inf(-1), math.Inf(-1)}
	for _, s := range systems[:1] {
		for _, pt := range s.Points {
			for _, t := range pt.Samples {
				// log axes: only positive values can be drawn
				if !t.InWindow || !(t.ISL > 0) || !(t.TTFTMs > 0) {
					continue
				}
				k := key{pt.Concurrency, t.Domain}
				if len(groups[k]) == 0 && !slices.Contains(cs, pt.Concurrency) {
					cs = append(cs, pt.Concurrency)
				}
				groups[k] = append(groups[k], plotter.XY{X: t.ISL, Y: t.TTFTMs})
				lo = [2]float64{min(lo[0], t.ISL), min(lo[1], t.TTFTMs)}
				hi = [2]float64{max(hi[0], t.ISL), max(hi[1], t.TTFTMs)}
			}
		}
	}
	slices.Sort(cs)
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.c != b.c {
			return a.c - b.c
		}
		return strings.Compare(a.domain, b.domain)
	})
	const maxPoints = 2500 // per group: keep the SVG small, every k-th sample
	shape := func(d string) draw.GlyphDrawer {
		if d == schemas.DomainWorkflow {
			return draw.TriangleGlyph{}
		}
		return draw.CircleGlyph{}
	}
	legended := map[int]bool{}
	for _, k := range keys {
		xy := groups[k]
		if len(xy) > maxPoints {
			step := (len(xy) + maxPoints - 1) / maxPoints
			var thin plotter.XYs
			for i := 0; i < len(xy); i += step {
				thin = append(thin, xy[i])
			}
			xy = thin
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return Figure{}, err
		}
		sc.GlyphStyle.Color = withAlpha(concurrencyColor(slices.Index(cs, k.c), len(cs)), 0xa0)
		sc.GlyphStyle.Radius = vg.Points(2)
		sc.GlyphStyle.Shape = shape(k.domain)
		p.Add(sc)
		if !legended[k.c] {
			legended[k.c] = true
			p.Legend.Add(fmt.Sprintf("c=%d", k.c), sc)
		}
	}
	if len(keys) == 0 {
		p.Title.Text += " (no samples)"
	} else {
		for _, d := range []string{schemas.DomainCoding, schemas.DomainWorkflow} {
			g := draw.GlyphStyle{Color: color.Gray{Y: 0x55}, Radius: vg.Points(2.5), Shape: shape(d)}
			p.Legend.Add(d, glyphThumb{g})
		}
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Label.Text, p.Y.Label.Text = "ISL (input tokens, log scale)", "TTFT (ms, log scale)"
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		p.X.Min, p.X.Max = lo[0]/1.3, hi[0]*1.3
		p.Y.Min, p.Y.Max = lo[1]/1.3, hi[1]*1.3
	}
	return render("ttft_vs_isl", "TTFT against ISL", captioned(systems,
		"Time to first token against input tokens of every completed window turn, on log axes, coloured by concurrency; circles are coding turns, triangles workflow turns."), p)
}

// glyphThumb is a legend entry's glyph alone (what a shape stands for).
type glyphThumb struct{ style draw.GlyphStyle }

func (g glyphThumb) Thumbnail(c *draw.Canvas) { c.DrawGlyph(g.style, c.Center()) }

// concurrencyColor is the i-th of n colours from dark blue (lowest concurrency)
// through green to orange (highest).
func concurrencyColor(i, n int) color.RGBA {
	anchors := []color.RGBA{{R: 0x31, G: 0x36, B: 0x95, A: 0xff}, {R: 0x1a, G: 0x98, B: 0x50, A: 0xff}, {R: 0xf4, G: 0x6d, B: 0x43, A: 0xff}}
	f := 0.0
	if n > 1 {
		f = float64(i) / float64(n-1) * float64(len(anchors)-1)
	}
	k := min(int(f), len(anchors)-2)
	t := f - float64(k)
	mix := func(a, b uint8) uint8 { return uint8(math.Round(float64(a)*(1-t) + float64(b)*t)) }
	a, b := anchors[k], anchors[k+1]
	return color.RGBA{R: mix(a.R, b.R), G: mix(a.G, b.G), B: mix(a.B, b.B), A: 0xff}
}

// OSLHistogramPlot draws the full-run per-turn OSL histogram with the ruleset's
// window for the per-turn mean marked, and each point's mean.
func OSLHistogramPlot(systems []*curve.System, window *[2]float64, ruleset string) (Figure, error) {
	p := newPlot("Output tokens per turn (full run)", "OSL (output tokens per turn)", "turns")
	var vals plotter.Values
	var means []float64
	for _, s := range systems[:1] {
		for _, pt := range s.Points {
			if pt.OSLFullRun != nil {
				means = append(means, pt.OSLFullRun.Avg)
			}
			for _, t := range pt.Samples {
				if !math.IsNaN(t.OSL) {
					vals = append(vals, t.OSL)
				}
			}
		}
	}
	var top float64 = 1
	xmax := 0.0
	if len(vals) > 0 {
		// The tail beyond P99.5 is left out of the bins so the body stays readable.
		var s metrics.Series
		for _, v := range vals {
			s.Add(v)
		}
		xmax = s.P(99.5)
		if window != nil {
			xmax = math.Max(xmax, window[1]*1.2)
		}
		for _, m := range means {
			xmax = math.Max(xmax, m*1.1)
		}
		var body plotter.Values
		for _, v := range vals {
			if v <= xmax {
				body = append(body, v)
			}
		}
		if n := len(vals) - len(body); n > 0 {
			p.Title.Text += fmt.Sprintf(" (%d turns above %.0f not shown)", n, xmax)
		}
		vals = body
		h, err := plotter.NewHist(vals, 50)
		if err != nil {
			return Figure{}, err
		}
		h.FillColor = withAlpha(systemColor(0), 0x50)
		h.LineStyle.Width = vg.Points(0.5)
		p.Add(h)
		p.Legend.Add("completed turns, all points", h)
		for _, b := range h.Bins {
			top = math.Max(top, b.Weight)
		}
	} else {
		p.Title.Text += " (no token counts)"
	}
	top *= 1.1
	vline := func(x float64, c color.Color, dashed bool, label string) error {
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top}})
		if err != nil {
			return err
		}
		l.Color = c
		l.Width = vg.Points(1.5)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		if label != "" {
			p.Legend.Add(label, l)
		}
		return nil
	}
	if window != nil {
		red := color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
		lbl := fmt.Sprintf("OSL mean window [%g, %g]", window[0], window[1])
		if ruleset != "" {
			lbl += " (" + ruleset + ")"
		}
		if err := vline(window[0], red, false, lbl); err != nil {
			return Figure{}, err
		}
		if err := vline(window[1], red, false, ""); err != nil {
			return Figure{}, err
		}
	}
	for i, m := range means {
		lbl := ""
		if i == 0 {
			lbl = "per-point full-run mean"
		}
		if err := vline(m, color.RGBA{R: 0x22, G: 0x22, B: 0x22, A: 0xff}, true, lbl); err != nil {
			return Figure{}, err
		}
	}
	p.Y.Min = 0
	return render("osl_histogram", "OSL histogram",
		"Output tokens of every completed turn of every point (full runs, the population of the OSL gate); solid red lines: the ruleset's inclusive window for the per-turn mean (over all completed turns of a run); dashed: each point's full-run mean.", p)
}
