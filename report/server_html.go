package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"strings"
)

//go:embed server.html.tmpl
var serverTemplate string

// serverFuncs are the template functions of the server telemetry section.
func serverFuncs() template.FuncMap {
	return template.FuncMap{
		"serverAny": func(s *System) bool {
			for _, p := range s.Points {
				if p.ServerNote != "" {
					return true
				}
			}
			return false
		},
		"serverReplicas": func(s *System) bool {
			for _, p := range s.Points {
				if len(p.ServerReplicas) > 0 {
					return true
				}
			}
			return false
		},
		"engines": func(e []string) string {
			var out []string
			for _, x := range e {
				if x == "" {
					x = "none scraped"
				}
				if len(out) == 0 || out[len(out)-1] != x {
					out = append(out, x)
				}
			}
			return strings.Join(out, ", ")
		},
		"fnum": func(v *float64, prec int) string {
			if v == nil {
				return "–"
			}
			return fmt.Sprintf("%.*f", prec, *v)
		},
		"fpct": func(v *float64) string {
			if v == nil {
				return "–"
			}
			return fmt.Sprintf("%.1f%%", 100**v)
		},
		"pnum": func(n Num) string {
			if !n.Valid() {
				return "–"
			}
			return fmt.Sprintf("%.1f%%", 100*float64(n))
		},
		"iptr": func(v *int) string {
			if v == nil {
				return "–"
			}
			return fmt.Sprint(*v)
		},
	}
}
