package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"strings"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/curve"
)

//go:embed server.html.tmpl
var serverTemplate string

// serverFuncs are the template functions of the server telemetry section.
func serverFuncs() template.FuncMap {
	return template.FuncMap{
		"serverAny": serverAny, "serverReplicas": serverReplicas, "engines": enginesText,
		"fnum": ptrNum, "fpct": ptrPct, "iptr": ptrInt,
		"pnum": func(n metrics.Num) string {
			if !n.Valid() {
				return "–"
			}
			return fmt.Sprintf("%.1f%%", 100*float64(n))
		},
	}
}

// serverAny tells whether a point of s scraped its server's metrics.
func serverAny(s *curve.System) bool {
	for _, p := range s.Points {
		if p.ServerNote != "" {
			return true
		}
	}
	return false
}

// serverReplicas tells whether a point of s has per-replica figures.
func serverReplicas(s *curve.System) bool {
	for _, p := range s.Points {
		if len(p.ServerReplicas) > 0 {
			return true
		}
	}
	return false
}

// enginesText names the engines of a point's scraped endpoints, once each in
// a row.
func enginesText(e []string) string {
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
}

func ptrNum(v *float64, prec int) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.*f", prec, *v)
}

func ptrPct(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100**v)
}

func ptrInt(v *int) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprint(*v)
}

// serverMarkdown is summary.md's server telemetry of a system, "" when no
// point scraped its server.
func serverMarkdown(s *curve.System) string {
	if !serverAny(s) {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n**Server telemetry** (" + schemas.ServerMetricsNote + ")\n\n")
	b.WriteString("| c | engine | prefix-cache hit rate (server) | KV usage mean | KV usage P90 | queue depth mean | preemptions | requests |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range s.Points {
		if p.ServerNote == "" {
			continue
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", p.Concurrency, mdEscape(enginesText(p.ServerEngines)),
			ptrPct(p.ServerPrefixCacheHitRate), ptrPct(p.ServerKVUsageMean), ptrPct(p.ServerKVUsageP90),
			ptrNum(p.ServerQueueDepthMean, 2), ptrNum(p.ServerPreemptions, 0), ptrNum(p.ServerRequests, 0))
	}
	for _, p := range s.Points {
		for _, r := range p.ServerReplicas {
			fmt.Fprintf(&b, "\n- c=%d replica %s: %s window turns, %s requests, hit rate %s, KV usage %s", p.Concurrency, mdEscape(r.URL),
				ptrInt(r.Turns), ptrNum(r.Requests, 0), ptrPct(r.PrefixCacheHitRate), ptrPct(r.KVUsageMean))
		}
		if p.RoutingSplit != nil {
			fmt.Fprintf(&b, "\n- c=%d routing %s: %d trajectories split across replicas", p.Concurrency, p.RoutingMode, *p.RoutingSplit)
		}
	}
	b.WriteString("\n")
	return b.String()
}
