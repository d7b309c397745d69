package plotkit

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"regexp"
	"strconv"
	"strings"
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

// The SVG renders without the Liberation fonts: every font list ends in a
// generic family and every text element keeps its laid-out width (textLength),
// which lies inside the figure; a title too long for the figure is shrunk.
func TestSVGTextPortable(t *testing.T) {
	p := New("a title far too long for any figure: "+strings.Repeat("long system name ", 4), "x label", "y label")
	data, err := plotter.NewScatter(plotter.XYs{{X: 0, Y: 0}, {X: 10, Y: 10}})
	if err != nil {
		t.Fatal(err)
	}
	p.Add(data)
	p.Legend.Add("low_concurrency", data)
	_, svg, err := Render(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	texts := regexp.MustCompile(`<text textLength="([0-9.e+]+)" lengthAdjust="spacingAndGlyphs" x="([-0-9.e+]+)"`).FindAllStringSubmatch(s, -1)
	if n := strings.Count(s, "<text "); n == 0 || len(texts) != n {
		t.Fatalf("%d text elements, %d with their width", n, len(texts))
	}
	for _, m := range texts {
		w, _ := strconv.ParseFloat(m[1], 64)
		x, _ := strconv.ParseFloat(m[2], 64)
		if w <= 0 || x < 0 || x+w > Width.Points()+0.5 {
			t.Errorf("text at x %v, %v wide, in a figure %v wide", x, w, Width.Points())
		}
	}
	for _, fam := range regexp.MustCompile(`font-family:([^;]*);`).FindAllStringSubmatch(s, -1) {
		if !strings.HasSuffix(fam[1], ",serif") && !strings.HasSuffix(fam[1], ",sans-serif") && !strings.HasSuffix(fam[1], ",monospace") {
			t.Errorf("font-family %q ends in no generic family", fam[1])
		}
	}
	if p.Title.TextStyle.Font.Size >= 14 {
		t.Errorf("the long title kept size %v", p.Title.TextStyle.Font.Size)
	}
}
