package rulesets

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// How a ruleset's thresholds follow from the reference model's own results.
//
// Each gate's threshold is a fixed function of the reference model's mean: inline
// accuracy is a factor times the mean, the OSL window a low and a high factor times
// the full-run mean, and SWE-bench either a factor times the mean or a lower
// confidence bound of a mean of N results. Each result is then rounded to a step
// (0.0001 for accuracy fractions, one token for OSL, one instance in 200 for
// SWE-bench) in a stated direction. The factors, steps and directions are data: a
// ruleset file carries them in its "derivation" block (DerivationRule), beside the
// means they were applied to, so that anyone can re-derive the thresholds; no
// factor is written in code. `agentrace rulesets derive` takes its defaults from
// the default ruleset's rule.
//
// Arithmetic is exact: a factor, a mean and a step are taken as the shortest
// decimals that print them (0.99, 0.589, 0.0001), multiplied as rationals, and
// rounded once, so 0.9 x 380 is exactly 342 and never 342.00000000000006.

// Rounding directions of a derived threshold.
const (
	RoundDown    = "down"    // toward minus infinity (floor)
	RoundUp      = "up"      // toward plus infinity (ceiling)
	RoundNearest = "nearest" // to the nearest step, ties to even (Python's round)
)

// SWE-bench derivation methods.
const (
	// SWEBenchFactor: threshold = factor x mean.
	SWEBenchFactor = "factor"
	// SWEBenchLowerBound: threshold = mean - z x sqrt(mean (1 - mean) / (results x
	// instances)), the one-sided lower confidence bound of a mean of `results`
	// binomial results over `instances` instances each.
	SWEBenchLowerBound = "lower_bound"
)

// BoundRule derives one threshold: Factor times the mean, rounded to a multiple of
// Step in direction Round.
type BoundRule struct {
	Factor float64 `json:"factor"`
	Round  string  `json:"round"`
	Step   float64 `json:"step"`
}

// SWEBenchRule derives the SWE-bench threshold by Method (SWEBenchFactor or
// SWEBenchLowerBound), then rounds it like a BoundRule.
type SWEBenchRule struct {
	Method string  `json:"method"`
	Factor float64 `json:"factor,omitempty"`
	// Z, Results and Instances are the lower bound's parameters: the normal
	// quantile, the number of results averaged (the rules' mean of N = 4 region
	// points) and the instances per result (0: the ruleset's swebench_evaluated).
	Z         float64 `json:"z,omitempty"`
	Results   int     `json:"results,omitempty"`
	Instances int     `json:"instances,omitempty"`
	Round     string  `json:"round"`
	Step      float64 `json:"step"`
}

// DerivationRule is the whole derivation: one rule per threshold.
type DerivationRule struct {
	InlineAccuracy BoundRule    `json:"inline_accuracy"`
	OSLLow         BoundRule    `json:"osl_low"`
	OSLHigh        BoundRule    `json:"osl_high"`
	SWEBench       SWEBenchRule `json:"swebench"`
}

// Spread is a reference metric over the runs it was measured on: the mean the
// thresholds derive from, and, when known, the number of runs, their minimum,
// maximum and sample standard deviation (n - 1 in the denominator; absent for one
// run). Published rulesets know only the mean.
type Spread struct {
	Mean   float64  `json:"mean"`
	N      int      `json:"n,omitempty"`
	Min    *float64 `json:"min,omitempty"`
	Max    *float64 `json:"max,omitempty"`
	StdDev *float64 `json:"std_dev,omitempty"`
}

