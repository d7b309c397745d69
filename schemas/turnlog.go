package schemas

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Files of a run directory.
const (
	TurnLogFile     = "turns.arrows"
	RunManifestFile = "manifest.json"
	ScoresFile      = "scores.json"
	ScoresTable     = "scores.parquet"
	// RefConfigFile is the run in the reference client's config schema, as the
	// reference writes it into its report_dir (publish_submission.py copies it).
	RefConfigFile = "config.yaml"
)

// TurnLogVersion is the version of the turn log's contract: the columns of
// TurnLogSchema, the statuses and the run manifest's fields. It is written into
// the log's Arrow metadata (agentrace.turn_log_version) and the run manifest
// (turn_log_version). Readers refuse a log of another version, naming it
// (versions 1 and 2 were development builds' before 0.1.0); a column they do not
// know (a newer writer's) is passed over.
//
//   - "1" (no turn_log_version key): statuses ok, error, timeout, aborted; turns
//     never sent because issuing stopped were aborted with an error text starting
//     "not issued:", in-flight turns cut after the grace were errors starting
//     "cancelled".
//   - "2": statuses not_issued and cancelled; columns warnings,
//     output_truncated_bytes and tpot_tool_calls; first_content_bytes and
//     first_reasoning_bytes count the first chunk carrying content (reasoning),
//     as the reference client's TPOT does; manifest state failed, stop_cause,
//     stopped_ns, max_duration_s, max_output_bytes, strict_stream, error, and
//     stream_warnings.
//   - "3": column streamed (whether the request asked for a streamed answer, decided
//     per turn from its body's stream value, as the reference client decides it); a
//     turn not streamed has first_token_ns 0 and no chunk_times (before, a --no-stream
//     run's turns had first_token_ns at the response's arrival); manifest
//     config.streamed_turns and config.non_streamed_turns. chunk_times holds the
//     chunks the reference client publishes a receive event for (the first
//     output-bearing chunk, then every chunk carrying content or reasoning), and
//     the new column tool_call_chunk_times the others (tool calls alone, after the
//     first); before, chunk_times held every output-bearing chunk.
//   - "4": missing is null: usage_prompt_tokens, usage_completion_tokens and
//     usage_cached_tokens are null when the server reported none (before, -1);
//     error, warnings, finish_reason, output_tool_calls and tpot_tool_calls
//     null when there is none (before, ""); and
//     http_status null when no response arrived (before, 0). Readers take
//     version 3 too, its sentinels read as missing (TurnLogMissing).
const TurnLogVersion = "4"

// TurnLogVersionRead tells whether readers take a turn log of version v: this
// version, and version 3, whose sentinels read as missing (TurnLogMissing).
func TurnLogVersionRead(v string) bool { return v == TurnLogVersion || v == "3" }

// TurnLogMissing tells whether a turn-log column is null when its value is
// missing (version 4 on), and the TurnRecord value that stands for missing in Go,
// which version 3 logs wrote instead of null: "" for error, warnings,
// finish_reason and the tool-call columns, 0 for http_status, -1 for the usage_*
// counts.
func TurnLogMissing(column string) (missing any, nullable bool) {
	switch column {
	case "error", "warnings", "finish_reason", "output_tool_calls", "tpot_tool_calls":
		return "", true
	case "http_status":
		return int32(0), true
	case "usage_prompt_tokens", "usage_completion_tokens", "usage_cached_tokens":
		return int32(-1), true
	}
	return nil, false
}

// Turn statuses in the turn log. A turn is issued (a request was sent) when its
// status is ok, error, timeout or cancelled; aborted and not_issued turns were
// never sent.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusTimeout = "timeout"
	// StatusCancelled: the request was in flight and the client cut it: at the end
	// of the grace after an interrupt, at a second interrupt, at --max-duration,
	// when the turn log could no longer be written, or at a client fault.
	StatusCancelled = "cancelled"
	// StatusAborted: not sent because an earlier turn of the trajectory failed
	// while issuing was still open. The reference client publishes such a turn
	// (register_skipped) as issued, failed and complete without output, so it
	// counts in inline accuracy (scoring 0) and in the reference's issued,
	// completed and failed counts.
	StatusAborted = "aborted"
	// StatusNotIssued: not sent because issuing had stopped (an interrupt,
	// --stop-issuing-at-window-end, --max-duration, a turn-log write failure, a
	// client fault: then also the turn that met it, its request never sent). The
	// reference publishes nothing for such a turn: it counts nowhere.
	StatusNotIssued = "not_issued"
)

