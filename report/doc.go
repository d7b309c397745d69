// Package report draws curves of evaluated points (score/curve): the Pareto step
// curve and its regions, plots against concurrency, the in-flight and server
// timelines, a self-contained HTML page and its Markdown summary, and the
// analysis tables (points.json through its contract type PointJSON,
// points.parquet, turns.parquet, the servers' tables). Only the command line and
// the demo import it.
package report
