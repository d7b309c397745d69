// Package interop holds integration tests only: they build a small dataset, runs,
// scores and a rescore table with agentrace's own stages, then read every table
// with an independent engine (DuckDB, from the pinned @duckdb/node-api) and run the
// example queries of docs/queries.md against them, so that the documented layouts and
// queries stay true.
package interop
