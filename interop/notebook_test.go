package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/audit"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/report"
	"github.com/agentrace/agentrace/schemas"
)

// polarsTable is what testdata/js/polars-read.mjs (or testdata/python/pyarrow_read.py,
// in the same shape) says of one file.
type polarsTable struct {
	Rows    int            `json:"rows"`
	Columns []polarsColumn `json:"columns"`
}

type polarsColumn struct {
	Name     string `json:"name"`
	DType    string `json:"dtype"`
	Nulls    int    `json:"nulls"`
	Min      any    `json:"min"`
	Max      any    `json:"max"`
	Trues    any    `json:"trues"`
	Distinct *int   `json:"distinct"`
	Total    any    `json:"total"`
}

// polars reads files (relative to dir) with nodejs-polars.
func polars(t *testing.T, dir string, files []string) map[string]polarsTable {
	t.Helper()
	js, node := testenv.JSModule(t, "nodejs-polars")
	return readTables(t, dir, node, filepath.Join(js, "polars-read.mjs"), files)
}

// readTables runs the reader script with the files (relative to dir) and decodes
// what it says of them.
func readTables(t *testing.T, dir, interpreter, script string, files []string) map[string]polarsTable {
	t.Helper()
	cmd := exec.Command(interpreter, append([]string{script}, files...)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(script), err, stderr.String())
	}
	var res map[string]polarsTable
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%s output: %v\n%s", filepath.Base(script), err, out)
	}
	return res
}

// pandas reads files (relative to dir) with pandas and pyarrow
// (testdata/python/pyarrow_read.py). It skips, even in CI, where python3 lacks them:
// Debian packages python3-pyarrow only in testing and unstable, and PyPI is not a
// dependency of this repository. AGENTRACE_PYTHON names another python3.
func pandas(t *testing.T, dir string, files []string) map[string]polarsTable {
	t.Helper()
	python := "python3"
	if p := os.Getenv("AGENTRACE_PYTHON"); p != "" {
		python = p // a venv's python, or a wrapper running one in a chroot
	}
	py, err := exec.LookPath(python)
	if err == nil {
		err = exec.Command(py, "-c", "import pandas, pyarrow").Run()
	}
	if err != nil {
		t.Skipf("skipping: python3 with pandas and pyarrow is missing (%v): Debian has python3-pyarrow in testing and unstable only; `apt-get install python3-pandas python3-pyarrow` there", err)
	}
	return readTables(t, dir, py, filepath.Join(testenv.RepoRoot(t), "testdata", "python", "pyarrow_read.py"), files)
}

// readerKind names a column kind as polars-read.mjs ("DataType(List(DataType(Int64)))")
// or pyarrow_read.py ("List(Int64)") prints it, in the words duckKind uses.
func readerKind(dtype string) string {
	d := dtype
	if strings.HasPrefix(d, "DataType(") {
		d = strings.TrimSuffix(strings.TrimPrefix(d, "DataType("), ")")
	}
	switch {
	case strings.HasPrefix(d, "List("):
		return "list<" + readerKind(strings.TrimSuffix(strings.TrimPrefix(d, "List("), ")")) + ">"
	case d == "String" || d == "Utf8" || d == "Categorical" || strings.HasPrefix(d, "Categorical("):
		return "string"
	case d == "Bool":
		return "bool"
	case strings.HasPrefix(d, "Datetime"):
		return "timestamp"
	case d == "Binary":
		return "binary"
	}
	return strings.ToLower(d) // Int32, UInt8, Float64, ...
}

// duckKind names a DuckDB column type in the words readerKind uses.
func duckKind(typ string) string {
	if strings.HasSuffix(typ, "[]") {
		return "list<" + duckKind(strings.TrimSuffix(typ, "[]")) + ">"
	}
	switch {
	case strings.HasPrefix(typ, "TIMESTAMP"):
		return "timestamp"
	}
	return map[string]string{
		"TINYINT": "int8", "SMALLINT": "int16", "INTEGER": "int32", "BIGINT": "int64",
		"UTINYINT": "uint8", "USMALLINT": "uint16", "UINTEGER": "uint32", "UBIGINT": "uint64",
		"FLOAT": "float32", "DOUBLE": "float64", "VARCHAR": "string", "BOOLEAN": "bool", "BLOB": "binary",
	}[typ]
}

