package archive

import (
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Kinds of run.
const (
	// KindAgentrace is an agentrace replay run: turns.arrows and manifest.json.
	KindAgentrace = "agentrace"
	// KindReference is a reference client run folder (its report_dir):
	// events.jsonl, config.yaml, performance/result_summary.json, ...
	KindReference = "reference"
	// KindSubmission is a point of a submission tree (r<N>/ or point_<N>/):
	// point.yaml, a result summary, accuracy, and the events when shipped.
	KindSubmission = "submission"
)

// Files of the three layouts (paths relative to the run folder).
const (
	TurnLogFile   = "turns.arrows"
	ManifestFile  = "manifest.json"
	ScoresFile    = "scores.json"
	EventsFile    = "events.jsonl"
	ConfigFile    = "config.yaml"
	ReportFile    = "report.txt"
	SampleMapFile = "sample_idx_map.json"
	SnapshotFile  = "metrics/final_snapshot.json"
	// Reference run folder.
	PerfSummaryFile = "performance/result_summary.json"
	AccuracyFile    = "accuracy/accuracy_results.json"
	// Submission point (the checker's layouts, oldest last).
	PointFile            = "point.yaml"
	SummaryFile          = "result_summary.json"
	PointAccuracyFile    = "accuracy_results.json"
	SystemDescFile       = "system_desc.json"
	LogSummaryFile       = "mlperf_endpoints_log_summary.json"
	LogDetailFile        = "mlperf_endpoints_log_detail.json"
	RunMetadataFile      = "run_metadata.json"
	LegacyAccuracyFile   = "accuracy/accuracy_result.json"
	LegacyAccuracyText   = "accuracy/accuracy.txt"
	ResultsFile          = "results.json"
	SweepSummaryFile     = "sweep_summary.csv"
	SweepDistributionsFn = "sweep_distributions.csv"
)

// Event log formats.
const (
	EventsJSONL = "jsonl"      // events.jsonl: one event a line
	EventsArray = "json-array" // mlperf_endpoints_log_detail.json: the events as one JSON array
)

var pointDirRE = regexp.MustCompile(`^(?:r|point_)(\d+)$`)

// PointDirConcurrency is the concurrency a point folder's name encodes (r32,
// point_32), or 0.
func PointDirConcurrency(name string) int {
	m := pointDirRE.FindStringSubmatch(path.Base(name))
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return 0
	}
	return n
}

// Run is one run found in a source: an agentrace run folder, a reference run
// folder or a submission point. Files are named relative to the run's folder.
type Run struct {
	Source *Source
	// Dir is the run's folder inside the source ("" for the source's root).
	Dir string
	// Kind is KindAgentrace, KindReference or KindSubmission; "" for an entry that
	// is no run but could not be read (Err set).
	Kind string
	// Label names the run in tables and messages: the source's path joined with
	// Dir. score, report and rescore accept it back as a path.
	Label string
	// Point is the concurrency a submission point's folder name encodes (0 when
	// none); System and Model are the names of its two parent folders
	// (<system>/<model>/r<N>).
	Point         int
	System, Model string
	// Err is set when the run cannot be read safely or completely (a file that is a
	// symbolic link out of the tree, a refused archive entry inside it).
	Err error
}

func (r *Run) rel(name string) string {
	if r.Dir == "" {
		return name
	}
	return r.Dir + "/" + name
}

// Position is where the run's log (its turn log, else its event log) lies in a
// tar archive: reading runs in order of Position reads the archive in one pass
// (Source.Open goes on from where the last read ended). 0 in a directory or a
// zip, where any order costs the same.
func (r *Run) Position() int {
	name := r.First(TurnLogFile)
	if name == "" {
		name, _ = r.EventsName()
	}
	if e, ok := r.Source.entries[r.rel(name)]; ok && name != "" {
		return e.order
	}
	return 0
}

// ReadOrder returns the indexes of runs in the order to read them: each
// source's runs (in the order the sources first appear) by Position, so that a
// tar archive is read in one pass; runs of the same position keep their order.
func ReadOrder(runs []*Run) []int {
	type place struct{ source, position int }
	first := map[*Source]int{}
	places := make([]place, len(runs))
	order := make([]int, len(runs))
	for i, r := range runs {
		order[i] = i
		if _, ok := first[r.Source]; !ok {
			first[r.Source] = i
		}
		places[i].source = first[r.Source]
		if r.Source != nil {
			places[i].position = r.Position()
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := places[order[a]], places[order[b]]
		return x.source < y.source || x.source == y.source && x.position < y.position
	})
	return order
}

// Has tells whether the run folder holds the regular file name.
func (r *Run) Has(name string) bool { return r.Source.IsFile(r.rel(name)) }

// Size is the size of a file of the run (-1 when absent).
func (r *Run) Size(name string) int64 { return r.Source.Size(r.rel(name)) }

// Open opens a file of the run for streaming.
func (r *Run) Open(name string) (io.ReadCloser, error) { return r.Source.Open(r.rel(name)) }

// ReadFile reads a small file of the run whole (bounded by Limits.MaxFileBytes).
func (r *Run) ReadFile(name string) ([]byte, error) { return r.Source.ReadFile(r.rel(name)) }

// FileLabel names a file of the run in messages.
func (r *Run) FileLabel(name string) string { return r.Source.Label(r.rel(name)) }

// First returns the first of names the run holds, "" when none.
func (r *Run) First(names ...string) string {
	for _, n := range names {
		if r.Has(n) {
			return n
		}
	}
	return ""
}

// SummaryName is the run's published result summary: performance/result_summary.json
// (reference run folder), result_summary.json or mlperf_endpoints_log_summary.json
// (submission point); "" when it has none.
func (r *Run) SummaryName() string {
	return r.First(PerfSummaryFile, SummaryFile, LogSummaryFile)
}

