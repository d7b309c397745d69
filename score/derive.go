package score

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/agentrace/agentrace/internal/infile"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/official"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/agentrace/agentrace/score/runread"
	"github.com/agentrace/agentrace/tokens"
)

// DeriveOptions configure DeriveRuleset: a new ruleset from the reference model's
// own runs (or from means given directly), by a rule.
type DeriveOptions struct {
	// Runs are the reference-model runs: agentrace run folders, reference run
	// folders, archives holding one run, or runs inside archives.
	Runs []string
	// Means, when set, are used instead of Runs (means measured elsewhere, or the
	// published means of a ruleset).
	Means *rulesets.ReferenceMeans
	// Dataset overrides the dataset each run names (a dataset directory or a
	// trace file).
	Dataset string
	// Tokenizer counts the OSL of agentrace runs (required for them: server usage
	// counts are not official) and re-derives reference runs' OSL; Counter, when
	// set, is used instead.
	Tokenizer string
	Counter   OSLCounter
	// SWEBench are SWE-bench harness reports of the reference model (one per run
	// of the SWE-bench evaluation); SWEBenchMin, when set and no reports are given,
	// is the SWE-bench threshold, given rather than derived.
	SWEBench    []string
	SWEBenchMin *float64
	// Base is the ruleset the new one starts from (its model, patterns, region
	// form, instances, and its derivation rule): a name or file; "" picks the
	// newest embedded ruleset naming the runs' model (else rulesets.Default). Name,
	// Title and Model override it when set.
	Base string
	// EditRule, when set, changes the base's rule (flags given on the command
	// line); the rule of a base without one is rulesets.Default's.
	EditRule func(*rulesets.DerivationRule)
	Name     string
	Title    string
	Model    string
	// Final marks the ruleset as not tentative.
	Final bool
	// AllowFailures accepts runs with failed turns (error, timeout, aborted),
	// which score 0 and pull the means down.
	AllowFailures bool
	// Now is the derivation's date (time.Now when zero).
	Now time.Time
}

