package plotkit

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The legend stands beside the data, never on it: with points in the top-right
// corner (where a legend used to sit), every pixel of the legend's blue glyph lies
// right of every pixel of the red points; a legend too wide for that goes below.
func TestLegendOffTheData(t *testing.T) {
	red := color.RGBA{R: 0xff, A: 0xff}
	blue := color.RGBA{B: 0xff, A: 0xff}
	for _, tc := range []struct {
		name, entry string
		below       bool
	}{
		{"beside", "the legend", false},
		{"below", "a legend entry whose text is far too long to stand beside the data of any figure", true},
	} {
		p := New("title", "x", "y")
		data, err := plotter.NewScatter(plotter.XYs{{X: 0, Y: 0}, {X: 10, Y: 10}, {X: 9.5, Y: 9.8}, {X: 10, Y: 9}})
		if err != nil {
			t.Fatal(err)
		}
		data.GlyphStyle.Color, data.GlyphStyle.Radius, data.GlyphStyle.Shape = red, vg.Points(4), draw.CircleGlyph{}
		p.Add(data)
		thumb, _ := plotter.NewScatter(plotter.XYs{{X: 0, Y: 0}})
		thumb.GlyphStyle.Color, thumb.GlyphStyle.Radius, thumb.GlyphStyle.Shape = blue, vg.Points(4), draw.CircleGlyph{}
		p.Legend.Add(tc.entry, thumb)
		pngData, _, err := Render(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(pngData))
		if err != nil {
			t.Fatal(err)
		}
		redBox, blueBox := box(img, red), box(img, blue)
		if redBox.Empty() || blueBox.Empty() {
			t.Fatalf("%s: red %v, blue %v: nothing drawn", tc.name, redBox, blueBox)
		}
		if tc.below && blueBox.Min.Y <= redBox.Max.Y || !tc.below && blueBox.Min.X <= redBox.Max.X {
			t.Errorf("%s: the legend's glyph %v overlaps the data's %v", tc.name, blueBox, redBox)
		}
	}
}

// box is the bounding box of the pixels of colour c (near enough: antialiasing).
func box(img image.Image, c color.RGBA) image.Rectangle {
	var r image.Rectangle
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, c.R) && near(pg, c.G) && near(pb, c.B) {
				r = r.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	return r
}

func near(v uint32, want uint8) bool {
	d := int(v>>8) - int(want)
	return d > -24 && d < 24
}
