package promscrape

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrace/agentrace/schemas"
	"github.com/parquet-go/parquet-go"
)

// pageSeries reads the sample lines of a recorded page, as the oracle of what
// Parse must return: name, label pairs (sorted), value.
func pageSeries(t *testing.T, page []byte) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(page))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("page line %q: %v", line, err)
		}
		series := line[:i]
		name, labels, _ := strings.Cut(series, "{")
		var pairs []string
		if labels = strings.TrimSuffix(labels, "}"); labels != "" {
			pairs = strings.Split(labels, ",")
		}
		for i, p := range pairs {
			// a bucket bound is a number: 1.0 and 1 are one bound
			if k, b, ok := strings.Cut(p, "="); ok && (k == "le" || k == "quantile") {
				f, err := strconv.ParseFloat(strings.Trim(b, `"`), 64)
				if err != nil {
					t.Fatalf("page line %q: %v", line, err)
				}
				pairs[i] = k + `="` + formatFloat(f) + `"`
			}
		}
		slices.Sort(pairs)
		out[name+"{"+strings.Join(pairs, ",")+"}"] = v
	}
	return out
}

// sampleKey writes a parsed sample as pageSeries does.
func sampleKey(s Sample) string {
	l := strings.TrimSuffix(strings.TrimPrefix(s.Labels, "{"), "}")
	var pairs []string
	if l != "" {
		pairs = strings.Split(l, ", ")
	}
	slices.Sort(pairs)
	return s.Metric + "{" + strings.Join(pairs, ",") + "}"
}

func TestParseRecordedPages(t *testing.T) {
	for _, c := range []struct {
		page   string
		engine string
		quant  map[string]string
		kinds  map[string]string // a few families' types
	}{
		{"vllm.txt", schemas.EngineVLLM, map[string]string{
			schemas.QuantityRunning: "vllm:num_requests_running", schemas.QuantityWaiting: "vllm:num_requests_waiting",
			schemas.QuantityKVUsage:       "vllm:kv_cache_usage_perc",
			schemas.QuantityPrefixQueries: "vllm:prefix_cache_queries_total", schemas.QuantityPrefixHits: "vllm:prefix_cache_hits_total",
			schemas.QuantityPreemptions: "vllm:num_preemptions_total", schemas.QuantityRequests: "vllm:request_success_total",
		}, map[string]string{"vllm:kv_cache_usage_perc": "gauge", "vllm:prefix_cache_hits_total": "counter", "vllm:time_to_first_token_seconds_bucket": "histogram"}},
		{"sglang.txt", schemas.EngineSGLang, map[string]string{
			schemas.QuantityRunning: "sglang:num_running_reqs", schemas.QuantityWaiting: "sglang:num_queue_reqs",
			schemas.QuantityKVUsage:       "sglang:token_usage",
			schemas.QuantityPrefixQueries: "sglang:prompt_tokens_total", schemas.QuantityPrefixHits: "sglang:cached_tokens_total",
			schemas.QuantityHitRate:     "sglang:cache_hit_rate",
			schemas.QuantityPreemptions: "sglang:num_retracted_requests_total", schemas.QuantityRequests: "sglang:num_requests_total",
		}, map[string]string{"sglang:token_usage": "gauge", "sglang:cached_tokens_total": "counter", "sglang:time_to_first_token_seconds_sum": "histogram"}},
		{"trtllm.txt", schemas.EngineTRTLLM, map[string]string{
			schemas.QuantityRunning: "trtllm_num_requests_running", schemas.QuantityWaiting: "trtllm_num_requests_waiting",
			schemas.QuantityKVUsage: "trtllm_kv_cache_utilization", schemas.QuantityHitRate: "trtllm_kv_cache_hit_rate",
			schemas.QuantityPrefixHits: "trtllm_kv_cache_reused_blocks_total", schemas.QuantityPrefixMisses: "trtllm_kv_cache_missed_blocks_total",
			schemas.QuantityRequests: "trtllm_request_success_total",
		}, nil},
		{"llamacpp.txt", schemas.EngineLlamaCpp, map[string]string{
			schemas.QuantityRunning: "llamacpp:requests_processing", schemas.QuantityWaiting: "llamacpp:requests_deferred",
		}, map[string]string{"llamacpp:prompt_tokens_total": "counter"}},
		{"unknown.txt", schemas.EngineUnknown, nil, map[string]string{"tgi_queue_size": "gauge"}},
	} {
		t.Run(c.page, func(t *testing.T) {
			page, err := os.ReadFile(filepath.Join("testdata", c.page))
			if err != nil {
				t.Fatal(err)
			}
			samples, err := Parse(bytes.NewReader(page))
			if err != nil {
				t.Fatal(err)
			}
			want := pageSeries(t, page)
			got := map[string]float64{}
			var fams []string
			for _, s := range samples {
				k := sampleKey(s)
				if _, dup := got[k]; dup {
					t.Errorf("series %s parsed twice", k)
				}
				got[k] = s.Value
				if k := c.kinds[s.Metric]; k != "" && k != s.Kind {
					t.Errorf("%s: kind %s, want %s", s.Metric, s.Kind, k)
				}
				if len(fams) == 0 || fams[len(fams)-1] != s.Family {
					fams = append(fams, s.Family)
				}
			}
			if !maps.Equal(got, want) {
				for k, v := range want {
					if g, ok := got[k]; !ok || g != v {
						t.Errorf("series %s: parsed %v (present %v), page says %v", k, g, ok, v)
					}
				}
				for k := range got {
					if _, ok := want[k]; !ok {
						t.Errorf("series %s parsed, not on the page", k)
					}
				}
			}
			m := Classify(fams)
			if m.Engine != c.engine {
				t.Errorf("engine %q, want %q", m.Engine, c.engine)
			}
			if !maps.Equal(m.Families, c.quant) && !(len(m.Families) == 0 && len(c.quant) == 0) {
				t.Errorf("quantities %v\nwant %v", m.Families, c.quant)
			}
		})
	}
}