// DeriveRuleset derives a ruleset. From runs, every run must be official,
// complete and replay the same dataset with the same model, sampling profile and
// ruleset; the first difference is named in the error.
func DeriveRuleset(ctx context.Context, o DeriveOptions) (*rulesets.Ruleset, error) {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	prov := &rulesets.DerivationProvenance{DerivedAt: now.UTC().Format(time.RFC3339), ToolVersion: schemas.ToolVersion}
	var means rulesets.ReferenceMeans
	var model, source string
	switch {
	case o.Means != nil && len(o.Runs) > 0:
		return nil, errors.New("derive: give runs or means, not both")
	case o.Means != nil:
		means = *o.Means
		source = "means given to agentrace rulesets derive"
	case len(o.Runs) == 0:
		return nil, errors.New("derive: no run given (give the reference model's runs, or its means)")
	default:
		if o.Counter == nil && o.Tokenizer != "" {
			tok, err := tokens.Load(ctx, o.Tokenizer)
			if err != nil {
				return nil, fmt.Errorf("derive: %w", err)
			}
			o.Counter = tok
		}
		runs, err := deriveRuns(ctx, o)
		if err != nil {
			return nil, err
		}
		prov.Runs = runs
		prov.DatasetHash = runs[0].DatasetHash
		model = runs[0].Model
		var acc, osl []float64
		for _, r := range runs {
			acc = append(acc, r.InlineAccuracy)
			osl = append(osl, r.OSLMean)
		}
		means.InlineAccuracy, means.OSL = rulesets.NewSpread(acc), rulesets.NewSpread(osl)
		source = fmt.Sprintf("the %d runs of provenance.runs", len(runs))
	}
	if o.Model != "" {
		model = o.Model
	}
	base, err := deriveBase(o.Base, model)
	if err != nil {
		return nil, fmt.Errorf("derive: %w", err)
	}
	if model == "" {
		model = base.Model
	}
	if model == "" {
		return nil, notice.About(errors.New("derive: no model: give one, or a base ruleset naming it"), "model", "like")
	}
	rule, err := deriveRule(base, o.EditRule)
	if err != nil {
		return nil, err
	}
	evaluated := base.SWEBenchEvaluated
	if evaluated <= 0 {
		evaluated = DefaultSWEBenchEvaluated
	}
	switch {
	case len(o.SWEBench) > 0 && means.SWEBench != nil:
		return nil, errors.New("derive: give SWE-bench reports or a SWE-bench mean, not both")
	case len(o.SWEBench) > 0:
		var scores []float64
		for _, p := range o.SWEBench {
			res, _, err := ReadSWEBenchReport(ctx, p, evaluated)
			if err != nil {
				return nil, fmt.Errorf("derive: %w", err)
			}
			if res.Incomplete {
				return nil, fmt.Errorf("derive: SWE-bench report %q is incomplete: %d of %d instances submitted", p, res.Submitted, res.Evaluated)
			}
			data, err := infile.ReadFile(ctx, p, infile.SmallFile)
			if err != nil {
				return nil, fmt.Errorf("derive: %w", err)
			}
			sum := sha256.Sum256(data)
			prov.SWEBench = append(prov.SWEBench, rulesets.DerivedSWEB{Report: p, SHA256: hex.EncodeToString(sum[:]),
				Resolved: res.Resolved, Evaluated: res.Evaluated, Score: res.Score})
			scores = append(scores, res.Score)
		}
		s := rulesets.NewSpread(scores)
		means.SWEBench = &s
	case means.SWEBench == nil && o.SWEBenchMin == nil:
		return nil, notice.About(errors.New("derive: no SWE-bench result: give the reference model's SWE-bench reports, its mean, or the threshold to keep"), "swebench-report", "swebench-mean", "swebench-min")
	}
	th, err := rule.Derive(means, evaluated)
	if err != nil {
		return nil, fmt.Errorf("derive: %w", err)
	}
	if means.SWEBench == nil {
		th.SWEBenchMin = *o.SWEBenchMin
		prov.SWEBenchGiven = true
	}

	r := base // keeps the base's model patterns and fragments, region form, instances
	r.File = ""
	r.Name, r.Title, r.Model = o.Name, o.Title, model
	if r.Name == "" {
		r.Name = "derived-" + now.UTC().Format("2006-01-02") + "-" + slug(model)
	}
	if r.Title == "" {
		r.Title = fmt.Sprintf("%s, derived %s from %s", shortModel(model), now.UTC().Format("2006-01-02"), derivedFrom(o, prov))
	}
	if base.Model != model || len(r.ModelPatterns) == 0 {
		r.ModelPatterns = []string{"(?i)^(.*/)?" + regexp.QuoteMeta(shortModel(model)) + "$"}
		r.ModelFragments = nil
	}
	r.Source = "agentrace rulesets derive (" + derivedFrom(o, prov) + ")"
	r.Date = now.UTC().Format("2006-01-02")
	r.Tentative = !o.Final
	r.SWEBenchEvaluated = evaluated
	r.InlineAccuracyMin, r.OSLWindow, r.SWEBenchMin = th.InlineAccuracyMin, th.OSLWindow, th.SWEBenchMin
	r.Derivation = &rulesets.Derivation{Rule: rule, Means: means, MeansSource: source, Provenance: prov}
	prov.Base = base.Name
	if prov.SWEBenchGiven {
		r.Derivation.Note = "swebench_min was given, not derived: no SWE-bench result of the reference model was supplied."
	}
	if o.Counter != nil && len(o.Runs) > 0 {
		// The OSL means are the tokenizer's counts: say which, and whether it is
		// the model's own.
		u := CounterUse(&r, o.Counter)
		prov.Tokenizer = fmt.Sprintf("%s (%s sha256 %s, chat template sha256 %s)", u.Name, u.File, rulesets.ShortDigest(u.TokenizerSHA256), rulesets.ShortDigest(u.TemplateSHA256))
		if u.StandIn {
			if r.Derivation.Note != "" {
				r.Derivation.Note += " "
			}
			r.Derivation.Note += "The OSL means were counted with a " + u.Note + "."
		}
	}
	if base.Derivation != nil && !base.Derivation.Follows() && rule == base.Derivation.Rule {
		// The base's published thresholds do not follow the rule it records: a
		// derivation with that rule cannot reproduce them, and must not read as if it did.
		if r.Derivation.Note != "" {
			r.Derivation.Note += " "
		}
		r.Derivation.Note += fmt.Sprintf("The base ruleset %s's published thresholds do not follow this rule (from its own published means the rule gives %s); these thresholds are the rule's, not the published ones.",
			base.Name, base.Departures())
	}
	// A round trip through the file format validates it (patterns compile, the
	// derivation reproduces the thresholds).
	b, err := rulesets.JSON(r)
	if err != nil {
		return nil, err
	}
	out, err := rulesets.Parse(b, "derived")
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// deriveBase loads the base ruleset: the one named, else the newest naming model,
// else rulesets.Default.
func deriveBase(name, model string) (rulesets.Ruleset, error) {
	if name != "" {
		return rulesets.Load(name)
	}
	r, _ := rulesets.ForModel(model)
	return r, nil
}

// deriveRule is the base's rule (rulesets.Default's when it has none) with edit
// applied, checked.
func deriveRule(base rulesets.Ruleset, edit func(*rulesets.DerivationRule)) (rulesets.DerivationRule, error) {
	src := base
	if src.Derivation == nil {
		var err error
		if src, err = rulesets.Load(rulesets.Default); err != nil {
			return rulesets.DerivationRule{}, err
		}
	}
	rule := src.Derivation.Rule
	if edit != nil {
		edit(&rule)
	}
	if err := rule.Check(); err != nil {
		return rule, fmt.Errorf("derive: rule: %w", err)
	}
	return rule, nil
}

func derivedFrom(o DeriveOptions, prov *rulesets.DerivationProvenance) string {
	if len(prov.Runs) > 0 {
		s := fmt.Sprintf("%d reference-model runs", len(prov.Runs))
		if len(prov.SWEBench) > 0 {
			s += fmt.Sprintf(" and %d SWE-bench reports", len(prov.SWEBench))
		}
		return s
	}
	return "given means"
}

// shortModel is a model name without its organisation ("Qwen/Qwen3.6-35B-A3B" ->
// "Qwen3.6-35B-A3B").
func shortModel(m string) string {
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		return m[i+1:]
	}
	return m
}

