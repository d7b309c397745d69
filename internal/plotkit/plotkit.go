// Package plotkit holds the plot style agentrace's figures share (gonum/plot): a
// titled plot with a grid and readable ticks, and rendering to PNG and SVG at one
// size, so that the report's figures and the dataset card's look alike.
package plotkit

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Size and resolution of every figure.
const (
	Width  = 8 * vg.Inch
	Height = 5 * vg.Inch
	DPI    = 110
)

// New returns a plot with a title, axis labels, a legend (Render draws it beside
// the data, never on it), a grid and NiceTicks on both axes.
func New(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 14
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.X.Label.TextStyle.Font.Size = 12
	p.Y.Label.TextStyle.Font.Size = 12
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = 11
	p.X.Tick.Marker = plot.TickerFunc(NiceTicks)
	p.Y.Tick.Marker = plot.TickerFunc(NiceTicks)
	p.Add(plotter.NewGrid())
	return p
}

// NiceTicks puts about six labelled ticks at multiples of 1, 2 or 5 times a power of
// ten, with a minor tick between each pair, labelled without needless decimals.
func NiceTicks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 6, 64)}}
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	prec := max(0, -int(math.Floor(math.Log10(step))))
	var ts []plot.Tick
	for i := math.Ceil(lo / step * 2); i/2*step <= hi+step*1e-9; i++ {
		v := i / 2 * step
		if math.Abs(v) < step*1e-9 {
			v = 0 // no "-0"
		}
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = strconv.FormatFloat(v, 'f', prec, 64)
		}
		ts = append(ts, t)
	}
	return ts
}

// Render draws p as PNG (white background) and as SVG, at Width x Height.
func Render(p *plot.Plot) (png, svg []byte, err error) {
	img := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(Width, Height), vgimg.UseDPI(DPI),
		vgimg.UseBackgroundColor(color.White))}
	drawBeside(p, draw.New(img))
	var b bytes.Buffer
	if _, err := img.WriteTo(&b); err != nil {
		return nil, nil, fmt.Errorf("render png: %w", err)
	}
	png = bytes.Clone(b.Bytes())
	b.Reset()
	s := vgsvg.NewWith(vgsvg.UseWH(Width, Height))
	drawBeside(p, draw.New(s))
	if _, err := s.WriteTo(&b); err != nil {
		return nil, nil, fmt.Errorf("render svg: %w", err)
	}
	return png, bytes.Clone(b.Bytes()), nil
}

// legendGap is the space between the data area and the legend beside it.
const legendGap = 6 * vg.Millimeter

// drawBeside draws p with its legend in a column right of the axes, below the
// title (which spans the whole figure), so that no legend entry covers a point.
func drawBeside(p *plot.Plot, c draw.Canvas) {
	leg := p.Legend
	w := leg.Rectangle(c).Size().X
	if w <= 0 {
		p.Draw(c)
		return
	}
	title := p.Title.Text
	if title != "" {
		descent := p.Title.TextStyle.FontExtents().Descent
		c.FillText(p.Title.TextStyle, vg.Point{X: c.Center().X, Y: c.Max.Y + descent}, title)
		c.Max.Y -= p.Title.TextStyle.Rectangle(title).Size().Y + p.Title.Padding
	}
	empty := plot.NewLegend() // no entries: Draw leaves it out
	empty.TextStyle = leg.TextStyle
	p.Legend, p.Title.Text = empty, ""
	defer func() { p.Legend, p.Title.Text = leg, title }()
	leg.Top, leg.Left, leg.XOffs, leg.YOffs = true, true, 0, 0
	if w <= c.Size().X*maxLegendShare {
		p.Draw(draw.Crop(c, 0, -(w + legendGap), 0, 0))
		leg.Draw(draw.Crop(c, c.Size().X-w, 0, 0, 0))
		return
	}
	// too wide to stand beside the data (long names): a strip below the axes
	h := leg.Rectangle(c).Size().Y + leg.TextStyle.FontExtents().Descent + vg.Millimeter
	p.Draw(draw.Crop(c, 0, 0, h+legendGap, 0))
	leg.Draw(draw.Crop(c, 0, 0, vg.Millimeter, -(c.Size().Y - h)))
}

// maxLegendShare is the widest a legend beside the data may be, as a share of the
// figure's width.
const maxLegendShare = 0.3
