// Package ingest turns MLPerf agentic trace files (flat JSONL and snapshot JSONL,
// optionally gzipped) into a dataset directory: it parses, validates, precomputes each
// message's wire form, and computes statistics and exports.
package ingest
