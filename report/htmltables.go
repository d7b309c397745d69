package report

import (
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/score/curve"
)

// htmlTable is one table of report.html, its cells formatted: a header of
// (trusted, constant) HTML, rows of text, and notes said once below it.
type htmlTable struct {
	Title string // a heading above it, "" for none
	Head  []template.HTML
	Rows  []htmlRow
	Notes []string
}

type htmlRow struct {
	Class string // "clock": the run's own clock, under the modelled row
	Cells []htmlCell
}

type htmlCell struct {
	Text   string
	Class  string       // "n" (a number), "nw", "pass", "fail", "muted"
	Swatch template.CSS // a region's colour before the text
}

// Clock labels of a point's rows when its run was against the simulated server.
const (
	clockModelled = "modelled"
	clockRun      = "run's clock"
)

// clockView is a point's figures on one clock: the modelled hardware's (rates
// divided and times multiplied by the simulated server's speed-up) or the run's
// own. Label is "" when the run was not against the simulated server.
type clockView struct {
	P     *curve.Point
	Label string
	// SystemTPS, E2E, TPSPerUser (tokens/s) and TurnsPerS are rates; TTFT, TPOT,
	// ITL and Latency are p50, p90, p99 in ms; Progress is the progress rate's
	// p10, p50, p90 in tokens/s; WindowS the window in seconds.
	SystemTPS, E2E, TPSPerUser, TurnsPerS metrics.Num
	TTFT, TPOT, ITL, Latency              [3]metrics.Num
	Progress                              [3]metrics.Num
	WindowS                               metrics.Num
}

// clockViews are a point's rows: the modelled figures first and the run's clock
// beside them when the run was against the simulated server, else the run's.
func clockViews(p *curve.Point) []clockView {
	sp := p.Speedup()
	if sp == 0 {
		return []clockView{onClock(p, "", 1)}
	}
	return []clockView{onClock(p, clockModelled, sp), onClock(p, clockRun, 1)}
}

// onClock is the point's figures with times multiplied and rates divided by k.
func onClock(p *curve.Point, label string, k float64) clockView {
	t := func(v metrics.Num) metrics.Num { return v * metrics.Num(k) }
	r := func(v metrics.Num) metrics.Num { return v / metrics.Num(k) }
	v := clockView{P: p, Label: label,
		SystemTPS: r(p.SystemTPS), E2E: r(p.E2EAvgInteractivity), TPSPerUser: r(p.TPSPerUser), TurnsPerS: r(p.TurnsPerS),
		TTFT:    [3]metrics.Num{t(p.TTFTP50Ms), t(p.TTFTP90Ms), t(p.TTFTP99Ms)},
		TPOT:    [3]metrics.Num{t(p.TPOTP50Ms), t(p.TPOTP90Ms), t(p.TPOTP99Ms)},
		ITL:     [3]metrics.Num{t(p.ITLP50Ms), t(p.ITLP90Ms), t(p.ITLP99Ms)},
		Latency: [3]metrics.Num{t(p.LatencyP50Ms), t(p.LatencyP90Ms), t(p.LatencyP99Ms)},
		WindowS: t(p.WindowDurationS),
	}
	for i, key := range []string{"10.0", "50.0", "90.0"} {
		v.Progress[i] = metrics.Num(math.NaN())
		if p.ProgressRate != nil {
			if x, ok := p.ProgressRate.Percentiles[key]; ok {
				v.Progress[i] = r(metrics.Num(x))
			}
		}
	}
	return v
}

// column formats one column of numbers alike: with the decimals that give its
// typical (median) value three significant digits, none from 100 up and at most
// three, with thousands separators, "–" for a missing value.
type column struct{ decimals int }