func TestParseRefusesBrokenPage(t *testing.T) {
	for _, page := range []string{
		"vllm:num_requests_running{model_name=\"x\" 1\n",
		"# TYPE a counter\na not-a-number\n",
		"# TYPE a gauge\na 1\n# TYPE a counter\na 2\n",
	} {
		if _, err := Parse(strings.NewReader(page)); err == nil {
			t.Errorf("page %q parsed", page)
		}
	}
}

// readTable reads a written server_metrics.parquet.
func readTable(t *testing.T, path string) []schemas.ServerMetricRow {
	t.Helper()
	rows, err := parquet.ReadFile[schemas.ServerMetricRow](path)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestScraperRecordsPagesAndCountsFailures(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("testdata", "vllm.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var slowHits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) { w.Write(page) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		// the first scrape runs past two intervals: the scrapes due meanwhile are late
		if slowHits.Add(1) == 1 {
			time.Sleep(45 * time.Millisecond)
		}
		w.Write(page)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		for i := range 5000 {
			fmt.Fprintf(w, "series_%d 1\n", i)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	start := time.Now()
	path := filepath.Join(t.TempDir(), schemas.ServerMetricsFile)
	one := 0
	s, err := Start(t.Context(), Options{
		Targets: []Target{{URL: srv.URL + "/metrics", Replica: &one}, {URL: srv.URL + "/missing"}, {URL: srv.URL + "/big"},
			{URL: "http://user:hunter22@" + strings.TrimPrefix(srv.URL, "http://") + "/slow"}},
		Interval: 20 * time.Millisecond, Timeout: 100 * time.Millisecond, MaxBytes: int64(len(page) * 10),
		Path: path, Now: func() int64 { return int64(time.Since(start)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	sm := s.Stop(true)
	ok, missing, big, slow := sm.Endpoints[0], sm.Endpoints[1], sm.Endpoints[2], sm.Endpoints[3]
	if ok.Engine != schemas.EngineVLLM || ok.Scrapes < 3 || ok.Failed != 0 || ok.Replica == nil || *ok.Replica != 0 {
		t.Errorf("good endpoint: %+v", ok)
	}
	if missing.Engine != "" || missing.Scrapes != 0 || missing.Failed == 0 || !strings.Contains(missing.LastError, "404") {
		t.Errorf("missing endpoint: %+v", missing)
	}
	if big.Failed == 0 || !strings.Contains(big.LastError, "size limit") || big.Rows != 0 {
		t.Errorf("oversized endpoint: %+v", big)
	}
	if slow.Skipped == 0 || slow.Scrapes == 0 {
		t.Errorf("slow endpoint: %+v (want late scrapes skipped)", slow)
	}
	if strings.Contains(slow.URL, "hunter22") {
		t.Errorf("the URL's password reached the manifest: %s", slow.URL)
	}
	if sm.Note != schemas.ServerMetricsNote || sm.Table != schemas.ServerMetricsFile || sm.Error != "" {
		t.Errorf("record %+v", sm)
	}
	rows := readTable(t, path)
	if int64(len(rows)) != ok.Rows+slow.Rows {
		t.Fatalf("%d rows, the manifest counts %d+%d", len(rows), ok.Rows, slow.Rows)
	}
	perScrape := int64(len(pageSeries(t, page)))
	if ok.Rows != int64(ok.Scrapes)*perScrape {
		t.Errorf("%d rows for %d scrapes of %d series", ok.Rows, ok.Scrapes, perScrape)
	}
	var hits int
	for _, r := range rows {
		if r.Endpoint == 0 && r.Quantity != nil && *r.Quantity == schemas.QuantityPrefixHits {
			hits++
			if r.Metric != "vllm:prefix_cache_hits_total" || r.Value != 90000 || r.Kind != "counter" || r.TNs <= 0 {
				t.Errorf("prefix hits row %+v", r)
			}
		}
		if r.Metric == "vllm:gpu_cache_usage_perc" && r.Quantity != nil {
			t.Errorf("the deprecated spelling got a quantity beside the current one: %+v", r)
		}
	}
	if hits != ok.Scrapes {
		t.Errorf("%d prefix-hit rows, %d scrapes", hits, ok.Scrapes)
	}
}
