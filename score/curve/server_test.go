package curve

import (
	"bytes"
	"math"
	"testing"

	"github.com/agentrace/agentrace/schemas"
	"github.com/parquet-go/parquet-go"
)

func TestCounterIncrease(t *testing.T) {
	s := func(tv ...float64) []Scrape {
		var out []Scrape
		for i := 0; i < len(tv); i += 2 {
			out = append(out, Scrape{int64(tv[i]), tv[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		name   string
		s      []Scrape
		a, b   int64
		want   float64
		wantOK bool
	}{
		{"scrapes around the window", s(0, 10, 10, 20, 20, 35, 30, 50), 5, 25, 40, true}, // from t=0 (<=5) to t=30 (>=25)
		{"bounds on scrapes", s(0, 10, 10, 20, 20, 35, 30, 50), 10, 20, 15, true},        // exactly 10 -> 20
		{"window before the first scrape", s(10, 20, 20, 35), 0, 20, 15, true},           // the first scrape stands for the start
		{"window past the last scrape", s(0, 10, 10, 20), 5, 100, 10, true},              // the last scrape stands for the end
		{"reset: the server restarted", s(0, 100, 10, 120, 20, 5, 30, 15), 0, 30, 20 + 5 + 10, true},
		{"one scrape", s(0, 10), 0, 10, 0, false},
		{"no scrape", nil, 0, 10, 0, false},
	} {
		got, ok := increase(c.s, c.a, c.b)
		if ok != c.wantOK || got != c.want {
			t.Errorf("%s: increase %v (%v), want %v (%v)", c.name, got, ok, c.want, c.wantOK)
		}
	}
}

// writeRows writes rows as a run's server_metrics.parquet.
func writeRows(t *testing.T, rows []schemas.ServerMetricRow) []byte {
	t.Helper()
	var b bytes.Buffer
	w := parquet.NewGenericWriter[schemas.ServerMetricRow](&b)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestServerSeries(t *testing.T) {
	q := func(s string) *string { return &s }
	l := func(s string) *string { return &s }
	var rows []schemas.ServerMetricRow
	add := func(tn int64, ep int32, metric string, labels *string, quantity *string, v float64) {
		rows = append(rows, schemas.ServerMetricRow{TNs: tn, Endpoint: ep, Metric: metric, Labels: labels, Kind: "counter", Value: v, Quantity: quantity})
	}
	for i, tn := range []int64{0, 10, 20} {
		// two engine cores' KV usage, averaged; running summed
		add(tn, 0, "vllm:kv_cache_usage_perc", l(`{engine="0"}`), q(schemas.QuantityKVUsage), 0.2*float64(i+1))
		add(tn, 0, "vllm:kv_cache_usage_perc", l(`{engine="1"}`), q(schemas.QuantityKVUsage), 0.4*float64(i+1))
		add(tn, 0, "vllm:num_requests_running", l(`{engine="0"}`), q(schemas.QuantityRunning), 2)
		add(tn, 0, "vllm:num_requests_running", l(`{engine="1"}`), q(schemas.QuantityRunning), 3)
		add(tn, 0, "vllm:prefix_cache_queries_total", nil, q(schemas.QuantityPrefixQueries), 100*float64(i))
		add(tn, 0, "vllm:prefix_cache_hits_total", nil, q(schemas.QuantityPrefixHits), 75*float64(i))
		add(tn, 0, "vllm:num_requests_total_unmapped", nil, nil, 1) // no quantity: not kept
		// a TensorRT-LLM endpoint counts hits and misses
		add(tn, 1, "trtllm_kv_cache_reused_blocks_total", nil, q(schemas.QuantityPrefixHits), 10*float64(i))
		add(tn, 1, "trtllm_kv_cache_missed_blocks_total", nil, q(schemas.QuantityPrefixMisses), 30*float64(i))
	}
	// a labelled request counter first seen at t=10 with its first 4 counts
	add(10, 0, "vllm:request_success_total", l(`{finished_reason="stop"}`), q(schemas.QuantityRequests), 4)
	add(20, 0, "vllm:request_success_total", l(`{finished_reason="stop"}`), q(schemas.QuantityRequests), 6)
	add(20, 0, "vllm:request_success_total", l(`{finished_reason="length"}`), q(schemas.QuantityRequests), 1)
	eps, kept, err := readServerSeries(writeRows(t, rows), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != len(rows)-3 {
		t.Errorf("kept %d rows of %d (3 without a quantity)", len(kept), len(rows))
	}
	if kv := eps[0].Q[schemas.QuantityKVUsage]; len(kv) != 3 || math.Abs(kv[2].V-0.9) > 1e-12 {
		t.Errorf("KV usage %v: want the cores' mean, 0.9 at t=20", kv)
	}
	if r := eps[0].Q[schemas.QuantityRunning]; r[0].V != 5 {
		t.Errorf("running %v: want the cores' sum, 5", r)
	}
	if inc, ok := increase(eps[0].Q[schemas.QuantityRequests], 0, 20); !ok || inc != 7 {
		t.Errorf("requests increase %v (%v): want 7, counted from 0 before the family appeared", inc, ok)
	}
	h, qs, ok := hitRate(eps[:1], 0, 20)
	if !ok || h/qs != 0.75 {
		t.Errorf("vLLM hit rate %v/%v", h, qs)
	}
	h, qs, ok = hitRate(eps[1:], 0, 20)
	if !ok || h/qs != 0.25 {
		t.Errorf("TensorRT-LLM hit rate %v/%v: want hits over hits plus misses", h, qs)
	}
	h, qs, _ = hitRate(eps, 0, 20)
	if h != 150+20 || qs != 200+80 {
		t.Errorf("both endpoints: %v/%v", h, qs)
	}
}

// A window that held fewer than two scrapes says what its usage and queue
// figures rest on; the fewest scrapes of any endpoint count.
func TestFewScrapesNote(t *testing.T) {
	q := func(ts ...int64) map[string][]Scrape {
		var s []Scrape
		for _, x := range ts {
			s = append(s, Scrape{T: x})
		}
		return map[string][]Scrape{schemas.QuantityRunning: s}
	}
	eps := []EndpointSeries{{Q: q(0, 1e9, 2e9)}, {Q: q(0, 2e9)}}
	for _, tc := range []struct {
		a, b int64
		want string
	}{
		{0, 2e9, ""},
		{0, 3e8, "; the window (0.30 s) held 1 scrape of the server's page (one every 1 s): its usage and queue figures are that one scrape's"},
		{1e8, 4e8, "; the window (0.30 s) held 0 scrapes of the server's page (one every 1 s): no usage or queue figure"},
		{5e8, 15e8, "; the window (1.00 s) held 0 scrapes of the server's page (one every 1 s): no usage or queue figure"},
	} {
		if got := fewScrapesNote(windowScrapes(eps, tc.a, tc.b), tc.b-tc.a, 1); got != tc.want {
			t.Errorf("window [%d, %d]: %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
	if n := windowScrapes([]EndpointSeries{{Q: map[string][]Scrape{}}}, 0, 1); n != -1 {
		t.Errorf("no quantity: %d scrapes, want -1", n)
	}
}
