// Package tour is `agentrace demo`: the whole pipeline end to end on synthetic
// traces, against the embedded simulated endpoint, with nothing but Go.
//
// It synthesizes a small dataset with both domains (datasets/synth), ingests it
// (ingest) and prints its statistics, starts the simulated server (simserver) on a
// free loopback port, sweeps the concurrencies (replay), scores every point
// (score), builds the report (report), and predicts the same points in virtual
// time with more trajectories (simulate). Since report is the last stage, tour
// comes after it and may import every stage; nothing imports tour but the command.
//
// The server runs only while Run does: it is shut down when Run returns, also when
// ctx is cancelled (Ctrl-C).
package tour

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/replay"
	"github.com/agentrace/agentrace/report"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/agentrace/agentrace/simserver"
	"github.com/agentrace/agentrace/simulate"
	"github.com/agentrace/agentrace/submission"
	"github.com/agentrace/agentrace/tokens"
)

// Defaults of Options' zero values.
const (
	DefaultCodingScale   = 0.01
	DefaultWorkflowScale = 0.02
	DefaultSeed          = 1
	DefaultSpeedup       = 60
	DefaultFidelity      = 0.9
	DefaultProfile       = "qwen3.6-35b-a3b" // sampling profile of the requests
)

// DefaultConcurrencies are the sweep's points: seven, enough for an agentic curve
// (rules §5.3).
func DefaultConcurrencies() []int { return []int{1, 2, 4, 8, 16, 32, 64} }

// Options configure a tour. The zero value of every field is its default.
type Options struct {
	// Out is the folder everything is written to: traces.jsonl, dataset/,
	// runs/c<N>/ and report/. Earlier tour outputs in it are replaced.
	Out string
	// CodingScale and WorkflowScale are synth's per-domain scales (defaults 0.01
	// and 0.02: one coding trajectory of about 140 turns and 10 workflow ones of
	// about 9); Seed is synth's seed.
	CodingScale, WorkflowScale float64
	Seed                       uint64
	// Concurrencies are the sweep's points (default DefaultConcurrencies).
	Concurrencies []int
	// Hardware names the simulated server's hardware and model (default
	// simserver.DefaultHardware); Speedup divides its modelled durations (default 60),
	// and the inter-turn delays are scaled by 1/Speedup too, so the tour runs as the
	// real thing would, Speedup times faster.
	Hardware string
	Speedup  float64
	// Fidelity is the probability the server answers with the recorded assistant
	// message (default 0.9), so inline accuracy passes.
	Fidelity float64
	// Tokenizer is the tokenizer (a folder or a Hugging Face model id in the local
	// cache) the token counts are made with; "" takes .cache/tokenizers/qwen3
	// (`make tokenizers`: Qwen3's tokenizer, an offline stand-in for Qwen3.6's,
	// whose counts are marked unofficial) and, when absent, the server's usage
	// (unofficial too).
	Tokenizer string
	// Progress receives the tour's progress and closing table (nil: discarded);
	// TTY redraws progress lines in place.
	Progress io.Writer
	TTY      bool
	// Events receives the notes and warnings of the tour and of the stages it
	// runs (nil drops them); their progress goes to Progress.
	Events notice.Sink
	// Force, when it closes (a second interrupt), cuts the sweep's turns in
	// flight at once (replay.Options.Force).
	Force <-chan struct{}
}

// Point is one line of the closing table.
type Point struct {
	Concurrency    int
	SystemTPS      float64 // output tokens/s over the performance window
	Interactivity  float64 // e2e_avg_interactivity, tokens/s per turn
	Accuracy       float64 // inline accuracy, 0..1
	OSLMean        float64 // per-turn mean OSL over the full run
	OSLUnofficial  bool
	Pass           bool // every gate of the ruleset passed
	FailedGates    []string
	RunDir, Errors string
}

