// Package simserver is agentrace's embedded default endpoint: a simulated
// OpenAI-compatible LLM server with a model of serving physics — prefill,
// continuous batching with chunked prefill, a KV pool with a prefix cache that
// also caches generated tokens, preemption, and a bounded queue. It is what
// replay talks to when there is no GPU server, and what makes the demo, the
// tests and the benchmarks real.
//
// # Use
//
//	s, err := simserver.New(simserver.Config{Hardware: p, Speedup: 50})
//	...
//	srv := httptest.NewServer(s.Handler()) // or sim.ListenAndServe(ctx, addr, cfg)
//	defer s.Close()
//
// The handler serves POST /v1/chat/completions (SSE streaming shaped like vLLM's
// — a role chunk, reasoning_content deltas, content deltas, tool_calls deltas
// with index, id and name, then argument pieces, a finish_reason chunk, a usage
// chunk when stream_options.include_usage, "data: [DONE]" — or one JSON body),
// GET /v1/models, GET /health and GET /metrics (Prometheus, vLLM's metric names,
// a registry per server). Errors use OpenAI's error body: 400 for bad JSON, no
// messages, an unknown role, bad tools, max tokens < 1 or a prompt over the
// context length; 404 for an unknown model; 429 when the waiting queue is full.
//
// # Tokens
//
// A request is rendered with a ChatML template like Qwen3's (tools in the system
// message; assistant messages as <think>reasoning</think>, content and
// <tool_call> blocks; a generation prompt at the end) and split into tokens.
// With Config.Tokenizer (e.g. the Qwen3 tokenizer of package tokens) the token
// ids are real; otherwise a pseudo-tokenizer stands in: the template's markers
// (<|im_start|>, <think>, ...) are one token each; runs of letters and digits are
// cut every 8 bytes, punctuation every 3, newlines every 4, other blanks every
// 16; a single space joins the word or punctuation after it. On the shared
// SWE-bench sample it counts 3.9 bytes per token where Qwen3's tokenizer counts
// 4.1 (6% more tokens; TestPiecesAgainstQwen3), but counts are approximate:
// usage figures from the sim are not official token counts. Each message is
// rendered and tokenized on its own and an answer is tokenized as a whole, so a
// turn's prompt is a prefix of the next turn's and an answer's tokens are those
// of its echo in the next prompt. (A message's tokens are remembered by its raw
// JSON, so a history resent every turn is decoded and tokenized once.) With a
// real tokenizer, token boundaries at message edges may differ slightly from
// tokenizing the whole rendered prompt at once, as a server does.
//
// What is not modelled: the sampled text itself (answers are recorded or
// synthetic, see below), tensor/data parallelism, CPU offload of the KV cache,
// the linear-attention layers' own compute, and network and tokenization time.
//
// # Prefix cache
//
// Tokens are grouped into blocks of Hardware.BlockSize (16). Each full block has
// a chained hash over its parent's hash and its own tokens, so equal hashes mean
// equal prefixes; a request's cache_salt, when given, seeds the chain (vLLM's
// cache_salt). The KV pool holds Hardware.KVBlocks blocks. A running sequence
// holds a reference on each of its blocks; a block whose tokens are all computed
// enters the prefix index. Blocks freed by finished or preempted sequences stay
// cached and evictable: allocation takes never-used blocks first, then evicts the
// least recently freed cached block (a sequence's blocks are freed tail first, so
// its tail goes before its prefix). At admission a request takes a reference on
// the longest run of its leading blocks found in the index; those tokens are
// usage.prompt_tokens_details.cached_tokens. At least one prompt token is always
// computed.
//
// Generated tokens are cached too: the answer's tokens are those of the
// assistant message as the template renders it in a later prompt, so when the
// client sends the answer back verbatim in its next turn (live history, or a
// recorded history the sim answered exactly), that turn hits the cache through
// the answer. Changing the message — replay's --clear-generated-cache inserts
// whitespace — makes the blocks from the change on miss. Salted trajectories
// (the system prompt starts with a per-pass salt) share nothing across passes.
//
// # Scheduler
//
// One goroutine runs steps like vLLM V1's scheduler. Each step has a budget of
// Hardware.MaxBatchedTokens tokens. Running sequences go first, in admission
// order: a decoding one computes one token; one still prefilling computes a chunk
// of what it lacks, as much as the budget leaves. When the pool cannot supply a
// sequence's blocks, the last-admitted running sequence is preempted: its blocks
// are freed (they stay cached) and it returns to the front of the waiting queue,
// to be recomputed — prompt and output so far, with whatever prefix is still
// cached — when readmitted. Requests never fail for lack of KV. If no preemption
// happened, waiting sequences are admitted in order while the budget, the
// sequence limit (Hardware.MaxNumSeqs) and the pool allow. A sequence that has
// computed all its tokens generates one more at the step's end; the first
// arrives when its prefill completes.
//
// With speculative decoding (Hardware.Speculative, MTP by default on the Qwen3.6
// hardware) a decoding sequence verifies its last token and up to DraftTokens
// drafts in one step, and keeps 1 + the drafts accepted, each with the
// acceptance rate given the ones before it were; the sequences running are
// bounded by the linear-attention state slots as well (Hardware.RunningLimit).
//
// A step's duration comes from the hardware's accelerators, architecture, precision
// and fitted efficiencies (costModel, in cost.go): fixed time per forward pass,
// prefill and decode FLOPs at a share of the dense peak, and the bytes read —
// weights (routed experts as many as the step's tokens touch), KV, and the
// linear-attention states — at a share of the HBM bandwidth. So throughput rises
// with concurrency while weight reads are shared, per-request decode speed falls
// as the batch and its context grow, a prefill chunk slows the decodes beside it,
// and coding traces thrash the cache once the trajectories' contexts outgrow the
// pool. docs/simulator.md has the derivation and the fit.
//
// The same scheduler runs in virtual time (Replica, for package simulate): the
// caller submits turns and advances from one step's end to the next, with no
// wall time spent. A Session prepares a trajectory's turns from what its last
// turn left (history tokens, block hashes, blocks), so that a turn costs what
// is new in it; the turns are those Server.PrepareTurn makes of the same bodies.
// The HTTP server keeps one for each X-Session-ID it serves (the 1,024 most
// recently used), so that a request there costs what is new in it too.
//
// Modelled time runs against the monotonic clock divided by Config.Speedup: the
// scheduler sleeps until each step's due time and then wakes the request
// goroutines whose tokens it produced (no per-request sleeping); a request's
// goroutine writes the tokens that are due — one step's when the sim keeps
// pace — as one chunk per part (reasoning, content, a tool call's arguments).
// Oversleeping one step is made up by the next, since due times are absolute. When the sim cannot keep
// the pace (very high speedups), steps run back to back and the metric
// agentrace_sim_lag_seconds says by how much it fell behind.
//
// More than Hardware.MaxWaiting waiting requests are answered 429.
//
// # Answers
//
// With Config.Dataset, the answer to a request is the dataset's assistant
// message recorded right after the client turn, found from X-Session-ID (its
// __repeat_N suffix stripped) and the number of messages in the request. It is
// exact with probability Config.Fidelity; otherwise it is perturbed as a weaker
// model would answer: shell commands of tool calls replaced by another program,
// intent codes (I042) changed, or else the content reordered — so inline
// accuracy comes out realistic. Other requests get synthetic answers: filler
// reasoning, then a call of the first offered tool (with a shell command when
// the tool takes "command"), or else reasoning and content; lengths follow
// Config.Output (log-normal, mean 400 tokens by default). max_completion_tokens
// (or max_tokens) and the context length cut answers short with finish_reason
// "length".
//
// # Faults
//
// Config.Faults (see ParseFaults) injects, at given rates: a 500, a 429, a
// connection cut half-way through the answer, a malformed chunk half-way, or a
// stall half-way. Draws depend only on Config.Seed and the request, so they
// repeat from run to run.
//
// # Metrics
//
// /metrics has vllm:num_requests_running, vllm:num_requests_waiting,
// vllm:kv_cache_usage_perc, vllm:prefix_cache_queries_total,
// vllm:prefix_cache_hits_total, vllm:prompt_tokens_total,
// vllm:generation_tokens_total, vllm:num_preemptions_total,
// vllm:request_success_total (finished_reason stop, length or abort, each there
// from the start at 0 as in vLLM; a tool call counts as a stop), the histograms
// vllm:time_to_first_token_seconds, vllm:inter_token_latency_seconds and
// vllm:e2e_request_latency_seconds (modelled seconds), plus agentrace_sim_speedup,
// agentrace_sim_lag_seconds and agentrace_sim_info. Every response carries the
// headers X-Sim-Speedup and X-Sim-Hardware.
package simserver
