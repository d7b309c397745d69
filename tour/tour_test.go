package tour

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
)

// signalWriter collects progress and closes hit the first time a line contains
// want.
type signalWriter struct {
	mu   sync.Mutex
	b    strings.Builder
	want string
	hit  chan struct{}
	once sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if w.want != "" && strings.Contains(w.b.String(), w.want) {
		w.once.Do(func() { close(w.hit) })
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// interruptInSweep runs a real-time tour into out and cancels it (as Ctrl-C does)
// settle after its sweep starts; Run must return within 45 s of that.
func interruptInSweep(t *testing.T, out string, settle time.Duration) (*Result, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &signalWriter{want: "sweep point 1/", hit: make(chan struct{})}
	done := make(chan struct{})
	var res *Result
	var err error
	go func() {
		defer close(done)
		res, err = Run(ctx, Options{Out: out, CodingScale: 0.01, WorkflowScale: 0.01, Concurrencies: []int{1, 2, 4}, Speedup: 1, Progress: w})
	}()
	select {
	case <-w.hit:
	case <-done:
		t.Fatalf("the tour ended before its sweep: %v\n%s", err, w)
	case <-time.After(90 * time.Second):
		t.Fatal("the sweep did not start within 90 s")
	}
	time.Sleep(settle)
	cancel()
	select {
	case <-done:
	case <-time.After(45 * time.Second):
		t.Fatal("Run did not return within 45 s of the interrupt")
	}
	return res, err
}

func serverGone(t *testing.T, endpoint string) {
	t.Helper()
	addr := strings.TrimPrefix(endpoint, "http://")
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		t.Errorf("the simulated server at %s still accepts connections after Run returned", endpoint)
	}
}

// TestRun runs a small tour end to end: every stage writes its output, every point
// is scored with a passing inline accuracy, the table is printed, and the server is
// gone afterwards.
func TestRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	w := &signalWriter{}
	res, err := Run(context.Background(), Options{Out: out, CodingScale: 0.01, WorkflowScale: 0.01,
		Concurrencies: []int{1, 4}, Speedup: 400, Progress: w})
	if err != nil {
		t.Fatalf("%v\n%s", err, w)
	}
	if len(res.Points) != 2 || res.Points[0].Concurrency != 1 || res.Points[1].Concurrency != 4 {
		t.Fatalf("points %+v", res.Points)
	}
	// Two throughput figures, each saying what it counts.
	if !strings.Contains(w.String(), "output tokens/s modelled over the whole run (replay's live count; the table's system tokens/s is the rules': the performance window only)") {
		t.Errorf("the demo's per-run throughput does not say how it differs from the table's:\n%s", w)
	}
	for _, p := range res.Points {
		if p.Accuracy < 0.5586 || !(p.SystemTPS > 0) || !(p.Interactivity > 0) || p.OSLMean < 100 {
			t.Errorf("point %+v: want passing accuracy, positive throughput and a plausible OSL", p)
		}
		for _, f := range []string{schemas.TurnLogFile, schemas.RunManifestFile, schemas.ScoresFile, schemas.ScoresTable} {
			if _, err := os.Stat(filepath.Join(p.RunDir, f)); err != nil {
				t.Errorf("point c%d: %v", p.Concurrency, err)
			}
		}
		// The sim's metrics are scraped once a modelled second (50 ms at the
		// least), not once a second of the run's clock, which the speedup shrinks
		// to a scrape or two a run.
		var m schemas.RunManifest
		if raw, err := os.ReadFile(filepath.Join(p.RunDir, schemas.RunManifestFile)); err != nil {
			t.Error(err)
		} else if err := json.Unmarshal(raw, &m); err != nil {
			t.Error(err)
		} else if m.ServerMetrics == nil || m.ServerMetrics.IntervalSeconds != 0.05 {
			t.Errorf("point c%d: server metrics %+v, want scraped every 50 ms", p.Concurrency, m.ServerMetrics)
		}
	}
	for _, f := range []string{"traces.jsonl", "dataset/" + schemas.TurnsFile, "report/report.html"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if res.ReportHTML != filepath.Join(out, "report", "report.html") {
		t.Errorf("report path %q", res.ReportHTML)
	}
	log := w.String()
	// the closing table tells the report's verdict: a demo is never official
	if res.Verdict || len(res.FailedChecks) == 0 {
		t.Errorf("verdict %t, failed checks %v: a two-point demo on a tiny dataset must fail the curve checks", res.Verdict, res.FailedChecks)
	}
	for _, want := range []string{"demo 1/5", "demo 2/5", "demo 3/5", "demo 4/5", "demo 5/5", "inline accuracy", "report verdict: FAIL",
		"predicted in virtual time",
		"  - at least 7 points", "official dataset size", "report: " + res.ReportHTML} {
		if !strings.Contains(log, want) {
			t.Errorf("progress lacks %q:\n%s", want, log)
		}
	}
	if len(res.Predicted) != 2 || res.Predicted[1].Concurrency != 4 || !(res.Predicted[1].SystemTPS > res.Predicted[0].SystemTPS) {
		t.Errorf("predicted points %+v: want c=1 and c=4, throughput rising", res.Predicted)
	}
	serverGone(t, res.Endpoint)

	// A second tour into the same folder replaces the first one's output.
	if _, err := Run(context.Background(), Options{Out: out, CodingScale: 0.01, WorkflowScale: 0.01,
		Concurrencies: []int{2}, Speedup: 400}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "runs", "c4")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the earlier tour's c4 run is still there: %v", err)
	}
}

