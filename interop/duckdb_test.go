package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/audit"
	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/datasets/card"
	"github.com/agentrace/agentrace/datasets/synth"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/replay"
	"github.com/agentrace/agentrace/report"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score"
	"github.com/agentrace/agentrace/simserver"
	"github.com/agentrace/agentrace/simulate"
	"github.com/agentrace/agentrace/submission"
	"github.com/agentrace/agentrace/tokens"
)

// docQueries returns the queries of docs/NAME by name: every ```sql block whose
// first line is "-- NAME: ...".
func docQueries(t *testing.T, name string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)```sql\n-- ([a-z-]+):[^\n]*\n(.*?)```")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// workspace is what `make demo` leaves in demo-out, built here with the stages'
// own APIs on a small synthetic dataset, plus the two files docs/queries.md's queries
// read (a dumped turn log and a rescore table).
type workspace struct {
	dir    string
	d      *datasets.Dataset
	scores map[int]*schemas.Scores
	rows   []schemas.RescoreRow
	recs   []schemas.TurnRecord // of runs/c8
}

func build(t *testing.T) *workspace {
	t.Helper()
	ctx := context.Background()
	w := &workspace{dir: t.TempDir(), scores: map[int]*schemas.Scores{}}
	traces := filepath.Join(w.dir, "traces.jsonl")
	if _, err := synth.WriteFile(ctx, traces, synth.Options{Scale: 1, CodingScale: 0.01, WorkflowScale: 0.02, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	dsDir := filepath.Join(w.dir, "dataset")
	if _, err := ingest.Run(ctx, ingest.Options{Out: dsDir, Inputs: []string{traces}, Tokenizer: testenv.Tokenizer(t)}); err != nil {
		t.Fatal(err)
	}
	var err error
	if w.d, err = datasets.Open(context.Background(), dsDir); err != nil {
		t.Fatal(err)
	}
	srv, err := simserver.New(simserver.Config{Speedup: 2000, Dataset: w.d, Fidelity: 0.9, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() {
		hs.Close()
		srv.Close()
	}()
	truth := score.NewTruth(w.d)
	for _, c := range []int{4, 8} {
		run := filepath.Join(w.dir, "runs", fmt.Sprintf("c%d", c))
		if _, err := replay.Run(ctx, replay.Options{Dataset: dsDir, Data: w.d, Endpoint: hs.URL, Out: run,
			// Server usage fills usage_completion_tokens, which docs/queries.md's
			// slowest-trajectories query reads.
			Profile: "qwen3.6-35b-a3b", Concurrency: c, DelayScale: 0.001, StreamUsage: true,
			// The sim twice, as two endpoints, scraped: the report's server tables
			// (docs/queries.md's server queries) have two replicas.
			Endpoints: []string{hs.URL + "/v1"},
			Telemetry: replay.Telemetry{Metrics: true, MetricsInterval: 50 * time.Millisecond}}); err != nil {
			t.Fatal(err)
		}
		s, err := score.ScoreRun(ctx, score.Options{Run: run, Dataset: dsDir, Truth: truth})
		if err != nil {
			t.Fatal(err)
		}
		if err := score.WriteScores(context.Background(), run, s); err != nil {
			t.Fatal(err)
		}
		w.scores[c] = s
	}
	if w.rows, err = score.Rescore(ctx, score.RescoreOptions{Archives: []string{filepath.Join(w.dir, "runs")},
		Out: filepath.Join(w.dir, "rescore.parquet"), Jobs: 2}); err != nil {
		t.Fatal(err)
	}
	c8 := filepath.Join(w.dir, "runs", "c8")
	if err := outguard.AtomicWrite(filepath.Join(w.dir, "turns-c8.jsonl"), func(f io.Writer) error {
		_, err := runlog.Dump(context.Background(), f, filepath.Join(c8, schemas.TurnLogFile), nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if w.recs, err = runlog.ReadFile(context.Background(), filepath.Join(c8, schemas.TurnLogFile)); err != nil {
		t.Fatal(err)
	}
	return w
}

func num(t *testing.T, row map[string]any, col string) float64 {
	t.Helper()
	v, ok := row[col].(float64)
	if !ok {
		t.Fatalf("column %s = %#v (%T), want a number; row %v", col, row[col], row[col], row)
	}
	return v
}

// TestDuckDBReadsEverything reads the dataset tables, every point's scores.parquet
// and the rescore table with DuckDB and runs docs/queries.md's example queries on them,
// checking each answer against what agentrace computed.
func TestDuckDBReadsEverything(t *testing.T) {
	queries := docQueries(t, "queries.md")
	for _, name := range []string{"largest-requests", "turn-messages", "isl-growth", "slowest-trajectories", "accuracy-by-point", "rescore", "server-timeline", "server-replicas", "server-metrics"} {
		if queries[name] == "" {
			t.Fatalf("docs/queries.md has no ```sql block named %q", name)
		}
	}
	w := build(t)
	// slowest-trajectories reads the report's table, as from the demo's report/.
	if _, err := report.Build(context.Background(), report.Options{Out: filepath.Join(w.dir, "report"), Runs: []string{filepath.Join(w.dir, "runs")}}); err != nil {
		t.Fatal(err)
	}
	writeTheRest(t, w)
	docNames := make([]string, 0, len(queries))
	for name := range queries {
		docNames = append(docNames, name)
	}
	// Each query's result columns and their types, and each table's columns with
	// their types and extremes (DuckDB's SUMMARIZE).
	for _, name := range docNames {
		queries["describe:"+name] = "DESCRIBE " + strings.TrimSuffix(strings.TrimSpace(queries[name]), ";")
	}
	for _, table := range writtenTables {
		queries["summarize:"+table] = fmt.Sprintf("SUMMARIZE SELECT * FROM '%s'", table)
	}
	queries["tables"] = `SELECT (SELECT count(*) FROM 'dataset/conversations.parquet') AS conversations,
		(SELECT count(*) FROM 'dataset/messages.parquet') AS messages,
		(SELECT count(*) FROM 'dataset/turns.parquet') AS turns,
		(SELECT count(*) FROM 'runs/c8/scores.parquet') AS scored_c8,
		(SELECT count(*) FROM 'rescore.parquet') AS runs`
	res := testenv.DuckDB(t, w.dir, queries)
	for _, name := range []string{"tables", "largest-requests", "isl-growth", "accuracy-by-point", "rescore", "slowest-trajectories"} {
		t.Logf("%s: %v", name, res[name])
	}
	checkSignsAndTypes(t, res, docNames)
	checkWrittenTables(t, res)
	for _, doc := range writtenJSON {
		checkJSONNulls(t, filepath.Join(w.dir, doc))
	}

	// The server's figures: points.json's, to 1e-12 relative.
	var points []map[string]any
	data, err := os.ReadFile(filepath.Join(w.dir, "report", report.PointsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &points); err != nil {
		t.Fatal(err)
	}
	byC := map[int]map[string]any{}
	for _, p := range points {
		byC[int(p["concurrency"].(float64))] = p
	}
	t.Logf("%d server figures of points.json reproduced by docs/queries.md's server queries", compareServer(t, res, byC))

	// The tables themselves.
	tab := res["tables"][0]
	msgs := 0
	for i := range w.d.Conversations {
		msgs += len(w.d.Messages(i))
	}
	for _, c := range []struct {
		col  string
		want int
	}{
		{"conversations", len(w.d.Conversations)},
		{"messages", msgs},
		{"turns", len(w.d.Turns)},
		{"scored_c8", len(w.scores[8].PerTurn)},
		{"runs", len(w.rows)},
	} {
		if got := num(t, tab, c.col); int(got) != c.want {
			t.Errorf("DuckDB counts %d %s, agentrace %d", int(got), c.col, c.want)
		}
	}

	// The largest requests: the coding trajectory first, sizes descending, and
	// each row's figures those of the dataset.
	big := res["largest-requests"]
	if len(big) != 5 || big[0]["domain"] != schemas.DomainCoding {
		t.Fatalf("largest-requests %v", big)
	}
	for i, r := range big {
		c, ok := w.d.Conversation(r["conversation_id"].(string))
		if !ok || int(num(t, r, "client_turns")) != int(c.ClientTurns) || math.Abs(num(t, r, "last_request_kb")*1e3-float64(c.HistoryBytes)) > 0.5 {
			t.Errorf("largest-requests row %v, conversation %+v", r, c)
		}
		if i > 0 && num(t, r, "last_request_kb") > num(t, big[i-1], "last_request_kb") {
			t.Errorf("largest-requests not sorted: %v", big)
		}
	}

	// The messages of a turn: exactly the wire fragments replay concatenates.
	c, ok := w.d.Conversation("docforge__docforge-1017")
	if !ok {
		t.Fatal("docs/queries.md's example conversation docforge__docforge-1017 is not in the seed-1 synth output")
	}
	var turn3 *schemas.Turn
	for _, tr := range w.d.ConversationTurns(int(c.Index)) {
		if tr.Turn == 3 {
			turn3 = &tr
		}
	}
	wire := w.d.Messages(int(c.Index))
	got := res["turn-messages"]
	if turn3 == nil || len(got) != int(turn3.MsgEnd) {
		t.Fatalf("turn-messages gave %d rows, turn 3 sends %v", len(got), turn3)
	}
	for i, r := range got {
		if int(num(t, r, "seq")) != i || r["role"] != wire[i].Role || r["wire"] != string(wire[i].Wire) {
			t.Errorf("turn-messages row %d: %v, want %s", i, r, wire[i].Wire)
		}
	}

	// ISL growth: one row per domain; coding adds far more context per turn than
	// workflow; the largest ISL is the dataset's.
	growth := map[string]map[string]any{}
	for _, r := range res["isl-growth"] {
		growth[r["domain"].(string)] = r
	}
	coding, workflow := growth[schemas.DomainCoding], growth[schemas.DomainWorkflow]
	if coding == nil || workflow == nil {
		t.Fatalf("isl-growth rows %v", res["isl-growth"])
	}
	if c, wf := num(t, coding, "isl_tokens_per_turn"), num(t, workflow, "isl_tokens_per_turn"); !(c > 2*wf && wf > 0) {
		t.Errorf("ISL growth per turn: coding %.1f, workflow %.1f; want coding well above workflow, both positive", c, wf)
	}
	maxISL := int32(0)
	for _, tr := range w.d.Turns {
		if tr.ISL == nil {
			t.Fatal("ingest with a tokenizer left a turn without ISL")
		}
		maxISL = max(maxISL, *tr.ISL)
	}
	if got := max(num(t, coding, "isl_max"), num(t, workflow, "isl_max")); int32(got) != maxISL {
		t.Errorf("isl_max %v, dataset %d", got, maxISL)
	}

	// Accuracy per point and domain: the turn-weighted mean of each point's rows is
	// the point's score.
	type acc struct{ sum, n float64 }
	byPoint := map[int]*acc{}
	for _, r := range res["accuracy-by-point"] {
		c := int(num(t, r, "concurrency"))
		if byPoint[c] == nil {
			byPoint[c] = &acc{}
		}
		n := num(t, r, "scored_turns")
		byPoint[c].sum += num(t, r, "accuracy") * n
		byPoint[c].n += n
	}
	for c, s := range w.scores {
		a := byPoint[c]
		if a == nil || int(a.n) != s.Turns.Scored || math.Abs(a.sum/a.n-s.Score) > 2e-4 {
			t.Errorf("c%d: DuckDB accuracy %+v, scores.json %v over %d turns", c, a, s.Score, s.Turns.Scored)
		}
	}

	// The rescore table: one row per run, the same scores.
	var conc []int
	for _, r := range res["rescore"] {
		c := int(num(t, r, "concurrency"))
		conc = append(conc, c)
		if s := w.scores[c]; s == nil || math.Abs(num(t, r, "accuracy")-s.Score) > 1e-4 || r["error"] != nil {
			t.Errorf("rescore row %v against scores %v", r, s)
		}
	}
	if !slices.Equal(conc, []int{4, 8}) {
		t.Errorf("rescore concurrencies %v, want [4 8]", conc)
	}

	// The slowest trajectories, against a restatement over the Arrow log in Go.
	type traj struct {
		tokens, delay float64
		start, done   int64
		ok            bool
		turns         int
	}
	trajs := map[string]*traj{}
	for _, r := range w.recs {
		tr := trajs[r.SessionID]
		if tr == nil {
			tr = &traj{start: math.MaxInt64, ok: true}
			trajs[r.SessionID] = tr
		}
		tr.turns++
		tr.ok = tr.ok && r.Status == schemas.StatusOK
		tr.tokens += float64(r.UsageCompletionTokens)
		tr.delay += float64(r.DelayNs)
		tr.start = min(tr.start, r.ScheduledNs-r.DelayNs)
		tr.done = max(tr.done, r.CompletedNs)
	}
	var rates []float64
	for _, tr := range trajs {
		if tr.ok {
			rates = append(rates, tr.tokens*1e9/(float64(tr.done-tr.start)-tr.delay))
		}
	}
	slices.Sort(rates)
	slow := res["slowest-trajectories"]
	if len(slow) != min(5, len(rates)) {
		t.Fatalf("slowest-trajectories gave %d rows, want %d", len(slow), min(5, len(rates)))
	}
	for i, r := range slow {
		got := num(t, r, "progress_rate")
		if math.Abs(got-rates[i]) > 1e-9*rates[i] {
			t.Errorf("slowest #%d: DuckDB %v tokens/s, Go %v", i+1, got, rates[i])
		}
		if tr := trajs[r["session_id"].(string)]; tr == nil || int(num(t, r, "turns")) != tr.turns {
			t.Errorf("slowest #%d: %v", i+1, r)
		}
	}
}

// writtenTables are the Parquet tables agentrace writes into the workspace: the
// dataset's three tables, a run's analysis and scores tables, the rescore table,
// the report's tables, the audit's table and log export's table of several runs
// (a replayed sweep's and a simulated one's).
var writtenTables = []string{"dataset/conversations.parquet", "dataset/messages.parquet", "dataset/turns.parquet", "runs/c8/turns.parquet", "runs/c8/scores.parquet", "rescore.parquet",
	"report/turns.parquet", "report/points.parquet", "runs/c8/server_metrics.parquet", "report/server_metrics.parquet",
	"report/server_replicas.parquet", "audit/audit.parquet", "export/turns.parquet"}

// writtenJSON are the JSON documents agentrace writes into the workspace: the
// report's points, the audit's rows, the dataset card, a run's scores, and the
// manifests of a replayed run, a simulated one and the dataset.
var writtenJSON = []string{"report/points.json", "audit/audit.json", "card/card.json", "runs/c8/scores.json", "runs/c8/manifest.json", "sim-sweep/c4/manifest.json", "dataset/manifest.json"}

// writeTheRest writes, beside build's workspace, what the other table-writing
// commands write: the published files and the audit of the sweep (`agentrace
// publish`, `agentrace audit --out`), a simulated sweep (`simulate --out`), one
// turns table of both sweeps (`log export --out`) and the dataset's card (`stats
// --card`).
func writeTheRest(t *testing.T, w *workspace) {
	t.Helper()
	ctx := context.Background()
	runs := filepath.Join(w.dir, "runs")
	if _, err := submission.Publish(ctx, submission.PublishOptions{Runs: []string{runs}}); err != nil {
		t.Fatal(err)
	}
	res, err := audit.Run(ctx, audit.Options{Inputs: []string{runs}, Tokenizer: testenv.Tokenizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := audit.Write(filepath.Join(w.dir, "audit"), false, []string{runs}, res); err != nil {
		t.Fatal(err)
	}
	hw, err := simserver.LookupHardware(simserver.DefaultHardware)
	if err != nil {
		t.Fatal(err)
	}
	dsDir, sim := filepath.Join(w.dir, "dataset"), filepath.Join(w.dir, "sim-sweep")
	if _, err := simulate.WriteSweep(ctx, simulate.Options{Hardware: hw, Data: w.d, Seed: 1, Fidelity: 0.9, DelayScale: 1, Replicas: 1, Routing: simulate.RouteSession},
		[]int{4}, 1, sim, dsDir, false); err != nil {
		t.Fatal(err)
	}
	export := []runlog.TableRun{{Dir: filepath.Join(runs, "c8"), Run: "runs/c8", System: "runs"}, {Dir: filepath.Join(sim, "c4"), Run: "sim-sweep/c4", System: "sim-sweep"}}
	if err := os.Mkdir(filepath.Join(w.dir, "export"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := runlog.WriteTable(ctx, filepath.Join(w.dir, "export", runlog.TableFile), export, runlog.TableOptions{RunColumns: true}); err != nil {
		t.Fatal(err)
	}
	tok, err := tokens.Load(ctx, testenv.Tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	cd, err := card.Build(ctx, card.Options{Dataset: dsDir, OSL: tok})
	if err != nil {
		t.Fatal(err)
	}
	if err := card.Write(context.Background(), cd, card.WriteOptions{Out: filepath.Join(w.dir, "card"), Inputs: []string{dsDir}}); err != nil {
		t.Fatal(err)
	}
}

// jsonEmptyText are the keys of agentrace's JSON documents whose "" is a value.
var jsonEmptyText = map[string]bool{}

// checkJSONNulls checks a JSON document agentrace wrote: no value is -1 and no
// text is "" (a missing value is null).
func checkJSONNulls(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	bad := 0
	var walk func(at, key string, v any)
	walk = func(at, key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				walk(at+"."+k, k, x)
			}
		case []any:
			for i, x := range v {
				walk(fmt.Sprintf("%s[%d]", at, i), key, x)
			}
		case string:
			if v == "" && !jsonEmptyText[key] {
				if bad++; bad <= 20 {
					t.Errorf("%s: %s is \"\" (missing must be null)", path, at)
				}
			}
		case float64:
			if v == -1 {
				if bad++; bad <= 20 {
					t.Errorf("%s: %s is -1 (missing must be null)", path, at)
				}
			}
		}
	}
	walk("", "", doc)
	if bad > 20 {
		t.Errorf("%s: %d values in all", path, bad)
	}
}

// resultKinds is the kind of every column docs/queries.md's queries return: an
// integer count, a number, a text or a boolean. A column missing here fails the
// test: a new query says what its columns are.
var resultKinds = map[string]string{
	"conversation_id": "text", "domain": "text", "client_turns": "int", "last_request_kb": "number", "delay_s": "number",
	"seq": "int", "role": "text", "wire": "text",
	"trajectories": "int", "isl_tokens_per_turn": "number", "history_bytes_per_turn": "number", "isl_max": "int",
	"session_id": "text", "turns": "int", "output_tokens": "int", "active_s": "number", "progress_rate": "number",
	"concurrency": "int", "scored_turns": "int", "accuracy": "number", "osl_mean": "number",
	"path": "text", "kind": "text", "pass": "bool", "error": "text",
	"endpoint": "int", "t_s": "number", "running": "number", "waiting": "number", "kv_usage": "number",
	"prefix_hits_total": "number", "prefix_queries_total": "number",
	"requests": "number", "prefix_cache_hit_rate": "number", "kv_usage_mean": "number",
	"server_prefix_cache_hit_rate": "number", "server_kv_usage_mean": "number", "server_kv_usage_p90": "number",
	"server_queue_depth_mean": "number", "server_running_mean": "number", "server_preemptions": "number", "server_requests": "number",
}

// nullable are the result columns that may be NULL: rescore's error, for a run
// that had none.
var nullable = map[string]bool{"error": true}

// checkSignsAndTypes checks every row of docs/queries.md's queries as a reader
// would take it: each column of the kind resultKinds says, in DuckDB's type and in
// each value; no count, size, time, rate or mean negative (a -1 standing for
// missing), no NULL where a value is expected, no empty text.
func checkSignsAndTypes(t *testing.T, res map[string][]map[string]any, names []string) {
	t.Helper()
	for _, name := range names {
		for _, d := range res["describe:"+name] {
			col, typ := d["column_name"].(string), d["column_type"].(string)
			kind, ok := resultKinds[col]
			if !ok {
				t.Errorf("%s: column %s (%s) has no kind in resultKinds", name, col, typ)
				continue
			}
			isInt := slices.Contains([]string{"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}, typ)
			isNum := isInt || typ == "DOUBLE" || typ == "FLOAT" || strings.HasPrefix(typ, "DECIMAL")
			if kind == "int" && !isInt || kind == "number" && (!isNum || isInt && col != "isl_max") || kind == "text" && typ != "VARCHAR" || kind == "bool" && typ != "BOOLEAN" {
				t.Errorf("%s: column %s is %s, want %s", name, col, typ, kind)
			}
		}
		if len(res[name]) == 0 {
			t.Errorf("%s: no rows", name)
		}
		for i, row := range res[name] {
			for col, v := range row {
				switch v := v.(type) {
				case nil:
					if !nullable[col] {
						t.Errorf("%s row %d: %s is NULL", name, i, col)
					}
				case float64:
					if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("%s row %d: %s = %v, want a finite number >= 0", name, i, col, v)
					}
				case string:
					if v == "" {
						t.Errorf("%s row %d: %s is an empty text (a missing value is NULL)", name, i, col)
					}
				}
			}
		}
	}
}

// emptyText are the text columns where "" is a value, not a missing one: the
// content and reasoning of an answer that had none (tool calls only), and a
// dataset message's content and reasoning_content as the trace gives them ("" is
// sent as "", an absent one is null).
var emptyText = map[string]bool{"output_content": true, "output_reasoning": true, "content": true, "reasoning_content": true}

// checkWrittenTables checks the tables agentrace wrote: a column named alike has
// one type in every table, no integer column holds a negative value (-1 standing
// for missing), and no text column an empty string ("" standing for missing).
func checkWrittenTables(t *testing.T, res map[string][]map[string]any) {
	t.Helper()
	typeOf, where := map[string]string{}, map[string]string{}
	for _, table := range writtenTables {
		rows := res["summarize:"+table]
		if len(rows) == 0 {
			t.Errorf("SUMMARIZE %s: no columns", table)
		}
		for _, r := range rows {
			col, typ := r["column_name"].(string), r["column_type"].(string)
			if prev, ok := typeOf[col]; ok && prev != typ {
				t.Errorf("column %s is %s in %s and %s in %s: one type per column", col, typ, table, prev, where[col])
			} else if !ok {
				typeOf[col], where[col] = typ, table
			}
			lo, _ := r["min"].(string)
			switch {
			case strings.Contains(typ, "INT") && !strings.HasSuffix(col, "_ns") && strings.HasPrefix(lo, "-"):
				t.Errorf("%s: integer column %s has minimum %s (missing must be NULL, not a negative)", table, col, lo)
			case typ == "VARCHAR" && r["min"] == "" && !emptyText[col]:
				t.Errorf("%s: text column %s holds an empty string (missing must be NULL)", table, col)
			}
		}
	}
}

// compareServer checks docs/queries.md's server queries against points.json's
// server_* figures and server_replicas, to 1e-12 relative (their means add the
// same fractions in another order), and returns how many numbers it checked.
func compareServer(t *testing.T, res map[string][]map[string]any, byC map[int]map[string]any) int {
	t.Helper()
	checked := 0
	near := func(what string, got, want any) {
		t.Helper()
		gf, gok := got.(float64)
		wf, wok := want.(float64)
		switch {
		case got == nil && want == nil:
		case !gok || !wok:
			t.Errorf("%s: DuckDB %v, points.json %v", what, got, want)
		case math.Abs(gf-wf) > 1e-12*math.Max(math.Abs(wf), 1e-300):
			t.Errorf("%s: DuckDB %v, points.json %v", what, gf, wf)
		}
		checked++
	}
	if len(res["server-metrics"]) != len(byC) {
		t.Errorf("server-metrics: %d rows for %d points", len(res["server-metrics"]), len(byC))
	}
	for _, row := range res["server-metrics"] {
		c := int(num(t, row, "concurrency"))
		p := byC[c]
		for field, v := range row {
			if field != "concurrency" {
				if _, ok := p[field]; !ok {
					t.Errorf("server-metrics: points.json has no %s", field)
				}
				near(fmt.Sprintf("server-metrics c=%d %s", c, field), v, p[field])
			}
		}
		if p["server_prefix_cache_hit_rate"] == nil || p["server_requests"] == nil {
			t.Errorf("c=%d: no server figures in points.json: %v", c, p["server_note"])
		}
	}
	for _, row := range res["server-replicas"] {
		c, ep := int(num(t, row, "concurrency")), int(num(t, row, "endpoint"))
		reps, _ := byC[c]["server_replicas"].([]any)
		if ep >= len(reps) {
			t.Errorf("server-replicas c=%d: endpoint %d, points.json has %d replicas", c, ep, len(reps))
			continue
		}
		r := reps[ep].(map[string]any)
		for _, field := range []string{"requests", "prefix_cache_hit_rate", "kv_usage_mean"} {
			near(fmt.Sprintf("server-replicas c=%d endpoint %d %s", c, ep, field), row[field], r[field])
		}
	}
	if want := 2 * len(byC); len(res["server-replicas"]) != want {
		t.Errorf("server-replicas: %d rows, want %d (two endpoints per point)", len(res["server-replicas"]), want)
	}
	return checked
}