// Issued tells whether a turn of this status was sent to the endpoint.
func Issued(status string) bool {
	switch status {
	case StatusOK, StatusError, StatusTimeout, StatusCancelled:
		return true
	}
	return false
}

// TurnRecord is one row of a run's turn log (turns.arrows, an Arrow IPC stream):
// one client turn of one trajectory instance, issued or aborted. All *_ns times are
// nanoseconds on the run's monotonic clock, counted from the run's start; 0 means
// "did not happen".
type TurnRecord struct {
	// Identity.
	SessionID      string // logical trajectory id: C, or C__repeat_N for N >= 2
	ConversationID string // source conversation id
	Repeat         int32  // instance number, 1 for the first pass
	Trajectory     int32  // 0-based start order k of the trajectory
	Turn           int32  // dataset turn number of the client row
	ClientIndex    int32  // 0-based ordinal of the client turn in the conversation
	Domain         string

	// Outcome.
	Status     string // StatusOK, StatusError, StatusTimeout, StatusCancelled, StatusAborted, StatusNotIssued
	Error      string
	HTTPStatus int32
	// Warnings lists what the client tolerated in the response, "; "-separated:
	// "malformed_frame xN (first: ...)", "error_frame: ...", "oversized_frame xN",
	// "no [DONE]". Empty when none.
	Warnings string

	// Times.
	ScheduledNs  int64 // the moment the turn became due (after its delay)
	IssuedNs     int64 // request sent
	HeadersNs    int64 // response headers received
	FirstTokenNs int64 // first non-empty fragment of any kind
	CompletedNs  int64 // response complete (or failed)
	DelayNs      int64 // the delay slept before the turn
	// ChunkTimesNs is the arrival of every chunk the reference client publishes a
	// receive event for (its accumulator, with stream_all_chunks): the first
	// output-bearing chunk and each later chunk carrying content or reasoning,
	// relative to FirstTokenNs. ITL is measured over them.
	ChunkTimesNs []int64
	// ToolCallChunkTimesNs is the arrival of the other output-bearing chunks: those
	// carrying tool calls alone, after the first chunk (the reference publishes no
	// event for them), relative to FirstTokenNs.
	ToolCallChunkTimesNs []int64
	InWindow             bool // issued before the performance window ended
	// Streamed tells that the request asked for a streamed answer (Server-Sent
	// Events): its body's stream value is truthy. A turn not streamed has no first
	// token time and no chunk times, as the reference publishes no first-chunk event
	// for it. Logs before version 3 lack the column (read as false): their turns all
	// followed the manifest's config.stream.
	Streamed bool

	// Output.
	OutputContent   string
	OutputReasoning string
	OutputToolCalls string // JSON array of merged tool calls, "" when none
	FinishReason    string
	// FirstContentBytes and FirstReasoningBytes are the bytes of the first chunk
	// that carried content, and of the first that carried reasoning, so that the
	// TPOT suffix can be rebuilt as the reference client does (everything but the
	// first reasoning chunk when there is reasoning, else everything but the first
	// content chunk).
	FirstContentBytes   int32
	FirstReasoningBytes int32
	Chunks              int32 // number of output-bearing chunks
	// TPOTToolCalls is, for a response with tool calls and neither content nor
	// reasoning, the JSON array of its tool calls merged without their first
	// tool-call chunk (the reference's TPOT drops it); "" otherwise, when TPOT
	// counts OutputToolCalls.
	TPOTToolCalls string
	// OutputTruncatedBytes counts the output bytes (content, reasoning, tool
	// calls) received beyond --max-output-bytes and not kept, plus the raw size of
	// any frame too large to read; 0 when the output is whole.
	OutputTruncatedBytes int64

	// Usage as reported by the server (not official token counts); -1 when absent
	// (null in the log).
	UsagePromptTokens     int32
	UsageCompletionTokens int32
	UsageCachedTokens     int32

	// Size.
	RequestBytes int64
}

