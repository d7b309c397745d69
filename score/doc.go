// Package score applies the MLPerf rules to runs: inline accuracy, OSL windows, SWE-
// bench results, rulesets, regions, and batch re-scoring of archived runs.
//
// Inline accuracy follows the reference scorer exactly (see ScoreAccuracy): the
// ground truth is each client row's next assistant row (Truth), workflow turns are
// judged by the model's intent code (ModelIntent) and coding turns by the multiset
// Jaccard of bash actions (ToolCallsActions, CommandActions), every issued turn with
// ground truth counts in every repeat, and scores are rounded as Python's round()
// does. Where the reference is Python, its semantics are restated elsewhere, so
// that odd input scores the same: round(), character classes and case mapping in
// internal/python, json.loads in internal/jsontext (its Python dialect, which also
// reads every other JSON the scorer reads). This package holds the rules.
//
// Runs come in three kinds, found by package score/archive in folders or in
// archives read in place: agentrace's own replay runs (turns.arrows and
// manifest.json), the reference client's run folders (events.jsonl, with
// config.yaml naming the model and dataset) and the points of submission trees
// (r<N>/, their events as mlperf_endpoints_log_detail.json). Package
// score/runread reads every one of them (runread.Scan: one pass over a run's
// log feeding every consumer, turn records for a caller's fold beside the rows
// or events scoring reads); ReadReferenceEvents pairs an event log's turns with
// the ground truth as the reference scorer does. Evaluate evaluates any run:
// its log read once for the caller's fold and the scorer, its gates judged on
// one basis it names (scored from the log, the run's own scores.json, or the
// published figures: ReadPublishedAccuracy, ReadSummaryOSL). ScoreRun is
// Evaluate without a fold; WriteScores writes scores.json and scores.parquet;
// Rescore evaluates whole trees in parallel, one row per run. A curve's SWE-bench gate is
// the mean of one result per mandatory region (JudgeSWEBenchCurve), in the
// ruleset's region form (RegionsFor).
//
// Thresholds are data: each version of the rules is a ruleset of package
// score/rulesets, and Judge turns a run's values into a verdict against one;
// DeriveRuleset makes a new ruleset from the reference model's own runs by a
// ruleset's derivation rule, and WriteRuleset writes it.
package score
