package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/redact"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/curve"
)

//go:embed report.html.tmpl
var htmlTemplate string

type figView struct {
	Name, Title, Caption string
	// SVG is gonum's SVG output (its text is escaped by gonum) with the XML prolog
	// removed and an id added.
	SVG template.HTML
}

type htmlData struct {
	Title       string
	ToolVersion string
	Systems     []*curve.System
	Figures     []figView
	Notes       []Note
}

// inlineSVG prepares a standalone SVG document for inlining into HTML: the XML
// prolog goes, and the root element gets an id and an accessible label.
func inlineSVG(svg []byte, id, label string) template.HTML {
	s := string(svg)
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	s = strings.Replace(s, "<svg", fmt.Sprintf(`<svg id="%s" role="img" aria-label="%s"`,
		template.HTMLEscapeString(id), template.HTMLEscapeString(label)), 1)
	return template.HTML(s)
}

func fmtNum(n metrics.Num, prec int) string {
	if !n.Valid() {
		return "–"
	}
	return fmt.Sprintf("%.*f", prec, float64(n))
}

func cssColor(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

func countsString(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func gatesSummary(s *curve.System) string {
	scored, pass, fail, open := 0, 0, 0, 0
	for _, p := range s.Points {
		switch p.GatesOutcome {
		case schemas.OutcomePass:
			pass++
		case schemas.OutcomeFail:
			fail++
		case schemas.OutcomeNotEvaluated:
			open++
		default:
			continue
		}
		scored++
	}
	sw := ""
	if g := s.SWEBench; g != nil && g.Evaluated() {
		res := "fails"
		if g.Pass {
			res = "passes"
		}
		sw = fmt.Sprintf("; SWE-bench mean %.4f %s", g.Value, res)
	}
	if scored == 0 {
		return "not scored" + sw
	}
	return fmt.Sprintf("%d of %d scored points pass, %d fail, %d not evaluated (%d not scored)%s", pass, scored, fail, open, len(s.Points)-scored, sw)
}

// gatesCell is a point's verdict for tables: pass, fail, not evaluated or not
// scored.
func gatesCell(p *curve.Point) string {
	switch p.GatesOutcome {
	case schemas.OutcomePass:
		return "pass"
	case schemas.OutcomeFail:
		return "fail"
	case schemas.OutcomeNotEvaluated:
		return "not evaluated"
	}
	return "not scored"
}

// gateValue is a gate's value for tables ("-" when not evaluated), with a
// re-derived value beside it.
func gateValue(g schemas.Gate) string {
	v := "-"
	if g.Evaluated() {
		v = fmt.Sprintf("%.4g", g.Value)
	}
	if g.Rederived != nil {
		v += fmt.Sprintf(" (re-derived %.4g)", *g.Rederived)
	}
	return v
}

// gateClass is a gate outcome's style: pass, fail, or fail for a blocking gate
// not evaluated.
func gateClass(g schemas.Gate) string {
	return map[string]string{schemas.OutcomePass: "pass", schemas.OutcomeFail: "fail"}[g.Outcome] + map[bool]string{true: "fail"}[g.Blocking() && g.Outcome != schemas.OutcomeFail]
}

// gateNote is a gate's reason and note together.
func gateNote(g schemas.Gate) string {
	return strings.TrimSuffix(strings.TrimPrefix(g.Reason+"; "+g.Note, "; "), "; ")
}

func allPass(cs []curve.Check) bool {
	for _, c := range cs {
		if !c.Pass() {
			return false
		}
	}
	return true
}

func anyUnofficial(s *curve.System) bool {
	for _, p := range s.Points {
		if p.Unofficial && (p.Tokenizer == nil || !p.Tokenizer.StandIn) {
			return true
		}
	}
	return false
}

// maxTokensText says a run's max tokens setting (replay's --max-tokens) for
// rows that set none: 0 is the sampling profile's (else 1024), -1 no run
// default (the reference loader's own fallback).
func maxTokensText(n int) string {
	switch {
	case n == 0:
		return "the profile's (else 1024)"
	case n < 0:
		return "no run default (the first user row's, else 128)"
	default:
		return strconv.Itoa(n)
	}
}

func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"maxTokens": maxTokensText,
		"pct": func(n metrics.Num) string {
			if !n.Valid() {
				return "not reported"
			}
			return fmt.Sprintf("%.1f%%", 100*float64(n))
		},
		"int": func(n int) string { return english.Thousands(float64(n), 0) },
		"level": func(v float64) string {
			if v <= 0 {
				return "(none)"
			}
			if v == math.Trunc(v) {
				return english.Thousands(v, 0)
			}
			return english.Thousands(v, 1)
		},
		"speedup": func(s *curve.System) float64 {
			if sp := simSpeedup([]*curve.System{s}); sp > 1 || (sp > 0 && sp < 1) {
				return sp
			}
			return 0
		},
		"anyErrors": func(s *curve.System) bool {
			for _, p := range s.Points {
				if len(p.ErrorKinds) > 0 {
					return true
				}
			}
			return false
		},
		"sloOf": func(s *curve.System) *metrics.SLOView {
			for _, p := range s.Points {
				if p.SLO != nil {
					return p.SLO
				}
			}
			return nil
		},
		"datasetShown": datasetShown,
		"gateValue":    gateValue,
		"gateClass":    gateClass,
		"pointsTables": pointsTables,
		"gatesTable":   gatesTable,
		"anyScored": func(s *curve.System) bool {
			for _, p := range s.Points {
				if p.GatesOutcome != "" {
					return true
				}
			}
			return false
		},
		"counts":        countsString,
		"publishedNote": func(p *curve.Point) string { return publishedNote(p) },
		"gatesSummary":  gatesSummary,
		"allPass":       allPass,
		"anyUnofficial": anyUnofficial,
		"standIn":       curve.StandIn,
		"regionCSS":     func(r string) template.CSS { return template.CSS(cssColor(regionColor(r))) },
		"first": func(ps []*curve.Point) *curve.Point {
			if len(ps) == 0 {
				return nil
			}
			return ps[0]
		},
	}
}

