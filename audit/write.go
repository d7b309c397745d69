package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// Output files of an audit folder.
const (
	JSONFile    = "audit.json"
	ParquetFile = "audit.parquet"
)

// Kind is the audit's output folder kind (internal/outguard).
var Kind = outguard.Kind{Name: "audit", Folder: true}

// headline are the fields the table shows for every point: the numbers a
// submission's curve is read from (every other row is shown when it does not
// agree, or with all).
var headline = map[string]bool{
	"n_samples_issued": true, "n_samples_completed": true, "n_samples_failed": true, "duration_ns": true,
	"qps": true, "system_tps": true, "tps_per_user": true, "e2e_avg_interactivity": true,
	"ttft.percentiles.50.0": true, "ttft.percentiles.90.0": true, "ttft.percentiles.99.0": true,
	"tpot.percentiles.50.0": true, "tpot.percentiles.90.0": true, "tpot.percentiles.99.0": true,
	"latency.percentiles.50.0": true, "latency.percentiles.90.0": true, "latency.percentiles.99.0": true,
	"output_sequence_lengths.avg": true, "output_sequence_lengths_full_run.output_sequence_lengths.avg": true,
	"accuracy.performance.score": true, "point.region": true, "curve.verdict": true, "curve.regions": true,
}

// PrintTable prints the audit: the headline fields of every point and every row
// that does not agree (all rows when all is set), then a count by status and the
// fields that disagree.
func PrintTable(w io.Writer, res *Result, all bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CURVE\tC\tFIELD\tUNIT\tPUBLISHED\tRE-DERIVED\tDIFF\tSTATUS\tNOTE")
	last := ""
	for _, r := range res.Rows {
		if !all && !headline[r.Field] && !r.Failed() && r.Status != Follows && !(r.Status == Finding && r.Severity == "error") {
			continue
		}
		run := r.Curve
		if run == "" {
			run = r.Source
		}
		if id := r.Curve + "\x00" + r.Run; id != last && r.Run != "" && last != "" {
			fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t")
		}
		last = r.Curve + "\x00" + r.Run
		c := ""
		if r.Concurrency > 0 {
			c = fmt.Sprint(r.Concurrency)
		}
		note := r.Note
		if len(note) > 110 {
			note = note[:107] + "..."
		}
		status := r.Status
		if r.Failed() {
			status = strings.ToUpper(status)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", run, c, r.Field, orDash(unitOf(r.Field)), fmtVal(r.Published, r.PublishedText),
			fmtVal(r.Recomputed, r.RecomputedText), r.diffText(), status, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n := res.Counts()
	fmt.Fprintf(w, "\n%s in %s, %s: %d agree, %d disagree, %d follow a disagreeing input, %d unchecked, %d not published, %s\n",
		english.Count(res.Points, "point", "points"), english.Count(res.Curves, "curve", "curves"), english.Count(len(res.Rows), "field", "fields"),
		n[Agree], n[Disagree], n[Follows], n[Unchecked], n[NotPublished], english.Count(n[Error], "error", "errors"))
	if n[Finding] > 0 {
		errs := 0
		for _, r := range res.Rows {
			if r.Status == Finding && r.Severity == "error" {
				errs++
			}
		}
		fmt.Fprintf(w, "submission checker rules: %s (%d errors, %d warnings); rule findings do not fail the audit\n",
			english.Count(n[Finding], "finding", "findings"), errs, n[Finding]-errs)
	}
	if !all {
		// What could not be checked, by reason.
		type reason struct {
			n      int
			fields map[string]bool
		}
		why := map[string]*reason{}
		var order []string
		for _, r := range res.Rows {
			if r.Status != Unchecked {
				continue
			}
			x := why[r.Note]
			if x == nil {
				x = &reason{fields: map[string]bool{}}
				why[r.Note] = x
				order = append(order, r.Note)
			}
			x.n++
			f := r.Field
			if i := strings.IndexByte(f, '.'); i > 0 && !strings.HasPrefix(f, "accuracy.") && !strings.HasPrefix(f, "sweep_summary.") {
				f = f[:i]
			}
			x.fields[f] = true
		}
		if len(order) > 0 {
			fmt.Fprintln(w, "\nunchecked (published, not re-derivable here):")
		}
		for _, k := range order {
			var fs []string
			for f := range why[k].fields {
				fs = append(fs, f)
			}
			sort.Strings(fs)
			fmt.Fprintf(w, "  %s (%s): %s\n", english.Count(why[k].n, "field", "fields"), strings.Join(fs, ", "), k)
		}
	}
	if bad := res.Failed(); len(bad) > 0 {
		fmt.Fprintln(w, "AUDIT FAILED")
		where := func(r Row) string {
			switch {
			case r.Run != "":
				return r.Run
			case r.Curve != "":
				return r.Curve
			}
			return r.Source
		}
		head := false
		for _, r := range bad {
			if r.Status == Disagree {
				if !head {
					fmt.Fprintln(w, "published numbers that the events do not give:")
					head = true
				}
				fmt.Fprintf(w, "  %s: %s (%s) published %s, re-derived %s%s\n", where(r), r.Field, orDash(r.File),
					withUnit(fmtVal(r.Published, r.PublishedText), r.Field), withUnit(fmtVal(r.Recomputed, r.RecomputedText), r.Field), noteSuffix(r.Note))
			}
		}
		head = false
		for _, r := range bad {
			if r.Status == Error {
				if !head {
					fmt.Fprintln(w, "could not be read:")
					head = true
				}
				fmt.Fprintf(w, "  %s: %s%s\n", where(r), r.Field, noteSuffix(r.Note))
			}
		}
	} else {
		msg := "audit passed: every published number that could be re-derived agrees within the rules' 1%"
		if n[Unchecked] > 0 {
			msg += fmt.Sprintf(" (%d could not be checked: see above)", n[Unchecked])
		}
		fmt.Fprintln(w, msg)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// unitOf is the unit of a published field's value as the reference writes it:
// ns for times (ttft, tpot, latency and every *_ns), tok/s for token rates, 1/s
// for qps, tokens for sequence lengths, s for seconds totals; "" for counts,
// scores and names.
func unitOf(field string) string {
	last := field[strings.LastIndexByte(field, '.')+1:]
	switch {
	case strings.HasSuffix(field, "_ns"):
		return "ns"
	case strings.HasSuffix(field, ".histogram") || strings.HasPrefix(last, "count"):
		return ""
	case strings.HasPrefix(field, "ttft.") || strings.HasPrefix(field, "tpot.") || strings.HasPrefix(field, "latency.") || strings.HasPrefix(field, "itl."):
		return "ns"
	case last == "system_tps" || last == "tps_per_user" || last == "e2e_avg_interactivity" || last == "tps":
		return "tok/s"
	case last == "qps":
		return "1/s"
	case strings.Contains(field, "sequence_lengths") || last == "output_tokens_per_turn_total" || strings.HasPrefix(last, "osl_"):
		return "tokens"
	case strings.HasSuffix(field, "_seconds_total"):
		return "s"
	}
	return ""
}

// withUnit is a value shown with its field's unit ("114000000 ns").
func withUnit(v, field string) string {
	if u := unitOf(field); u != "" && v != "-" {
		return v + " " + u
	}
	return v
}

func noteSuffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// document is audit.json.
type document struct {
	Tool          string         `json:"tool"`
	ToolVersion   string         `json:"tool_version"`
	Inputs        []string       `json:"inputs"`
	Tolerance     float64        `json:"tolerance"`
	Points        int            `json:"points"`
	Curves        int            `json:"curves"`
	Counts        map[string]int `json:"counts"`
	Passed        bool           `json:"passed"`
	Disagreements []Row          `json:"disagreements"`
	Rows          []Row          `json:"rows"`
}

// Claim claims the audit folder out before the audit runs, for the command's
// life (internal/outguard): it is not, does not contain and does not sit inside
// an input, no other command writes it meanwhile, and it holds no earlier
// output but an audit (replaced with overwrite, once the new one is whole).
// Release it when done (deferred).
func Claim(out string, overwrite bool, inputs ...string) (*outguard.Claim, error) {
	c, err := outguard.Take(outguard.Output{Path: out, Kind: Kind, Overwrite: overwrite}, inputs...)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return c, nil
}

// Document is audit.json's content.
func Document(inputs []string, res *Result) any {
	bad := res.Failed()
	if bad == nil {
		bad = []Row{}
	}
	rows := res.Rows
	if rows == nil {
		rows = []Row{}
	}
	return document{Tool: "agentrace audit", ToolVersion: schemas.ToolVersion, Inputs: inputs, Tolerance: Tolerance,
		Points: res.Points, Curves: res.Curves, Counts: res.Counts(), Passed: len(bad) == 0, Disagreements: bad, Rows: rows}
}

// Write writes the audit folder out: audit.json (the inputs, the counts, the
// failing rows and every row) and audit.parquet (every row), built beside and
// renamed into place. It refuses an output that is, contains or sits inside an
// input, and replaces only an earlier audit with overwrite.
func Write(out string, overwrite bool, inputs []string, res *Result) error {
	c, err := Claim(out, overwrite, inputs...)
	if err != nil {
		return err
	}
	defer c.Release()
	return WriteClaimed(c, inputs, res)
}

// WriteClaimed is Write into a folder claimed by Claim.
func WriteClaimed(c *outguard.Claim, inputs []string, res *Result) error {
	doc := Document(inputs, res)
	rows := doc.(document).Rows
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("audit: encode %s: %w", JSONFile, err)
	}
	err = func(tmp string) error {
		if err := os.WriteFile(filepath.Join(tmp, JSONFile), append(b, '\n'), 0o644); err != nil {
			return err
		}
		return outguard.WriteParquet(filepath.Join(tmp, ParquetFile), outguard.Kind{Name: "audit"}, rows, &zstd.Codec{})
	}(c.Dir())
	if err != nil {
		return err
	}
	return c.Commit()
}
