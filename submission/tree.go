package submission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/curve"
)

// The tree's folders (mlcommons/endpoints-submission-cli layout.py): the results,
// the shared documentation, and the implementation's source folder with its
// README.
const (
	ResultsDir     = "results"
	DocsDir        = "docs"
	SrcDir         = "src"
	Implementation = "agentrace"
	ReadmeFile     = "README.md"
	// SystemPowerFile is a system's power descriptor, beside its model folders.
	SystemPowerFile = "system_power.json"
)

// Kind is the kind of output of a submission tree (internal/outguard).
var Kind = outguard.Kind{Name: "submission", Folder: true}

// Options configure Build.
type Options struct {
	// Out is the submission root (<submission_id>/) to write.
	Out       string
	Overwrite bool
	// Sweeps are agentrace sweep or run folders; their points are grouped into
	// one curve per model under the one system the submitter file describes.
	Sweeps []string
	// Submitter is the submitter file's content (nil: none); SubmitterFile its
	// path (an input the tree may not overlap).
	Submitter     *Submitter
	SubmitterFile string
	// TokenizerDir is the reference tokenizer (official token counts); "" uses
	// server usage, marked unofficial in the summaries.
	TokenizerDir string
	// Ruleset judges the curves; "" takes the runs' scores.json ruleset.
	Ruleset string
	// Events receives a progress event per point written and the warnings; nil
	// discards them.
	Events notice.Sink
}

// Result is what Build wrote.
type Result struct {
	// Root is the submission root, absolute.
	Root string
	// Curves are the curve folders written (results/<system>/<model>), with
	// their points.
	Curves []Curve
	// Missing lists, sorted, what the tree lacks that only the submitter can give
	// ("field: what it is"), and the points that lack a file agentrace writes from
	// a step not yet run. Empty: nothing is left open.
	Missing []string
}

// Curve is one curve of the tree.
type Curve struct {
	Dir    string
	Points []int
}