func (r *Report) title() string {
	var names []string
	for _, s := range r.Systems {
		names = append(names, s.Name)
	}
	if len(names) > 1 {
		return strings.Join(names, " vs ")
	}
	if len(names) == 1 {
		return names[0]
	}
	return "(empty)"
}

// HTML writes the self-contained report page: inline CSS and SVG, no script, no
// external resource. All run, dataset and model text goes through html/template.
func (r *Report) HTML(w io.Writer) error {
	t, err := template.New("report").Funcs(templateFuncs()).Funcs(serverFuncs()).Parse(htmlTemplate)
	if err == nil {
		t, err = t.Parse(serverTemplate)
	}
	if err != nil {
		return fmt.Errorf("parse report template: %w", err)
	}
	d := htmlData{Title: r.title(), ToolVersion: schemas.ToolVersion, Systems: r.Systems, Notes: r.Notes}
	for _, f := range r.Figures {
		d.Figures = append(d.Figures, figView{Name: f.Name, Title: f.Title, Caption: f.Caption,
			SVG: inlineSVG(f.SVG, "fig-"+f.Name, f.Title)})
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		return fmt.Errorf("render report page: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// mdEscape makes text safe inside a Markdown table cell: HTML-significant
// characters become entities and pipes and newlines are neutralised.
func mdEscape(s string) string {
	s = template.HTMLEscapeString(s)
	s = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "`", "&#96;", "[", `\[`, "]", `\]`).Replace(s)
	return s
}

// Markdown writes summary.md: the same content as the page, for a pull request.
func (r *Report) Markdown(w io.Writer) error {
	var b bytes.Buffer
	p := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	p("# agentrace report: %s\n\n", mdEscape(r.title()))
	p("Metrics follow the MLPerf Endpoints rules (v1.0 draft): performance window only, \"lower\" percentiles; regions per §5.5, step curve per §5.2. Written by agentrace %s.\n\n", schemas.ToolVersion)
	p("## Verdict\n\n| system | points | C_min | C_max | curve checks | accuracy gates |\n|---|---:|---:|---:|---|---|\n")
	for _, s := range r.Systems {
		v := "**PASS**"
		if !allPass(s.Checks) {
			v = "**FAIL**"
		}
		p("| %s | %d | %d | %d | %s | %s |\n", mdEscape(s.Name), len(s.Points), s.CMin, s.CMax, v, mdEscape(gatesSummary(s)))
	}
	for _, s := range r.Systems {
		p("\n### Checks: %s\n\n", mdEscape(s.Name))
		p("Ruleset %s; points placed by region form %s.", mdEscape(s.Ruleset), s.RegionForm)
		if g := s.SWEBench; g != nil {
			res := g.OutcomeText()
			p(" SWE-bench (curve): %.4f %s %s (%s).", g.Value, g.Threshold, res, mdEscape(g.Note))
		}
		p("\n\n")
		if s.Regions != nil {
			var rs []string
			for _, nr := range s.Regions.Named() {
				rs = append(rs, fmt.Sprintf("%s %s", nr.Name, nr.Range))
			}
			p("Regions (C_max %d from %s, C_min %d): %s\n\n", s.CMax, s.CMaxSource, s.Regions.CMin, strings.Join(rs, ", "))
		} else {
			p("Regions: %s\n\n", mdEscape(s.RegionsErr))
		}
		p("| check | result | reason |\n|---|---|---|\n")
		for _, c := range s.Checks {
			p("| %s | %s | %s |\n", mdEscape(c.Name), c.Status, mdEscape(c.Reason))
		}
		if anyUnofficial(s) {
			p("\n> Some token counts come from server usage, not the reference tokenizer: those numbers are **unofficial**.\n")
		}
		if note := curve.StandIn(s); note != "" {
			p("\n> Token counts: %s. The token-based numbers (OSL gate, system_tps, interactivity, TPOT, ISL) are **unofficial**.\n", mdEscape(note))
		}
	}
	p("\n## Plots\n\n")
	for _, f := range r.Figures {
		p("- **%s** (`%s/%s.png`, `.svg`): %s\n", f.Title, PlotsDir, f.Name, f.Caption)
	}
	p("\n![Agentic Pareto curve](%s/pareto.png)\n", PlotsDir)
	p("\n## Points\n")
	for _, s := range r.Systems {
		p("\n### %s\n\n", mdEscape(s.Name))
		for _, t := range pointsTables(s) {
			t.markdown(p)
		}
		for _, pt := range s.Points {
			if n := publishedNote(pt); n != "" {
				p("\n- c=%d: %s", pt.Concurrency, mdEscape(n))
			}
		}
		p("\n")
		b.WriteString(serverMarkdown(s))
	}
	p("\n## Settings\n")
	for _, s := range r.Systems {
		if len(s.Points) == 0 {
			continue
		}
		m := s.Points[0].Manifest
		c := m.Config
		p("\n### %s\n\n", mdEscape(s.Name))
		p("| setting | value |\n|---|---|\n")
		rows := [][2]string{
			{"model", c.Model}, {"profile", c.Profile}, {"endpoint", redact.URL(c.Endpoint)},
			{"endpoint description", m.EndpointDescription},
			{"dataset", fmt.Sprintf("%s (%d conversations)", datasetShown(c), m.DatasetSize)},
			{"dataset hash", m.DatasetHash},
			{"trajectories per point", fmt.Sprint(c.Trajectories)},
			{"salt / delays / delay scale", fmt.Sprintf("%t / %t / %.4g", c.Salt, c.Delays, c.DelayScale)},
			{"stop issuing at window end", fmt.Sprint(c.StopIssuingAtWindow)},
			{"stream / max tokens / turn timeout s", fmt.Sprintf("%t / %s / %g", c.Stream, maxTokensText(c.MaxTokens), c.TurnTimeoutSeconds)},
			{"token counts", fmt.Sprintf("OSL: %s; ISL: %s", s.Points[0].TokenSource, s.Points[0].ISLSource)},
		}
		for _, row := range rows {
			p("| %s | %s |\n", row[0], mdEscape(row[1]))
		}
	}
	p("\n## How this report reads the rules\n\n| topic | treatment |\n|---|---|\n")
	for _, n := range r.Notes {
		p("| %s | %s |\n", mdEscape(n.Topic), mdEscape(n.Treatment))
	}
	_, err := w.Write(b.Bytes())
	return err
}

func thousandsNum(n metrics.Num, prec int) string {
	if !n.Valid() {
		return "–"
	}
	return english.Thousands(float64(n), prec)
}

// datasetShown is the dataset path a reader of the report is shown: the absolute
// one when the manifest has it (its dataset field is relative to the run folder).
func datasetShown(c schemas.RunConfig) string {
	if c.DatasetAbs != "" {
		return c.DatasetAbs
	}
	return c.Dataset
}
