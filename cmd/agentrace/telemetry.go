package main

import (
	"github.com/agentrace/agentrace/replay"
	"github.com/urfave/cli/v3"
)

// telemetryFlags are replay's and sweep's flags of the server-side telemetry:
// the scraping of the endpoints' Prometheus metrics and the routing of turns
// over several endpoints.
func telemetryFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "metrics-url", Usage: "Prometheus page to scrape during the run (repeatable; default: each --endpoint's /metrics), into RUNDIR/server_metrics.parquet: server-reported, not a rules metric"},
		&cli.BoolFlag{Name: "no-metrics", Usage: "do not scrape the server's Prometheus metrics"},
		&cli.DurationFlag{Name: "metrics-interval", Value: 1e9, Usage: "time between two scrapes of a metrics page (each bounded by it; a late scrape is skipped and counted)"},
		&cli.StringFlag{Name: "endpoint-routing", Value: replay.RouteRoundRobin, Usage: "with several --endpoint: " + replay.RouteRoundRobin + " (each request to the next, as the reference client) or " + replay.RouteSession + " (a trajectory's turns to one endpoint, by its session id)"},
	}
}

// telemetryOptions reads the telemetry flags into o.
func telemetryOptions(c *cli.Command, o *replay.Options) {
	o.MetricsURLs = c.StringSlice("metrics-url")
	o.Metrics = !c.Bool("no-metrics")
	o.MetricsInterval = c.Duration("metrics-interval")
	o.EndpointRouting = c.String("endpoint-routing")
}