// Build lays the sweeps out as the submission checker reads a submission
// (results/<system>/<model>/r<N>/ with point.yaml, system_desc.json,
// result_summary.json and accuracy_results.json; results/<system>/system_power.json;
// docs/ and src/agentrace/README.md), filled from what the runs recorded and
// what the submitter file gives, and nothing else: a field the file leaves open
// is left out and named in Result.Missing. The tree is claimed as every output
// is (internal/outguard): it never overlaps a sweep, a tokenizer or the
// submitter file, and replaces only an earlier submission tree, with Overwrite.
func Build(ctx context.Context, o Options) (*Result, error) {
	if len(o.Sweeps) == 0 {
		return nil, errors.New("submit: no sweep folder given")
	}
	sub := o.Submitter
	if sub == nil {
		sub = &Submitter{}
	}
	var inputs []string
	for _, in := range append([]string{o.TokenizerDir, o.SubmitterFile}, o.Sweeps...) {
		if in != "" {
			inputs = append(inputs, in)
		}
	}
	if err := outguard.Check(o.Out, Kind, o.Overwrite, inputs...); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	lo, err := counting(ctx, o.TokenizerDir)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	byModel := map[string][]*curve.Point{}
	// Each run's event log is built as the run is read, the one time it is.
	var mu sync.Mutex
	logs := map[*archive.Run]*eventLog{}
	onRecord := func(run *archive.Run) func(*schemas.TurnRecord) error {
		l := &eventLog{}
		mu.Lock()
		logs[run] = l
		mu.Unlock()
		return l.add
	}
	for _, arg := range o.Sweeps {
		pts, _, src, err := LoadAgentraceRuns(ctx, arg, curve.LoadOptions{Tokenizer: lo.Tokenizer, ISLFor: lo.ISLFor, Ruleset: o.Ruleset}, onRecord)
		if err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
		defer src.Close()
		for _, p := range pts {
			name, _ := CanonicalModelName(ServedModel(p.Manifest.Config))
			byModel[name] = append(byModel[name], p)
		}
	}
	system := sub.systemName()
	if system == "" {
		system = filepath.Base(filepath.Clean(o.Sweeps[0]))
	}
	missing := sub.missing()
	var curves []*curve.System
	for _, model := range slices.Sorted(maps.Keys(byModel)) {
		pts := byModel[model]
		seen := map[int]string{}
		for _, p := range pts {
			if prev, ok := seen[p.Concurrency]; ok {
				return nil, fmt.Errorf("submit: %s and %s are both at concurrency %d of model %s: a curve has one point per concurrency", prev, p.RunDir, p.Concurrency, model)
			}
			seen[p.Concurrency] = p.RunDir
		}
		if _, ok := CanonicalModelName(ServedModel(pts[0].Manifest.Config)); !ok {
			missing = append(missing, fmt.Sprintf("%s/%s/%s: the runs served %q, which is not a benchmark model the checker accepts (%s)",
				ResultsDir, system, model, ServedModel(pts[0].Manifest.Config), strings.Join(AcceptedModels(), ", ")))
		}
		rs, _, err := curve.CurveRuleset(o.Ruleset, pts)
		if err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
		s := curve.NewSystemWith(system, pts, sub.cmax(), rs)
		if note := curve.StandIn(s); note != "" {
			o.Events.Say(notice.Warning, "", "%s/%s/%s: token counts %s; the summaries' token figures are unofficial (result_summary.json agentrace.tokenizer says so)", ResultsDir, system, model, note)
		}
		for _, p := range s.Points {
			if AccuracyResults(p) == nil {
				missing = append(missing, fmt.Sprintf("%s/%s/%s/r%d/%s: the run has no %s (agentrace score %s)", ResultsDir, system, model, p.Concurrency, archive.PointAccuracyFile, schemas.ScoresFile, p.RunDir))
			}
		}
		curves = append(curves, s)
	}
	sort.Strings(missing)

	claim, err := outguard.Take(outguard.Output{Path: o.Out, Kind: Kind, Overwrite: o.Overwrite}, inputs...)
	if err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	defer claim.Release()
	res := &Result{Root: claim.Path, Missing: missing}
	root := claim.Dir()
	d := sub.disclosure()
	for _, s := range curves {
		model, _ := CanonicalModelName(ServedModel(s.Points[0].Manifest.Config))
		curve := filepath.Join(ResultsDir, system, model)
		c := Curve{Dir: filepath.ToSlash(curve)}
		util := utilization(s)
		for _, p := range s.Points {
			dir := filepath.Join(root, curve, fmt.Sprintf("r%d", p.Concurrency))
			if err := writePoint(dir, s, p, d, sub, util[p]); err != nil {
				return nil, fmt.Errorf("submit: %w", err)
			}
			if err := writeEventLog(filepath.Join(dir, EventsFile), logs[p.Run()], p.Manifest.WindowEndNs); err != nil {
				return nil, fmt.Errorf("submit: r%d: %w", p.Concurrency, err)
			}
			c.Points = append(c.Points, p.Concurrency)
			o.Events.Say(notice.Progress, "", "%s/r%d (from %s)", filepath.ToSlash(curve), p.Concurrency, p.RunDir)
		}
		res.Curves = append(res.Curves, c)
	}
	if sub.Power != nil {
		if err := writeJSON(filepath.Join(root, ResultsDir, system, SystemPowerFile), sub.Power); err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
	}
	for name, text := range map[string]string{
		filepath.Join(DocsDir, ReadmeFile):                docsReadme(res, curves),
		filepath.Join(SrcDir, Implementation, ReadmeFile): srcReadme(curves),
	} {
		if err := writeFile(filepath.Join(root, name), []byte(text)); err != nil {
			return nil, fmt.Errorf("submit: %w", err)
		}
	}
	if err := claim.Commit(); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	return res, nil
}