// Result is what a tour produced.
type Result struct {
	Points []Point
	// Verdict is the report's verdict (report.Report.Verdict: every curve check
	// passed); FailedChecks are the checks that failed, as report.html lists them.
	Verdict      bool
	FailedChecks []curve.Check
	ReportHTML   string
	Ruleset      string
	Tokenizer    string // "" when the server's usage counted output tokens
	// TokenizerUse says which tokenizer counted, with its digests, and whether it
	// is a stand-in for the model's own (nil without a tokenizer).
	TokenizerUse *schemas.TokenizerUse
	// Endpoint is the simulated server's URL; it no longer answers once Run has
	// returned. Speedup is the server's speedup.
	Endpoint string
	Speedup  float64
	// Predicted are the same dataset's points in virtual time (package simulate),
	// with PredictPasses trajectories per slot: modelled figures over windows
	// long enough to mean something.
	Predicted []*simulate.Point
	Elapsed   time.Duration
}

// Run runs the tour. On an error after the server started, the Result so far comes
// back with it.
func Run(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	o = o.withDefaults()
	w := o.Progress
	if w == nil {
		w = io.Discard
	}
	if o.Out == "" {
		return nil, errors.New("demo: no output folder")
	}
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	// The folder is claimed for the tour's life (internal/outguard). An earlier
	// tour's output is replaced (the tour always overwrites its own), and only
	// what a tour writes there (Entries): the user's own files beside it stay,
	// and a file of the user's inside one of them (runs/, report/) makes it
	// refuse, naming the file. The earlier tour's entries are moved aside while
	// this one runs and put back when it fails or is interrupted; anything else
	// at o.Out is refused.
	claim, err := outguard.Take(outguard.Output{Path: o.Out, Kind: outguard.Demo, Overwrite: true,
		Entries: []string{"traces.jsonl", "dataset", "runs", "report"}}, o.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	defer claim.Release()
	t := &tour{o: o, w: w, res: &Result{}}

	// 1. Synthesize, ingest, show statistics.
	if err := t.makeDataset(ctx); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	// 2. Start the simulated endpoint on a free loopback port.
	stopSim, err := t.startSim(ctx)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	defer stopSim()
	// 3. Sweep.
	t.runsDir = filepath.Join(o.Out, "runs")
	runs, err := outguard.Take(outguard.Output{Path: t.runsDir, Kind: outguard.Sweep, Live: true})
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	defer runs.Release()
	if err := t.sweep(ctx); err != nil {
		return t.res, err
	}
	if err := runs.Commit(); err != nil {
		return t.res, fmt.Errorf("demo: %w", err)
	}
	// 4. Score each point, then report.
	if err := t.scorePoints(ctx); err != nil {
		return t.res, fmt.Errorf("demo: %w", err)
	}
	if err := t.report(ctx); err != nil {
		return t.res, fmt.Errorf("demo: %w", err)
	}
	// 5. The same dataset and hardware in virtual time.
	if err := t.predict(ctx); err != nil {
		return t.res, fmt.Errorf("demo: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return t.res, fmt.Errorf("demo: interrupted: %w", err)
	}
	if err := claim.Commit(); err != nil {
		return t.res, fmt.Errorf("demo: %w", err)
	}
	t.res.Elapsed = time.Since(start)
	fmt.Fprintln(w)
	WriteTable(w, t.res)
	return t.res, nil
}

// tour is one run of the demo: its options, where it prints, what it has made
// so far, and its result, filled step by step.
type tour struct {
	o   Options
	w   io.Writer
	res *Result

	dsDir, runsDir string
	d              *datasets.Dataset
	tokDir         string            // the tokenizer folder, "" when none
	tok            *tokens.Tokenizer // nil when none
	prof           simserver.Hardware
	sampling       *datasets.Profile // what simulate samples with
	endpoint       string
	scores         map[int]*schemas.Scores // by concurrency
}

// makeDataset synthesizes the traces, loads the tokenizer when there is one,
// ingests the traces and prints the dataset's statistics.
func (t *tour) makeDataset(ctx context.Context) error {
	o, w := t.o, t.w
	step(w, "1/5", "synthesize traces (coding scale %g, workflow scale %g, seed %d)", o.CodingScale, o.WorkflowScale, o.Seed)
	tracePath := filepath.Join(o.Out, "traces.jsonl")
	sum, err := synth.WriteFile(ctx, tracePath, synth.Options{Scale: 1, CodingScale: o.CodingScale, WorkflowScale: o.WorkflowScale, Seed: o.Seed})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "      %s: %d coding + %d workflow trajectories, %d client turns, %.1f MB\n",
		tracePath, sum.Coding, sum.Workflow, sum.ClientTurns(), float64(sum.Bytes)/1e6)

	t.tokDir = o.Tokenizer
	if t.tokDir == "" {
		if _, err := os.Stat(filepath.Join(".cache", "tokenizers", "qwen3", "tokenizer.json")); err == nil {
			t.tokDir = filepath.Join(".cache", "tokenizers", "qwen3")
		}
	}
	if t.tokDir != "" {
		if t.tok, err = tokens.Load(ctx, t.tokDir); err != nil {
			return err
		}
		t.res.Tokenizer = t.tok.Name()
	}

	t.dsDir = filepath.Join(o.Out, "dataset")
	step(w, "1/5", "ingest into %s", t.dsDir)
	if _, err := ingest.Run(ctx, ingest.Options{Out: t.dsDir, Inputs: []string{tracePath}, Overwrite: true}); err != nil {
		return err
	}
	if t.d, err = datasets.Open(ctx, t.dsDir); err != nil {
		return err
	}
	st, err := ingest.ComputeStats(ctx, t.d)
	if err != nil {
		return err
	}
	printStats(w, st)
	return nil
}

// startSim looks up the simulated server's hardware and the sampling profile,
// and starts the simulated endpoint on a free loopback port; stop stops it and
// waits for it to end.
func (t *tour) startSim(ctx context.Context) (stop func(), err error) {
	o := t.o
	if t.prof, err = simserver.LookupHardware(o.Hardware); err != nil {
		return nil, err
	}
	sp, err := datasets.LookupProfile(DefaultProfile)
	if err != nil {
		return nil, err
	}
	t.sampling = &sp
	// The server counts with its own pseudo-tokenizer: encoding every prompt with
	// the real one would cost more CPU than the rest of the tour.
	cfg := simserver.Config{Hardware: t.prof, Speedup: o.Speedup, Dataset: t.d, Fidelity: o.Fidelity, Seed: int64(o.Seed)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	t.endpoint = "http://" + ln.Addr().String()
	t.res.Endpoint, t.res.Speedup = t.endpoint, o.Speedup
	simCtx, stopSim := context.WithCancel(context.WithoutCancel(ctx))
	simDone := make(chan error, 1)
	go func() { simDone <- simserver.Serve(simCtx, ln, cfg) }()
	step(t.w, "2/5", "simulated endpoint %s: hardware %s, speedup %g, answers from the dataset at fidelity %g",
		t.endpoint, t.prof.Name, o.Speedup, o.Fidelity)
	return func() {
		stopSim()
		<-simDone
	}, nil
}

// sweep replays the dataset against the simulated endpoint at each concurrency,
// into runsDir/c<N>.
func (t *tour) sweep(ctx context.Context) error {
	o, w := t.o, t.w
	n := len(t.d.Conversations)
	for i, c := range o.Concurrencies {
		// Enough trajectories to keep c slots busy, as a whole number of passes over
		// the dataset (the rules want a multiple of the dataset size).
		budget := n * max(1, (c+n-1)/n)
		step(w, "3/5", "sweep point %d/%d: concurrency %d, %d trajectories", i+1, len(o.Concurrencies), c, budget)
		sumr, err := replay.Run(ctx, replay.Options{
			Dataset: t.dsDir, Data: t.d, Endpoint: t.endpoint, Out: filepath.Join(t.runsDir, fmt.Sprintf("c%d", c)), Overwrite: true,
			Profile: DefaultProfile, Concurrency: c, Trajectories: budget, DelayScale: 1 / o.Speedup,
			// Server usage counts output tokens when no tokenizer is at hand.
			StreamUsage:         t.tok == nil,
			EndpointDescription: "embedded sim (agentrace demo): hardware " + t.prof.Name + fmt.Sprintf(", speedup %g, fidelity %g", o.Speedup, o.Fidelity),
			Progress:            w, ProgressTTY: o.TTY, ProgressEvery: 5 * time.Second, Force: o.Force, Events: t.events(),
			// The sim's Prometheus metrics, scraped once a modelled second as replay's
			// default is on real hardware (not under 50 ms of the run's clock), so that
			// even the short windows of the high concurrencies hold several scrapes.
			Telemetry: replay.Telemetry{Metrics: true, MetricsInterval: metricsInterval(o.Speedup)},
		})
		if err != nil {
			return fmt.Errorf("demo: concurrency %d: %w", c, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("demo: stopped at concurrency %d: %w", c, ctx.Err())
		}
		// Without the server's usage (a tokenizer counts the tokens later) replay's
		// live count is of chunks, which may carry several tokens each.
		unit, count := "output tokens/s", "replay's live count"
		if sumr.ChunkCounted > 0 {
			unit, count = "output chunks/s", "replay's live count of chunks, as no server usage was asked for: a chunk may carry several tokens"
		}
		fmt.Fprintf(w, "      %d turns in %s (%s modelled), %.0f %s modelled over the whole run (%s; the table's system tokens/s is the rules': the performance window only)\n",
			sumr.Turns, sumr.Elapsed.Round(time.Millisecond), (time.Duration(float64(sumr.Elapsed) * o.Speedup)).Round(time.Second), sumr.TokensPerSecond()/o.Speedup, unit, count)
	}
	return nil
}

// metricsInterval is the time between two scrapes of the sim's metrics: one
// modelled second at the given speedup, at least 50 ms.
func metricsInterval(speedup float64) time.Duration {
	return max(time.Duration(float64(time.Second)/speedup), 50*time.Millisecond)
}

// scorePoints scores each point of the sweep and writes its scores.
func (t *tour) scorePoints(ctx context.Context) error {
	truth := score.NewTruth(t.d)
	// Without the tokenizer, score falls back to the server's usage counts and
	// marks the OSL gate unofficial.
	var counter score.OSLCounter
	if t.tok != nil {
		counter = t.tok
	}
	t.scores = map[int]*schemas.Scores{}
	for _, c := range t.o.Concurrencies {
		runDir := filepath.Join(t.runsDir, fmt.Sprintf("c%d", c))
		step(t.w, "4/5", "score %s", runDir)
		s, err := score.ScoreRun(ctx, score.Options{Run: runDir, Dataset: t.dsDir, Truth: truth, Counter: counter})
		if err != nil {
			return err
		}
		if err := score.WriteScores(ctx, runDir, s); err != nil {
			return err
		}
		t.scores[c] = s
		t.res.Ruleset = s.Verdict.Ruleset
	}
	return nil
}

// report writes the sweep's report and, in each run folder, what the reference
// client writes for its runs, and takes the verdict, the failed checks and the
// points into the result.
func (t *tour) report(ctx context.Context) error {
	o, w := t.o, t.w
	repDir := filepath.Join(o.Out, "report")
	step(w, "4/5", "report into %s", repDir)
	// service levels of a responsive agent (first token within 2 s, 30 tokens/s per
	// user) in modelled time, scaled to the simulated server's speed
	ro := report.Options{Out: repDir, Runs: []string{t.runsDir}} // no service levels: nobody gave any
	if t.tok != nil {
		ro.Tokenizer = t.tok
	}
	rep, err := report.Build(ctx, ro)
	if err != nil && ro.Tokenizer != nil && ctx.Err() == nil {
		// Keep the tour going with server usage counts, and say why.
		o.Events.Say(notice.Warning, "", "counting tokens with %s failed (%v); reporting with server usage counts instead", t.tok.Name(), err)
		ro.Tokenizer = nil
		rep, err = report.Build(ctx, ro)
	}
	if err != nil {
		return err
	}
	t.res.ReportHTML = filepath.Join(repDir, report.HTMLFile)
	// What the reference client writes for its runs, in each run folder (and the
	// sweep's sweep_summary.csv): `agentrace audit` reads them back.
	pubTok := ""
	if ro.Tokenizer != nil {
		pubTok = t.tokDir
	}
	for _, sys := range rep.Systems {
		if err := submission.PublishSystem(ctx, sys, t.runsDir, pubTok, nil); err != nil {
			return err
		}
	}
	t.res.Verdict = rep.Verdict()
	t.res.FailedChecks = rep.FailedChecks()
	for _, sys := range rep.Systems {
		for _, p := range sys.Points {
			t.res.Points = append(t.res.Points, t.point(p))
		}
	}
	return nil
}

// point is a reported point with its scores.
func (t *tour) point(p *curve.Point) Point {
	pt := Point{Concurrency: p.Concurrency, SystemTPS: float64(p.SystemTPS), Interactivity: float64(p.E2EAvgInteractivity), RunDir: p.RunDir}
	s := t.scores[p.Concurrency]
	if s == nil {
		return pt
	}
	pt.Accuracy = s.Score
	pt.Pass = s.Verdict.Pass
	for _, g := range s.Verdict.Gates {
		if !g.Pass {
			pt.FailedGates = append(pt.FailedGates, g.Name)
		}
	}
	if s.OSL != nil {
		pt.OSLMean, pt.OSLUnofficial = s.OSL.Mean, s.OSL.Unofficial
		if s.OSL.Tokenizer != nil && t.res.TokenizerUse == nil {
			t.res.TokenizerUse = s.OSL.Tokenizer
		}
	}
	return pt
}

// predict predicts each point in virtual time (the same dataset and hardware),
// with PredictPasses trajectories per slot so that every point's window holds
// most of its turns.
func (t *tour) predict(ctx context.Context) error {
	n := len(t.d.Conversations)
	for _, c := range t.o.Concurrencies {
		budget := n * max(1, (PredictPasses*c+n-1)/n)
		step(t.w, "5/5", "predict in virtual time (agentrace simulate): concurrency %d, %d trajectories", c, budget)
		pt, err := simulate.Run(ctx, simulate.Options{Hardware: t.prof, Data: t.d, Concurrency: c, Trajectories: budget,
			Fidelity: t.o.Fidelity, Seed: int64(t.o.Seed), Sampling: t.sampling})
		if err != nil {
			return err
		}
		t.res.Predicted = append(t.res.Predicted, pt)
	}
	return nil
}

// PredictPasses is how many trajectories per slot the virtual-time prediction
// runs (rounded up to whole passes over the dataset).
const PredictPasses = 4

func (o Options) withDefaults() Options {
	if o.CodingScale == 0 {
		o.CodingScale = DefaultCodingScale
	}
	if o.WorkflowScale == 0 {
		o.WorkflowScale = DefaultWorkflowScale
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if len(o.Concurrencies) == 0 {
		o.Concurrencies = DefaultConcurrencies()
	}
	if o.Hardware == "" {
		o.Hardware = simserver.DefaultHardware
	}
	if o.Speedup == 0 {
		o.Speedup = DefaultSpeedup
	}
	if o.Fidelity == 0 {
		o.Fidelity = DefaultFidelity
	}
	return o
}

// check validates every option before anything is written: a bad value must
// not leave a half-made folder behind.
func (o Options) check() error {
	if err := replay.CheckConcurrencies(o.Concurrencies); err != nil {
		return fmt.Errorf("--concurrency: %w", err)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"--coding-scale", o.CodingScale}, {"--workflow-scale", o.WorkflowScale}, {"--speedup", o.Speedup}} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%s %v: must be a finite positive number", f.name, f.v)
		}
	}
	if !(o.Fidelity >= 0 && o.Fidelity <= 1) {
		return fmt.Errorf("--fidelity %v: must be a probability, 0 to 1", o.Fidelity)
	}
	if _, err := simserver.LookupHardware(o.Hardware); err != nil {
		return fmt.Errorf("simulated hardware: %w", err)
	}
	if o.Tokenizer != "" {
		if _, err := os.Stat(filepath.Join(o.Tokenizer, "tokenizer.json")); err != nil {
			return fmt.Errorf("--tokenizer %q: no tokenizer.json there (`make tokenizers` fetches the Qwen3 one)", o.Tokenizer)
		}
	}
	return nil
}

func step(w io.Writer, n, format string, args ...any) {
	fmt.Fprintf(w, "demo %s %s\n", n, fmt.Sprintf(format, args...))
}

func printStats(w io.Writer, st ingest.Stats) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "      \tdomain\ttrajectories\tclient turns\tturns/trajectory (median, max)\tlast-turn history (median)\ttotal delay\t\n")
	for _, s := range append(append([]ingest.DomainStats(nil), st.Domains...), st.Total) {
		fmt.Fprintf(tw, "      \t%s\t%d\t%d\t%.0f, %.0f\t%.0f KB\t%.0f s\t\n", s.Domain, s.Trajectories, s.ClientTurns,
			s.TurnsPerTrajectory.Median, s.TurnsPerTrajectory.Max, s.HistoryBytes.Median/1e3, s.Delay.Total)
	}
	tw.Flush()
}

