package schemas

// RunRunning is the manifest state of a run that has started and not ended: a
// run killed outright (a second Ctrl-C, a crash) keeps it.
const RunRunning = "running"

// Column documents one column of the turn log.
type Column struct {
	Name    string
	Meaning string
}

// TurnLogColumns returns every column of TurnLogSchema, in schema order, with
// its meaning. Times are nanoseconds on the run's monotonic clock (counted from
// the run's start); 0 means "did not happen".
func TurnLogColumns() []Column {
	return []Column{
		{"session_id", "logical trajectory id sent in the routing headers: the conversation id, plus __repeat_N from the second pass on"},
		{"conversation_id", "source conversation id (no repeat suffix)"},
		{"repeat", "instance number of the trajectory: 1 on the first pass over the dataset, 2 on the second, ..."},
		{"trajectory", "0-based start order k of the trajectory (it replays the k-th conversation the start order draws: a shuffle per pass seeded by dataloader_random_seed)"},
		{"turn", "dataset turn number of the client row (user or tool row)"},
		{"client_index", "0-based ordinal of the client turn within its conversation"},
		{"domain", "coding or workflow"},
		{"status", "ok; error (HTTP error status, transport error, broken stream, or with --strict-stream a malformed or error frame); timeout (turn timeout); cancelled (in flight and cut: end of the grace after Ctrl-C, a second Ctrl-C, --max-duration, a turn-log failure); aborted (never sent: an earlier turn of the trajectory failed; the reference counts it as issued and failed); not_issued (never sent: issuing had stopped; counted nowhere). Issued = ok, error, timeout, cancelled"},
		{"error", "what went wrong; null when nothing did (version 3: empty)"},
		{"http_status", "HTTP status of the response; null when none arrived (version 3: 0)"},
		{"warnings", "what the client tolerated in the response, '; '-separated: leading_bom (a UTF-8 byte order mark the body began with, stripped), malformed_frame xN (skipped), error_frame: MESSAGE (ignored), oversized_frame xN (skipped), no [DONE]; null when none (version 3: empty)"},
		{"scheduled_ns", "when the turn became due: the previous turn's completion (or the trajectory's start) plus the delay"},
		{"issued_ns", "when the request was sent; issued minus scheduled is the client's own lag"},
		{"headers_ns", "when the response headers arrived"},
		{"first_token_ns", "when the first non-empty fragment of content, reasoning or a tool call arrived; 0 for a turn not streamed (the reference measures no TTFT for it)"},
		{"completed_ns", "when the response was complete (or the turn failed)"},
		{"delay_ns", "the inter-turn delay slept before the turn (delay_seconds x delay scale), not part of its latency"},
		{"chunk_times", "arrival of every chunk the reference client publishes a receive event for (its accumulator with stream_all_chunks): the first output-bearing chunk, then each chunk carrying content or reasoning, relative to first_token_ns (the first is 0); ITL is measured over them. Together with tool_call_chunk_times at most max_output_bytes/4 times are kept (chunks counts them all). Before version 3: every output-bearing chunk, tool-call chunks included"},
		{"in_window", "issued before the performance window ended (for aborted and not_issued rows: the window was still open when they were logged)"},
		{"output_content", "the response's content, concatenated"},
		{"output_reasoning", "the response's reasoning (reasoning_content or reasoning deltas), concatenated"},
		{"output_tool_calls", "the tool calls merged by index (arguments concatenated) as a JSON array; null when none (version 3: empty)"},
		{"finish_reason", "the finish reason of the first choice; null when none arrived (version 3: empty)"},
		{"first_content_bytes", "bytes of the first chunk that carried content"},
		{"first_reasoning_bytes", "bytes of the first chunk that carried reasoning"},
		{"chunks", "number of output-bearing chunks (content, reasoning or tool calls; a response not streamed counts 1 when it has output)"},
		{"usage_prompt_tokens", "usage.prompt_tokens reported by the server; null when absent (version 3: -1; not an official count)"},
		{"usage_completion_tokens", "usage.completion_tokens reported by the server; null when absent (version 3: -1; not an official count)"},
		{"usage_cached_tokens", "usage.prompt_tokens_details.cached_tokens reported by the server; null when absent (version 3: -1)"},
		{"request_bytes", "size of the request body in bytes"},
		{"tpot_tool_calls", "for a response with tool calls and neither content nor reasoning: its tool calls merged without the first tool-call chunk, as the reference's TPOT counts them (JSON array, [] when nothing is left); null otherwise (version 3: empty)"},
		{"output_truncated_bytes", "output bytes received beyond --max-output-bytes and not kept (plus the raw size of frames too large to read); 0 when the output is whole (older logs: 0)"},
		{"streamed", "the request asked for a streamed answer: its body's stream value is truthy (the row's own stream, else the run's mode), as the reference client decides per request; a turn not streamed has no first_token_ns and no chunk_times (version 3; older logs lack it: every turn followed the manifest's config.stream)"},
		{"tool_call_chunk_times", "arrival of the output-bearing chunks left out of chunk_times: tool calls alone after the first chunk (the reference's accumulator publishes no receive event for them), relative to first_token_ns (version 3; older logs lack it)"},
	}
}
