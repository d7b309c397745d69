// Package curve holds a curve of evaluated points — each a run's measured
// figures (metrics.Point) with its scores, its files and the submission
// checker's findings on them — and agentrace's own rules on it: the runs an
// argument names (folders, sweeps, reference run folders, submission trees,
// archives), each read once into a Point (LoadRunWith), the System of points
// with its regions and C_max, and the checks a curve is judged by (Coverage,
// Consistency). It reads runs through score/archive and score/runread, scores
// them with score, and never draws or writes: report and submission do.
package curve
