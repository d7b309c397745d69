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
	"strings"

	"github.com/agentrace/agentrace/schemas"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
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
//
// The SVG's text is portable (portableText): every font-family list ends in a
// generic family, and every string keeps the width it was laid out with, so that
// a viewer without the Liberation fonts cuts none of it.
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
	s := &textCanvas{Canvas: vgsvg.NewWith(vgsvg.UseWH(Width, Height))}
	drawBeside(p, draw.New(s))
	if _, err := s.WriteTo(&b); err != nil {
		return nil, nil, fmt.Errorf("render svg: %w", err)
	}
	svg, err = portableText(b.Bytes(), s.widths)
	if err != nil {
		return nil, nil, fmt.Errorf("render svg: %w", err)
	}
	return png, svg, nil
}

// textCanvas is an SVG canvas that notes the width of every string it draws,
// in the order it draws them, as the plot's font measured it.
type textCanvas struct {
	*vgsvg.Canvas
	widths []vg.Length
}

func (c *textCanvas) FillString(f font.Face, pt vg.Point, s string) {
	c.widths = append(c.widths, f.Width(s))
	c.Canvas.FillString(f, pt, s)
}

// svgText is the start of every text element vgsvg writes, one per FillString.
const svgText = "<text "

// portableText makes an SVG's text render anywhere as it was laid out: each
// font list ends in a generic family, and each text element is given the width
// the layout measured (textLength, glyphs and spacing adjusted), so that a
// fallback font wider or narrower than Liberation neither runs past the figure
// nor over its neighbours. widths are the drawn strings' widths, in the order
// of their text elements.
func portableText(svg []byte, widths []vg.Length) ([]byte, error) {
	// The fonts gonum/plot draws with, each followed by its metric twins and
	// its generic family.
	generic := strings.NewReplacer(
		"font-family:Liberation Serif;", "font-family:'Liberation Serif','Times New Roman',Times,serif;",
		"font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;",
		"font-family:Liberation Mono;", "font-family:'Liberation Mono','Courier New',Courier,monospace;",
	)
	if n := bytes.Count(svg, []byte(svgText)); n != len(widths) {
		return nil, fmt.Errorf("%d text elements for %d strings drawn", n, len(widths))
	}
	var b bytes.Buffer
	b.Grow(len(svg) + 48*len(widths))
	rest := svg
	for _, w := range widths {
		i := bytes.Index(rest, []byte(svgText))
		b.Write(rest[:i+len(svgText)])
		fmt.Fprintf(&b, `textLength="%.5g" lengthAdjust="spacingAndGlyphs" `, w.Points())
		rest = rest[i+len(svgText):]
	}
	b.Write(rest)
	return []byte(generic.Replace(b.String())), nil
}

// legendGap is the space between the data area and the legend beside it.
const legendGap = 6 * vg.Millimeter

// drawBeside draws p with its legend in a column right of the axes, below the
// title (which spans the whole figure), so that no legend entry covers a point.
func drawBeside(p *plot.Plot, c draw.Canvas) {
	c = draw.Crop(c, margin, -margin, margin, -margin)
	fitTitle(p, c.Size().X)
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

// margin is the blank border of every figure: room for a fallback font whose
// ascent or descent is larger than Liberation's.
const margin vg.Length = 4

// fitTitle shrinks a title too wide for the figure until it fits (a long
// system name), down to minTitleSize.
func fitTitle(p *plot.Plot, width vg.Length) {
	st := &p.Title.TextStyle
	for st.Font.Size > minTitleSize && st.Rectangle(p.Title.Text).Size().X > width-2*vg.Millimeter {
		st.Font.Size = max(minTitleSize, st.Font.Size*0.95)
	}
}

// minTitleSize is the smallest a title shrinks to.
const minTitleSize vg.Length = 8

// maxLegendShare is the widest a legend beside the data may be, as a share of the
// figure's width.
const maxLegendShare = 0.3

// DomainColor is a trace domain's colour, the same in every figure: green for
// workflow traces, blue for the others (coding).
func DomainColor(domain string) color.RGBA {
	if domain == schemas.DomainWorkflow {
		return color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	}
	return color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
}
