package score

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/rulesets"
	"github.com/agentrace/agentrace/score/scoretest"
)

// lenOSL counts a response's output as its bytes / 4: a stand-in tokenizer.
type lenOSL struct{}

func (lenOSL) Name() string { return "len/4" }
func (lenOSL) CountOSL(r schemas.Response) (int, error) {
	n := len(r.Content) + len(r.Reasoning)
	for _, c := range r.ToolCalls {
		n += len(c.Function.Arguments)
	}
	return n/4 + 1, nil
}

type deriveFixture struct {
	ds  string
	d   *datasets.Dataset
	dir string
}

// newDeriveFixture ingests testdata/reference-run/dataset.jsonl (4 conversations,
// both domains), with edit applied to its text when not nil.
func newDeriveFixture(t *testing.T, edit func(string) string) *deriveFixture {
	t.Helper()
	dir := t.TempDir()
	trace, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "testdata", "reference-run", "dataset.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		trace = []byte(edit(string(trace)))
	}
	src := filepath.Join(dir, "dataset.jsonl")
	if err := os.WriteFile(src, trace, 0o644); err != nil {
		t.Fatal(err)
	}
	ds := filepath.Join(dir, "ds")
	d := scoretest.Ingest(t, ds, src)
	return &deriveFixture{ds: ds, d: d, dir: dir}
}