func newColumn(vals ...metrics.Num) column {
	var mags []float64
	for _, v := range vals {
		if v.Valid() && v != 0 {
			mags = append(mags, math.Abs(float64(v)))
		}
	}
	if len(mags) == 0 {
		return column{decimals: 0}
	}
	slices.Sort(mags)
	mid := mags[len(mags)/2]
	return column{decimals: min(3, max(0, 2-int(math.Floor(math.Log10(mid)))))}
}

func (c column) fmt(v metrics.Num) string {
	if !v.Valid() {
		return "–"
	}
	return english.Thousands(float64(v), c.decimals)
}

func (c column) triple(v [3]metrics.Num) string {
	return c.fmt(v[0]) + " / " + c.fmt(v[1]) + " / " + c.fmt(v[2])
}

// columns formats each column of a table per clock: the modelled rows and the
// run's clock rows differ by the speed-up, so each gets its own digits.
type columns map[string]column

func columnsOf(views []clockView, get func(clockView) []metrics.Num) columns {
	byClock := map[string][]metrics.Num{}
	for _, v := range views {
		byClock[v.Label] = append(byClock[v.Label], get(v)...)
	}
	cs := columns{}
	for k, vals := range byClock {
		cs[k] = newColumn(vals...)
	}
	return cs
}

