package report

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"math"
	"path/filepath"

	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/agentrace/agentrace/score/curve"
	"github.com/agentrace/agentrace/score/runread"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// The report's analysis tables, beside points.json:
//
//   - points.parquet: one row per point (pointRow), the metrics of points.json
//     flattened, with system, run and concurrency;
//   - turns.parquet: every agentrace run's turn log as runlog.WriteTable writes a
//     run's turns.parquet, stacked, with run and system beside concurrency, plus
//     the per-turn values the metrics were computed from: osl and isl (tokens, as
//     counted for the report: reference tokenizer, else server usage) and tpot_ms
//     (the turn's TPOT sample, null when it gave none). docs/analysis.md shows the
//     queries that reproduce points.json from it.
const (
	PointsTable = "points.parquet"
	TurnsTable  = runlog.TableFile
	// MacrosFile is the DuckDB macro file (lower_percentile) written beside them.
	MacrosFile = "agentrace.sql"
)

// Macros is agentrace.sql: the DuckDB macros for the analysis tables.
//
//go:embed agentrace.sql
var Macros string

// pointRow is one row of points.parquet. Pointers are null where points.json has
// null (no samples).
type pointRow struct {
	System                   string   `parquet:"system,dict"`
	Run                      string   `parquet:"run"`
	Concurrency              int32    `parquet:"concurrency"`
	Region                   string   `parquet:"region,dict,optional"`
	SystemTPS                *float64 `parquet:"system_tps,optional"`
	E2EAvgInteractivity      *float64 `parquet:"e2e_avg_interactivity,optional"`
	TPSPerUser               *float64 `parquet:"tps_per_user,optional"`
	TurnsPerS                *float64 `parquet:"turns_per_s,optional"`
	OutputTokensPerTurnTotal int64    `parquet:"output_tokens_per_turn_total"`
	E2ETurnTimeSecondsTotal  *float64 `parquet:"e2e_turn_time_seconds_total,optional"`
	TTFTP50Ms                *float64 `parquet:"ttft_p50_ms,optional"`
	TTFTP90Ms                *float64 `parquet:"ttft_p90_ms,optional"`
	TTFTP99Ms                *float64 `parquet:"ttft_p99_ms,optional"`
	TPOTP50Ms                *float64 `parquet:"tpot_p50_ms,optional"`
	TPOTP90Ms                *float64 `parquet:"tpot_p90_ms,optional"`
	TPOTP99Ms                *float64 `parquet:"tpot_p99_ms,optional"`
	ITLP50Ms                 *float64 `parquet:"itl_p50_ms,optional"`
	ITLP90Ms                 *float64 `parquet:"itl_p90_ms,optional"`
	ITLP99Ms                 *float64 `parquet:"itl_p99_ms,optional"`
	LatencyP50Ms             *float64 `parquet:"latency_p50_ms,optional"`
	LatencyP90Ms             *float64 `parquet:"latency_p90_ms,optional"`
	LatencyP99Ms             *float64 `parquet:"latency_p99_ms,optional"`
	ISLMean                  *float64 `parquet:"isl_mean,optional"`
	OSLMean                  *float64 `parquet:"osl_mean,optional"`
	OSLFullRunMean           *float64 `parquet:"osl_full_run_mean,optional"`
	PrefixCacheHitRatio      *float64 `parquet:"prefix_cache_hit_ratio,optional"`
	ClientLagP99Ms           *float64 `parquet:"client_lag_p99_ms,optional"`
	Issued                   int32    `parquet:"n_samples_issued"`
	Completed                int32    `parquet:"n_samples_completed"`
	Failed                   int32    `parquet:"n_samples_failed"`
	WindowDurationS          *float64 `parquet:"window_duration_s,optional"`
	TurnsExcludedByWindow    int32    `parquet:"turns_excluded_by_window"`
	TurnsNotIssued           int32    `parquet:"turns_not_issued"`
	GatesPass                *bool    `parquet:"gates_pass,optional"`
	Unofficial               bool     `parquet:"unofficial"`
	TokenSource              string   `parquet:"token_source,dict"`
	SimSpeedup               *float64 `parquet:"sim_speedup,optional"`
	// The server's scraped figures (ServerTelemetry), null without them.
	ServerPrefixCacheHitRate *float64 `parquet:"server_prefix_cache_hit_rate,optional"`
	ServerKVUsageMean        *float64 `parquet:"server_kv_usage_mean,optional"`
	ServerKVUsageP90         *float64 `parquet:"server_kv_usage_p90,optional"`
	ServerQueueDepthMean     *float64 `parquet:"server_queue_depth_mean,optional"`
	ServerRunningMean        *float64 `parquet:"server_running_mean,optional"`
	ServerPreemptions        *float64 `parquet:"server_preemptions,optional"`
	ServerRequests           *float64 `parquet:"server_requests,optional"`
}

