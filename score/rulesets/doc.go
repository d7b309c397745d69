// Package rulesets holds the thresholds of each version of the rules as data: an
// embedded JSON file per version (*.json here; All, Load, ForModel), or a user
// file in the same format, with the region form that places a curve's points
// (RegionForms), the limits on a curve (CurveLimits: its points at least and at
// most, the official dataset's size, the metric-consistency tolerance) and the
// tokenizer of its model. A ruleset may carry its
// derivation (Derivation: the rule, as factors, rounding directions and steps,
// and the reference means it was applied to), which loading re-applies and
// checks; derivation.go says what the published thresholds imply. Package score
// applies the thresholds (score.Judge) and derives a new ruleset from the
// reference model's own runs (score.DeriveRuleset), which it scores.
package rulesets