// pointsTables are a system's points tables: the headline metrics, the other
// window metrics, and latency by domain.
func pointsTables(s *curve.System) []htmlTable {
	var views []clockView
	for _, p := range s.Points {
		views = append(views, clockViews(p)...)
	}
	sim := len(views) > 0 && views[0].Label != ""
	col := func(get func(clockView) []metrics.Num) columns { return columnsOf(views, get) }
	tps, e2e, tpu := col(func(v clockView) []metrics.Num { return []metrics.Num{v.SystemTPS} }), col(func(v clockView) []metrics.Num { return []metrics.Num{v.E2E} }), col(func(v clockView) []metrics.Num { return []metrics.Num{v.TPSPerUser} })
	tur := col(func(v clockView) []metrics.Num { return []metrics.Num{v.TurnsPerS} })
	ttft, tpot := col(func(v clockView) []metrics.Num { return v.TTFT[:] }), col(func(v clockView) []metrics.Num { return v.TPOT[:] })
	itl, lat := col(func(v clockView) []metrics.Num { return v.ITL[:] }), col(func(v clockView) []metrics.Num { return v.Latency[:] })
	prog, win := col(func(v clockView) []metrics.Num { return v.Progress[:] }), col(func(v clockView) []metrics.Num { return []metrics.Num{v.WindowS} })

	head := func(hs ...string) []template.HTML {
		out := []template.HTML{"c"}
		if sim {
			out = append(out, "clock")
		}
		for _, h := range hs {
			out = append(out, template.HTML(h))
		}
		return out
	}
	// lead are a row's first cells: the concurrency (on the first row of a
	// point) and the clock; rest tells a run's clock row, which repeats nothing
	// that does not depend on the clock.
	lead := func(v clockView) (cells []htmlCell, rest bool) {
		rest = v.Label == clockRun
		c := english.Thousands(float64(v.P.Concurrency), 0)
		if rest {
			c = ""
		}
		cells = append(cells, htmlCell{Text: c, Class: "n"})
		if sim {
			cells = append(cells, htmlCell{Text: v.Label, Class: "nw"})
		}
		return cells, rest
	}
	rowClass := func(v clockView) string {
		if v.Label == clockRun {
			return "clock"
		}
		return ""
	}
	num := func(s string) htmlCell { return htmlCell{Text: s, Class: "n"} }
	blank := htmlCell{}

	main := htmlTable{Head: head("region", "system_tps<br>tok/s", "e2e_avg_<br>interactivity tok/s", "tps_per_user<br>tok/s", "turns/s",
		"TTFT ms<br>p50 / p90 / p99", "TPOT ms<br>p50 / p90 / p99", "latency ms<br>p50 / p90 / p99", "sent / ok / failed", "gates")}
	more := htmlTable{Head: head("ITL ms<br>p50 / p90 / p99", "ISL mean<br>(p90)", "OSL mean window<br>/ full run",
		"progress rate tok/s<br>p10 / p50 / p90", "prefix cache hit", "client lag<br>p99 ms", "excluded by window", "window s")}
	var itlWhy []string
	for _, v := range views {
		p, l := v.P, v.Label
		cells, rest := lead(v)
		region := htmlCell{Text: or(p.Region, "outside"), Class: "nw", Swatch: template.CSS(cssColor(regionColor(p.Region)))}
		counts, gates := num(english.Thousands(float64(p.Issued), 0)+" / "+english.Thousands(float64(p.Completed), 0)+" / "+english.Thousands(float64(p.Failed), 0)), gatesHTMLCell(p)
		if rest {
			region, counts, gates = blank, blank, blank
		}
		// published figures are on the run's clock: labelled on its row
		pub := func(name string, c column, x metrics.Num) htmlCell {
			return num(c.fmt(x) + publishedLabel(p, name, c, v.Label != clockModelled))
		}
		cells = append(cells, region, pub("system_tps", tps[l], v.SystemTPS), pub("e2e_avg_interactivity", e2e[l], v.E2E), pub("tps_per_user", tpu[l], v.TPSPerUser), num(tur[l].fmt(v.TurnsPerS)),
			num(ttft[l].triple(v.TTFT)), num(tpot[l].triple(v.TPOT)), num(lat[l].triple(v.Latency)), counts, gates)
		main.Rows = append(main.Rows, htmlRow{Class: rowClass(v), Cells: cells})

		cells, _ = lead(v)
		isl, osl, hit, excl := num(tokenStat(p.ISL, "")+" ("+tokenStat(p.ISL, "90.0")+")"), num(tokenStat(p.OSL, "")+" / "+tokenStat(p.OSLFullRun, "")), num(pctText(p.PrefixCacheHitRatio)), num(excludedText(p))
		lag := num(fmtNum(p.ClientLagP99Ms, 1)) // the client's own lateness: the run's clock only
		if rest {
			isl, osl, hit, excl = blank, blank, blank, blank
		} else if sim {
			lag = blank
		}
		cells = append(cells, num(itl[l].triple(v.ITL)), isl, osl, num(prog[l].triple(v.Progress)), hit, lag, excl, num(win[l].fmt(v.WindowS)))
		more.Rows = append(more.Rows, htmlRow{Class: rowClass(v), Cells: cells})
		if !rest && !v.ITL[0].Valid() {
			itlWhy = append(itlWhy, "c="+english.Thousands(float64(p.Concurrency), 0)+": "+itlReason(p))
		}
	}
	more.Notes = onceEach("ITL – (no inter-token latency): ", itlWhy)
	if sim {
		sp := views[0].P.Speedup()
		note := "Each point has two rows: the modelled hardware's figures first, then the run's own clock, on which the simulated server ran " +
			english.Thousands(sp, -1) + " times faster (rates that many times higher, times that many times shorter). points.json holds the run's clock."
		main.Notes = append([]string{note}, main.Notes...)
	}
	return []htmlTable{main, more, domainTable(s, head, lead, rowClass)}
}

