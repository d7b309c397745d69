// Command bench is `make bench`: it measures each speed claim of agentrace side by
// side with its yardstick in one run, prints a Markdown table and writes it to a
// file. Each row is a ratio, because on a shared machine a bare time means little.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/ingest"
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

// sample is the shared sample's flat trace file.
func (e Env) sample() string { return filepath.Join(e.Shared, "data", "deepswe-sample-20.jsonl") }

// sampleDataset ingests the shared sample into the dataset folder env.Work/name,
// once (a later call opens the folder as it is), and opens it: the folder and
// the dataset.
func sampleDataset(env Env, name string) (dir string, d *datasets.Dataset, err error) {
	dir = filepath.Join(env.Work, name)
	if _, err := os.Stat(dir); err != nil {
		if err := ingest.Files(context.Background(), dir, env.sample()); err != nil {
			return "", nil, err
		}
	}
	d, err = datasets.Open(context.Background(), dir)
	return dir, d, err
}

// Row is one line of the benchmark table.
type Row struct {
	Name     string // what is measured
	Measured string // both sides' figures, e.g. "agentrace 0.41 s, DuckDB 0.52 s"
	Ratio    string // the ratio, e.g. "1.27x"
	Goal     string // the goal the row must meet, e.g. ">= 1.0x"
	Met      bool
}

// bench is one row of the table: its name for -only, the goal shown even when
// the row fails before stating its own, and how it is measured.
type bench struct {
	name, goal string
	measure    func(Env) (Row, error)
}

// benches lists every benchmark, in pipeline order.
var benches = []bench{
	{"ingest", ">= 1.5x DuckDB, peak RSS < 2x input", benchIngest},
	{"isl", ">= 10x the naive count; x30 file < 10 s", benchISL},
	{"isl-any-template", "ingest --tokenizer <= 10x the CPU time of plain ingest", benchISLAnyTemplate},
	{"diff", "< 2x the time of reading both", benchDiff},
	{"body", "throughput reported next to copy", benchBody},
	{"replay", "turns/s and tokens/s >= 0.8x a minimal Go client", benchReplay},
	{"recorded", "agentrace CPU/turn <= 0.15 ms", benchRecorded},
	{"lag", "client lag p99 <= bare timer p99 + 0.5 ms", benchLag},
	{"lag-scrape", "scraping /metrics adds <= 0.5 ms to lag p99", benchLagScrape},
	{"tokenizer", ">= 5x the JS tokenizer", benchTokenizer},
	{"sim", ">= 5,000 requests/s per core", benchSim},
	{"simulate", ">= 2,000 turns/s", benchSimulate},
	{"simulate-sweep", "the full-size sweep to c=1024 within 60 s wall", benchSimulateSweep},
	{"score", "30,000 turns in < 2 s", benchScore},
	{"rescore", "2 jobs >= 1.8x faster than 1", benchRescore},
	{"events-scan", ">= 300 MB/s per core each", benchEventsScan},
	{"events-rss", "< 500 MB", benchEventsRSS},
	{"rescore-tree", ">= 1.8x (1-job time / 2-job time)", benchRescoreTree},
	{"audit-scan", ">= 300 MB/s per core on the scan", benchAuditScan},
	{"audit-rss", "< 500 MB", benchAuditRSS},
}

func main() { os.Exit(run()) }

// run measures the rows and returns the exit status: 1 when a row failed.
func run() int {
	out := flag.String("out", "bench.md", "write the Markdown table here")
	only := flag.String("only", "", "run only rows whose name contains this (comma-separated): "+strings.Join(names(), ", "))
	flag.Parse()
	if *scanChild != "" || *auditChild != "" || *recordedChild != "" {
		defer reportPeakRSS()
	}
	if *scanChild != "" {
		return runScanChild(*scanChild)
	}
	if *auditChild != "" {
		return runAuditChild(*auditChild)
	}
	if *recordedChild != "" {
		return runRecordedChild(*recordedChild)
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
	for _, row := range benches {
		if *only != "" && !selected(row.name, *only) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s ...\n", row.name)
		start := time.Now()
		r, err := row.measure(env)
		if r.Name == "" {
			r.Name = row.name
		}
		if r.Goal == "" {
			r.Goal = row.goal
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
		fmt.Fprintf(os.Stderr, "bench: %s done in %.1fs\n", row.name, time.Since(start).Seconds())
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

// names are the rows' names, in order.
func names() []string {
	var out []string
	for _, b := range benches {
		out = append(out, b.name)
	}
	return out
}

func selected(name, only string) bool {
	for _, s := range strings.Split(only, ",") {
		if s != "" && strings.Contains(name, s) {
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
