package report

import (
	"fmt"
	"math"
	"slices"

	"github.com/agentrace/agentrace/score/curve"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// simSpeedup is the simulated server's speed-up of the systems' runs (the largest
// when they differ), 0 when every run was against a real server.
func simSpeedup(systems []*curve.System) float64 {
	var sp float64
	for _, s := range systems {
		for _, p := range s.Points {
			sp = math.Max(sp, p.Manifest.SimSpeedup)
		}
	}
	return sp
}

// speedupNote is what a plot of times or rates says when the runs were against the
// simulated server, "" otherwise.
func speedupNote(systems []*curve.System) string {
	sp := simSpeedup(systems)
	if sp <= 0 || sp == 1 {
		return ""
	}
	return fmt.Sprintf("simulated server %gx faster than modelled", sp)
}

// modelledTitle is a plot title whose rates and times are the modelled
// hardware's: it says so when the runs were against the simulated server.
func modelledTitle(systems []*curve.System, title string) string {
	if sp := simSpeedup(systems); sp > 0 && sp != 1 {
		return fmt.Sprintf("%s (modelled hardware; the simulated server ran %gx faster)", title, sp)
	}
	return title
}

// titled adds the speed-up note to a plot title.
func titled(systems []*curve.System, title string) string {
	if n := speedupNote(systems); n != "" {
		return title + " (" + n + ")"
	}
	return title
}

// captioned adds the speed-up note to a caption: what to divide by.
func captioned(systems []*curve.System, caption string) string {
	if sp := simSpeedup(systems); sp > 0 && sp != 1 {
		return caption + fmt.Sprintf(" The runs were against the simulated server at %gx its modelled speed: times are %g times shorter and rates %g times higher than the modelled hardware's.", sp, sp, sp)
	}
	return caption
}

// modelledCaption adds to the caption of a plot drawn in modelled figures how
// they relate to the run's clock.
func modelledCaption(systems []*curve.System, caption string) string {
	if sp := simSpeedup(systems); sp > 0 && sp != 1 {
		return caption + fmt.Sprintf(" The runs were against the simulated server at %gx its modelled speed: the plot shows the modelled hardware's figures; on the run's clock (points.json) rates are %g times higher and times %g times shorter.", sp, sp, sp)
	}
	return caption
}

// timelineBins is the number of time bins of a point's timeline.
const timelineBins = 80

// TimelinePlots draws, for every point of the first system, the requests in flight
// and the output throughput over the run's time: the load the client kept and what
// the server gave back, point by point.
func TimelinePlots(systems []*curve.System) ([]Figure, error) {
	flight := newPlot(titled(systems, "Requests in flight over time"), "time since the run started (s)", "requests in flight")
	tput := newPlot(titled(systems, "Output throughput over time"), "time since the run started (s)", "output tokens/s")
	var pts []*curve.Point
	if len(systems) > 0 {
		pts = slices.Clone(systems[0].Points)
	}
	slices.SortFunc(pts, func(a, b *curve.Point) int { return a.Concurrency - b.Concurrency })
	drawn := 0
	for i, pt := range pts {
		var end int64
		for _, iv := range pt.Flight {
			end = max(end, iv[1])
		}
		if end <= 0 || len(pt.Flight) == 0 {
			continue
		}
		width := float64(end) / timelineBins
		var inFlight, tokens plotter.XYs
		// in flight at each bin's middle: issued before, completed after
		starts := make([]int64, 0, len(pt.Flight))
		ends := make([]int64, 0, len(pt.Flight))
		for _, iv := range pt.Flight {
			starts = append(starts, iv[0])
			ends = append(ends, iv[1])
		}
		slices.Sort(starts)
		slices.Sort(ends)
		for b := range timelineBins {
			t := int64((float64(b) + 0.5) * width)
			n, _ := slices.BinarySearch(starts, t+1)
			m, _ := slices.BinarySearch(ends, t+1)
			inFlight = append(inFlight, plotter.XY{X: float64(t) / 1e9, Y: float64(n - m)})
		}
		sums := make([]float64, timelineBins)
		for _, s := range pt.Samples {
			if math.IsNaN(s.OSL) || s.CompletedNs <= 0 {
				continue
			}
			b := min(int(float64(s.CompletedNs)/width), timelineBins-1)
			sums[b] += s.OSL
		}
		for b, v := range sums {
			tokens = append(tokens, plotter.XY{X: (float64(b) + 0.5) * width / 1e9, Y: v / (width / 1e9)})
		}
		label := fmt.Sprintf("c=%d", pt.Concurrency)
		l1, err := plotter.NewLine(inFlight)
		if err != nil {
			return nil, err
		}
		l2, err := plotter.NewLine(tokens)
		if err != nil {
			return nil, err
		}
		for _, l := range []*plotter.Line{l1, l2} {
			l.Color = regionColor(pt.Region)
			if pt.Region == "" {
				l.Color = systemColor(i)
			}
			l.Width = vg.Points(1.2)
			l.Dashes = []vg.Length{vg.Points(float64(2 + 2*(i%3))), vg.Points(float64(1 + i%2))}
			if i%3 == 0 {
				l.Dashes = nil
			}
		}
		flight.Add(l1)
		flight.Legend.Add(label, l1)
		tput.Add(l2)
		tput.Legend.Add(label, l2)
		drawn++
	}
	if drawn == 0 {
		flight.Title.Text += " (no turns)"
		tput.Title.Text += " (no turns)"
	}
	flight.Y.Min, tput.Y.Min = 0, 0
	padAxes(flight)
	padAxes(tput)
	flight.Y.Min, tput.Y.Min = 0, 0
	f1, err := render("in_flight_over_time", "Requests in flight over time", captioned(systems,
		"Requests the client had in flight (issued, not yet complete) across each point's run, sampled at "+fmt.Sprint(timelineBins)+" instants; every sent turn counts, failed ones too. Closed-loop replay keeps it at the concurrency while trajectories last; the tail is the last trajectories finishing."), flight)
	if err != nil {
		return nil, err
	}
	f2, err := render("throughput_over_time", "Output throughput over time", captioned(systems,
		"Output tokens of completed turns per second across each point's run ("+fmt.Sprint(timelineBins)+" bins, each turn's tokens at its completion)."), tput)
	if err != nil {
		return nil, err
	}
	return []Figure{f1, f2}, nil
}
