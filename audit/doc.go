// Package audit re-derives every number an MLPerf agentic submission publishes and
// compares it with what was published: the submission checker trusts the figures
// a submitter wrote, the audit recomputes them from the raw events.
//
// Inputs are what reviewers hold, in a folder or an archive read in place
// (score/archive): reference client run folders (events.jsonl and
// performance/result_summary.json, accuracy/accuracy_results.json), submission
// trees (<system>/<model>/r<N>/ points with point.yaml and their summaries, and the
// curve's sweep_summary.csv), and agentrace sweeps and runs (turns.arrows, with
// what `agentrace publish` wrote: performance/result_summary.json,
// accuracy/accuracy_results.json, point.yaml and sweep_summary.csv).
//
// For each point the audit folds the event log (or turn log) once as the
// reference client's metrics aggregator folds its events (metrics.Accumulator and
// its result_summary.json: counts, duration, qps, tps, the TTFT, TPOT, latency,
// ISL and OSL blocks, the full-run OSL block, finish reasons), re-scores inline
// accuracy from the events and the dataset (score.ScoreRun), re-judges the gates
// with the re-derived full-run OSL mean, and places the points of each curve in
// their regions and judges the curve (curve.NewSystemWith). Every published
// field then becomes one Row holding both values and a status:
//
//   - agree: within the rules' 1% (relative) for measured figures; counts
//     (n_samples_*, finish reasons, total_samples, concurrency) and texts
//     (regions, verdicts) must be equal;
//   - disagree: beyond it; the audit exits 1;
//   - follows: a figure derived from other published figures, as the
//     submission checker derives it whether stored or not (system_tps from
//     output_sequence_lengths.total / duration_ns, tps_per_user from the TPOT
//     P90, e2e_avg_interactivity from its two totals: score.ReadSummaryFigures),
//     that disagrees only because one of its inputs does: the input is named, so
//     a tampered figure is reported once, by its own name; a stored figure more
//     than 1% from its derivation disagrees (the checker's
//     metric-consistency-system-tps, -tps-per-user or agentic-metric-consistency
//     error);
//   - unchecked: published, not re-derivable here (SWE-bench, which needs the
//     harness; OSL-based figures without --tokenizer; a point that ships no event
//     log), with the reason;
//   - not_published: re-derived, absent from the published files (the reference
//     client at ea332753 writes no output_sequence_lengths_full_run, which the
//     checker's OSL gate reads).
//
// Run returns the rows; Write writes audit.json and audit.parquet; PrintTable the
// table. Audit reads everything through score/archive (nothing outside a source is
// opened, nothing is extracted) and writes only under --out (internal/outguard).
package audit
