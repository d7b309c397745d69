// Command bench is `make bench`: it measures each speed claim of agentrace side by
// side with its yardstick in one run, prints a Markdown table and writes it to a
// file. Each row is a ratio, because on a shared machine a bare time means little.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentrace/agentrace/internal/atomicfile"
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
	Goal     string // the goal the issue set, e.g. ">= 1.0x"
	Met      bool
}

// rows lists every benchmark, in pipeline order.
func rows() []func(Env) (Row, error) {
	return []func(Env) (Row, error){
		benchIngest,
		benchBody,
		benchReplay,
		benchTokenizer,
		benchSim,
		benchScore,
		benchRescore,
	}
}

func main() {
	out := flag.String("out", "bench.md", "write the Markdown table here")
	only := flag.String("only", "", "run only rows whose function name contains this (comma-separated)")
	flag.Parse()
	env, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(env.Work)
	var b strings.Builder
	fmt.Fprintf(&b, "| benchmark | measured (same run) | ratio | goal | met |\n|---|---|---|---|---|\n")
	failed := false
	for i, f := range rows() {
		if *only != "" && !selected(i, *only) {
			continue
		}
		start := time.Now()
		r, err := f(env)
		if err != nil {
			failed = true
			r = Row{Name: rowNames[i], Measured: "error: " + err.Error()}
		}
		met := "no"
		if r.Met {
			met = "yes"
		}
		line := fmt.Sprintf("| %s | %s | %s | %s | %s |\n", r.Name, r.Measured, r.Ratio, r.Goal, met)
		b.WriteString(line)
		fmt.Fprintf(os.Stderr, "bench: %s done in %.1fs\n", rowNames[i], time.Since(start).Seconds())
	}
	fmt.Print(b.String())
	if err := atomicfile.Write(*out, func(w io.Writer) error {
		_, err := io.WriteString(w, "# agentrace benchmarks\n\nMeasured side by side in one run on "+time.Now().UTC().Format(time.DateOnly)+".\n\n"+b.String())
		return err
	}); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

var rowNames = []string{"ingest", "body", "replay", "tokenizer", "sim", "score", "rescore"}

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
