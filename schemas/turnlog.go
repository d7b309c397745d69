package schemas

import (
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow"
)

// Files of a run directory.
const (
	TurnLogFile     = "turns.arrows"
	RunManifestFile = "manifest.json"
	ScoresFile      = "scores.json"
	ScoresTable     = "scores.parquet"
)

// Turn statuses in the turn log.
const (
	StatusOK      = "ok"
	StatusError   = "error"
	StatusTimeout = "timeout"
	StatusAborted = "aborted" // not sent: an earlier turn of the trajectory failed
)

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
	Status     string // StatusOK, StatusError, StatusTimeout, StatusAborted
	Error      string
	HTTPStatus int32

	// Times.
	ScheduledNs  int64   // the moment the turn became due (after its delay)
	IssuedNs     int64   // request sent
	HeadersNs    int64   // response headers received
	FirstTokenNs int64   // first non-empty fragment of any kind
	CompletedNs  int64   // response complete (or failed)
	DelayNs      int64   // the delay slept before the turn
	ChunkTimesNs []int64 // arrival of every chunk, relative to FirstTokenNs
	InWindow     bool    // issued before the performance window ended

	// Output.
	OutputContent   string
	OutputReasoning string
	OutputToolCalls string // JSON array of merged tool calls, "" when none
	FinishReason    string
	// FirstContentBytes and FirstReasoningBytes are the bytes of content and
	// reasoning carried by the first output-bearing chunk, so that the TPOT suffix
	// (everything after that chunk) can be rebuilt.
	FirstContentBytes   int32
	FirstReasoningBytes int32
	Chunks              int32 // number of output-bearing chunks

	// Usage as reported by the server (not official token counts); -1 when absent.
	UsagePromptTokens     int32
	UsageCompletionTokens int32
	UsageCachedTokens     int32

	// Size.
	RequestBytes int64
}

// TurnLogSchema is the Arrow schema of turns.arrows. Column names are the snake_case
// forms of TurnRecord's fields; the README documents each one.
func TurnLogSchema() *arrow.Schema {
	md := arrow.NewMetadata([]string{"agentrace.schema_version"}, []string{Version})
	return arrow.NewSchema([]arrow.Field{
		{Name: "session_id", Type: arrow.BinaryTypes.String},
		{Name: "conversation_id", Type: arrow.BinaryTypes.String},
		{Name: "repeat", Type: arrow.PrimitiveTypes.Int32},
		{Name: "trajectory", Type: arrow.PrimitiveTypes.Int32},
		{Name: "turn", Type: arrow.PrimitiveTypes.Int32},
		{Name: "client_index", Type: arrow.PrimitiveTypes.Int32},
		{Name: "domain", Type: arrow.BinaryTypes.String},
		{Name: "status", Type: arrow.BinaryTypes.String},
		{Name: "error", Type: arrow.BinaryTypes.String},
		{Name: "http_status", Type: arrow.PrimitiveTypes.Int32},
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
		{Name: "output_tool_calls", Type: arrow.BinaryTypes.String},
		{Name: "finish_reason", Type: arrow.BinaryTypes.String},
		{Name: "first_content_bytes", Type: arrow.PrimitiveTypes.Int32},
		{Name: "first_reasoning_bytes", Type: arrow.PrimitiveTypes.Int32},
		{Name: "chunks", Type: arrow.PrimitiveTypes.Int32},
		{Name: "usage_prompt_tokens", Type: arrow.PrimitiveTypes.Int32},
		{Name: "usage_completion_tokens", Type: arrow.PrimitiveTypes.Int32},
		{Name: "usage_cached_tokens", Type: arrow.PrimitiveTypes.Int32},
		{Name: "request_bytes", Type: arrow.PrimitiveTypes.Int64},
	}, &md)
}

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
	// (datasets/runlog.DatasetDir resolves them). Manifests without dataset_abs hold
	// the path as given to replay, relative to its working directory.
	Dataset             string            `json:"dataset"`
	DatasetAbs          string            `json:"dataset_abs,omitempty"`
	Endpoint            string            `json:"endpoint"`
	Model               string            `json:"model"`
	Profile             string            `json:"profile,omitempty"`
	Concurrency         int               `json:"concurrency"`
	Trajectories        int               `json:"trajectories"`
	Salt                bool              `json:"salt"`
	Delays              bool              `json:"delays"`
	DelayScale          float64           `json:"delay_scale"`
	TurnTimeoutSeconds  float64           `json:"turn_timeout_s"`
	StopIssuingAtWindow bool              `json:"stop_issuing_at_window_end"`
	Stream              bool              `json:"stream"`
	StreamUsage         bool              `json:"stream_usage,omitempty"`
	MaxTokens           int               `json:"max_tokens"`
	ClearGeneratedCache bool              `json:"clear_generated_cache"`
	RoutingHeaders      []string          `json:"routing_headers"`
	Headers             map[string]string `json:"headers,omitempty"` // Authorization never recorded
	APIKeyEnv           string            `json:"api_key_env,omitempty"`
	// Official is false when a setting departs from the official agentic settings
	// (salt and delays on, delay scale 1, stop-issuing off, budget a multiple of the
	// dataset size); NonOfficial lists why.
	Official    bool     `json:"official"`
	NonOfficial []string `json:"non_official,omitempty"`
}

// RunManifest is manifest.json of a replay run directory.
type RunManifest struct {
	SchemaVersion       string         `json:"schema_version"`
	ToolVersion         string         `json:"tool_version"`
	Config              RunConfig      `json:"config"`
	DatasetHash         string         `json:"dataset_hash"`
	DatasetSize         int            `json:"dataset_size"` // conversations in the dataset
	StartedAt           string         `json:"started_at"`   // wall clock, RFC 3339
	StartedUnixNs       int64          `json:"started_unix_ns"`
	WindowEndNs         int64          `json:"window_end_ns"` // run clock; 0 if never reached
	LastTrackedDoneNs   int64          `json:"last_tracked_completion_ns"`
	EndedNs             int64          `json:"ended_ns"`
	Counts              map[string]int `json:"counts"`                         // by status
	State               string         `json:"state"`                          // "complete" or "interrupted"
	EndpointDescription string         `json:"endpoint_description,omitempty"` // e.g. "embedded sim, profile X, speedup 50"
	// SimSpeedup is the simulated server's speed-up (its X-Sim-Speedup header):
	// every duration it modelled was divided by it; 0 for a real server.
	SimSpeedup float64 `json:"sim_speedup,omitempty"`
}

// Run states.
const (
	RunComplete    = "complete"
	RunInterrupted = "interrupted"
)

// RawJSON is a JSON value kept verbatim.
type RawJSON = json.RawMessage