func slug(m string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(shortModel(m)) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.':
			b.WriteRune(c)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// derivedRun is one checked run with what identifies its setup.
type derivedRun struct {
	rulesets.DerivedRun
	profile string // sampling profile or settings, for the same-setup check
	ruleset string // the ruleset its scores.json names, "" when none
}

// deriveRuns checks and scores every run.
func deriveRuns(ctx context.Context, o DeriveOptions) ([]rulesets.DerivedRun, error) {
	counter := o.Counter
	truths := map[string]*Truth{}
	var runs []derivedRun
	for _, p := range o.Runs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := deriveRun(ctx, p, o, counter, truths)
		if err != nil {
			return nil, fmt.Errorf("derive: run %q: %w", p, err)
		}
		if len(runs) > 0 {
			if err := sameSetup(&runs[0], &r); err != nil {
				return nil, fmt.Errorf("derive: %w", err)
			}
		}
		runs = append(runs, r)
	}
	out := make([]rulesets.DerivedRun, len(runs))
	for i := range runs {
		out[i] = runs[i].DerivedRun
	}
	return out, nil
}

// sameSetup names the first difference between two runs' datasets, models,
// sampling settings and rulesets.
func sameSetup(a, b *derivedRun) error {
	differ := func(what, x, y string) error {
		return fmt.Errorf("runs differ in %s: %q has %s, %q has %s", what, a.Path, x, b.Path, y)
	}
	switch {
	case a.DatasetHash != b.DatasetHash:
		return differ("dataset", "dataset "+short(a.DatasetHash), "dataset "+short(b.DatasetHash))
	case a.Model != b.Model:
		return differ("model", strconvQuote(a.Model), strconvQuote(b.Model))
	case a.profile != b.profile:
		return differ("sampling settings", a.profile, b.profile)
	case a.ruleset != "" && b.ruleset != "" && a.ruleset != b.ruleset:
		return differ("ruleset", "ruleset "+a.ruleset, "ruleset "+b.ruleset)
	}
	return nil
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// deriveRun checks one run (official, complete, no failures) and scores it.
func deriveRun(ctx context.Context, p string, o DeriveOptions, counter OSLCounter, truths map[string]*Truth) (derivedRun, error) {
	var dr derivedRun
	run, err := archive.OpenRun(p, archive.Limits{})
	if err != nil {
		return dr, err
	}
	defer run.Source.Close()
	if run.Err != nil {
		return dr, run.Err
	}
	info, err := runread.ReadInfo(run)
	if err != nil {
		return dr, err
	}
	dr.Path, dr.Kind, dr.Model, dr.Concurrency = p, info.Kind, info.Model, info.Concurrency
	if runread.IsPoint(run) {
		if n, _ := run.EventsName(); n == "" {
			return dr, errors.New("a submission point without an event log: its numbers cannot be re-derived")
		}
	}
	if dr.Model == "" {
		return dr, errors.New("the run names no model")
	}
	ds := o.Dataset
	if ds == "" {
		ds = info.Dataset
	}
	if ds == "" {
		return dr, notice.Errorf("dataset", "the run names no dataset: give the dataset it was replayed from")
	}
	truth := truths[ds]
	if truth == nil {
		if truth, err = LoadTruth(ctx, ds); err != nil {
			return dr, err
		}
		truths[ds] = truth
	}
	dr.DatasetHash = truth.Hash
	if info.DatasetHash != "" && info.DatasetHash != truth.Hash {
		return dr, fmt.Errorf("it was replayed from dataset %s, the dataset given is %s", short(info.DatasetHash), short(truth.Hash))
	}
	if err := checkOfficial(info, truth.Size); err != nil {
		return dr, err
	}
	if err := complete(info); err != nil {
		return dr, err
	}
	dr.profile = setup(info)
	dr.ruleset = scoredRuleset(run)
	s, err := ScoreRun(ctx, Options{Run: p, Source: run, Dataset: o.Dataset, Truth: truth, Counter: counter, Ruleset: rulesets.Auto})
	if err != nil {
		return dr, err
	}
	if s.Turns.Scored == 0 {
		return dr, errors.New("no turn of it was scored: is it the right dataset?")
	}
	if s.Turns.Missing > 0 && !o.AllowFailures {
		return dr, notice.Errorf("allow-failures", "%d issued turns have no output (failed, timed out or aborted): a reference run should have none (allowing failures takes it anyway; they score 0)", s.Turns.Missing)
	}
	switch {
	case s.OSL == nil || s.OSL.Turns == 0:
		return dr, notice.Errorf("tokenizer", "no OSL count: give the reference tokenizer")
	case s.OSL.Unofficial && (s.OSL.Tokenizer == nil || !s.OSL.Tokenizer.StandIn):
		return dr, notice.Errorf("tokenizer", "its OSL would come from the server's usage counts, which are not official: give the reference tokenizer")
	}
	dr.InlineAccuracy, dr.ScoredTurns = s.Score, s.Turns.Scored
	dr.OSLMean, dr.OSLTurns, dr.OSLSource = s.OSL.Mean, s.OSL.Turns, s.OSL.Source
	return dr, nil
}

// checkOfficial checks the official agentic settings (internal/official): an agentrace
// run's manifest records its verdict; a reference run's config is judged here.
func checkOfficial(info runread.Info, datasetSize int) error {
	f := info.Facts
	var why []string
	if m := f.Manifest; m != nil {
		why = append(why, m.Config.NonOfficial...)
		if !m.Config.Official && len(why) == 0 {
			why = append(why, "the manifest marks it unofficial")
		}
	} else {
		why = official.Reasons(runread.Conditions(f, datasetSize))
	}
	if len(why) > 0 {
		return fmt.Errorf("not an official run: %s", strings.Join(why, "; "))
	}
	return nil
}

// complete checks that the run ended normally and issued everything.
func complete(info runread.Info) error {
	f := info.Facts
	if m := f.Manifest; m != nil {
		if m.State != schemas.RunComplete {
			return fmt.Errorf("incomplete: its state is %q, not %q", m.State, schemas.RunComplete)
		}
		var cut []string
		for st, n := range m.Counts {
			switch st {
			case schemas.StatusOK, schemas.StatusError, schemas.StatusTimeout, schemas.StatusAborted:
			default:
				if n > 0 {
					cut = append(cut, fmt.Sprintf("%d %s", n, st))
				}
			}
		}
		if len(cut) > 0 {
			sort.Strings(cut)
			return fmt.Errorf("incomplete: turns %s", strings.Join(cut, ", "))
		}
		return nil
	}
	switch f.State {
	case "complete":
		return nil
	case "":
		return errors.New("cannot tell whether it completed: no result summary with a state")
	}
	return fmt.Errorf("incomplete: its state is %q", f.State)
}

// setup describes a run's sampling settings, for the same-setup check.
func setup(info runread.Info) string {
	if m := info.Facts.Manifest; m != nil {
		c := m.Config
		return fmt.Sprintf("profile %q, max tokens %d, clear generated cache %v", c.Profile, c.MaxTokens, c.ClearGeneratedCache)
	}
	return "the reference client's config"
}

// scoredRuleset is the ruleset named by a scores.json in the run, "" when none.
func scoredRuleset(run *archive.Run) string {
	if !run.Has("scores.json") {
		return ""
	}
	data, err := run.ReadFile("scores.json")
	if err != nil {
		return ""
	}
	var s struct {
		Run struct {
			Ruleset string `json:"ruleset"`
		} `json:"run"`
	}
	if json.Unmarshal(data, &s) != nil {
		return ""
	}
	return s.Run.Ruleset
}

// RulesetKind is the kind of output of a ruleset file agentrace derived
// (outguard): an existing file is replaced only when it is one.
var RulesetKind = outguard.Kind{Name: "ruleset", Folder: false}

// isDerivedRuleset recognizes a ruleset file agentrace derived.
func isDerivedRuleset(path string) bool {
	data, err := infile.ReadSmall(path, infile.SmallFile)
	if err != nil {
		return false
	}
	r, err := rulesets.Parse(data, path)
	return err == nil && r.Derivation != nil && r.Derivation.Provenance != nil && r.Derivation.Provenance.ToolVersion != ""
}

// WriteRuleset writes r to path atomically, after checking path against the
// inputs it was made from; an existing file is replaced only with overwrite, and
// only when it is a ruleset agentrace derived.
func WriteRuleset(path string, r *rulesets.Ruleset, overwrite bool, inputs ...string) error {
	out := outguard.Output{Path: path, Kind: RulesetKind, Overwrite: overwrite, Ours: isDerivedRuleset}
	b, err := rulesets.JSON(*r)
	if err != nil {
		return err
	}
	return outguard.WriteFile(out, inputs, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}
