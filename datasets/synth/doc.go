// Package synth generates synthetic agentic traces in the MLPerf flat JSONL form, so
// that the whole pipeline (ingest, replay, score, report) can run without the
// official dataset, which is not public.
//
// The shape "mlperf-agentic" follows the published shape of the benchmark's
// dataset (datasets.PublishedTable: trajectories and client turns per domain):
// coding trajectories (SWE-style tasks worked through a bash tool) and workflow
// trajectories (customer-service conversations with ids sim_NNNNNN, assistant
// turns carrying intent codes). Scale shrinks both domains proportionally; the
// file's dataset_metadata record says the scale each domain was drawn at.
//
// Everything is drawn from a PCG generator seeded by the seed, one stream per
// conversation, so the output is byte-for-byte deterministic for a seed and a
// conversation's content does not depend on how many others are generated.
// Lengths are calibrated against the Qwen3 tokenizer: the recorded assistant turns
// have a per-turn mean output length of about 395 tokens, inside the rules' Qwen
// window [355, 434]. Delays follow the shape of the real coding sample (median about
// 0.06 s, a long tail to two minutes).
package synth