// NewSpread summarizes values (at least one).
func NewSpread(values []float64) Spread {
	s := Spread{N: len(values)}
	if len(values) == 0 {
		return s
	}
	lo, hi, sum := values[0], values[0], 0.0
	for _, v := range values {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	s.Mean = sum / float64(len(values))
	s.Min, s.Max = &lo, &hi
	if len(values) > 1 {
		ss := 0.0
		for _, v := range values {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		sd := math.Sqrt(ss / float64(len(values)-1))
		s.StdDev = &sd
	}
	return s
}

// ReferenceMeans are the reference model's results the thresholds derive from:
// inline accuracy and SWE-bench as fractions, OSL as the full-run per-turn mean in
// tokens. SWEBench is nil when no SWE-bench result was given.
type ReferenceMeans struct {
	InlineAccuracy Spread  `json:"inline_accuracy"`
	OSL            Spread  `json:"osl"`
	SWEBench       *Spread `json:"swebench,omitempty"`
}

// Thresholds are a ruleset's gates.
type Thresholds struct {
	InlineAccuracyMin float64
	OSLWindow         [2]float64
	SWEBenchMin       float64
}

// Check validates a rule; instances is the ruleset's swebench_evaluated, used when
// the lower bound names none.
func (r DerivationRule) Check() error {
	for _, b := range []struct {
		name string
		b    BoundRule
	}{{"inline_accuracy", r.InlineAccuracy}, {"osl_low", r.OSLLow}, {"osl_high", r.OSLHigh}} {
		if err := checkRounding(b.b.Round, b.b.Step); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		if !(b.b.Factor > 0) || math.IsInf(b.b.Factor, 0) {
			return fmt.Errorf("%s: factor %v is not a positive number", b.name, b.b.Factor)
		}
	}
	if r.OSLLow.Factor > r.OSLHigh.Factor {
		return fmt.Errorf("osl_low factor %v is above osl_high factor %v", r.OSLLow.Factor, r.OSLHigh.Factor)
	}
	s := r.SWEBench
	if err := checkRounding(s.Round, s.Step); err != nil {
		return fmt.Errorf("swebench: %w", err)
	}
	switch s.Method {
	case SWEBenchFactor:
		if !(s.Factor > 0) || math.IsInf(s.Factor, 0) {
			return fmt.Errorf("swebench: factor %v is not a positive number", s.Factor)
		}
	case SWEBenchLowerBound:
		if !(s.Z >= 0) || math.IsInf(s.Z, 0) || s.Results < 1 || s.Instances < 0 {
			return fmt.Errorf("swebench: lower bound needs z >= 0, results >= 1 and instances >= 0 (got z %v, results %d, instances %d)",
				s.Z, s.Results, s.Instances)
		}
	default:
		return fmt.Errorf("swebench: method %q is not %q or %q", s.Method, SWEBenchFactor, SWEBenchLowerBound)
	}
	return nil
}

func checkRounding(round string, step float64) error {
	switch round {
	case RoundDown, RoundUp, RoundNearest:
	default:
		return fmt.Errorf("round %q is not %q, %q or %q", round, RoundDown, RoundUp, RoundNearest)
	}
	if !(step > 0) || math.IsInf(step, 0) {
		return fmt.Errorf("step %v is not a positive number", step)
	}
	return nil
}

// Derive applies the rule to the reference means. instances is the ruleset's
// swebench_evaluated (used when the lower bound names none). Without a SWE-bench
// mean, SWEBenchMin is returned as -1.
func (r DerivationRule) Derive(m ReferenceMeans, instances int) (Thresholds, error) {
	if err := r.Check(); err != nil {
		return Thresholds{}, err
	}
	var t Thresholds
	var err error
	if t.InlineAccuracyMin, err = r.InlineAccuracy.apply(m.InlineAccuracy.Mean); err != nil {
		return t, fmt.Errorf("inline accuracy: %w", err)
	}
	if t.OSLWindow[0], err = r.OSLLow.apply(m.OSL.Mean); err != nil {
		return t, fmt.Errorf("OSL window low: %w", err)
	}
	if t.OSLWindow[1], err = r.OSLHigh.apply(m.OSL.Mean); err != nil {
		return t, fmt.Errorf("OSL window high: %w", err)
	}
	t.SWEBenchMin = -1
	if m.SWEBench != nil {
		if t.SWEBenchMin, err = r.SWEBench.apply(m.SWEBench.Mean, instances); err != nil {
			return t, fmt.Errorf("SWE-bench: %w", err)
		}
	}
	return t, nil
}

func (b BoundRule) apply(mean float64) (float64, error) {
	x, err := decimal(mean)
	if err != nil {
		return 0, err
	}
	f, err := decimal(b.Factor)
	if err != nil {
		return 0, err
	}
	return roundTo(x.Mul(x, f), b.Step, b.Round)
}

func (s SWEBenchRule) apply(mean float64, instances int) (float64, error) {
	if mean < 0 || mean > 1 {
		return 0, fmt.Errorf("mean %v is not a fraction in [0, 1]", mean)
	}
	if s.Method == SWEBenchFactor {
		return BoundRule{Factor: s.Factor, Round: s.Round, Step: s.Step}.apply(mean)
	}
	n := s.Instances
	if n == 0 {
		n = instances
	}
	if n <= 0 {
		return 0, errors.New("lower bound: no instance count")
	}
	// m - z sqrt(m (1 - m) / (N n)), with 256-bit floats, then rounded once.
	const prec = 256
	m, err := decimal(mean)
	if err != nil {
		return 0, err
	}
	z, err := decimal(s.Z)
	if err != nil {
		return 0, err
	}
	one := big.NewRat(1, 1)
	v := new(big.Rat).Sub(one, m)
	v.Mul(v, m)
	v.Quo(v, big.NewRat(int64(s.Results)*int64(n), 1))
	sd := new(big.Float).SetPrec(prec).SetRat(v)
	sd.Sqrt(sd)
	bound := new(big.Float).SetPrec(prec).SetRat(z)
	bound.Mul(bound, sd)
	bound.Sub(new(big.Float).SetPrec(prec).SetRat(m), bound)
	x, _ := bound.Rat(nil)
	return roundTo(x, s.Step, s.Round)
}

// decimal returns f as the exact rational of its shortest decimal form.
func decimal(f float64) (*big.Rat, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%v is not a number", f)
	}
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok {
		return nil, fmt.Errorf("%v is not a decimal", f)
	}
	return r, nil
}

// roundTo rounds x to a multiple of step in direction dir and returns the float64
// nearest to the exact result.
func roundTo(x *big.Rat, step float64, dir string) (float64, error) {
	s, err := decimal(step)
	if err != nil {
		return 0, err
	}
	q := new(big.Rat).Quo(x, s)
	num, den := q.Num(), q.Denom()
	k, rem := new(big.Int).QuoRem(num, den, new(big.Int)) // truncated toward zero
	// floor of q
	if rem.Sign() < 0 {
		k.Sub(k, big.NewInt(1))
		rem.Add(rem, den)
	}
	switch dir {
	case RoundDown:
	case RoundUp:
		if rem.Sign() != 0 {
			k.Add(k, big.NewInt(1))
		}
	case RoundNearest:
		switch c := new(big.Int).Lsh(rem, 1).Cmp(den); {
		case c > 0, c == 0 && k.Bit(0) == 1:
			k.Add(k, big.NewInt(1))
		}
	default:
		return 0, fmt.Errorf("round %q is not %q, %q or %q", dir, RoundDown, RoundUp, RoundNearest)
	}
	out, _ := new(big.Rat).Mul(new(big.Rat).SetInt(k), s).Float64()
	return out, nil
}

// Derivation is a ruleset's "derivation" block: the rule, the reference means it
// was applied to and where they come from, and, for a ruleset made by
// `agentrace rulesets derive`, its provenance.
type Derivation struct {
	Rule  DerivationRule `json:"rule"`
	Means ReferenceMeans `json:"means"`
	// MeansSource says where the means come from (a publication, or the runs in
	// Provenance).
	MeansSource string `json:"means_source"`
	// Note explains anything a reviewer should know about the derivation.
	Note string `json:"note,omitempty"`
	// FollowsRule false records a published ruleset whose thresholds the rule
	// does not give from its published means (the rule is fitted to other
	// entries): loading then checks that the rule indeed does not reproduce them
	// (so the mark cannot go stale) and that Note says how they depart. Absent or
	// true: loading checks that the rule reproduces the thresholds.
	FollowsRule *bool                 `json:"follows_rule,omitempty"`
	Provenance  *DerivationProvenance `json:"provenance,omitempty"`
}

// DerivationProvenance says what a derived ruleset was derived from, by what and
// when.
type DerivationProvenance struct {
	DerivedAt   string `json:"derived_at"` // RFC 3339, UTC
	ToolVersion string `json:"tool_version"`
	// DatasetHash is the content hash of the dataset every run replayed.
	DatasetHash string `json:"dataset_hash,omitempty"`
	// Tokenizer names the tokenizer that counted the OSL of agentrace runs.
	Tokenizer string        `json:"tokenizer,omitempty"`
	Runs      []DerivedRun  `json:"runs,omitempty"`
	SWEBench  []DerivedSWEB `json:"swebench_reports,omitempty"`
	// SWEBenchGiven is set when the SWE-bench threshold was given, not derived.
	SWEBenchGiven bool `json:"swebench_given,omitempty"`
	// Base names the ruleset the derived one started from (model patterns,
	// region form, rule).
	Base string `json:"base,omitempty"`
}

// DerivedRun is one reference-model run a ruleset was derived from, with the
// values it contributed.
type DerivedRun struct {
	Path        string `json:"path"`
	Kind        string `json:"kind"`
	Model       string `json:"model"`
	Concurrency int    `json:"concurrency,omitempty"`
	DatasetHash string `json:"dataset_hash"`
	// InlineAccuracy is the run's inline accuracy over ScoredTurns turns; OSLMean
	// its full-run per-turn OSL mean over OSLTurns completed turns, counted by
	// OSLSource.
	InlineAccuracy float64 `json:"inline_accuracy"`
	ScoredTurns    int     `json:"scored_turns"`
	OSLMean        float64 `json:"osl_mean"`
	OSLTurns       int     `json:"osl_turns"`
	OSLSource      string  `json:"osl_source"`
}

// DerivedSWEB is one SWE-bench harness report a ruleset was derived from.
type DerivedSWEB struct {
	Report    string  `json:"report"`
	SHA256    string  `json:"sha256"`
	Resolved  int     `json:"resolved"`
	Evaluated int     `json:"evaluated"`
	Score     float64 `json:"score"`
}

// checkDerivation checks that a ruleset's derivation block is valid and gives its
// thresholds exactly.
func (r *Ruleset) checkDerivation() error {
	d := r.Derivation
	if d == nil {
		return nil
	}
	if d.MeansSource == "" {
		return errors.New("derivation: means_source is required")
	}
	got, err := d.Rule.Derive(d.Means, r.SWEBenchEvaluated)
	if err != nil {
		return fmt.Errorf("derivation: %w", err)
	}
	var diffs []string
	if got.InlineAccuracyMin != r.InlineAccuracyMin {
		diffs = append(diffs, fmt.Sprintf("inline_accuracy_min %v (file says %v)", got.InlineAccuracyMin, r.InlineAccuracyMin))
	}
	if got.OSLWindow != r.OSLWindow {
		diffs = append(diffs, fmt.Sprintf("osl_window %v (file says %v)", got.OSLWindow, r.OSLWindow))
	}
	if d.Means.SWEBench != nil && got.SWEBenchMin != r.SWEBenchMin {
		diffs = append(diffs, fmt.Sprintf("swebench_min %v (file says %v)", got.SWEBenchMin, r.SWEBenchMin))
	}
	if !d.Follows() {
		switch {
		case len(diffs) == 0:
			return errors.New("derivation: follows_rule is false, yet the rule applied to the means gives the thresholds")
		case d.Note == "":
			return errors.New("derivation: follows_rule is false without a note saying how the thresholds depart from the rule")
		}
		return nil
	}
	if len(diffs) > 0 {
		return fmt.Errorf("derivation: the rule applied to the means gives %s", strings.Join(diffs, ", "))
	}
	return nil
}

// Follows tells whether the rule applied to the means gives the ruleset's
// thresholds (false for a published ruleset marked follows_rule: false).
func (d *Derivation) Follows() bool { return d.FollowsRule == nil || *d.FollowsRule }

// Departures names, for a ruleset whose thresholds the rule does not give from
// its means, each threshold the rule gives instead ("" when it follows the rule
// or has no derivation).
func (r *Ruleset) Departures() string {
	d := r.Derivation
	if d == nil || d.Follows() {
		return ""
	}
	got, err := d.Rule.Derive(d.Means, r.SWEBenchEvaluated)
	if err != nil {
		return err.Error()
	}
	var diffs []string
	if got.InlineAccuracyMin != r.InlineAccuracyMin {
		diffs = append(diffs, fmt.Sprintf("inline accuracy >= %v (published %v)", fmtFloat(got.InlineAccuracyMin), fmtFloat(r.InlineAccuracyMin)))
	}
	if got.OSLWindow != r.OSLWindow {
		diffs = append(diffs, fmt.Sprintf("OSL window [%v, %v] (published [%v, %v])", fmtFloat(got.OSLWindow[0]), fmtFloat(got.OSLWindow[1]),
			fmtFloat(r.OSLWindow[0]), fmtFloat(r.OSLWindow[1])))
	}
	if d.Means.SWEBench != nil && got.SWEBenchMin != r.SWEBenchMin {
		diffs = append(diffs, fmt.Sprintf("SWE-bench >= %v (published %v)", fmtFloat(got.SWEBenchMin), fmtFloat(r.SWEBenchMin)))
	}
	return strings.Join(diffs, ", ")
}