// AccuracyName is the run's published accuracy results: accuracy/accuracy_results.json,
// accuracy_results.json, accuracy/accuracy_result.json or results.json; "" when none.
func (r *Run) AccuracyName() string {
	return r.First(AccuracyFile, PointAccuracyFile, LegacyAccuracyFile, ResultsFile)
}

// EventsName returns the run's event log and its format: events.jsonl, else a
// submission's mlperf_endpoints_log_detail.json when it holds events (the
// submission tools write "{}" or "[]" when they shipped none); "" when none.
func (r *Run) EventsName() (string, string) {
	if r.Has(EventsFile) {
		return EventsFile, EventsJSONL
	}
	if r.Has(LogDetailFile) && r.Size(LogDetailFile) > 2 {
		return LogDetailFile, EventsArray
	}
	return "", ""
}

// CurveDir is the folder holding a submission point's curve (<system>/<model>),
// "" for other runs.
func (r *Run) CurveDir() string {
	if r.Kind != KindSubmission {
		return ""
	}
	d := path.Dir(r.Dir)
	if d == "." {
		return ""
	}
	return d
}

// CurveFile reads a file of a submission point's curve folder (sweep_summary.csv,
// sweep_distributions.csv); ok is false when there is none.
func (r *Run) CurveFile(name string) ([]byte, bool, error) {
	d := r.CurveDir()
	if r.Kind != KindSubmission {
		return nil, false, nil
	}
	p := name
	if d != "" {
		p = d + "/" + name
	}
	if !r.Source.IsFile(p) {
		return nil, false, nil
	}
	b, err := r.Source.ReadFile(p)
	return b, err == nil, err
}

// folderName is the folder dir of the source named as a tree names it: the
// source's own folder (dir "") by its path's last elements, so that a point folder
// given itself (sys/model/r8) is a point as it is inside its tree.
func (s *Source) folderName(dir string) string {
	if dir != "" || s.Kind != SourceDir {
		return dir
	}
	parts := strings.Split(filepath.ToSlash(filepath.Clean(s.Path)), "/")
	return strings.Join(parts[max(0, len(parts)-3):], "/")
}

// kindOf tells what kind of run folder dir is, "" when none.
func kindOf(s *Source, dir string) string {
	has := func(n string) bool {
		if dir != "" {
			n = dir + "/" + n
		}
		return s.IsFile(n)
	}
	switch {
	case has(TurnLogFile):
		return KindAgentrace
	// A point folder is a submission point by what a submission ships (point.yaml,
	// a result summary); a reference run folder named r<N> (events.jsonl,
	// performance/) is a reference run, which the rules of a submission tree do not
	// judge.
	case PointDirConcurrency(s.folderName(dir)) > 0 && (has(PointFile) || has(LogSummaryFile) || has(SummaryFile)):
		return KindSubmission
	case has(EventsFile), has(PerfSummaryFile) && has(ConfigFile):
		return KindReference
	}
	return ""
}

// Find lists the runs of a source, ordered by folder (a curve's points by
// concurrency). Refused entries (Source.Problems) inside a run's folder set its
// Err; the others are returned as runs of Kind "" with Err set, so that a table of
// runs names them too.
func Find(s *Source) []*Run {
	var runs []*Run
	for _, n := range s.Names() {
		if !s.IsDir(n) {
			continue
		}
		k := kindOf(s, n)
		if k == "" {
			continue
		}
		r := &Run{Source: s, Dir: n, Kind: k, Label: s.Label(n)}
		if k == KindSubmission {
			r.Point = PointDirConcurrency(s.folderName(n))
			parts := strings.Split(s.folderName(n), "/")
			if len(parts) >= 2 {
				r.Model = parts[len(parts)-2]
			}
			if len(parts) >= 3 {
				r.System = parts[len(parts)-3]
			}
		}
		runs = append(runs, r)
	}
	found := len(runs)
	for _, p := range s.Problems {
		name, _ := cleanName(p.Name)
		var owner *Run
		for _, r := range runs[:found] {
			if name != "" && (r.Dir == "" || strings.HasPrefix(name, r.Dir+"/")) {
				if owner == nil || len(r.Dir) > len(owner.Dir) {
					owner = r
				}
			}
		}
		if owner != nil {
			if owner.Err == nil {
				owner.Err = fmt.Errorf("%s: %s", s.Label(name), p.Reason)
			}
			continue
		}
		runs = append(runs, &Run{Source: s, Dir: p.Name, Label: s.Label(p.Name),
			Err: fmt.Errorf("%s: %s", s.Label(p.Name), p.Reason)})
	}
	sort.SliceStable(runs, func(i, j int) bool {
		a, b := runs[i], runs[j]
		if a.Kind == KindSubmission && b.Kind == KindSubmission && path.Dir(a.Dir) == path.Dir(b.Dir) {
			return a.Point < b.Point
		}
		return a.Dir < b.Dir
	})
	return runs
}

// Curve is a submission's curve: the points under one <system>/<model> folder.
type Curve struct {
	Dir           string
	System, Model string
	Points        []*Run
}

// Curves groups a source's submission points by curve folder, in order.
func Curves(runs []*Run) []*Curve {
	var out []*Curve
	byDir := map[string]*Curve{}
	for _, r := range runs {
		if r.Kind != KindSubmission {
			continue
		}
		d := r.CurveDir()
		key := r.Source.Path + "\x00" + d
		c := byDir[key]
		if c == nil {
			c = &Curve{Dir: d, System: r.System, Model: r.Model}
			byDir[key] = c
			out = append(out, c)
		}
		c.Points = append(c.Points, r)
	}
	return out
}