// run writes an official, complete agentrace run of the reference model; edit
// changes its manifest.
func (f *deriveFixture) run(t *testing.T, name string, fidelity, failRate float64, edit func(m *schemas.RunManifest)) string {
	t.Helper()
	dir := filepath.Join(f.dir, name)
	n, err := scoretest.WriteRun(dir, f.ds, f.d, scoretest.RunOptions{Fidelity: fidelity, FailRate: failRate, Seed: uint64(len(name)),
		Model: "Qwen/Qwen3.6-35B-A3B", Concurrency: 4, Repeats: 2})
	if err != nil {
		t.Fatal(err)
	}
	m, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Config.Official, m.Config.Salt, m.Config.Delays, m.Config.DelayScale, m.Config.Stream = true, true, true, 1, true
	m.Config.Profile = "qwen3.6-35b-a3b"
	if total := sumCounts(m.Counts); total != n {
		t.Fatalf("manifest counts %v, %d rows written", m.Counts, n)
	}
	if edit != nil {
		edit(&m)
	}
	if err := runlog.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

func sweReport(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDeriveFromRuns(t *testing.T) {
	f := newDeriveFixture(t, nil)
	runs := []string{f.run(t, "r1", 0.95, 0, nil), f.run(t, "r2", 0.85, 0, nil), f.run(t, "r3", 0.75, 0, nil)}
	swe := []string{
		sweReport(t, f.dir, "swe1.json", `{"submitted_instances": 200, "resolved_instances": 144}`),
		sweReport(t, f.dir, "swe2.json", `{"submitted_instances": 200, "resolved_instances": 142}`),
	}
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	r, err := DeriveRuleset(context.Background(), DeriveOptions{Runs: runs, Counter: lenOSL{}, SWEBench: swe, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	// The runs scored one by one, as `agentrace score` scores them.
	var acc, osl []float64
	for _, p := range runs {
		s, err := ScoreRun(context.Background(), Options{Run: p, Counter: lenOSL{}})
		if err != nil {
			t.Fatal(err)
		}
		acc, osl = append(acc, s.Score), append(osl, s.OSL.Mean)
	}
	mean := func(v []float64) float64 { return (v[0] + v[1] + v[2]) / 3 }
	sd := func(v []float64) float64 {
		m, ss := mean(v), 0.0
		for _, x := range v {
			ss += (x - m) * (x - m)
		}
		return math.Sqrt(ss / 2)
	}
	d := r.Derivation
	if d == nil || d.Provenance == nil || len(d.Provenance.Runs) != 3 {
		t.Fatalf("derivation %+v", d)
	}
	if acc[0] == acc[2] {
		t.Fatalf("the runs' accuracies do not differ: %v", acc)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	ia, o := d.Means.InlineAccuracy, d.Means.OSL
	if !near(ia.Mean, mean(acc)) || ia.N != 3 || !near(*ia.StdDev, sd(acc)) || *ia.Min != min(acc[0], acc[1], acc[2]) || *ia.Max != max(acc[0], acc[1], acc[2]) {
		t.Errorf("inline accuracy spread %+v, want mean %v sd %v of %v", ia, mean(acc), sd(acc), acc)
	}
	if !near(o.Mean, mean(osl)) || !near(*o.StdDev, sd(osl)) {
		t.Errorf("OSL spread %+v, want mean %v of %v", o, mean(osl), osl)
	}
	if s := d.Means.SWEBench; s == nil || !near(s.Mean, 0.715) || *s.Min != 0.71 || *s.Max != 0.72 {
		t.Errorf("SWE-bench spread %+v", d.Means.SWEBench)
	}
	// The default rule (the default ruleset's), by hand.
	wantAcc := math.Floor(0.99*mean(acc)*1e4+1e-9) / 1e4
	wantOSL := [2]float64{math.Floor(0.9*mean(osl) + 1e-9), math.Ceil(1.1*mean(osl) - 1e-9)}
	wantSWE := math.Floor((0.715-1.645*math.Sqrt(0.715*0.285/800))/0.005+1e-9) * 0.005
	if !near(r.InlineAccuracyMin, wantAcc) || r.OSLWindow != wantOSL || !near(r.SWEBenchMin, wantSWE) {
		t.Errorf("thresholds %v %v %v, want %v %v %v", r.InlineAccuracyMin, r.OSLWindow, r.SWEBenchMin, wantAcc, wantOSL, wantSWE)
	}
	p := d.Provenance
	if p.DatasetHash != f.d.Manifest.ContentHash || !strings.HasPrefix(p.Tokenizer, "len/4 (") || p.DerivedAt != "2026-12-01T09:00:00Z" ||
		p.ToolVersion != schemas.ToolVersion || p.Base != rulesets.Default || len(p.SWEBench) != 2 || p.SWEBench[0].SHA256 == "" ||
		p.Runs[0].ScoredTurns == 0 || p.Runs[0].OSLSource != "tokenizer:len/4" {
		t.Errorf("provenance %+v", p)
	}
	if r.Name != "derived-2026-12-01-qwen3.6-35b-a3b" || r.Model != "Qwen/Qwen3.6-35B-A3B" || !r.Tentative || r.Date != "2026-12-01" ||
		!r.MatchesModel("Qwen/Qwen3.6-35B-A3B") {
		t.Errorf("ruleset %s %s tentative %v date %s", r.Name, r.Model, r.Tentative, r.Date)
	}

	// Written, loaded back (re-derived on load), used to score, replaced only with
	// --overwrite, never over an input.
	out := filepath.Join(f.dir, "derived.json")
	if err := WriteRuleset(out, r, false, runs...); err != nil {
		t.Fatal(err)
	}
	back, err := rulesets.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if back.InlineAccuracyMin != r.InlineAccuracyMin || back.OSLWindow != r.OSLWindow || back.Derivation.Means.OSL.N != 3 {
		t.Errorf("loaded back: %+v", back)
	}
	if s, err := ScoreRun(context.Background(), Options{Run: runs[0], Counter: lenOSL{}, Ruleset: out}); err != nil || s.Verdict.Ruleset != r.Name {
		t.Errorf("score with the derived ruleset: %v %+v", err, s)
	}
	if err := WriteRuleset(out, r, false); !errors.Is(err, outguard.ErrExists) {
		t.Errorf("second write without overwrite: %v", err)
	}
	if err := WriteRuleset(out, r, true); err != nil {
		t.Errorf("overwrite: %v", err)
	}
	if err := WriteRuleset(swe[0], r, true, swe...); !errors.Is(err, outguard.ErrOverlap) {
		t.Errorf("over an input: %v", err)
	}
	if err := WriteRuleset(filepath.Join(runs[0], "x.json"), r, false, runs...); !errors.Is(err, outguard.ErrOverlap) {
		t.Errorf("inside a run: %v", err)
	}
	plain := filepath.Join(f.dir, "plain.json")
	os.WriteFile(plain, []byte(`{"name": "mine"}`), 0o644)
	if err := WriteRuleset(plain, r, true); !errors.Is(err, outguard.ErrNotOurs) {
		t.Errorf("over a file agentrace did not derive: %v", err)
	}

	// A SWE-bench threshold kept rather than derived.
	keep := 0.69
	r2, err := DeriveRuleset(context.Background(), DeriveOptions{Runs: runs[:1], Counter: lenOSL{}, SWEBenchMin: &keep, Final: true, Name: "mine"})
	if err != nil || r2.SWEBenchMin != 0.69 || !r2.Derivation.Provenance.SWEBenchGiven || r2.Tentative || r2.Name != "mine" ||
		r2.Derivation.Means.InlineAccuracy.StdDev != nil {
		t.Errorf("kept SWE-bench threshold: %v %+v", err, r2)
	}
}

func TestDeriveRefusals(t *testing.T) {
	f := newDeriveFixture(t, nil)
	good := f.run(t, "good", 0.9, 0, nil)
	swe := sweReport(t, f.dir, "swe.json", `{"submitted_instances": 200, "resolved_instances": 144}`)
	other := newDeriveFixture(t, func(s string) string {
		return strings.Replace(s, "My card was charged twice.", "My card was charged three times.", 1)
	})
	tests := []struct {
		name string
		runs []string
		opts func(o *DeriveOptions)
		want string
	}{
		{"unofficial", []string{good, f.run(t, "unofficial", 0.9, 0, func(m *schemas.RunManifest) {
			m.Config.Official, m.Config.NonOfficial = false, []string{"salting off (--no-salt)"}
		})}, nil, `not an official run: salting off (--no-salt)`},
		{"interrupted", []string{f.run(t, "interrupted", 0.9, 0, func(m *schemas.RunManifest) { m.State = schemas.RunInterrupted })}, nil,
			`incomplete: its state is "interrupted"`},
		{"not issued", []string{f.run(t, "notissued", 0.9, 0, func(m *schemas.RunManifest) { m.Counts["not_issued"] = 3 })}, nil,
			"incomplete: turns 3 not_issued"},
		{"failures", []string{f.run(t, "failures", 0.9, 0.3, nil)}, nil, "issued turns have no output"},
		{"model", []string{good, f.run(t, "model", 0.9, 0, func(m *schemas.RunManifest) { m.Config.Model = "moonshotai/Kimi-K3" })}, nil,
			`runs differ in model: "` + good + `" has "Qwen/Qwen3.6-35B-A3B", "` + filepath.Join(f.dir, "model") + `" has "moonshotai/Kimi-K3"`},
		{"profile", []string{good, f.run(t, "profile", 0.9, 0, func(m *schemas.RunManifest) { m.Config.Profile = "kimi-k3" })}, nil,
			`runs differ in sampling settings`},
		{"dataset", []string{good, other.run(t, "otherds", 0.9, 0, nil)}, nil,
			"runs differ in dataset: \"" + good + "\" has dataset " + f.d.Manifest.ContentHash[:12] + ", \"" + filepath.Join(other.dir, "otherds") +
				"\" has dataset " + other.d.Manifest.ContentHash[:12]},
		{"dataset hash", []string{func() string {
			p := f.run(t, "hash", 0.9, 0, nil)
			m, _ := runlog.ReadManifest(p)
			m.DatasetHash = strings.Repeat("ab", 32)
			runlog.WriteManifest(p, m)
			return p
		}()}, nil, "it was replayed from dataset abababababab"},
		{"no tokenizer", []string{good}, func(o *DeriveOptions) { o.Counter = nil }, "server's usage counts, which are not official: give the reference tokenizer"},
		{"incomplete SWE-bench", []string{good}, func(o *DeriveOptions) {
			o.SWEBench = []string{sweReport(t, f.dir, "swe-part.json", `{"submitted_instances": 150, "resolved_instances": 100}`)}
		}, "is incomplete: 150 of 200 instances submitted"},
		{"no SWE-bench", []string{good}, func(o *DeriveOptions) { o.SWEBench = nil }, "no SWE-bench result"},
		{"bad rule", []string{good}, func(o *DeriveOptions) { o.EditRule = func(r *rulesets.DerivationRule) { r.OSLLow.Round = "sideways" } }, `round "sideways"`},
		{"no runs", nil, nil, "no run given"},
		{"not a run", []string{f.dir + "/ds"}, nil, "run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DeriveOptions{Runs: tt.runs, Counter: lenOSL{}, SWEBench: []string{swe}}
			if tt.opts != nil {
				tt.opts(&o)
			}
			_, err := DeriveRuleset(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
	// Failures are accepted on request.
	if _, err := DeriveRuleset(context.Background(), DeriveOptions{Runs: []string{filepath.Join(f.dir, "failures")}, Counter: lenOSL{},
		SWEBench: []string{swe}, AllowFailures: true}); err != nil {
		t.Errorf("--allow-failures: %v", err)
	}
	// Runs scored under different rulesets.
	a, b := f.run(t, "ra", 0.9, 0, nil), f.run(t, "rb", 0.9, 0, nil)
	for dir, rs := range map[string]string{a: "checker-2026-10-qwen3.6", b: "readme-2026-08-qwen3.6"} {
		s, err := ScoreRun(context.Background(), Options{Run: dir, Counter: lenOSL{}, Ruleset: rs})
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteScores(context.Background(), dir, s); err != nil {
			t.Fatal(err)
		}
	}
	_, err := DeriveRuleset(context.Background(), DeriveOptions{Runs: []string{a, b}, Counter: lenOSL{}, SWEBench: []string{swe}})
	if err == nil || !strings.Contains(err.Error(), "runs differ in ruleset: \""+a+"\" has ruleset checker-2026-10-qwen3.6") {
		t.Errorf("rulesets: %v", err)
	}
}

// A reference client run folder: official and complete only when its config and
// result summary say so; its OSL comes from the summary without a tokenizer.
func TestDeriveReferenceRun(t *testing.T) {
	src := filepath.Join(testenv.RepoRoot(t), "testdata", "reference-run")
	dir := filepath.Join(t.TempDir(), "ref")
	if err := os.MkdirAll(filepath.Join(dir, "performance"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"dataset.jsonl", "events.jsonl"} {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	cfg, _ := os.ReadFile(filepath.Join(src, "config.yaml"))
	os.WriteFile(filepath.Join(dir, "config.yaml"), cfg, 0o644)
	swe := sweReport(t, filepath.Dir(dir), "swe.json", `{"submitted_instances": 200, "resolved_instances": 144}`)
	derive := func(o DeriveOptions) error {
		o.Runs, o.SWEBench = []string{dir}, []string{swe}
		_, err := DeriveRuleset(context.Background(), o)
		return err
	}
	if err := derive(DeriveOptions{}); err == nil || !strings.Contains(err.Error(), "not an official run: ") || !strings.Contains(err.Error(), "inter-turn delays off") {
		t.Errorf("config without delays: %v", err)
	}
	official := strings.Replace(string(cfg), "enable_salt: true", "enable_salt: true\n      inject_tool_delay: true", 1)
	official = strings.Replace(official, "num_trajectories_to_issue: 6", "num_trajectories_to_issue: 8", 1)
	os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(official), 0o644)
	if err := derive(DeriveOptions{}); err == nil || !strings.Contains(err.Error(), "cannot tell whether it completed") {
		t.Errorf("no result summary: %v", err)
	}
	summary := filepath.Join(dir, "performance", "result_summary.json")
	os.WriteFile(summary, []byte(`{"state": "interrupted", "output_sequence_lengths_full_run": {"avg": 401.5, "total": 4015}}`), 0o644)
	if err := derive(DeriveOptions{}); err == nil || !strings.Contains(err.Error(), `incomplete: its state is "interrupted"`) {
		t.Errorf("interrupted: %v", err)
	}
	os.WriteFile(summary, []byte(`{"state": "complete", "n_samples_completed": 10, "output_sequence_lengths_full_run": {"avg": 401.5, "total": 4015}}`), 0o644)
	if err := derive(DeriveOptions{}); err == nil || !strings.Contains(err.Error(), "have no output") {
		t.Errorf("a failed turn: %v", err)
	}
	r, err := DeriveRuleset(context.Background(), DeriveOptions{Runs: []string{dir}, SWEBench: []string{swe}, AllowFailures: true})
	if err != nil {
		t.Fatal(err)
	}
	run := r.Derivation.Provenance.Runs[0]
	if run.Kind != KindReference || run.InlineAccuracy != 0.6212 || run.OSLMean != 401.5 || run.OSLSource != OSLSourceSummary {
		t.Errorf("reference run %+v", run)
	}
	if r.OSLWindow != [2]float64{361, 442} { // 0.9 x 401.5 = 361.35 down, 1.1 x 401.5 = 441.65 up
		t.Errorf("OSL window %v", r.OSLWindow)
	}
	// Trajectories not a multiple of the dataset's 4 conversations.
	os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(strings.Replace(official, "num_trajectories_to_issue: 8", "num_trajectories_to_issue: 5", 1)), 0o644)
	if err := derive(DeriveOptions{AllowFailures: true}); err == nil || !strings.Contains(err.Error(), "budget of 5 trajectories is not a positive multiple of the dataset size 4") {
		t.Errorf("budget: %v", err)
	}
}

// Means given directly: every embedded ruleset with a derivation re-derives from
// its own means through the same path the command takes.
func TestDeriveFromMeans(t *testing.T) {
	for _, p := range scoretest.CheckerTargets {
		m := rulesets.ReferenceMeans{InlineAccuracy: rulesets.Spread{Mean: p.Inline}, OSL: rulesets.Spread{Mean: p.OSL}, SWEBench: &rulesets.Spread{Mean: p.SWE}}
		r, err := DeriveRuleset(context.Background(), DeriveOptions{Means: &m, Base: p.Ruleset})
		if err != nil {
			t.Fatal(err)
		}
		if r.InlineAccuracyMin != p.InlineMin || r.OSLWindow != p.OSLWindow || r.SWEBenchMin != p.SWEMin {
			t.Errorf("%s: derived %v %v %v", p.Ruleset, r.InlineAccuracyMin, r.OSLWindow, r.SWEBenchMin)
		}
		base, _ := rulesets.Load(p.Ruleset)
		if r.Model != base.Model || !r.MatchesModel(base.Model) || r.Derivation.Provenance.Base != p.Ruleset ||
			r.RegionForm() != base.RegionForm() || strings.Join(r.ModelFragments, ",") != strings.Join(base.ModelFragments, ",") {
			t.Errorf("%s: model %s, region form %s, fragments %v", p.Ruleset, r.Model, r.RegionForm(), r.ModelFragments)
		}
	}
	// Another model than the base's: its own pattern, none of the base's matching.
	m := rulesets.ReferenceMeans{InlineAccuracy: rulesets.Spread{Mean: 0.6}, OSL: rulesets.Spread{Mean: 500}, SWEBench: &rulesets.Spread{Mean: 0.8}}
	r, err := DeriveRuleset(context.Background(), DeriveOptions{Means: &m, Base: "checker-2026-10-qwen3.6", Model: "acme/Foo-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.MatchesModel("acme/Foo-1") || !r.MatchesModel("foo-1") || r.MatchesModel("Qwen/Qwen3.6-35B-A3B") || r.MatchesModel("acme/Foo-12") {
		t.Errorf("patterns %v fragments %v", r.ModelPatterns, r.ModelFragments)
	}
}

func sumCounts(c map[string]int) int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// TestDeriveDeepSeekGivesTheRulesThresholds: deriving the DeepSeek-V4.1-Flash
// ruleset (whose published thresholds do not follow its rule) from its means
// with its rule gives the rule's thresholds, and a note saying so rather than
// passing them for the published.
func TestDeriveDeepSeekGivesTheRulesThresholds(t *testing.T) {
	const name = "checker-2026-11-deepseek-v4.1-flash"
	rs, err := rulesets.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	d := rs.Derivation
	m := d.Means
	got, err := DeriveRuleset(context.Background(), DeriveOptions{Base: name, Means: &m})
	if err != nil {
		t.Fatal(err)
	}
	if got.InlineAccuracyMin != 0.5262 || got.OSLWindow != [2]float64{793, 971} || got.SWEBenchMin != 0.965 || !got.Derivation.Follows() ||
		!strings.Contains(got.Derivation.Note, "published thresholds do not follow this rule") {
		t.Errorf("derived %+v note %q", got, got.Derivation.Note)
	}
}
