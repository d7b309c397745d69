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

// New returns a plot with a title, axis labels, a legend at the top, a grid and
// NiceTicks on both axes.
func New(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = 14
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.X.Label.TextStyle.Font.Size = 12
	p.Y.Label.TextStyle.Font.Size = 12
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = 10
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
	p.Draw(draw.New(img))
	var b bytes.Buffer
	if _, err := img.WriteTo(&b); err != nil {
		return nil, nil, fmt.Errorf("render png: %w", err)
	}
	png = bytes.Clone(b.Bytes())
	b.Reset()
	s := vgsvg.NewWith(vgsvg.UseWH(Width, Height))
	p.Draw(draw.New(s))
	if _, err := s.WriteTo(&b); err != nil {
		return nil, nil, fmt.Errorf("render svg: %w", err)
	}
	return png, bytes.Clone(b.Bytes()), nil
}
