// Package score applies the MLPerf rules to runs: inline accuracy, OSL windows, SWE-
// bench results, rulesets, regions, and batch re-scoring of archived runs.
package score
