package promscrape

import (
	"strings"

	"github.com/agentrace/agentrace/schemas"
)

// candidate is one metric name of an engine that gives a quantity.
type candidate struct {
	engine, quantity string
	// names are the metric's spellings, newest first, without a counter's
	// _total suffix: the first one a page carries gives the quantity.
	names []string
}

// catalog lists the serving engines' metric names agentrace knows, per engine
// and quantity, from their sources (the versions are in docs/replay.md's
// "Server metrics"). A name of no engine here is recorded raw, never mapped.
func catalog() []candidate {
	v, s, t, l := schemas.EngineVLLM, schemas.EngineSGLang, schemas.EngineTRTLLM, schemas.EngineLlamaCpp
	return []candidate{
		// vLLM V1 (vllm/v1/metrics/loggers.py); gpu_* are the spellings it
		// deprecated, gpu_prefix_cache_hit_rate the V0 engine's gauge.
		{v, schemas.QuantityRunning, []string{"vllm:num_requests_running"}},
		{v, schemas.QuantityWaiting, []string{"vllm:num_requests_waiting"}},
		{v, schemas.QuantityKVUsage, []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}},
		{v, schemas.QuantityPrefixQueries, []string{"vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries"}},
		{v, schemas.QuantityPrefixHits, []string{"vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"}},
		{v, schemas.QuantityHitRate, []string{"vllm:gpu_prefix_cache_hit_rate"}},
		{v, schemas.QuantityPreemptions, []string{"vllm:num_preemptions"}},
		{v, schemas.QuantityRequests, []string{"vllm:request_success"}},
		// SGLang (python/sglang/srt/metrics/collector.py): prompt and cached
		// tokens are counted per finished request; retractions are its
		// preemptions.
		{s, schemas.QuantityRunning, []string{"sglang:num_running_reqs"}},
		{s, schemas.QuantityWaiting, []string{"sglang:num_queue_reqs"}},
		{s, schemas.QuantityKVUsage, []string{"sglang:token_usage"}},
		{s, schemas.QuantityPrefixQueries, []string{"sglang:prompt_tokens"}},
		{s, schemas.QuantityPrefixHits, []string{"sglang:cached_tokens"}},
		{s, schemas.QuantityHitRate, []string{"sglang:cache_hit_rate"}},
		{s, schemas.QuantityPreemptions, []string{"sglang:num_retracted_requests"}},
		{s, schemas.QuantityRequests, []string{"sglang:num_requests"}},
		// TensorRT-LLM's trtllm-serve (tensorrt_llm/metrics/collector.py):
		// reuse is counted in KV blocks, hits and misses; Dynamo re-exports the
		// names with a "trtllm:" prefix.
		{t, schemas.QuantityRunning, []string{"trtllm_num_requests_running", "trtllm:num_requests_running"}},
		{t, schemas.QuantityWaiting, []string{"trtllm_num_requests_waiting", "trtllm:num_requests_waiting"}},
		{t, schemas.QuantityKVUsage, []string{"trtllm_kv_cache_utilization", "trtllm:kv_cache_utilization"}},
		{t, schemas.QuantityPrefixHits, []string{"trtllm_kv_cache_reused_blocks", "trtllm:kv_cache_reused_blocks"}},
		{t, schemas.QuantityPrefixMisses, []string{"trtllm_kv_cache_missed_blocks", "trtllm:kv_cache_missed_blocks"}},
		{t, schemas.QuantityHitRate, []string{"trtllm_kv_cache_hit_rate", "trtllm:kv_cache_hit_rate"}},
		{t, schemas.QuantityRequests, []string{"trtllm_request_success", "trtllm:request_success"}},
		// llama.cpp's llama-server with --metrics (tools/server): no prefix-cache
		// counters; kv_cache_usage_ratio only in builds before its KV-cache rework.
		{l, schemas.QuantityRunning, []string{"llamacpp:requests_processing"}},
		{l, schemas.QuantityWaiting, []string{"llamacpp:requests_deferred"}},
		{l, schemas.QuantityKVUsage, []string{"llamacpp:kv_cache_usage_ratio"}},
	}
}

// baseName is a family's name without a counter's _total suffix, as the
// catalog spells it.
func baseName(family string) string { return strings.TrimSuffix(family, "_total") }

// Mapping is what a page's names say: the engine whose names it carries and,
// per quantity, the family that gives it.
type Mapping struct {
	Engine string
	// Families maps a quantity to the family name on the page.
	Families map[string]string
}

// Classify maps the families on a page (their names) to an engine's
// quantities. The engine is the one with the most names on the page; a page
// with none is EngineUnknown and maps nothing; an empty page maps to "".
func Classify(families []string) Mapping {
	if len(families) == 0 {
		return Mapping{}
	}
	have := make(map[string]string, len(families)) // base name -> family
	for _, f := range families {
		have[baseName(f)] = f
	}
	found := map[string]map[string]string{} // engine -> quantity -> family
	counts := map[string]int{}
	for _, c := range catalog() {
		for _, n := range c.names {
			f, ok := have[n]
			if !ok {
				continue
			}
			if found[c.engine] == nil {
				found[c.engine] = map[string]string{}
			}
			found[c.engine][c.quantity] = f
			counts[c.engine]++
			break
		}
	}
	best := ""
	for _, e := range []string{schemas.EngineVLLM, schemas.EngineSGLang, schemas.EngineTRTLLM, schemas.EngineLlamaCpp} {
		if counts[e] > counts[best] {
			best = e
		}
	}
	if best == "" {
		return Mapping{Engine: schemas.EngineUnknown}
	}
	return Mapping{Engine: best, Families: found[best]}
}