// WriteTable prints the closing table: one line per point with its accuracy gates,
// then the report's verdict with the reason of every check that failed (the same
// verdict as report.html), then the report's path.
func WriteTable(w io.Writer, r *Result) {
	src := "tokenizer " + r.Tokenizer
	switch {
	case r.Tokenizer == "":
		src = "the server's usage counts: unofficial (give --tokenizer with the model's tokenizer, e.g. a Hugging Face model id in the local cache)"
	case r.TokenizerUse != nil && r.TokenizerUse.StandIn:
		src = fmt.Sprintf("tokenizer %s (%s sha256 %.12s): %s, so every token number below is unofficial", r.Tokenizer,
			r.TokenizerUse.File, r.TokenizerUse.TokenizerSHA256, schemas.StandInLabel)
	case r.TokenizerUse != nil:
		src = fmt.Sprintf("tokenizer %s (%s sha256 %.12s): the model's own", r.Tokenizer, r.TokenizerUse.File, r.TokenizerUse.TokenizerSHA256)
	}
	fmt.Fprintf(w, "ruleset %s; OSL counted with %s\n", r.Ruleset, src)
	// The runs' clock is the wall clock, on which the sim ran Speedup times faster
	// than modelled: the table states the modelled hardware's figures.
	speedup := r.Speedup
	if speedup <= 0 {
		speedup = 1
	}
	fmt.Fprintf(w, "the simulated server ran %gx faster than real time; tokens/s below are the modelled hardware's (report.html shows them first, the run's clock beside them)\n", speedup)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "concurrency\tsystem tokens/s\te2e interactivity (tok/s)\tinline accuracy\tOSL mean\taccuracy gates\t\n")
	for _, p := range r.Points {
		v := "pass"
		if !p.Pass {
			v = "fail: " + strings.Join(p.FailedGates, ", ")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.2f%%\t%.1f\t%s\t\n", p.Concurrency, num(p.SystemTPS/speedup), num(p.Interactivity/speedup), 100*p.Accuracy, p.OSLMean, v)
	}
	tw.Flush()
	if r.Verdict {
		fmt.Fprintf(w, "\nreport verdict: PASS (every curve check passed)\n")
	} else {
		fmt.Fprintf(w, "\nreport verdict: FAIL (%s failed, as report.html shows)\n", english.Count(len(r.FailedChecks), "curve check", "curve checks"))
		for _, c := range r.FailedChecks {
			fmt.Fprintf(w, "  - %s: %s\n", c.Name, english.Shorten(c.Reason, 200))
		}
		fmt.Fprintf(w, "  (a demo is never official: its dataset is tiny and its delays are scaled; it shows the pipeline, not a result)\n")
	}
	if len(r.Predicted) > 0 {
		fmt.Fprintf(w, "\npredicted in virtual time (agentrace simulate, the same model and dataset, %d trajectories per slot):\n", PredictPasses)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "concurrency\tsystem tokens/s\te2e interactivity (tok/s)\tTTFT p50 ms\tTPOT p50 ms\twindow turns\twindow s\t\n")
		for _, p := range r.Predicted {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.2f\t%d of %d\t%s\t\n", p.Concurrency, num(float64(p.SystemTPS)), num(float64(p.E2EAvgInteractivity)),
				num(float64(p.TTFTP50Ms)), float64(p.TPOTP50Ms), p.WindowTurns, p.Turns, num(float64(p.WindowDurationS)))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\ndemo finished in %s\nreport: %s\n", r.Elapsed.Round(time.Second), r.ReportHTML)
}

// num formats x with one decimal and thousands separators.
func num(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return english.Thousands(x, 1)
}

// events is the sink of a stage the tour runs: notes and warnings go to the
// tour's caller (Options.Events), progress to the tour's progress as plain lines.
func (t *tour) events() notice.Sink {
	return func(e notice.Event) {
		if e.Kind == notice.Progress {
			fmt.Fprintln(t.w, e.Text)
			return
		}
		t.o.Events.Say(e.Kind, e.Option, "%s", e.Text)
	}
}
