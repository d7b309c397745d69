package card

import (
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/percentile"
	"github.com/agentrace/agentrace/internal/plotkit"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Kind is a card folder's kind of output (outguard).
var Kind = outguard.Kind{Name: "card", Folder: true}

// WriteOptions say where a card goes.
type WriteOptions struct {
	// Out is the card folder.
	Out string
	// Overwrite replaces an earlier card folder at Out.
	Overwrite bool
	// Inputs are the paths the card was made from (the dataset, the tokenizer):
	// Out may not be, contain or sit inside one.
	Inputs []string
	// Claim, when set, is Out claimed by the caller before the card was built
	// (internal/outguard), written and committed here; else Write claims Out.
	Claim *outguard.Claim
}

// Write writes the card folder: CARD.md, card.json and plots/, built in a
// temporary folder beside Out and renamed into place only when complete. It
// stops once ctx is done (an interrupt): nothing is left at Out, an earlier card
// stays.
func Write(ctx context.Context, c *Card, o WriteOptions) error {
	if o.Claim == nil {
		claim, err := outguard.Take(outguard.Output{Path: o.Out, Kind: Kind, Overwrite: o.Overwrite}, o.Inputs...)
		if err != nil {
			return err
		}
		defer claim.Release()
		o.Claim = claim
	}
	figs, err := plots(c)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Plots = nil
	for _, f := range figs {
		c.Plots = append(c.Plots, f.Plot)
	}
	js, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", JSONFile, err)
	}
	md := Markdown(c)
	err = func(tmp string) error {
		if err := os.Mkdir(filepath.Join(tmp, PlotsDir), 0o755); err != nil {
			return err
		}
		for _, f := range figs {
			if err := os.WriteFile(filepath.Join(tmp, f.PNG), f.png, 0o644); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(tmp, f.SVG), f.svg, 0o644); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(tmp, JSONFile), append(js, '\n'), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, MarkdownFile), []byte(md), 0o644); err != nil {
			return err
		}
		return ctx.Err()
	}(o.Claim.Dir())
	if err != nil {
		return err
	}
	return o.Claim.Commit()
}

type figure struct {
	Plot
	png, svg []byte
}

