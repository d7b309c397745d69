package simserver

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus metrics, named as vLLM names them, in a
// registry of the server's own. Latency histograms hold modelled seconds (wall
// seconds × speedup).
type metrics struct {
	reg *prometheus.Registry

	running, waiting, kvUsage, speedup, lag prometheus.Gauge
	prefixQueries, prefixHits               prometheus.Counter
	promptTokens, generationTokens          prometheus.Counter
	preemptions                             prometheus.Counter
	requests                                *prometheus.CounterVec
	ttft, itl, e2e                          prometheus.Histogram
}

func newMetrics(p Hardware, speedup float64) *metrics {
	reg := prometheus.NewRegistry()
	labels := prometheus.Labels{"model_name": p.Model}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
		reg.MustRegister(g)
		return g
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets, ConstLabels: labels})
		reg.MustRegister(h)
		return h
	}
	m := &metrics{reg: reg}
	m.running = gauge("vllm:num_requests_running", "Number of requests in the model's running batch.")
	m.waiting = gauge("vllm:num_requests_waiting", "Number of requests waiting to be scheduled.")
	m.kvUsage = gauge("vllm:kv_cache_usage_perc", "KV-cache usage: fraction of blocks held by running requests (1 = full).")
	m.prefixQueries = counter("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache at admission.")
	m.prefixHits = counter("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache at admission.")
	m.promptTokens = counter("vllm:prompt_tokens_total", "Prompt tokens of admitted requests.")
	m.generationTokens = counter("vllm:generation_tokens_total", "Generated tokens.")
	m.preemptions = counter("vllm:num_preemptions_total", "Requests preempted (KV freed, recomputed later) because the KV pool was full.")
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total", Help: "Finished requests by finish reason.", ConstLabels: labels}, []string{"finished_reason"})
	reg.MustRegister(m.requests)
	// As vLLM, every reason is there from the start, at 0 (its engine's reasons:
	// a tool call is a stop).
	for _, r := range []string{"stop", "length", "abort"} {
		m.requests.WithLabelValues(r)
	}
	m.ttft = hist("vllm:time_to_first_token_seconds", "Time to first token, modelled seconds.",
		[]float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560})
	m.itl = hist("vllm:inter_token_latency_seconds", "Time between consecutive output tokens of a request, modelled seconds.",
		[]float64{0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5})
	m.e2e = hist("vllm:e2e_request_latency_seconds", "End-to-end request latency, modelled seconds.",
		[]float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680})
	m.speedup = prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentrace_sim_speedup", Help: "Every modelled duration is divided by this factor in wall-clock time."})
	reg.MustRegister(m.speedup)
	m.speedup.Set(speedup)
	m.lag = prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentrace_sim_lag_seconds", Help: "Largest wall-clock delay of a step behind its due time (0: the sim kept the modelled pace)."})
	reg.MustRegister(m.lag)
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "agentrace_sim_info", Help: "The sim's hardware and KV pool.",
		ConstLabels: prometheus.Labels{"hardware": p.Name, "model_name": p.Model,
			"block_size": itoa(p.BlockSize), "kv_blocks": itoa(p.KVBlocks)}})
	reg.MustRegister(info)
	info.Set(1)
	return m
}
