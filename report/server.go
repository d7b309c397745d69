package report

import (
	"fmt"
	"path/filepath"

	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// ServerMetricsTable and ReplicasTable are the report's analysis tables of the
// servers' scraped metrics: the rows of a known quantity of every point's
// run, and the per-endpoint figures of points with several endpoints.
const (
	ServerMetricsTable = "server_metrics.parquet"
	ReplicasTable      = "server_replicas.parquet"
)

// serverRow is one row of the report's server_metrics.parquet: a run's row
// with its point and the span the point's figures cover.
type serverRow struct {
	System        string  `parquet:"system,dict"`
	Run           string  `parquet:"run,dict"`
	Concurrency   int32   `parquet:"concurrency"`
	WindowStartNs int64   `parquet:"window_start_ns"`
	WindowEndNs   int64   `parquet:"window_end_ns"`
	TNs           int64   `parquet:"t_ns,delta"`
	Endpoint      int32   `parquet:"endpoint"`
	Metric        string  `parquet:"metric,dict"`
	Labels        *string `parquet:"labels,dict,optional"`
	Kind          string  `parquet:"kind,dict"`
	Value         float64 `parquet:"value"`
	Quantity      string  `parquet:"quantity,dict"`
	Replica       *int32  `parquet:"replica,optional"`
}

// replicaRow is one row of server_replicas.parquet.
type replicaRow struct {
	System             string   `parquet:"system,dict"`
	Run                string   `parquet:"run,dict"`
	Concurrency        int32    `parquet:"concurrency"`
	Endpoint           int32    `parquet:"endpoint"`
	URL                string   `parquet:"url"`
	Engine             string   `parquet:"engine,dict"`
	Turns              *int64   `parquet:"turns,optional"`
	Trajectories       *int64   `parquet:"trajectories,optional"`
	Requests           *float64 `parquet:"requests,optional"`
	PrefixCacheHitRate *float64 `parquet:"prefix_cache_hit_rate,optional"`
	KVUsageMean        *float64 `parquet:"kv_usage_mean,optional"`
	RoutingMode        string   `parquet:"routing_mode,dict"`
	RoutingSplit       *int64   `parquet:"routing_split_trajectories,optional"`
}

func int64Ptr(v *int) *int64 {
	if v == nil {
		return nil
	}
	return ptr(int64(*v))
}

// serverTables are the report's server_metrics.parquet and
// server_replicas.parquet rows; none when no point scraped anything.
func (r *Report) serverTables() ([]serverRow, []replicaRow) {
	var rows []serverRow
	var reps []replicaRow
	for _, s := range r.Systems {
		for _, p := range s.Points {
			a, b := p.ServerWindow()
			eps := []schemas.ScrapedEndpoint(nil)
			if p.Manifest.ServerMetrics != nil {
				eps = p.Manifest.ServerMetrics.Endpoints
			}
			for _, x := range p.ServerRows {
				row := serverRow{System: s.Name, Run: p.RunDir, Concurrency: int32(p.Concurrency), WindowStartNs: a, WindowEndNs: b,
					TNs: x.TNs, Endpoint: x.Endpoint, Metric: x.Metric, Labels: x.Labels, Kind: x.Kind, Value: x.Value, Quantity: *x.Quantity}
				if int(x.Endpoint) < len(eps) && eps[x.Endpoint].Replica != nil {
					row.Replica = ptr(int32(*eps[x.Endpoint].Replica))
				}
				rows = append(rows, row)
			}
			for _, x := range p.ServerReplicas {
				reps = append(reps, replicaRow{System: s.Name, Run: p.RunDir, Concurrency: int32(p.Concurrency), Endpoint: int32(x.Endpoint),
					URL: x.URL, Engine: x.Engine, Turns: int64Ptr(x.Turns), Trajectories: int64Ptr(x.Trajectories),
					Requests: x.Requests, PrefixCacheHitRate: x.PrefixCacheHitRate, KVUsageMean: x.KVUsageMean,
					RoutingMode: p.RoutingMode, RoutingSplit: int64Ptr(p.RoutingSplit)})
			}
		}
	}
	return rows, reps
}

// writeServerTables writes server_metrics.parquet and server_replicas.parquet
// into the report folder out when a point has rows for them.
func (r *Report) writeServerTables(out string) error {
	rows, reps := r.serverTables()
	if len(rows) > 0 {
		if err := outguard.WriteParquet(filepath.Join(out, ServerMetricsTable), outguard.Kind{Name: "server-metrics-table"}, rows, &zstd.Codec{}); err != nil {
			return fmt.Errorf("write %s: %w", ServerMetricsTable, err)
		}
	}
	if len(reps) > 0 {
		if err := outguard.WriteParquet(filepath.Join(out, ReplicasTable), outguard.Kind{Name: "server-replicas-table"}, reps, &zstd.Codec{}); err != nil {
			return fmt.Errorf("write %s: %w", ReplicasTable, err)
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
