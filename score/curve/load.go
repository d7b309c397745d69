package curve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/rulesets"
)

// System is one set of points drawn as one curve: a sweep, or the run directories
// given together.
type System struct {
	Name   string
	Points []*Point
	// CMin and CMax are the curve's lowest concurrency and the declared (or highest)
	// maximum; Regions is nil when they are outside the rules' bounds (RegionsErr).
	CMin, CMax   int
	CMaxFromFlag bool
	Regions      *score.RegionSet
	RegionsErr   string
	Checks       []Check
	// Unparsed are the submission points whose point.yaml does not validate
	// (the checker's point-config-valid error). As the checker's _UnparsedPoint
	// they still count at their concurrency for the point count, C_min, the
	// coverage and the accuracy rules (Counted); the rules that need the config
	// (region placement, metric consistency, the OSL gate) skip them.
	Unparsed []*Point
	// OSLWindow is the ruleset's OSL window.
	OSLWindow *[2]float64
	// Ruleset judges the curve; RegionForm is its region form (which placed the
	// points) and CMaxSource where C_max came from.
	Ruleset    string
	RegionForm string
	CMaxSource string
	// NoCMax says why the curve has no C_max as the submission checker takes it
	// (archive.CurveCMax): its first system description does not validate and
	// holds no positive integer max_supported_concurrency. The region rules are
	// then not evaluated (a warning, the checker's region-basis), never passed
	// or failed; "" when the curve has a C_max.
	NoCMax string
	// SWEBench is the curve's SWE-bench gate (the mean of one result per mandatory
	// region), nil when no point carries a SWE-bench result.
	SWEBench     *schemas.Gate
	SWEBenchMean *score.SWEBenchMean
	// limits are the ruleset's limits on a curve (rulesets.CurveLimits).
	limits rulesets.CurveLimits
}

// IsRunDir tells whether dir holds a run's turn log.
func IsRunDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, schemas.TurnLogFile))
	return err == nil
}

func sweepPointRE() *regexp.Regexp { return regexp.MustCompile(`^c(\d+)$`) }

// RunDirs expands the arguments into run directories: a run directory stands for
// itself, a sweep directory for its c<N>/ subfolders in increasing N.
func RunDirs(args []string) ([]string, error) {
	var out []string
	re := sweepPointRE()
	for _, a := range args {
		if IsRunDir(a) {
			out = append(out, a)
			continue
		}
		ents, err := os.ReadDir(a)
		if err != nil {
			return nil, fmt.Errorf("read run or sweep directory %q: %w", a, err)
		}
		type sub struct {
			dir string
			n   int
		}
		var subs []sub
		for _, e := range ents {
			m := re.FindStringSubmatch(e.Name())
			if !e.IsDir() || m == nil {
				continue
			}
			d := filepath.Join(a, e.Name())
			if !IsRunDir(d) {
				continue
			}
			n, _ := strconv.Atoi(m[1])
			subs = append(subs, sub{d, n})
		}
		if len(subs) == 0 {
			return nil, fmt.Errorf("directory %q holds neither %s nor c<N>/ run folders", a, schemas.TurnLogFile)
		}
		slices.SortFunc(subs, func(x, y sub) int { return x.n - y.n })
		for _, s := range subs {
			out = append(out, s.dir)
		}
	}
	return out, nil
}

// LoadPoint opens one run folder and evaluates it (LoadRun: the report's way).
// islFor, when not nil, gives an agentrace run's ISL counter from its manifest.
func LoadPoint(ctx context.Context, dir string, tok metrics.TokenCounter, islFor func(schemas.RunManifest) (metrics.ISLCounter, error)) (*Point, error) {
	run, err := archive.OpenRun(dir, archive.Limits{})
	if err != nil {
		return nil, fmt.Errorf("run %q: %w", dir, err)
	}
	defer run.Source.Close()
	if run.Err != nil {
		return nil, fmt.Errorf("run %q: %w", dir, run.Err)
	}
	return LoadRun(ctx, run, tok, islFor, "")
}