// domainTable is latency and throughput by domain, each point's domains in
// name order, on the same clocks as the points.
func domainTable(s *curve.System, head func(...string) []template.HTML, lead func(clockView) ([]htmlCell, bool), rowClass func(clockView) string) htmlTable {
	type domainRow struct {
		v                   clockView
		name                string
		m                   *metrics.DomainMetrics
		ttft, tpot, latency [3]metrics.Num
		e2e, tpu            metrics.Num
	}
	var rows []domainRow
	for _, p := range s.Points {
		names := make([]string, 0, len(p.Domains))
		for n := range p.Domains {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, v := range clockViews(p) {
			k := metrics.Num(1)
			if v.Label == clockModelled {
				k = metrics.Num(p.Speedup())
			}
			for _, n := range names {
				m := p.Domains[n]
				rows = append(rows, domainRow{v: v, name: n, m: m,
					ttft:    [3]metrics.Num{m.TTFTP50Ms * k, m.TTFTP90Ms * k, m.TTFTP99Ms * k},
					tpot:    [3]metrics.Num{m.TPOTP50Ms * k, m.TPOTP90Ms * k, m.TPOTP99Ms * k},
					latency: [3]metrics.Num{m.LatencyP50Ms * k, m.LatencyP90Ms * k, m.LatencyP99Ms * k},
					e2e:     m.E2EAvgInteractivity / k, tpu: m.TPSPerUser / k})
			}
		}
	}
	byClock := func(get func(r domainRow) []metrics.Num) columns {
		vals := map[string][]metrics.Num{}
		for _, r := range rows {
			vals[r.v.Label] = append(vals[r.v.Label], get(r)...)
		}
		cs := columns{}
		for c, v := range vals {
			cs[c] = newColumn(v...)
		}
		return cs
	}
	ttft := byClock(func(r domainRow) []metrics.Num { return r.ttft[:] })
	tpot := byClock(func(r domainRow) []metrics.Num { return r.tpot[:] })
	lat := byClock(func(r domainRow) []metrics.Num { return r.latency[:] })
	e2e := byClock(func(r domainRow) []metrics.Num { return []metrics.Num{r.e2e} })
	tpu := byClock(func(r domainRow) []metrics.Num { return []metrics.Num{r.tpu} })
	t := htmlTable{Title: "Latency by domain", Head: head("domain", "sent / ok", "TTFT ms<br>p50 / p90 / p99", "TPOT ms<br>p50 / p90 / p99", "latency ms<br>p50 / p90 / p99",
		"e2e_avg_<br>interactivity tok/s", "tps_per_user<br>tok/s")}
	num := func(s string) htmlCell { return htmlCell{Text: s, Class: "n"} }
	for i, r := range rows {
		cells, rest := lead(r.v)
		if i > 0 && rows[i-1].v.P == r.v.P && rows[i-1].v.Label == r.v.Label {
			cells[0].Text = "" // the concurrency once per point
		}
		l := r.v.Label
		counts := num(english.Thousands(float64(r.m.Issued), 0) + " / " + english.Thousands(float64(r.m.Completed), 0))
		if rest {
			counts = htmlCell{}
		}
		cells = append(cells, htmlCell{Text: r.name}, counts, num(ttft[l].triple(r.ttft)), num(tpot[l].triple(r.tpot)),
			num(lat[l].triple(r.latency)), num(e2e[l].fmt(r.e2e)), num(tpu[l].fmt(r.tpu)))
		t.Rows = append(t.Rows, htmlRow{Class: rowClass(r.v), Cells: cells})
	}
	return t
}

// publishedLabel says, on the row of the run's clock (on), that a figure is the
// published one (" (as published)") or what was published where it differs
// from the re-derived one (" (published X)").
func publishedLabel(p *curve.Point, name string, c column, on bool) string {
	switch {
	case !on:
		return ""
	case p.IsAsPublished(name):
		return " (as published)"
	}
	if pub, ok := p.PublishedDiffers[name]; ok {
		return " (published " + c.fmt(metrics.Num(pub)) + ")"
	}
	return ""
}

// markdown writes a table as a Markdown table (header breaks as spaces, text
// escaped), then its title above and notes below.
func (t htmlTable) markdown(p func(string, ...any)) {
	if t.Title != "" {
		p("\n#### %s\n", mdEscape(t.Title))
	}
	p("\n|")
	for _, h := range t.Head {
		p(" %s |", mdEscape(strings.ReplaceAll(string(h), "<br>", " ")))
	}
	p("\n|")
	for range t.Head {
		p("---|")
	}
	p("\n")
	for _, r := range t.Rows {
		p("|")
		for _, c := range r.Cells {
			p(" %s |", mdEscape(c.Text))
		}
		p("\n")
	}
	for _, n := range t.Notes {
		p("\n%s\n", mdEscape(n))
	}
}

// gatesHTMLCell is a point's accuracy gates outcome, coloured.
func gatesHTMLCell(p *curve.Point) htmlCell {
	g := gatesCell(p)
	class := "muted"
	if g == "pass" || g == "fail" {
		class = g
	}
	return htmlCell{Text: g, Class: "nw " + class}
}

// tokenStat is a token statistic's mean (key "") or percentile, whole, with
// thousands separators.
func tokenStat(st *metrics.Stats, key string) string {
	if st == nil {
		return "–"
	}
	v, ok := st.Avg, true
	if key != "" {
		v, ok = st.Percentiles[key]
	}
	if !ok {
		return "–"
	}
	return english.Thousands(v, 0)
}

// pctText is a share as a percentage with one decimal.
func pctText(n metrics.Num) string {
	if !n.Valid() {
		return "not reported"
	}
	return english.Thousands(100*float64(n), 1) + "%"
}

// excludedText is the turns issued after the window closed, and those never
// sent.
func excludedText(p *curve.Point) string {
	s := english.Thousands(float64(p.TurnsExcludedByWindow), 0)
	if p.TurnsNotIssued > 0 {
		s += " (+" + english.Thousands(float64(p.TurnsNotIssued), 0) + " not sent)"
	}
	return s
}

// itlReason says why a point has no inter-token latency.
func itlReason(p *curve.Point) string {
	if p.ITLNote != "" {
		return p.ITLNote
	}
	return "no completed window turn was streamed in two or more chunks (ITL is the gap between a turn's chunks; a turn answered whole, or streamed in one chunk, has none)"
}

// onceEach says each distinct reason once, prefixed, with the items that share
// it: "PREFIX REASON (c=1, c=2)" from items "c=1: REASON".
func onceEach(prefix string, items []string) []string {
	var order []string
	who := map[string][]string{}
	for _, it := range items {
		name, why, _ := strings.Cut(it, ": ")
		if _, ok := who[why]; !ok {
			order = append(order, why)
		}
		who[why] = append(who[why], name)
	}
	out := make([]string, 0, len(order))
	for _, why := range order {
		out = append(out, prefix+why+" ("+strings.Join(who[why], ", ")+")")
	}
	return out
}

// or is s, or alt when s is empty.
func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// gatesTable is every point's accuracy gates; a note that several gates share
// is said once below the table and named by its number in their rows.
func gatesTable(s *curve.System) htmlTable {
	t := htmlTable{Title: "Accuracy gates", Head: []template.HTML{"c", "ruleset", "gate", "value", "threshold", "result", "note"}}
	uses := map[string]int{}
	for _, p := range s.Points {
		for _, g := range p.Gates {
			uses[gateNote(g)]++
		}
	}
	numbered := map[string]int{}
	for _, p := range s.Points {
		for _, g := range p.Gates {
			note := gateNote(g)
			if uses[note] > 1 && note != "" {
				n, ok := numbered[note]
				if !ok {
					n = len(numbered) + 1
					numbered[note] = n
					t.Notes = append(t.Notes, "Note "+english.Thousands(float64(n), 0)+": "+note)
				}
				note = "note " + english.Thousands(float64(n), 0)
			}
			t.Rows = append(t.Rows, htmlRow{Cells: []htmlCell{
				{Text: english.Thousands(float64(p.Concurrency), 0), Class: "n"}, {Text: p.Ruleset}, {Text: g.Name},
				{Text: gateValue(g), Class: "n"}, {Text: g.Threshold}, {Text: g.OutcomeText(), Class: gateClass(g)}, {Text: note},
			}})
		}
	}
	return t
}