// TurnLogSchema is the Arrow schema of turns.arrows. Column names are the snake_case
// forms of TurnRecord's fields; docs/layouts.md documents each one.
func TurnLogSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"agentrace.schema_version", TurnLogVersionKey}, []string{Version, TurnLogVersion})
	return arrow.NewSchema([]arrow.Field{
		{Name: "session_id", Type: arrow.BinaryTypes.String},
		{Name: "conversation_id", Type: arrow.BinaryTypes.String},
		{Name: "repeat", Type: arrow.PrimitiveTypes.Int32},
		{Name: "trajectory", Type: arrow.PrimitiveTypes.Int32},
		{Name: "turn", Type: arrow.PrimitiveTypes.Int32},
		{Name: "client_index", Type: arrow.PrimitiveTypes.Int32},
		{Name: "domain", Type: arrow.BinaryTypes.String},
		{Name: "status", Type: arrow.BinaryTypes.String},
		{Name: "error", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "http_status", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "warnings", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "scheduled_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "issued_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "headers_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "first_token_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "completed_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "delay_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "chunk_times", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
		{Name: "in_window", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "output_content", Type: arrow.BinaryTypes.String},
		{Name: "output_reasoning", Type: arrow.BinaryTypes.String},
		{Name: "output_tool_calls", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "finish_reason", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "first_content_bytes", Type: arrow.PrimitiveTypes.Int32},
		{Name: "first_reasoning_bytes", Type: arrow.PrimitiveTypes.Int32},
		{Name: "chunks", Type: arrow.PrimitiveTypes.Int32},
		{Name: "usage_prompt_tokens", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "usage_completion_tokens", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "usage_cached_tokens", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "request_bytes", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tpot_tool_calls", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "output_truncated_bytes", Type: arrow.PrimitiveTypes.Int64},
		{Name: "streamed", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "tool_call_chunk_times", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64)},
	}, &md)
}

// TurnLogVersionKey is the Arrow schema metadata key holding TurnLogVersion.
const TurnLogVersionKey = "agentrace.turn_log_version"

