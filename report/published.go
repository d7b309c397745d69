package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/score/curve"
)

// publishedNote says which of the point's metrics are as published and which
// differ from their published values, "" when neither.
func publishedNote(p *curve.Point) string {
	note := ""
	if len(p.AsPublished) > 0 {
		note = "as published (not re-derived): "
		for i, n := range p.AsPublished {
			if i > 0 {
				note += ", "
			}
			note += n
		}
	}
	if len(p.PublishedDiffers) > 0 {
		keys := make([]string, 0, len(p.PublishedDiffers))
		for k := range p.PublishedDiffers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if note != "" {
			note += "; "
		}
		note += "re-derived, more than 1% from the published value: "
		for i, k := range keys {
			if i > 0 {
				note += ", "
			}
			note += k + " published " + thousandsNum(metrics.Num(p.PublishedDiffers[k]), 2)
		}
	}
	return note
}

// paretoNote says which of the Pareto plot's points are as published and which
// points it cannot draw (no system_tps or no interactivity), "" when every point
// is drawn from re-derived figures.
func paretoNote(systems []*curve.System) string {
	var published, missing []string
	for _, s := range systems {
		for _, p := range s.Points {
			name := fmt.Sprintf("c=%d", p.Concurrency)
			if len(systems) > 1 {
				name = s.Name + " " + name
			}
			switch {
			case !p.E2EAvgInteractivity.Valid() || !p.SystemTPS.Valid():
				missing = append(missing, name)
			case p.IsAsPublished("system_tps") || p.IsAsPublished("e2e_avg_interactivity"):
				published = append(published, name)
			}
		}
	}
	note := ""
	if len(published) > 0 {
		note += " As published (the result summary's figures, not re-derived: they need the reference tokenizer): " + strings.Join(published, ", ") + "."
	}
	if len(missing) > 0 {
		note += " Not drawn (no system_tps or e2e_avg_interactivity, re-derived or published): " + strings.Join(missing, ", ") + "."
	}
	return note
}