// TestRunRefusesForeignFolder keeps Run from deleting a folder it did not write.
func TestRunRefusesForeignFolder(t *testing.T) {
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "thesis.tex"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Options{Out: out}); !errors.Is(err, outguard.ErrNotOurs) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(out, "thesis.tex")); err != nil {
		t.Fatal(err)
	}
}

// TestInterrupt cancels the tour during its sweep (as Ctrl-C does): Run returns
// promptly with the cancellation, and the server is shut down.
func TestInterrupt(t *testing.T) {
	res, err := interruptInSweep(t, filepath.Join(t.TempDir(), "demo"), 200*time.Millisecond)
	if !errors.Is(err, context.Canceled) && (err == nil || !strings.Contains(err.Error(), "interrupt")) {
		t.Errorf("err = %v, want the interruption", err)
	}
	if res == nil || res.Endpoint == "" {
		t.Fatalf("no endpoint in the result %+v", res)
	}
	serverGone(t, res.Endpoint)
}

// TestRunOwnsOnlyWhatItWrote: a second tour into a folder where the user wrote
// files of their own (what "After the demo" writes there) replaces only the
// tour's entries: the user's files survive byte for byte. A file of the user's
// inside one of the tour's folders makes it refuse, naming the file.
func TestRunOwnsOnlyWhatItWrote(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "demo")
	opts := Options{Out: out, CodingScale: 0.01, WorkflowScale: 0.01, Concurrencies: []int{2}, Speedup: 400}
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	mine := map[string]string{"request.json": `{"mine":1}`, "turns-c8.jsonl": "{}\n", "notes/thesis.tex": "x"}
	for n, s := range mine {
		p := filepath.Join(out, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Run(context.Background(), opts); err != nil {
		t.Fatalf("second tour: %v", err)
	}
	for n, s := range mine {
		if b, err := os.ReadFile(filepath.Join(out, n)); err != nil || string(b) != s {
			t.Errorf("the user's %s: %q, %v", n, b, err)
		}
	}
	inside := filepath.Join(out, "report", "my-notes.md")
	if err := os.WriteFile(inside, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := testenv.Snapshot(t, root)
	if _, err := Run(context.Background(), opts); !errors.Is(err, outguard.ErrNotOurs) || !strings.Contains(err.Error(), "my-notes.md") {
		t.Fatalf("a tour over report/ holding the user's my-notes.md: %v", err)
	}
	testenv.SameFiles(t, root, before)
}

// TestInterruptKeepsTheEarlierTour: a second tour interrupted during its sweep
// (Ctrl-C, after it wrote its traces and dataset) leaves the first tour's report, runs, dataset and traces as they
// were, byte for byte, and nothing beside them.
func TestInterruptKeepsTheEarlierTour(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "demo")
	if _, err := Run(context.Background(), Options{Out: out, CodingScale: 0.01, WorkflowScale: 0.01, Concurrencies: []int{2}, Speedup: 400}); err != nil {
		t.Fatal(err)
	}
	before := testenv.Snapshot(t, root)
	if _, err := interruptInSweep(t, out, 500*time.Millisecond); err == nil {
		t.Fatal("an interrupted tour returned no error")
	}
	testenv.SameFiles(t, root, before)
}

// TestWriteTableTokenizer: the closing table names the tokenizer that counted
// and its digest, and says when it is a stand-in for the model's own.
func TestWriteTableTokenizer(t *testing.T) {
	digest := strings.Repeat("ab", 32)
	for _, tt := range []struct {
		name string
		res  Result
		want []string
	}{
		{"stand-in", Result{Tokenizer: "qwen3", TokenizerUse: &schemas.TokenizerUse{Name: "qwen3", File: "tokenizer.json", TokenizerSHA256: digest, StandIn: true}},
			[]string{"tokenizer qwen3 (tokenizer.json sha256 abababababab)", schemas.StandInLabel, "unofficial"}},
		{"the model's own", Result{Tokenizer: "Qwen/Qwen3.6-35B-A3B", TokenizerUse: &schemas.TokenizerUse{File: "tokenizer.json", TokenizerSHA256: digest}},
			[]string{"tokenizer Qwen/Qwen3.6-35B-A3B (tokenizer.json sha256 abababababab): the model's own"}},
		{"server usage", Result{}, []string{"the server's usage counts: unofficial"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			WriteTable(&b, &tt.res)
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("table lacks %q:\n%s", w, b.String())
				}
			}
			if tt.res.TokenizerUse != nil && !tt.res.TokenizerUse.StandIn && strings.Contains(b.String(), schemas.StandInLabel) {
				t.Errorf("table calls the model's tokenizer a stand-in:\n%s", b.String())
			}
		})
	}
}

// TestRunWithTokenizer: with a tokenizer the demo asks for no server usage, so
// replay's live count is of chunks, and the per-run line says so rather than
// calling them tokens.
func TestRunWithTokenizer(t *testing.T) {
	dir := testenv.Tokenizer(t)
	w := &signalWriter{}
	if _, err := Run(context.Background(), Options{Out: filepath.Join(t.TempDir(), "demo"), CodingScale: 0.01, WorkflowScale: 0.01,
		Concurrencies: []int{2}, Speedup: 400, Tokenizer: dir, Progress: w}); err != nil {
		t.Fatalf("%v\n%s", err, w)
	}
	if !strings.Contains(w.String(), "output chunks/s modelled over the whole run (replay's live count of chunks, as no server usage was asked for: a chunk may carry several tokens;") ||
		strings.Contains(w.String(), "output tokens/s modelled") {
		t.Errorf("the per-run line calls chunks tokens:\n%s", w)
	}
}