// ToolCall is one merged tool call of a response (or of a dataset message).
type ToolCall struct {
	Index    int          `json:"index"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function ToolFunction `json:"function"`
}

// ToolFunction is a tool call's function: its name and its arguments as the raw
// concatenated string.
type ToolFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ArgumentsText returns a tool call's arguments as the text a model writes: a
// JSON string unquoted; anything else (an object, as some servers send in
// non-streamed replies and some datasets store) as its compact JSON, or as it is
// when it does not parse; null or nothing as "".
func ArgumentsText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) == nil {
		return b.String()
	}
	return string(raw)
}

// Response is a completed response rebuilt as one assistant message, as the rules
// count it: content and reasoning joined in arrival order, tool calls merged by
// index and ordered by index.
type Response struct {
	Content   string     `json:"content"`
	Reasoning string     `json:"reasoning,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// RunConfig is the configuration of one replay run, as recorded in its manifest.
// It never holds an API key.
type RunConfig struct {
	// Dataset is the dataset folder relative to the run folder (forward slashes), and
	// DatasetAbs its absolute path, so that a moved or archived run still finds it
	// (runlog.DatasetDir resolves them). Manifests without dataset_abs hold
	// the path as given to replay, relative to its working directory.
	Dataset             string  `json:"dataset"`
	DatasetAbs          string  `json:"dataset_abs,omitempty"`
	Endpoint            string  `json:"endpoint"`
	Model               string  `json:"model"`
	Profile             string  `json:"profile,omitempty"`
	Concurrency         int     `json:"concurrency"`
	Trajectories        int     `json:"trajectories"`
	Salt                bool    `json:"salt"`
	Delays              bool    `json:"delays"`
	DelayScale          float64 `json:"delay_scale"`
	TurnTimeoutSeconds  float64 `json:"turn_timeout_s"`
	StopIssuingAtWindow bool    `json:"stop_issuing_at_window_end"`
	Stream              bool    `json:"stream"`
	StreamUsage         bool    `json:"stream_usage,omitempty"`
	// StreamedTurns and NonStreamedTurns count the dataset's client turns whose
	// request asks for a streamed answer and those whose request does not: a row's
	// own stream value decides, else Stream (absent before turn log version 3).
	StreamedTurns       int  `json:"streamed_turns,omitempty"`
	NonStreamedTurns    int  `json:"non_streamed_turns,omitempty"`
	MaxTokens           int  `json:"max_tokens"`
	ClearGeneratedCache bool `json:"clear_generated_cache"`
	// MaxDurationSeconds caps the run (--max-duration; 0: no cap): at the cap no
	// turn is issued any more and the turns in flight are cancelled, as the
	// reference's max_duration_ms ends its performance phase.
	MaxDurationSeconds float64 `json:"max_duration_s"`
	// MaxOutputBytes caps the output a turn keeps (--max-output-bytes).
	MaxOutputBytes int64 `json:"max_output_bytes"`
	// StrictStream fails a turn on a malformed or error frame, as before version
	// 2, instead of skipping it with a warning as the reference does.
	StrictStream   bool              `json:"strict_stream"`
	RoutingHeaders []string          `json:"routing_headers"`
	Headers        map[string]string `json:"headers,omitempty"` // --header names; values "<redacted>" unless declared public
	APIKeyEnv      string            `json:"api_key_env,omitempty"`
	// Sampling is what the requests carry over the dataset's own parameters:
	// the profile's settings with the config's and the flags' over them.
	Sampling *Sampling `json:"sampling,omitempty"`
	// Endpoints are the further endpoints requests went to round-robin
	// (redacted); Endpoint is the first.
	Endpoints []string `json:"endpoints,omitempty"`
	// Seeds are the reference's RNG seeds as its run records them (a config's,
	// else its defaults, 42): the dataloader seed orders the trajectories'
	// starts (StartOrder). Absent from manifests written before they were
	// recorded.
	Seeds *RunSeeds `json:"seeds,omitempty"`
	// StartOrder is the rule by which trajectories take conversations:
	// "shuffle_per_pass" (datasets.StartOrder: a shuffle of the conversations per
	// pass over the dataset from random.Random(dataloader_random_seed), as the
	// reference draws it). Absent from manifests of runs where trajectory k
	// replayed conversation k mod n.
	StartOrder string `json:"start_order,omitempty"`
	// TimeoutSeconds interrupts the run (a config's timeout; 0: none).
	TimeoutSeconds float64 `json:"timeout_s,omitempty"`
	// The HTTP client's settings (a config's settings.client).
	IdleConnTimeoutSeconds float64 `json:"max_idle_time_s,omitempty"`
	MaxConnections         int     `json:"max_connections,omitempty"`
	WarmupConnections      int     `json:"warmup_connections,omitempty"`
	// ConfigFile is the reference config the run was built from (--config);
	// ConfigNotes what it sets that has no effect on an agentrace run.
	ConfigFile  string   `json:"config_file,omitempty"`
	ConfigNotes []string `json:"config_notes,omitempty"`
	// Official is false when a setting departs from the official agentic settings
	// (salt and delays on, delay scale 1, stop-issuing off, budget a multiple of the
	// dataset size); NonOfficial lists why.
	Official    bool     `json:"official"`
	NonOfficial []string `json:"non_official,omitempty"`
	// OfficialDataset is the dataset manifest's official_dataset; absent when the
	// dataset's manifest records none (then it is not judged).
	OfficialDataset *bool `json:"official_dataset,omitempty"`
}

// RunSeeds are settings.runtime's scheduler_random_seed and
// dataloader_random_seed and settings.warmup's warmup_random_seed.
// Seeds are integers of any size, in decimal (the published seed sets are
// 64-bit unsigned).
type RunSeeds struct {
	Scheduler  json.Number `json:"scheduler_random_seed"`
	Dataloader json.Number `json:"dataloader_random_seed"`
	Warmup     json.Number `json:"warmup_random_seed"`
}

// Sampling is the sampling settings a run sends, as model_params names them.
type Sampling struct {
	Temperature        *float64        `json:"temperature,omitempty"`
	Seed               json.Number     `json:"seed,omitempty"`
	TopK               *int            `json:"top_k,omitempty"`
	TopP               *float64        `json:"top_p,omitempty"`
	RepetitionPenalty  *float64        `json:"repetition_penalty,omitempty"`
	PresencePenalty    *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty   *float64        `json:"frequency_penalty,omitempty"`
	MaxNewTokens       int             `json:"max_new_tokens,omitempty"`
	ChatTemplateKwargs json.RawMessage `json:"chat_template_kwargs,omitempty"`
}

// RunManifest is manifest.json of a replay run directory.
type RunManifest struct {
	SchemaVersion     string    `json:"schema_version"`
	ToolVersion       string    `json:"tool_version"`
	Config            RunConfig `json:"config"`
	DatasetHash       string    `json:"dataset_hash"`
	DatasetSize       int       `json:"dataset_size"` // conversations in the dataset
	StartedAt         string    `json:"started_at"`   // wall clock, RFC 3339
	StartedUnixNs     int64     `json:"started_unix_ns"`
	WindowEndNs       int64     `json:"window_end_ns"` // run clock; 0 if never reached
	LastTrackedDoneNs int64     `json:"last_tracked_completion_ns"`
	EndedNs           int64     `json:"ended_ns"`
	// Counts are the turn log's rows by status: every row in turns.arrows, and
	// only those (a reader checks that they agree). Rows that could not be written
	// after a log failure are counted in Unlogged instead.
	Counts map[string]int `json:"counts"`
	// State: running while the run goes (and after a kill), complete, interrupted
	// (Ctrl-C or SIGTERM; a second one cancels the in-flight turns at once) or
	// failed (the turn log could not be written; Error says why).
	State string `json:"state"`
	// TurnLogVersion is schemas.TurnLogVersion when the run was written ("" for
	// version 1).
	TurnLogVersion string `json:"turn_log_version,omitempty"`
	// StopCause says why issuing stopped before every started trajectory ran to
	// its end: "interrupt", "window_end" (--stop-issuing-at-window-end),
	// "max_duration" or "log_failure"; "" when it never stopped early.
	StopCause string `json:"stop_cause,omitempty"`
	// StoppedNs is when issuing stopped (run clock), 0 when it never did.
	StoppedNs int64 `json:"stopped_ns,omitempty"`
	// Error is the failure of a failed run.
	Error string `json:"error,omitempty"`
	// Unlogged counts, by status, the rows that could not be written after the
	// turn log failed.
	Unlogged map[string]int `json:"unlogged,omitempty"`
	// Trajectories counts the run's trajectories by outcome (absent in version 1).
	Trajectories *TrajectoryCounts `json:"trajectories,omitempty"`
	// StreamWarnings counts the logged turns with each kind of stream warning
	// (malformed_frame, error_frame, oversized_frame, no_done) and with a
	// truncated output (output_truncated).
	StreamWarnings      map[string]int `json:"stream_warnings,omitempty"`
	EndpointDescription string         `json:"endpoint_description,omitempty"` // e.g. "embedded sim, profile X, speedup 50"
	// SimSpeedup is the simulated server's speed-up (its X-Sim-Speedup header):
	// every duration it modelled was divided by it; 0 for a real server.
	SimSpeedup float64 `json:"sim_speedup,omitempty"`
	// ServerMetrics records the scraping of the server's Prometheus metrics
	// (nil when it was off); Routing how turns spread over several endpoints
	// (nil with one).
	ServerMetrics *ServerMetrics   `json:"server_metrics,omitempty"`
	Routing       *EndpointRouting `json:"routing,omitempty"`
}

// TrajectoryCounts counts a run's trajectories by outcome. Started = Finished +
// Failed + Cut.
type TrajectoryCounts struct {
	Started int `json:"started"`
	// Finished: every client turn completed ok.
	Finished int `json:"finished"`
	// Failed: a turn failed (error or timeout) while issuing was open; the rest
	// of the trajectory is aborted.
	Failed int `json:"failed"`
	// Cut: issuing stopped (interrupt, window end, max duration, log failure)
	// before the trajectory's end, or its turn in flight was cancelled.
	Cut int `json:"cut"`
}

// Run states.
const (
	RunComplete    = "complete"
	RunInterrupted = "interrupted"
	RunFailed      = "failed"
)

// Stop causes of a run manifest.
const (
	StopInterrupt   = "interrupt"
	StopWindowEnd   = "window_end"
	StopMaxDuration = "max_duration"
	StopLogFailure  = "log_failure"
	// StopClientFault: the client itself failed (out of file descriptors or
	// socket buffers, no local address for a connection): the run is failed.
	StopClientFault = "client_fault"
	// StopRefused: the server refused the run's first failing turn, before any
	// turn succeeded, in a way it would refuse every turn (HTTP 401, 403, 404).
	StopRefused = "refused"
	// StopEndpointLost: the endpoint stopped answering: several turns in a row
	// got no response at all (connection refused, reset, no route) with none
	// answered between them (replay's rule, docs/replay.md): the run is failed.
	StopEndpointLost = "endpoint_lost"
)

// RawJSON is a JSON value kept verbatim.
type RawJSON = json.RawMessage

// WarningKinds returns the kinds of the warnings in a turn log's warnings value
// (TurnRecord.Warnings): malformed_frame, error_frame, oversized_frame, no_done.
func WarningKinds(w string) []string {
	if w == "" {
		return nil
	}
	var out []string
	for _, p := range strings.Split(w, "; ") {
		if strings.HasPrefix(p, "no [DONE]") {
			out = append(out, "no_done")
			continue
		}
		if i := strings.IndexAny(p, " :"); i > 0 {
			p = p[:i]
		}
		out = append(out, p)
	}
	return out
}
