// Package metrics folds a run's turn records into the rules' figures: one
// Accumulator takes the records one at a time and gives a Point (throughput,
// interactivity, TTFT/TPOT/ITL percentiles, token statistics, per-domain
// figures) and the reference-format result summary of the same records, as the
// reference client's metrics aggregator computes it. It reads records, never
// files: the stages above it (score/curve, audit, simulate) read runs or make
// records and feed it. It imports no package that scores or draws.
package metrics