// CheckScores refuses a scores.json (named label) that did not score the turn
// log the point was folded from (runlog.CheckScored).
func (p *Point) CheckScores(sc *schemas.Scores, label string) error {
	if p.log == nil {
		return nil
	}
	if err := runlog.CheckScored(sc.Run.TurnLog, *p.log); err != nil {
		return fmt.Errorf("run %q: %s: %w; run `agentrace score` on it again", p.RunDir, label, err)
	}
	return nil
}

// AttachScores sets the point's accuracy gates (and its SWE-bench result, when
// it has none) from a run's scores.
func (p *Point) AttachScores(s *schemas.Scores) {
	p.attachScores(s)
	if s.SWEBench != nil && p.SWEBench == nil {
		v := s.SWEBench.Score
		p.SWEBench = &v
	}
}

func (p *Point) attachScores(s *schemas.Scores) {
	p.Gates = s.Verdict.Gates
	p.GatesOutcome = s.Verdict.Outcome
	c := s.Verdict.Counts
	p.GateCounts = &c
	p.GatesPass = nil
	if s.Verdict.Outcome != schemas.OutcomeNotEvaluated {
		pass := s.Verdict.Pass
		p.GatesPass = &pass
	}
	p.Ruleset = s.Verdict.Ruleset
	if p.Ruleset == "" {
		p.Ruleset = s.Run.Ruleset
	}
	p.scores = s
}

// Counted are the points the curve rules count, as the checker counts them: the
// points whose point.yaml validates and, at their concurrency, those whose
// point.yaml does not (the checker's _UnparsedPoint: C_min, coverage, accuracy),
// ordered by concurrency.
func (s *System) Counted() []*Point {
	out := append([]*Point(nil), s.Points...)
	for _, p := range s.Unparsed {
		if p.Concurrency > 0 {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b *Point) int { return a.Concurrency - b.Concurrency })
	return out
}

// allSubmission tells whether every point is a submission tree's.
func allSubmission(pts []*Point) bool {
	for _, p := range pts {
		if !p.point {
			return false
		}
	}
	return true
}

// systemDescs are a submission curve's points' own system descriptions in the
// order the submission checker reads them: by the folder's concurrency (r<N>),
// every point folder of the curve, its point.yaml valid or not (nil for a point
// without one); none for a curve of other runs, whose C_max the checker's rule
// does not give.
func (s *System) systemDescs() []*archive.SystemDescCopy {
	all := append(append([]*Point(nil), s.Points...), s.Unparsed...)
	if !allSubmission(all) {
		return nil
	}
	folder := func(p *Point) int {
		if p.source != nil && p.source.Point > 0 {
			return p.source.Point
		}
		return p.Concurrency
	}
	slices.SortStableFunc(all, func(a, b *Point) int { return folder(a) - folder(b) })
	var out []*archive.SystemDescCopy
	for _, p := range all {
		out = append(out, p.systemDesc)
	}
	return out
}

// NewSystem classifies the points by region under the default ruleset's region
// form and runs the coverage checks; see NewSystemWith.
func NewSystem(name string, pts []*Point, cmax int) *System {
	rs, _ := rulesets.Load("")
	return NewSystemWith(name, pts, cmax, rs)
}

// CMaxHighestPoint is System.CMaxSource when no C_max was declared: the highest
// point stands in for it.
const CMaxHighestPoint = "highest point"

