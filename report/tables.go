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

// writeTables writes points.parquet and turns.parquet into the report folder out.
// Points read from reference runs have no turn log of agentrace's: they are in
// points.parquet only (notes says so).
func (r *Report) writeTables(ctx context.Context, out string) (notes []string, err error) {
	var rows []pointRow
	var runs []runlog.TableRun
	var sources []*archive.Run // of runs
	expected := map[string]runlog.ExpectedTurns{}
	for _, s := range r.Systems {
		for _, p := range s.Points {
			rows = append(rows, pointRowOf(s, p))
			if p.Run() == nil || !runread.HasTurnLog(p.Run()) || !p.Run().Has(schemas.TurnLogFile) {
				notes = append(notes, fmt.Sprintf("%s: no agentrace turn log, not in %s", p.RunDir, TurnsTable))
				continue
			}
			src := p.Run()
			tr := runlog.TableRun{Dir: p.RunDir, Manifest: &p.Manifest, Run: p.RunDir, System: s.Name, Rows: len(p.Rows.OSL),
				Open:  func() (io.ReadCloser, error) { return src.Open(schemas.TurnLogFile) },
				Extra: []runlog.ExtraColumn{{Name: "osl", Values: p.Rows.OSL, Count: true}, {Name: "isl", Values: p.Rows.ISL, Count: true}, {Name: "tpot_ms", Values: p.Rows.TPOTMs}}}
			if p.DatasetDir() != "" {
				exp, ok := expected[p.DatasetDir()]
				if !ok {
					if exp, err = runlog.ReadExpectedTurns(ctx, p.DatasetDir()); err != nil {
						notes = append(notes, fmt.Sprintf("%s: expected_turn left null: %v", p.RunDir, err))
					}
					expected[p.DatasetDir()] = exp
				}
				tr.Expected = exp
			}
			if tr.Expected == nil {
				tr.Expected = func(string, int32) (int32, bool) { return 0, false }
			}
			runs = append(runs, tr)
			sources = append(sources, src)
		}
	}
	if err := outguard.AtomicWriteBytes(filepath.Join(out, MacrosFile), []byte(Macros)); err != nil {
		return notes, err
	}
	if err := outguard.WriteParquet(filepath.Join(out, PointsTable), outguard.Kind{Name: "points-table"}, rows, &zstd.Codec{}); err != nil {
		return notes, fmt.Errorf("write %s: %w", PointsTable, err)
	}
	if err := r.writeServerTables(out); err != nil {
		return notes, err
	}
	if len(runs) == 0 {
		return notes, nil
	}
	// Runs from an archive go in the order they lie in it: one pass over a .tgz.
	order := archive.ReadOrder(sources)
	inOrder := make([]runlog.TableRun, len(runs))
	for k, i := range order {
		inOrder[k] = runs[i]
	}
	info, err := runlog.WriteTable(ctx, filepath.Join(out, TurnsTable), inOrder, runlog.TableOptions{RunColumns: true})
	notes = append(notes, info.Warnings...)
	if err != nil {
		return notes, fmt.Errorf("write %s: %w", TurnsTable, err)
	}
	return notes, nil
}