func numPtr(n metrics.Num) *float64 {
	if !n.Valid() {
		return nil
	}
	f := float64(n)
	return &f
}

func statAvgPtr(s *metrics.Stats) *float64 {
	if s == nil || math.IsNaN(s.Avg) {
		return nil
	}
	f := s.Avg
	return &f
}

func pointRowOf(s *curve.System, p *curve.Point) pointRow {
	r := pointRow{
		System: s.Name, Run: p.RunDir, Concurrency: int32(p.Concurrency), Region: p.Region,
		SystemTPS: numPtr(p.SystemTPS), E2EAvgInteractivity: numPtr(p.E2EAvgInteractivity), TPSPerUser: numPtr(p.TPSPerUser),
		TurnsPerS: numPtr(p.TurnsPerS), OutputTokensPerTurnTotal: p.OutputTokensPerTurnTotal,
		E2ETurnTimeSecondsTotal: numPtr(p.E2ETurnTimeSecondsTotal),
		TTFTP50Ms:               numPtr(p.TTFTP50Ms), TTFTP90Ms: numPtr(p.TTFTP90Ms), TTFTP99Ms: numPtr(p.TTFTP99Ms),
		TPOTP50Ms: numPtr(p.TPOTP50Ms), TPOTP90Ms: numPtr(p.TPOTP90Ms), TPOTP99Ms: numPtr(p.TPOTP99Ms),
		ITLP50Ms: numPtr(p.ITLP50Ms), ITLP90Ms: numPtr(p.ITLP90Ms), ITLP99Ms: numPtr(p.ITLP99Ms),
		LatencyP50Ms: numPtr(p.LatencyP50Ms), LatencyP90Ms: numPtr(p.LatencyP90Ms), LatencyP99Ms: numPtr(p.LatencyP99Ms),
		ISLMean: statAvgPtr(p.ISL), OSLMean: statAvgPtr(p.OSL), OSLFullRunMean: statAvgPtr(p.OSLFullRun),
		PrefixCacheHitRatio: numPtr(p.PrefixCacheHitRatio), ClientLagP99Ms: numPtr(p.ClientLagP99Ms),
		Issued: int32(p.Issued), Completed: int32(p.Completed), Failed: int32(p.Failed),
		WindowDurationS: numPtr(p.WindowDurationS), TurnsExcludedByWindow: int32(p.TurnsExcludedByWindow),
		TurnsNotIssued: int32(p.TurnsNotIssued), GatesPass: p.GatesPass, Unofficial: p.Unofficial, TokenSource: p.TokenSource,
	}
	if sp := p.Manifest.SimSpeedup; sp > 0 {
		r.SimSpeedup = &sp
	}
	t := &p.ServerTelemetry
	r.ServerPrefixCacheHitRate, r.ServerKVUsageMean, r.ServerKVUsageP90 = t.ServerPrefixCacheHitRate, t.ServerKVUsageMean, t.ServerKVUsageP90
	r.ServerQueueDepthMean, r.ServerRunningMean = t.ServerQueueDepthMean, t.ServerRunningMean
	r.ServerPreemptions, r.ServerRequests = t.ServerPreemptions, t.ServerRequests
	return r
}