// duckStats is the SQL that computes, with DuckDB, what polars-read.mjs prints for
// each column of a table: null counts, exact integer and timestamp extremes (as
// text; timestamps in microseconds, DuckDB's TIMESTAMPTZ unit), float extremes
// without NaN, true counts, distinct strings, summed list and binary lengths.
func duckStats(table string, cols []map[string]any) string {
	sel := []string{"count(*) AS \"rows\""}
	for _, c := range cols {
		name, typ := c["column_name"].(string), c["column_type"].(string)
		q := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		a := func(stat, expr string) { sel = append(sel, fmt.Sprintf("%s AS \"%s:%s\"", expr, stat, name)) }
		a("nulls", "count(*) - count("+q+")")
		switch k := duckKind(typ); {
		case strings.HasPrefix(k, "list<"):
			a("total", "CAST(coalesce(sum(len("+q+")), 0) AS VARCHAR)")
		case k == "timestamp":
			a("min", "CAST(epoch_us(min("+q+")) AS VARCHAR)")
			a("max", "CAST(epoch_us(max("+q+")) AS VARCHAR)")
		case strings.Contains(k, "int"):
			a("min", "CAST(min("+q+") AS VARCHAR)")
			a("max", "CAST(max("+q+") AS VARCHAR)")
		case strings.HasPrefix(k, "float"):
			a("min", "min("+q+") FILTER (WHERE NOT isnan("+q+"))")
			a("max", "max("+q+") FILTER (WHERE NOT isnan("+q+"))")
		case k == "bool":
			a("trues", "CAST(count(*) FILTER (WHERE "+q+") AS VARCHAR)")
		case k == "string":
			a("distinct", "count(DISTINCT "+q+")")
		case k == "binary":
			a("total", "CAST(coalesce(sum(octet_length("+q+")), 0) AS VARCHAR)")
		}
	}
	return "SELECT " + strings.Join(sel, ", ") + " FROM '" + table + "'"
}