// plots draws ISL by client turn per domain and the OSL histogram.
func plots(c *Card) ([]figure, error) {
	var out []figure
	isl := c.Dataset.ISLTokenizer != ""
	title, ylabel := "ISL by client turn, per domain", "ISL (tokens)"
	caption := "Mean (solid) and p90 (dashed) input tokens of the client turns at each position of their trajectory, per domain; ISL counted at ingest with " + c.Dataset.ISLTokenizer + "."
	if !isl {
		title, ylabel = "Request bytes by client turn, per domain (ISL not counted)", "request (bytes, unsalted messages)"
		caption = "ISL was not counted at ingest (no tokenizer), so this shows request bytes: mean (solid) and p90 (dashed) of the client turns at each position, per domain."
	}
	p := plotkit.New(title, "client turn (0-based position in the trajectory)", ylabel)
	p.Legend.Left = true
	for _, d := range c.Domains {
		if d.Domain == "total" || len(d.Growth.ByTurn) == 0 {
			continue
		}
		var mean, p90 plotter.XYs
		for _, tp := range d.Growth.ByTurn {
			m, q := tp.BytesMean, tp.BytesP90
			if isl && tp.ISLMean != nil {
				m, q = *tp.ISLMean, *tp.ISLP90
			}
			mean = append(mean, plotter.XY{X: float64(tp.Index), Y: m})
			p90 = append(p90, plotter.XY{X: float64(tp.Index), Y: q})
		}
		for k, xy := range []plotter.XYs{mean, p90} {
			l, err := plotter.NewLine(xy)
			if err != nil {
				return nil, err
			}
			l.Color = plotkit.DomainColor(d.Domain)
			l.Width = vg.Points(1.5)
			label := d.Domain + " mean"
			if k == 1 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				l.Width = vg.Points(1)
				label = d.Domain + " p90"
			}
			p.Add(l)
			p.Legend.Add(label, l)
		}
	}
	p.Y.Min = 0
	f, err := render("isl_by_turn", title, caption, p)
	if err != nil {
		return nil, err
	}
	out = append(out, f)

	osl := c.Provenance.OSLTokenizer != ""
	title, xlabel := "OSL of the recorded assistant turns", "output tokens per assistant turn"
	caption = "Output tokens of every recorded assistant turn (the ground-truth answers), counted with " + c.Provenance.OSLTokenizer +
		" as the rules count a response, per domain; dashed: each domain's mean."
	if !osl {
		title, xlabel = "Size of the recorded assistant turns (OSL not counted)", "bytes per assistant turn (content, reasoning, tool calls)"
		caption = "No tokenizer was given, so this shows the bytes of every recorded assistant turn, per domain; dashed: each domain's mean."
	}
	p = plotkit.New(title, xlabel, "assistant turns")
	var all []float64
	for _, d := range c.Domains {
		if d.Domain == "total" {
			all = values(d, osl)
		}
	}
	if len(all) == 0 {
		p.Title.Text += " (none)"
	} else {
		xmax, _ := percentile.Lower(all, 99.5)
		for _, d := range c.Domains {
			if d.Domain == "total" {
				continue
			}
			vals := values(d, osl)
			if len(vals) == 0 {
				continue
			}
			var body plotter.Values
			for _, v := range vals {
				if v <= xmax {
					body = append(body, v)
				}
			}
			if len(body) == 0 {
				continue
			}
			h := histogram(body, xmax, 50)
			col := plotkit.DomainColor(d.Domain)
			h.FillColor = color.NRGBA{R: col.R, G: col.G, B: col.B, A: 0x60}
			p.Add(h)
			p.Legend.Add(fmt.Sprintf("%s (%d turns)", d.Domain, len(vals)), h)
			top := 0.0
			for _, b := range h.Bins {
				top = math.Max(top, b.Weight)
			}
			mean := 0.0
			for _, v := range vals {
				mean += v
			}
			mean /= float64(len(vals))
			l, err := plotter.NewLine(plotter.XYs{{X: mean, Y: 0}, {X: mean, Y: top * 1.05}})
			if err != nil {
				return nil, err
			}
			l.Color, l.Width, l.Dashes = col, vg.Points(1.5), []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(l)
		}
		if n := countAbove(all, xmax); n > 0 {
			p.Title.Text += fmt.Sprintf(" (%d above %.0f not shown)", n, xmax)
		}
	}
	p.Y.Min = 0
	f, err = render("osl_histogram", title, caption, p)
	if err != nil {
		return nil, err
	}
	return append(out, f), nil
}

// histogram bins vals into n equal bins over [0, xmax], the same bins for every
// domain so that their bars line up.
func histogram(vals []float64, xmax float64, n int) *plotter.Histogram {
	if xmax <= 0 {
		xmax = 1
	}
	w := xmax / float64(n)
	bins := make([]plotter.HistogramBin, n)
	for i := range bins {
		bins[i].Min, bins[i].Max = float64(i)*w, float64(i+1)*w
	}
	for _, v := range vals {
		i := min(n-1, max(0, int(v/w)))
		bins[i].Weight++
	}
	h := &plotter.Histogram{Bins: bins, Width: w, LineStyle: plotter.DefaultLineStyle}
	h.LineStyle.Width = vg.Points(0.5)
	return h
}

func values(d Domain, osl bool) []float64 {
	if osl {
		return d.oslValues
	}
	return d.byteValues
}

func countAbove(sorted []float64, x float64) int {
	n := 0
	for _, v := range sorted {
		if v > x {
			n++
		}
	}
	return n
}

func render(name, title, caption string, p *plot.Plot) (figure, error) {
	png, svg, err := plotkit.Render(p)
	if err != nil {
		return figure{}, fmt.Errorf("plot %s: %w", name, err)
	}
	return figure{Plot: Plot{Name: name, Title: title, Caption: caption,
		PNG: PlotsDir + "/" + name + ".png", SVG: PlotsDir + "/" + name + ".svg"}, png: png, svg: svg}, nil
}