// writePoint writes one r<N>/ point folder.
func writePoint(dir string, s *curve.System, p *curve.Point, d *Disclosure, sub *Submitter, util *float64) error {
	summary, err := json.MarshalIndent(p.Summary, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", archive.SummaryFile, err)
	}
	files := []struct {
		name string
		data []byte
	}{
		{archive.PointFile, PointYAML(s, p, d)},
		{archive.SummaryFile, append(summary, '\n')},
		{archive.PointAccuracyFile, AccuracyResults(p)},
	}
	if sub.System != nil {
		desc := make(map[string]any, len(sub.System)+2)
		for k, v := range sub.System {
			desc[k] = v
		}
		if _, ok := desc["division"]; !ok && sub.Division != "" {
			desc["division"] = division(sub.Division)
		}
		if util != nil {
			desc["tps_utilization"] = *util
		}
		b, err := json.MarshalIndent(desc, "", "  ")
		if err != nil {
			return fmt.Errorf("encode %s: %w", archive.SystemDescFile, err)
		}
		files = append(files, struct {
			name string
			data []byte
		}{archive.SystemDescFile, append(b, '\n')})
	}
	for _, f := range files {
		if f.data == nil {
			continue
		}
		if err := writeFile(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}

// writeEventLog writes a point's event log, built as its run was read.
func writeEventLog(path string, l *eventLog, windowEndNs int64) error {
	if l == nil {
		return fmt.Errorf("no event log built for %s", path)
	}
	return outguard.AtomicWrite(path, func(w io.Writer) error { return l.write(w, windowEndNs) })
}

// utilization is each point's tps_utilization as the checker derives it: its
// system_tps (output tokens over the window) over the curve's highest, rounded
// to 4 places; nil for a point without one.
func utilization(s *curve.System) map[*curve.Point]*float64 {
	top := 0.0
	for _, p := range s.Points {
		if v := float64(p.Summary.SystemTPS); p.Summary.SystemTPS.Valid() && v > top {
			top = v
		}
	}
	out := map[*curve.Point]*float64{}
	for _, p := range s.Points {
		if v := float64(p.Summary.SystemTPS); p.Summary.SystemTPS.Valid() && top > 0 {
			u := math.Round(v/top*1e4) / 1e4
			out[p] = &u
		}
	}
	return out
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return writeFile(path, append(b, '\n'))
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create folder %q: %w", filepath.Dir(path), err)
	}
	return outguard.AtomicWriteBytes(path, data)
}

// docsReadme is docs/README.md: what the tree holds and how agentrace made it.
func docsReadme(res *Result, curves []*curve.System) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Submission tree\n\nWritten by agentrace %s (`agentrace submit`)", schemas.ToolVersion)
	if sha := schemas.GitSHA(); sha != "" {
		fmt.Fprintf(&b, ", revision %s", sha)
	}
	b.WriteString(", from agentrace sweeps replayed against the system's endpoint.\n\n")
	b.WriteString("Each point folder `results/<system>/<model>/r<N>/` holds `point.yaml` (§8.3), `result_summary.json` ")
	b.WriteString("(the reference client's summary, counted as it counts), `accuracy_results.json` (the inline accuracy as the ")
	b.WriteString("reference scores it, and SWE-bench where the run was scored with it) and `system_desc.json` (§8.2).\n\n")
	for i, s := range curves {
		fmt.Fprintf(&b, "- `%s`: %d points (concurrency %s), ruleset %s\n", res.Curves[i].Dir, len(s.Points), joinInts(res.Curves[i].Points), s.Ruleset)
	}
	return b.String()
}

// srcReadme is src/agentrace/README.md: how the points were measured and how to
// measure them again.
func srcReadme(curves []*curve.System) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# agentrace %s\n\nThe benchmark client that measured these points: agentrace", schemas.ToolVersion)
	if sha := schemas.GitSHA(); sha != "" {
		fmt.Fprintf(&b, " at revision %s", sha)
	}
	b.WriteString(" (a Go implementation of the MLPerf Agentic Inference client), against the system's OpenAI-compatible endpoint.\n\n")
	b.WriteString("To measure a point again, with the dataset whose content hash its `point.yaml` names:\n\n```sh\n")
	for _, s := range curves {
		c := s.Points[0].Manifest.Config
		var cs []int
		for _, p := range s.Points {
			cs = append(cs, p.Concurrency)
		}
		fmt.Fprintf(&b, "agentrace sweep --dataset DATASET --endpoint URL --profile %s --trajectories %d --concurrency %s --out sweep\n",
			orDash(c.Profile), c.Trajectories, joinInts(cs))
	}
	b.WriteString("agentrace score --tokenizer TOKENIZER sweep/c*\nagentrace submit --submitter submitter.yaml --tokenizer TOKENIZER --out tree sweep\n```\n")
	return b.String()
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