// TestNotebookReadersReadEverything reads every table agentrace writes as an
// analyst's notebook does: with polars (nodejs-polars, the Rust engine Python's
// polars also runs) and with pandas (pandas.read_parquet on pyarrow, and
// pyarrow.ipc for the turn log): the dataset's three tables, a run's turns.parquet
// and scores.parquet, the rescore table, the report's sweep-wide turns.parquet and
// points.parquet, audit.parquet, and the Arrow IPC turn log itself. For each
// Parquet table, DuckDB must agree with the reader on the row count, every
// column's name and kind, its null count and, by kind, its minimum and maximum,
// distinct strings, true count, or summed list and binary lengths. The turn log
// must agree the same way with its own turns.parquet read by DuckDB, column by
// column (its `turn` is `client_turn`). pandas runs where python3 has pandas and
// pyarrow (python3-pyarrow is packaged in Debian testing and unstable, not in
// stable, so it is never required: its subtest skips saying so).
func TestNotebookReadersReadEverything(t *testing.T) {
	testenv.JSModule(t, "@duckdb/node-api")
	w := build(t)
	ctx := context.Background()
	if _, err := report.Build(ctx, report.Options{Out: filepath.Join(w.dir, "report"), Runs: []string{filepath.Join(w.dir, "runs")}}); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(w.dir, "runs")
	res, err := audit.Run(ctx, audit.Options{Inputs: []string{runs}, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := audit.Write(filepath.Join(w.dir, "audit"), false, []string{runs}, res); err != nil {
		t.Fatal(err)
	}
	tables := []string{
		"dataset/conversations.parquet", "dataset/messages.parquet", "dataset/turns.parquet",
		"runs/c8/turns.parquet", "runs/c8/scores.parquet", "rescore.parquet",
		"report/turns.parquet", "report/points.parquet", "audit/audit.parquet",
	}
	turnLog := "runs/c8/" + schemas.TurnLogFile
	files := append(slices.Clone(tables), turnLog)

	describe := map[string]string{}
	for _, f := range tables {
		describe[f] = "DESCRIBE SELECT * FROM '" + f + "'"
	}
	desc := testenv.DuckDB(t, w.dir, describe)
	stats := map[string]string{}
	for _, f := range tables {
		stats[f] = duckStats(f, desc[f])
	}
	duck := testenv.DuckDB(t, w.dir, stats)

	t.Run("polars", func(t *testing.T) {
		checkReader(t, "polars", polars(t, w.dir, files), tables, turnLog, desc, duck, len(w.recs))
	})
	t.Run("pandas", func(t *testing.T) {
		checkReader(t, "pandas", pandas(t, w.dir, files), tables, turnLog, desc, duck, len(w.recs))
	})
}

// checkReader compares what one reader (polars, pandas) said of the tables with
// DuckDB's statistics of them; logRows is the turn log's row count.
func checkReader(t *testing.T, reader string, pl map[string]polarsTable, tables []string, turnLog string,
	desc, duck map[string][]map[string]any, logRows int) {
	t.Helper()
	// compare checks one table as the reader read it against DuckDB's statistics of a table whose
	// columns are described by desc; rename maps a polars column to DuckDB's name.
	compare := func(label string, p polarsTable, d map[string]any, desc []map[string]any, rename map[string]string, all bool) int {
		t.Helper()
		if int(num(t, d, "rows")) != p.Rows {
			t.Errorf("%s: %s reads %d rows, DuckDB %v", label, reader, p.Rows, d["rows"])
		}
		kinds := map[string]string{}
		for _, c := range desc {
			kinds[c["column_name"].(string)] = duckKind(c["column_type"].(string))
		}
		if all && len(p.Columns) != len(desc) {
			t.Errorf("%s: %s reads %d columns, DuckDB %d", label, reader, len(p.Columns), len(desc))
		}
		checked := 0
		for _, c := range p.Columns {
			name := c.Name
			if r, ok := rename[name]; ok {
				name = r
			}
			dk, ok := kinds[name]
			if !ok {
				if all {
					t.Errorf("%s: %s reads a column %s that DuckDB does not", label, reader, c.Name)
				}
				continue
			}
			pk := readerKind(c.DType)
			if pk != dk {
				if all {
					t.Errorf("%s: column %s is %s (%s) to %s, %s to DuckDB", label, c.Name, pk, c.DType, reader, dk)
				}
				continue
			}
			got := map[string]any{"nulls": c.Nulls, "min": c.Min, "max": c.Max, "trues": c.Trues, "total": c.Total}
			if c.Distinct != nil {
				got["distinct"] = *c.Distinct
			}
			for _, stat := range []string{"nulls", "min", "max", "trues", "distinct", "total"} {
				want, ok := d[stat+":"+name]
				if !ok {
					continue
				}
				g := got[stat]
				if pk == "timestamp" && g != nil && (stat == "min" || stat == "max") {
					// the readers keep nanoseconds; DuckDB's TIMESTAMPTZ microseconds
					ns, ok := new(big.Int).SetString(g.(string), 10)
					if !ok {
						t.Fatalf("%s: %s %s = %v", label, c.Name, stat, g)
					}
					g = new(big.Int).Div(ns, big.NewInt(1000)).String()
				}
				if fmt.Sprint(g) != fmt.Sprint(want) {
					t.Errorf("%s: column %s %s: %s %v, DuckDB %v", label, c.Name, stat, reader, g, want)
				}
				checked++
			}
		}
		return checked
	}
	total := 0
	for _, f := range tables {
		p, ok := pl[f]
		if !ok || len(duck[f]) != 1 {
			t.Fatalf("%s: %s %v, DuckDB %v", f, reader, ok, duck[f])
		}
		n := compare(f, p, duck[f][0], desc[f], nil, true)
		var categorical []string
		for _, c := range p.Columns {
			if strings.Contains(c.DType, "Categorical") {
				categorical = append(categorical, c.Name)
			}
		}
		t.Logf("%s: %d rows, %d columns, %d statistics agree; categorical to %s: %v", f, p.Rows, len(p.Columns), n, reader, categorical)
		total += n
		if strings.HasSuffix(f, "/turns.parquet") && !strings.HasPrefix(f, "dataset/") {
			// the analysis tables' low-cardinality strings are dictionary-encoded
			for _, c := range []string{"status", "domain", "error_kind"} {
				if !slices.Contains(categorical, c) {
					t.Errorf("%s: %s is not dictionary-encoded (%s reads it as plain text)", f, c, reader)
				}
			}
		}
	}
	// the Arrow IPC turn log, read by the reader, against its turns.parquet in DuckDB
	lp := pl[turnLog]
	if lp.Rows != logRows {
		t.Errorf("%s: %s reads %d rows, the turn log has %d", turnLog, reader, lp.Rows, logRows)
	}
	n := compare(turnLog, lp, duck["runs/c8/turns.parquet"][0], desc["runs/c8/turns.parquet"], map[string]string{"turn": "client_turn"}, false)
	if n < 3*len(lp.Columns)/2 {
		t.Errorf("%s: only %d statistics compared for %d columns", turnLog, n, len(lp.Columns))
	}
	total += n
	t.Logf("%s: %d rows, %d columns, %d statistics agree with DuckDB's reading of turns.parquet", turnLog, lp.Rows, len(lp.Columns), n)
	if total < 300 {
		t.Errorf("only %d statistics compared", total)
	}
}
