package curve

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/agentrace/agentrace/internal/english"
	"github.com/agentrace/agentrace/metrics"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/archive"
	"github.com/parquet-go/parquet-go"
)

// ServerTelemetry is what the serving engine reported about a point over its
// performance window, from the run's scraped Prometheus metrics
// (schemas.ServerMetricsFile): server-reported, not a rules metric. In
// points.json its fields sit beside the point's own; each is null when the run
// scraped nothing that gives it.
type ServerTelemetry struct {
	// ServerPrefixCacheHitRate is the prefix-cache hits over the queries (the
	// counters' increase from the last scrape at or before the window's start
	// to the first at or after its end, over every endpoint); where an engine
	// has no such counters, the mean of its own hit-rate gauge over the window.
	ServerPrefixCacheHitRate *float64 `json:"server_prefix_cache_hit_rate"`
	// ServerKVUsageMean and ServerKVUsageP90 are the KV-cache usage (a fraction)
	// over the window's scrapes of every endpoint (P90: the rules' lower
	// percentile).
	ServerKVUsageMean *float64 `json:"server_kv_usage_mean"`
	ServerKVUsageP90  *float64 `json:"server_kv_usage_p90"`
	// ServerQueueDepthMean and ServerRunningMean are the requests waiting and
	// running, each endpoint's mean over the window's scrapes, summed over the
	// endpoints.
	ServerQueueDepthMean *float64 `json:"server_queue_depth_mean"`
	ServerRunningMean    *float64 `json:"server_running_mean"`
	// ServerPreemptions and ServerRequests are the preemption and finished-request
	// counters' increase over the window (as the hit rate's), summed.
	ServerPreemptions *float64 `json:"server_preemptions"`
	ServerRequests    *float64 `json:"server_requests"`
	// ServerEngines are the engines whose names the pages carried, per scraped
	// endpoint ("unknown": recorded raw; "": nothing scraped).
	ServerEngines []string `json:"server_engines,omitempty"`
	// ServerNote says what the numbers are (schemas.ServerMetricsNote) and why
	// any is missing; "" for a run that scraped nothing.
	ServerNote string `json:"server_note,omitempty"`
	// ServerReplicas are the per-endpoint figures, with several endpoints.
	ServerReplicas []ServerReplica `json:"server_replicas,omitempty"`
	// RoutingMode and RoutingSplit are how the run spread its turns over
	// several endpoints and how many trajectories went to more than one
	// (manifest's routing); absent with one endpoint.
	RoutingMode  string `json:"routing_mode,omitempty"`
	RoutingSplit *int   `json:"routing_split_trajectories,omitempty"`

	// ServerSeries are the scraped quantities per endpoint, for the timeline;
	// ServerRows the table's rows that gave them, for the report's table.
	ServerSeries []EndpointSeries          `json:"-"`
	ServerRows   []schemas.ServerMetricRow `json:"-"`
}

// ServerReplica is one scraped endpoint's figures over the window.
type ServerReplica struct {
	Endpoint int    `json:"endpoint"`
	URL      string `json:"url"`
	Engine   string `json:"engine"`
	// Turns and Trajectories are what the client sent to the endpoint this URL
	// belongs to (window turns; trajectories that sent a turn there); null when
	// the URL was given apart from the endpoints (--metrics-url) or the run had
	// one endpoint.
	Turns        *int `json:"turns"`
	Trajectories *int `json:"trajectories"`
	// Requests, PrefixCacheHitRate and KVUsageMean are the server's, as the
	// point's.
	Requests           *float64 `json:"requests"`
	PrefixCacheHitRate *float64 `json:"prefix_cache_hit_rate"`
	KVUsageMean        *float64 `json:"kv_usage_mean"`
}

// Scrape is one page's value of a quantity: counters and running/waiting
// summed over the page's series, usage and hit-rate gauges averaged.
type Scrape struct {
	T int64 // run clock, ns
	V float64
}

// EndpointSeries are one endpoint's quantities, each in time order.
type EndpointSeries struct {
	Q map[string][]Scrape
}

// maxServerRows bounds the rows the report keeps from one run's table (only
// those of a known quantity are kept).
const maxServerRows = 20_000_000

