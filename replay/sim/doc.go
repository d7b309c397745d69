// Package sim is agentrace's embedded default endpoint: a simulated OpenAI-compatible
// LLM server with a cost model of prefill, batched decode and a prefix cache.
package sim
