package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrace/agentrace/audit"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/curve"
)

// auditChild, when set, makes this process the child of the audit RSS row: it
// audits the run folder named and exits (see benchAuditRSS).
var auditChild = flag.String("audit-child", "", "internal: audit this run folder as the audit RSS row's child process")

// benchAuditScan measures the audit's passes over an event log in MB per
// CPU-second: the fold that re-derives result_summary.json (score's turn-record
// scan and report's reference-summary fold, no tokenizer), beside the bare
// turn-record scan (archive's row) and reading the file to nothing; and the whole
// audit of the run (the fold, score's pairing pass for inline accuracy, the
// comparison), which reads the file twice.
func benchAuditScan(env Env) (Row, error) {
	row := Row{Name: "audit: events.jsonl re-derived (turn records + the reference summary fold), 512 MB", Goal: ">= 300 MB/s per core on the scan"}
	dir, size, err := eventLogRun(env, "audit-scan", 512<<20)
	if err != nil {
		return row, err
	}
	defer os.RemoveAll(dir)
	mb := float64(size) / 1e6
	ctx := context.Background()
	n := 0 // turn records of this round's scan, which the fold must count again
	best, err := bestPerCore(mb, []scanPass{
		readPass(filepath.Join(dir, archive.EventsFile)),
		{"scan", func() (err error) { n, err = countTurns(dir); return err }},
		{"fold", func() error {
			run, err := archive.OpenRun(dir, archive.Limits{})
			if err != nil {
				return err
			}
			defer run.Source.Close()
			p, err := curve.LoadRunWith(ctx, run, curve.LoadOptions{NoScores: true})
			if err != nil {
				return err
			}
			if p.Summary.NSamplesIssued != n || n == 0 {
				return fmt.Errorf("the fold counts %d issued samples, the scan %d records", p.Summary.NSamplesIssued, n)
			}
			return nil
		}},
		{"audit", func() error {
			res, err := audit.Run(ctx, audit.Options{Inputs: []string{dir}, Dataset: fixtureDataset(env), Jobs: 1})
			if err == nil && res.Points != 1 {
				err = fmt.Errorf("the audit found %d points", res.Points)
			}
			return err
		}},
	})
	if err != nil {
		return row, err
	}
	row.Measured = fmt.Sprintf("%.0f MB: the fold %.0f MB/s per core; the whole audit of the run (fold, score's pairing pass, comparison) %.0f MB/s per core; the bare turn-record scan %.0f, reading the file to nothing %.0f (CPU time; load average %s)",
		mb, best["fold"], best["audit"], best["scan"], best["read"], loadAverage())
	row.Ratio = fmt.Sprintf("%.2fx", best["fold"]/300)
	row.Met = best["fold"] >= 300
	return row, nil
}

// benchAuditRSS audits a run folder with a 2 GB event log in a child process and
// reads its peak RSS from the kernel.
func benchAuditRSS(env Env) (Row, error) {
	return eventLogRSS(env, "audit of a run with a 2 GB events.jsonl (in a child process): peak RSS", "audit-rss", "-audit-child", "audited")
}

// runAuditChild is the audit RSS row's child: the whole audit of one run folder.
func runAuditChild(dir string) int {
	res, err := audit.Run(context.Background(), audit.Options{Inputs: []string{dir},
		Dataset: fixtureDatasetPath, Jobs: 1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The synthetic run publishes nothing: every figure is re-derived (both passes
	// over the log), none compared.
	fmt.Printf("%d point, %d figures re-derived", res.Points, len(res.Rows))
	return 0
}