// writeTables writes points.parquet (turns.parquet was written as the runs
// were read: turnsTable) into the report folder out. Points read from reference
// runs have no turn log of agentrace's: they are in points.parquet only (notes
// says so).
func (r *Report) writeTables(ctx context.Context, out string) (notes []string, err error) {
	var rows []pointRow
	for _, s := range r.Systems {
		for _, p := range s.Points {
			rows = append(rows, pointRowOf(s, p))
			if p.Run() == nil || !inTurnsTable(p.Run()) {
				notes = append(notes, fmt.Sprintf("%s: no agentrace turn log, not in %s", p.RunDir, TurnsTable))
			}
		}
	}
	notes = append(notes, r.tableNotes...)
	if err := outguard.AtomicWriteBytes(filepath.Join(out, MacrosFile), []byte(Macros)); err != nil {
		return notes, err
	}
	if err := outguard.WriteParquet(filepath.Join(out, PointsTable), outguard.Kind{Name: "points-table"}, rows, &zstd.Codec{}); err != nil {
		return notes, fmt.Errorf("write %s: %w", PointsTable, err)
	}
	return notes, r.writeServerTables(out)
}

// inTurnsTable tells whether a run's turn log goes into turns.parquet.
func inTurnsTable(run *archive.Run) bool {
	return runread.HasTurnLog(run) && run.Has(schemas.TurnLogFile)
}

// turnsTable is turns.parquet being written while the report reads its runs:
// each agentrace run's rows go to it from the read that evaluates the run
// (curve.LoadOptions.OnBatch), so that no log is read again for it. Its runs
// are in the order the report reads them (readCurve.order), curves in order;
// runs read in parallel wait for the runs before them to be written
// (runlog.TableWriter).
type turnsTable struct {
	tw    *runlog.TableWriter // nil when no run has a turn log, or err
	of    map[*archive.Run]*runlog.RunTable
	notes []string
	// err is why the table could not be started: said once the runs were
	// read, whose own errors come first.
	err error
}

// startTurnsTable plans turns.parquet in out from the curves' runs: their
// manifests and the schema at the start of each turn log.
func startTurnsTable(ctx context.Context, out string, curves []readCurve) *turnsTable {
	t := &turnsTable{of: map[*archive.Run]*runlog.RunTable{}}
	var runs []runlog.TableRun
	var which []*archive.Run
	expected := map[string]runlog.ExpectedTurns{}
	for _, c := range curves {
		for _, i := range c.order {
			run, f := c.runs[i], c.facts[i]
			if !inTurnsTable(run) || f.Manifest == nil {
				continue
			}
			tr := runlog.TableRun{Dir: run.Label, Manifest: f.Manifest, Run: run.Label, System: c.name,
				Open:  func() (io.ReadCloser, error) { return run.Open(schemas.TurnLogFile) },
				Extra: []runlog.ExtraColumn{{Name: "osl", Count: true}, {Name: "isl", Count: true}, {Name: "tpot_ms"}}}
			if ds := runread.DatasetOf(run, f); ds != "" {
				exp, ok := expected[ds]
				if !ok {
					var err error
					if exp, err = runlog.ReadExpectedTurns(ctx, ds); err != nil {
						t.notes = append(t.notes, fmt.Sprintf("%s: expected_turn left null: %v", run.Label, err))
					}
					expected[ds] = exp
				}
				tr.Expected = exp
			}
			if tr.Expected == nil {
				tr.Expected = func(string, int32) (int32, bool) { return 0, false }
			}
			runs = append(runs, tr)
			which = append(which, run)
		}
	}
	if len(runs) == 0 {
		return t
	}
	if t.tw, t.err = runlog.NewTableWriter(ctx, filepath.Join(out, TurnsTable), runs, runlog.TableOptions{RunColumns: true}); t.err != nil {
		return t
	}
	for k, run := range which {
		t.of[run] = t.tw.Run(k)
	}
	return t
}

// fail says that a run could not be read: the table is not written.
func (t *turnsTable) fail(err error) {
	if t.tw != nil {
		t.tw.Fail(err)
	}
}

// close puts turns.parquet in place; it returns what writing it said.
func (t *turnsTable) close() ([]string, error) {
	if t.err != nil || t.tw == nil {
		return t.notes, t.err
	}
	info, err := t.tw.Close()
	return append(t.notes, info.Warnings...), err
}

// abort drops turns.parquet unless close wrote it.
func (t *turnsTable) abort() {
	if t.tw != nil {
		t.tw.Abort()
	}
}