// NewSystemWith classifies the points by region in the ruleset's region form
// (C_max = cmax, else the C_max the points declare, else the highest concurrency;
// C_min from the lowest point), judges the curve's SWE-bench mean of N when its
// points carry SWE-bench results, and runs the coverage checks.
func NewSystemWith(name string, pts []*Point, cmax int, rules rulesets.Ruleset) *System {
	s := &System{Name: name, Ruleset: rules.Name, RegionForm: rules.RegionForm(), CMaxSource: CMaxHighestPoint, limits: rules.Curve}
	// A point whose point.yaml does not validate is kept apart: it counts for
	// C_min, the coverage and the accuracy rules only (Counted).
	for _, p := range pts {
		if p.ConfigInvalid() {
			s.Unparsed = append(s.Unparsed, p)
		} else {
			s.Points = append(s.Points, p)
		}
	}
	w := rules.OSLWindow
	s.OSLWindow = &w
	slices.SortStableFunc(s.Points, func(a, b *Point) int { return a.Concurrency - b.Concurrency })
	for _, p := range append(append([]*Point(nil), s.Points...), s.Unparsed...) {
		p.System = name
	}
	pts = s.Counted()
	if len(pts) > 0 {
		s.CMin = pts[0].Concurrency
		s.CMax = pts[len(pts)-1].Concurrency
	}
	declared, why, found := archive.CurveCMax(s.systemDescs())
	switch {
	case cmax > 0:
		s.CMax, s.CMaxFromFlag, s.CMaxSource = cmax, true, "the given cmax"
	case found && declared > 0:
		s.CMax, s.CMaxSource = declared, why
	case found:
		s.CMax, s.CMaxSource, s.NoCMax = 0, "none", why
	default:
		for _, p := range pts {
			if p.MaxSupportedConcurrency > 0 {
				s.CMax, s.CMaxSource = p.MaxSupportedConcurrency, "declared (point.yaml / system_desc.json)"
				break
			}
		}
	}
	rs, err := score.RegionsFor(s.RegionForm, s.CMax, max(s.CMin, 1))
	switch {
	case s.NoCMax != "":
		s.RegionsErr = "not evaluated (warning): " + s.NoCMax
	case err != nil:
		s.RegionsErr = err.Error()
	default:
		s.Regions = &rs
		for _, p := range pts {
			p.Region = rs.Classify(p.Concurrency)
		}
	}
	var sw []score.SWEBenchPoint
	for _, p := range pts {
		if p.SWEBench != nil {
			sw = append(sw, score.SWEBenchPoint{Concurrency: p.Concurrency, Score: *p.SWEBench, Label: p.RunDir})
		}
	}
	if len(sw) > 0 {
		g, m := score.JudgeSWEBenchCurve(rules, sw, s.CMax)
		if s.NoCMax != "" {
			// The checker assigns no band without regions: the gate does not run.
			g.Reason, g.Note = s.NoCMax, "not evaluated: "+s.NoCMax
		}
		s.SWEBench, s.SWEBenchMean = &g, m
	}
	s.Checks = Coverage(s)
	return s
}

// CurveRuleset is the ruleset a curve is judged by: the one given, else the one
// its points were scored under, else the default (def true).
func CurveRuleset(name string, pts []*Point) (rs rulesets.Ruleset, def bool, err error) {
	if name == "" {
		for _, p := range pts {
			if p.Ruleset == "" {
				continue
			}
			if rs, err := rulesets.Load(p.Ruleset); err == nil {
				return rs, false, nil
			}
			// A ruleset this build does not embed: its name and OSL window as the
			// scores recorded them, the default's regions and thresholds otherwise.
			rs, err := rulesets.Load("")
			if err == nil {
				rs.Name = p.Ruleset
				if p.scores != nil && p.scores.OSL != nil {
					rs.OSLWindow = p.scores.OSL.Window
				}
			}
			return rs, false, err
		}
		def = true
	}
	rs, err = rulesets.Load(name)
	return rs, def, err
}

// StandIn is the note of the first point counted with a stand-in tokenizer, ""
// when none was.
func StandIn(s *System) string {
	for _, p := range s.Points {
		if p.Tokenizer != nil && p.Tokenizer.StandIn {
			return p.Tokenizer.Note
		}
	}
	return ""
}

// Scores are the point's scores (its scores.json, or the run scored here), nil
// when it was not scored.
func (p *Point) Scores() *schemas.Scores { return p.scores }