// readServerSeries reads a run's server_metrics.parquet: the rows of a known
// quantity, grouped by endpoint and quantity, each page's series combined.
func readServerSeries(data []byte, endpoints int) ([]EndpointSeries, []schemas.ServerMetricRow, error) {
	r := parquet.NewGenericReader[schemas.ServerMetricRow](bytes.NewReader(data))
	defer r.Close()
	if r.NumRows() > maxServerRows {
		return nil, nil, fmt.Errorf("%d rows, over the limit of %d", r.NumRows(), maxServerRows)
	}
	type key struct {
		ep int32
		q  string
		t  int64
	}
	sums := map[key]float64{}
	counts := map[key]int{}
	var kept []schemas.ServerMetricRow
	buf := make([]schemas.ServerMetricRow, 4096)
	for {
		n, err := r.Read(buf)
		for _, row := range buf[:n] {
			if row.Quantity == nil || row.Endpoint < 0 || int(row.Endpoint) >= endpoints || math.IsNaN(row.Value) {
				continue
			}
			k := key{row.Endpoint, *row.Quantity, row.TNs}
			sums[k] += row.Value
			counts[k]++
			kept = append(kept, row)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
	}
	out := make([]EndpointSeries, endpoints)
	for i := range out {
		out[i].Q = map[string][]Scrape{}
	}
	for k, s := range sums {
		v := s
		if averaged(k.q) {
			v = s / float64(counts[k])
		}
		out[k.ep].Q[k.q] = append(out[k.ep].Q[k.q], Scrape{k.t, v})
	}
	for i := range out {
		first := int64(math.MaxInt64)
		for q := range out[i].Q {
			slices.SortFunc(out[i].Q[q], func(a, b Scrape) int { return cmp.Compare(a.T, b.T) })
			first = min(first, out[i].Q[q][0].T)
		}
		// A counter first seen after the endpoint's first scrape was not there
		// yet (a labelled family appears with its first count): it was 0.
		for q, s := range out[i].Q {
			if counter(q) && s[0].T > first {
				out[i].Q[q] = append([]Scrape{{first, 0}}, s...)
			}
		}
	}
	return out, kept, nil
}

// counter tells whether a quantity is a counter's.
func counter(q string) bool {
	switch q {
	case schemas.QuantityPrefixQueries, schemas.QuantityPrefixHits, schemas.QuantityPrefixMisses, schemas.QuantityPreemptions, schemas.QuantityRequests:
		return true
	}
	return false
}

// averaged tells whether a quantity's series on one page are averaged (a
// fraction per engine core), not summed.
func averaged(q string) bool { return q == schemas.QuantityKVUsage || q == schemas.QuantityHitRate }

// increase is a counter's increase from the last scrape at or before a to the
// first at or after b (the first and last scrapes when none is); a drop is a
// reset (the server restarted), after which the counter counts from 0.
func increase(s []Scrape, a, b int64) (float64, bool) {
	if len(s) < 2 {
		return 0, false
	}
	i, _ := slices.BinarySearchFunc(s, a, func(x Scrape, t int64) int { return cmp.Compare(x.T, t) })
	if i == len(s) || s[i].T > a {
		i = max(i-1, 0)
	}
	j, _ := slices.BinarySearchFunc(s, b, func(x Scrape, t int64) int { return cmp.Compare(x.T, t) })
	j = min(j, len(s)-1)
	if j <= i {
		return 0, false
	}
	var inc float64
	for k := i + 1; k <= j; k++ {
		if d := s[k].V - s[k-1].V; d >= 0 {
			inc += d
		} else {
			inc += s[k].V
		}
	}
	return inc, true
}

// within returns the values of the scrapes in [a, b].
func within(s []Scrape, a, b int64) []float64 {
	var out []float64
	for _, x := range s {
		if x.T >= a && x.T <= b {
			out = append(out, x.V)
		}
	}
	return out
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func ptr[T any](v T) *T { return &v }

// hitRate is an endpoint's (or several's) prefix-cache hit rate over [a, b]
// from its counters: hits over queries (or over hits plus misses).
func hitRate(eps []EndpointSeries, a, b int64) (hits, queries float64, ok bool) {
	for _, e := range eps {
		h, okh := increase(e.Q[schemas.QuantityPrefixHits], a, b)
		if !okh {
			continue
		}
		if q, okq := increase(e.Q[schemas.QuantityPrefixQueries], a, b); okq {
			hits, queries, ok = hits+h, queries+q, true
		} else if m, okm := increase(e.Q[schemas.QuantityPrefixMisses], a, b); okm {
			hits, queries, ok = hits+h, queries+h+m, true
		}
	}
	return hits, queries, ok
}

// loadServerMetrics reads the run's scraped metrics into the point's
// ServerTelemetry, over its performance window.
func (p *Point) loadServerMetrics(run *archive.Run) {
	sm := p.Manifest.ServerMetrics
	if sm == nil {
		return
	}
	t := &p.ServerTelemetry
	t.ServerNote = schemas.ServerMetricsNote
	for _, e := range sm.Endpoints {
		t.ServerEngines = append(t.ServerEngines, e.Engine)
		switch {
		case e.Scrapes == 0:
			t.ServerNote += fmt.Sprintf("; %s: nothing scraped (%d failed: %s)", e.URL, e.Failed, e.LastError)
		case e.Engine == schemas.EngineUnknown:
			t.ServerNote += fmt.Sprintf("; %s: no metric name of a known engine, recorded raw", e.URL)
		}
	}
	if rt := p.Manifest.Routing; rt != nil {
		t.RoutingMode, t.RoutingSplit = rt.Mode, ptr(rt.Split)
	}
	if !run.Has(sm.Table) {
		t.ServerNote += "; the run folder has no " + sm.Table
		return
	}
	data, err := run.ReadFile(sm.Table)
	if err == nil {
		t.ServerSeries, t.ServerRows, err = readServerSeries(data, len(sm.Endpoints))
	}
	if err != nil {
		t.ServerNote += fmt.Sprintf("; %s not read: %v", run.FileLabel(sm.Table), err)
		return
	}
	a, b := p.ServerWindow()
	eps := t.ServerSeries
	if h, q, ok := hitRate(eps, a, b); ok && q > 0 {
		t.ServerPrefixCacheHitRate = ptr(h / q)
	} else {
		var g []float64
		for _, e := range eps {
			g = append(g, within(e.Q[schemas.QuantityHitRate], a, b)...)
		}
		if len(g) > 0 {
			t.ServerPrefixCacheHitRate = ptr(mean(g))
			t.ServerNote += "; prefix-cache hit rate: the mean of the engine's own hit-rate gauge (no hit and query counters)"
		}
	}
	var kv []float64
	sumMeans := func(q string) *float64 {
		var s float64
		var any bool
		for _, e := range eps {
			if v := within(e.Q[q], a, b); len(v) > 0 {
				s += mean(v)
				any = true
			}
		}
		if !any {
			return nil
		}
		return ptr(s)
	}
	sumInc := func(q string) *float64 {
		var s float64
		var any bool
		for _, e := range eps {
			if v, ok := increase(e.Q[q], a, b); ok {
				s += v
				any = true
			}
		}
		if !any {
			return nil
		}
		return ptr(s)
	}
	for _, e := range eps {
		kv = append(kv, within(e.Q[schemas.QuantityKVUsage], a, b)...)
	}
	if len(kv) > 0 {
		t.ServerKVUsageMean = ptr(mean(kv))
		slices.Sort(kv)
		t.ServerKVUsageP90 = ptr(metrics.Percentile(kv, 90))
	}
	t.ServerQueueDepthMean = sumMeans(schemas.QuantityWaiting)
	t.ServerRunningMean = sumMeans(schemas.QuantityRunning)
	t.ServerPreemptions = sumInc(schemas.QuantityPreemptions)
	t.ServerRequests = sumInc(schemas.QuantityRequests)
	t.ServerNote += fewScrapesNote(windowScrapes(eps, a, b), b-a, sm.IntervalSeconds)
	if len(eps) < 2 {
		return
	}
	for i, e := range sm.Endpoints {
		r := ServerReplica{Endpoint: i, URL: e.URL, Engine: e.Engine}
		one := eps[i : i+1]
		if h, q, ok := hitRate(one, a, b); ok && q > 0 {
			r.PrefixCacheHitRate = ptr(h / q)
		}
		if v, ok := increase(eps[i].Q[schemas.QuantityRequests], a, b); ok {
			r.Requests = ptr(v)
		}
		if v := within(eps[i].Q[schemas.QuantityKVUsage], a, b); len(v) > 0 {
			r.KVUsageMean = ptr(mean(v))
		}
		if rt := p.Manifest.Routing; rt != nil && e.Replica != nil && *e.Replica < len(rt.Endpoints) {
			et := rt.Endpoints[*e.Replica]
			r.Turns, r.Trajectories = ptr(et.WindowTurns), ptr(et.Trajectories)
		}
		t.ServerReplicas = append(t.ServerReplicas, r)
	}
}

// windowScrapes is the fewest scrapes of any scraped endpoint that fall in
// [a, b], -1 when no endpoint has a known quantity.
func windowScrapes(eps []EndpointSeries, a, b int64) int {
	fewest := -1
	for _, e := range eps {
		n, any := 0, false
		for _, s := range e.Q {
			n, any = max(n, len(within(s, a, b))), true
		}
		if any && (fewest < 0 || n < fewest) {
			fewest = n
		}
	}
	return fewest
}

// fewScrapesNote says, when a window of spanNs held fewer than two scrapes of
// a page scraped every intervalS, what its usage and queue figures rest on;
// "" otherwise. (The hit rate and the counters span the scrapes around the
// window, so a short window does not starve them.)
func fewScrapesNote(n int, spanNs int64, intervalS float64) string {
	if n < 0 || n >= 2 {
		return ""
	}
	held := fmt.Sprintf("; the window (%s) held %s of the server's page (one every %g s)", seconds(float64(spanNs)/1e9), english.Count(n, "scrape", "scrapes"), intervalS)
	if n == 0 {
		return held + ": no usage or queue figure"
	}
	return held + ": its usage and queue figures are that one scrape's"
}

// serverWindow is the span the server's figures cover: the performance window,
// or the whole run when it never closed.
func (p *Point) ServerWindow() (a, b int64) {
	a, b = p.WindowStartNs, p.WindowEndNs
	if b <= a {
		b = max(p.Manifest.EndedNs, a)
	}
	return a, b
}
