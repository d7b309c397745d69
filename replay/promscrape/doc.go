// Package promscrape scrapes a serving engine's Prometheus /metrics pages during
// a run and records what they said: every sample of every page, on the run's
// clock, in the run folder's server_metrics.parquet (schemas.ServerMetricRow).
//
// Pages are parsed with the Prometheus library's text-format parser
// (github.com/prometheus/common/expfmt), never by hand. The names of the engines
// agentrace knows (vLLM, SGLang, TensorRT-LLM, llama.cpp; catalog) are mapped to
// quantities that mean the same across engines (schemas.Quantity*): KV-cache
// usage, requests running and waiting, prefix-cache queries and hits,
// preemptions, finished requests. A page of no known engine is recorded raw and
// its endpoint's engine is "unknown": nothing is guessed.
//
// Each target has its own loop on a fixed schedule; a scrape is bounded in time
// (the interval) and bytes, and one that would start late because the previous
// one ran over is skipped and counted, so the scraper never queues work. It uses
// its own connections, never the client's. None of it is a rules metric.
package promscrape
