// Command bench is `make bench`: it measures each speed claim of agentrace side by
// side with its yardstick in one run, prints a Markdown table and writes it to a
// file. Each row is a ratio, because on a shared machine a bare time means little.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/agentrace/agentrace/internal/outguard"
)

// Env is what every row may use: the repository root, the shared sample, the
// tokenizer folder and the pinned JS packages (any may be "" when absent), and a
// scratch folder.
type Env struct {
	Root      string
	Shared    string
	Tokenizer string
	JS        string
	Work      string
}

// Row is one line of the benchmark table.
type Row struct {
	Name     string // what is measured
	Measured string // both sides' figures, e.g. "agentrace 0.41 s, DuckDB 0.52 s"
	Ratio    string // the ratio, e.g. "1.27x"
	Goal     string // the goal the row must meet, e.g. ">= 1.0x"
	Met      bool
}

// rows lists every benchmark, in pipeline order.
func rows() []func(Env) (Row, error) {
	return []func(Env) (Row, error){
		benchIngest,
		benchISL,
		benchISLAnyTemplate,
		benchDiff,
		benchBody,
		benchReplay,
		benchLag,
		benchTokenizer,
		benchSim,
		benchSimulate,
		benchSimulateSweep,
		benchScore,
		benchRescore,
		benchEventsScan,
		benchEventsRSS,
		benchRescoreTree,
		benchAuditScan,
		benchAuditRSS,
	}
}

func main() { os.Exit(run()) }

// run measures the rows and returns the exit status: 1 when a row failed.
func run() int {
	out := flag.String("out", "bench.md", "write the Markdown table here")
	only := flag.String("only", "", "run only rows whose name contains this (comma-separated): "+strings.Join(rowNames, ", "))
	flag.Parse()
	if *scanChild != "" {
		return runScanChild(*scanChild)
	}
	if *auditChild != "" {
		return runAuditChild(*auditChild)
	}
	env, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer os.RemoveAll(env.Work)
	var b strings.Builder
	header := "| benchmark | measured (same run) | ratio | goal | met |\n|---|---|---|---|---|\n"
	b.WriteString(header)
	// Each row is printed as soon as it is measured, so a long run shows progress
	// and a failed row does not hide the others.
	fmt.Print(header)
	failed := false
	for i, f := range rows() {
		if *only != "" && !selected(i, *only) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s ...\n", rowNames[i])
		start := time.Now()
		r, err := f(env)
		if r.Name == "" {
			r.Name = rowNames[i]
		}
		if r.Goal == "" {
			r.Goal = rowGoals[i]
		}
		if err != nil {
			failed = true
			r.Measured, r.Ratio, r.Met = "error: "+oneLine(err.Error()), "-", false
		}
		met := "no"
		if r.Met {
			met = "yes"
		}
		line := fmt.Sprintf("| %s | %s | %s | %s | %s |\n", r.Name, r.Measured, r.Ratio, r.Goal, met)
		b.WriteString(line)
		fmt.Print(line)
		fmt.Fprintf(os.Stderr, "bench: %s done in %.1fs\n", rowNames[i], time.Since(start).Seconds())
	}
	doc := "# agentrace benchmarks\n\nMeasured side by side in one run on " + time.Now().UTC().Format(time.DateOnly) +
		" (" + machine() + ").\n\n" + b.String()
	if err := outguard.AtomicWrite(*out, func(w io.Writer) error {
		_, err := io.WriteString(w, doc)
		return err
	}); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "bench: wrote %s\n", *out)
	if failed {
		return 1
	}
	return 0
}

// rowGoals are the rows' goals, shown even when a row fails before
// stating its own.
var rowGoals = []string{
	">= 1.5x DuckDB, peak RSS < 2x input",
	">= 10x the naive count; x30 file < 10 s",
	"ingest --tokenizer <= 10x plain ingest",
	"< 2x the time of reading both",
	"throughput reported next to copy",
	"turns/s and tokens/s >= 0.8x a minimal Go client",
	"client lag p99 <= bare timer p99 + 0.5 ms",
	">= 5x the JS tokenizer",
	">= 5,000 requests/s per core",
	">= 2,000 turns/s",
	"the full-size sweep to c=1024 within 60 s wall",
	"30,000 turns in < 2 s",
	"2 jobs >= 1.7x faster than 1",
	">= 300 MB/s per core each",
	"< 500 MB",
	">= 1.7x (1-job time / 2-job time)",
	">= 300 MB/s per core on the scan",
	"< 500 MB",
}

// oneLine keeps a table cell on one line.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", "/")
}

// machine describes where the numbers were measured.
func machine() string {
	cpu := ""
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v) + ", "
				break
			}
		}
	}
	return fmt.Sprintf("%s%d CPUs, %s, %s/%s", cpu, runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

var rowNames = []string{"ingest", "isl", "isl-any-template", "diff", "body", "replay", "lag", "tokenizer", "sim", "simulate", "simulate-sweep", "score", "rescore", "events-scan", "events-rss", "rescore-tree", "audit-scan", "audit-rss"}

func selected(i int, only string) bool {
	for _, s := range strings.Split(only, ",") {
		if s != "" && strings.Contains(rowNames[i], s) {
			return true
		}
	}
	return false
}

func setup() (Env, error) {
	root, err := os.Getwd()
	if err != nil {
		return Env{}, err
	}
	work, err := os.MkdirTemp("", "agentrace-bench-*")
	if err != nil {
		return Env{}, err
	}
	env := Env{Root: root, Work: work,
		Shared: os.Getenv("AGENTRACE_SHARED"), Tokenizer: os.Getenv("AGENTRACE_TOKENIZER"), JS: os.Getenv("AGENTRACE_JS")}
	return env, nil
}
