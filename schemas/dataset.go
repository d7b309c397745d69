package schemas

import "encoding/json"

// Files of a dataset directory.
const (
	ConversationsFile   = "conversations.parquet"
	MessagesFile        = "messages.parquet"
	TurnsFile           = "turns.parquet"
	DatasetManifestFile = "manifest.json"
)

// DatasetVersion is the version of the dataset contract (its tables and
// manifest), written as a dataset manifest's schema_version. Version 3 writes a
// missing value as null (system_prompt, system_escaped, metadata, tool_calls,
// intent_codes, extra, tools, params, inherited, expected_turn, max_tokens; "" or 0
// in version 2) and names the conversations' system prompt system_prompt and its
// tool call count tool_call_count (system and tool_calls in version 2). Both read
// into the same rows: a null text is "", a null number 0.
const DatasetVersion = "3"

// DatasetVersionPrevious is the dataset contract's version before
// DatasetVersion, which this agentrace reads too.
const DatasetVersionPrevious = "2"

// DatasetVersionRead tells whether this agentrace reads a dataset manifest's
// schema_version: DatasetVersion or DatasetVersionPrevious.
func DatasetVersionRead(v string) bool { return v == DatasetVersion || v == DatasetVersionPrevious }

// ConversationV2 is the part of a version 2 conversations.parquet row whose
// column version 3 renamed; a reader of a version 2 dataset fills
// Conversation.System and Conversation.ToolCallCount from it.
type ConversationV2 struct {
	System    string `parquet:"system"`
	ToolCalls int32  `parquet:"tool_calls"`
}

// Conversation is one row of conversations.parquet: one trajectory of the dataset,
// in input order.
type Conversation struct {
	// ConversationID is the source id (no repeat suffix).
	ConversationID string `parquet:"conversation_id" json:"conversation_id"`
	// Index is the 0-based position of the conversation in the dataset (file order,
	// then input order across files). Replay's start order (datasets.StartOrder)
	// draws these indices.
	Index int32 `parquet:"conv_index" json:"conv_index"`
	// Domain is DomainCoding or DomainWorkflow.
	Domain string `parquet:"domain,dict" json:"domain"`
	// Source is the input file the conversation was read from, as given.
	Source string `parquet:"source,dict" json:"source"`
	// HasSystem tells whether the conversation has a system prompt.
	HasSystem bool `parquet:"has_system" json:"has_system"`
	// System is the system prompt (the first non-empty string `system` field), ""
	// (null in the table) if none.
	System string `parquet:"system_prompt,optional" json:"system_prompt,omitempty"`
	// SystemEscaped is System JSON-escaped without the surrounding quotes, so a salted
	// system message is built by concatenation.
	SystemEscaped string `parquet:"system_escaped,optional" json:"-"`
	// Rows is the number of dataset rows (flat JSONL lines) of the conversation.
	Rows int32 `parquet:"rows" json:"rows"`
	// ClientTurns counts user and tool rows; AssistantTurns counts assistant rows.
	ClientTurns    int32 `parquet:"client_turns" json:"client_turns"`
	AssistantTurns int32 `parquet:"assistant_turns" json:"assistant_turns"`
	// Messages is the number of wire messages (system excluded) in messages.parquet.
	Messages int32 `parquet:"messages" json:"messages"`
	// ToolCallCount is the number of tool calls made by assistant rows.
	ToolCallCount int32 `parquet:"tool_call_count" json:"tool_call_count"`
	// DelaySeconds is the sum of the client rows' delay_seconds.
	DelaySeconds float64 `parquet:"delay_seconds" json:"delay_seconds"`
	// HistoryBytes is the size in bytes of the serialized (unsalted) messages array of
	// the last client turn.
	HistoryBytes int64 `parquet:"history_bytes" json:"history_bytes"`
	// Metadata is the snapshot's metadata object as JSON, or "" (null in the table)
	// for flat input.
	Metadata string `parquet:"metadata,optional" json:"metadata,omitempty"`
}

// Message is one row of messages.parquet: one wire message of a conversation's
// history (the system message excluded). A flat dataset row becomes one message,
// except a tool row, which becomes one message per tool result. A client turn's
// request is the (salted) system message followed by the conversation's messages with
// Seq < Turn.MsgEnd.
type Message struct {
	ConversationID string `parquet:"conversation_id,dict" json:"conversation_id"`
	// Seq is the 0-based position in the conversation's history.
	Seq int32 `parquet:"seq" json:"seq"`
	// Turn is the dataset turn number (1-based) of the row the message came from, and
	// Part its 0-based position within that row (tool results of one row).
	Turn int32  `parquet:"turn" json:"turn"`
	Part int32  `parquet:"part" json:"part"`
	Role string `parquet:"role,dict" json:"role"`
	// Content is the message content: a JSON string, or for structured content the raw
	// JSON value; nil when absent or null.
	Content *string `parquet:"content,optional" json:"content,omitempty"`
	// ContentJSON tells whether Content holds raw JSON (a list of parts) rather than text.
	ContentJSON      bool    `parquet:"content_json" json:"content_json,omitempty"`
	ReasoningContent *string `parquet:"reasoning_content,optional" json:"reasoning_content,omitempty"`
	Name             *string `parquet:"name,optional" json:"name,omitempty"`
	// ToolCalls is the assistant row's tool_calls as JSON, "" (null in the table)
	// when none.
	ToolCalls  string  `parquet:"tool_calls,optional" json:"tool_calls,omitempty"`
	ToolCallID *string `parquet:"tool_call_id,optional" json:"tool_call_id,omitempty"`
	// IntentCodes is the assistant row's intent_codes as given (ground truth for
	// workflow accuracy), kept verbatim; IntentCodesJSON is its raw JSON ("", null
	// in the table, if absent).
	IntentCodesJSON string `parquet:"intent_codes,optional" json:"intent_codes,omitempty"`
	// Wire is the message serialized exactly as it goes on the wire: a JSON object
	// with keys in the order role, content, name, tool_calls, tool_call_id,
	// reasoning_content, null values omitted.
	Wire []byte `parquet:"wire" json:"-"`
	// Extra holds the row's unknown fields and row-level fields that are not part of
	// a message (delay_seconds, tools, generation parameters, system) as a JSON object,
	// on Part 0 only; "" (null in the table) when there are none.
	Extra string `parquet:"extra,optional" json:"extra,omitempty"`
}

// Turn is one row of turns.parquet: one client turn (a user or tool row) that
// replay issues as one request.
type Turn struct {
	ConversationID string `parquet:"conversation_id,dict" json:"conversation_id"`
	ConvIndex      int32  `parquet:"conv_index" json:"conv_index"`
	Domain         string `parquet:"domain,dict" json:"domain"`
	// Turn is the dataset turn number of the client row; ClientIndex its 0-based
	// ordinal among the conversation's client turns.
	Turn int32 `parquet:"turn" json:"turn"`
	// ClientTurn repeats Turn under the name every analysis table joins on
	// (client_turn, as in a run's turns.parquet); the dataset writer fills it.
	ClientTurn  int32  `parquet:"client_turn" json:"-"`
	ClientIndex int32  `parquet:"client_index" json:"client_index"`
	Role        string `parquet:"role,dict" json:"role"`
	// MsgStart is the Seq of this row's first message; MsgEnd is one past its last.
	// The request's messages are system + messages[0:MsgEnd].
	MsgStart int32 `parquet:"msg_start" json:"msg_start"`
	MsgEnd   int32 `parquet:"msg_end" json:"msg_end"`
	// DelaySeconds is the row's delay_seconds (0 when absent).
	DelaySeconds float64 `parquet:"delay_seconds" json:"delay_seconds"`
	// Tools is the tools value sent with the request (the row's own, else the
	// conversation's first user row's, in file order), as JSON; "" (null in the
	// table) when none.
	Tools string `parquet:"tools,optional,dict" json:"tools,omitempty"`
	// Params is the row's own generation parameters (model, max_new_tokens,
	// temperature, stop, ...; nulls left out) as a JSON object in the wire
	// encoding; "" (null in the table) when none.
	Params string `parquet:"params,optional,dict" json:"params,omitempty"`
	// Inherited is what the conversation's first user row (in file order) passes on
	// to the client rows that lack it, as the reference client's loader does: its
	// model, max_completion_tokens, max_new_tokens and stream, as a JSON object; ""
	// (null in the table) when it sets none of them. A request resolves each value
	// as the row's own, else the run's default, else the inherited one
	// (datasets.AppendBody).
	Inherited string `parquet:"inherited,optional,dict" json:"inherited,omitempty"`
	// MaxTokens is the max_completion_tokens the row's request sends, resolved as
	// datasets.AppendBody resolves it: the row's own max_new_tokens, else the
	// inherited one, else the row's own max_completion_tokens (each a positive
	// integer), else 0, null in the table (the run's setting applies: --max-tokens, the profile's,
	// else datasets.DefaultRunMaxTokens). A first user row's max_new_tokens 256
	// and a later row's own max_completion_tokens 100 send 256, and record 256.
	MaxTokens int32 `parquet:"max_tokens,optional" json:"max_tokens"`
	// ExpectedTurn is the turn number of the assistant row that immediately follows,
	// 0 (null in the table) when none (no ground truth).
	ExpectedTurn int32 `parquet:"expected_turn,optional" json:"expected_turn"`
	// HistoryBytes is the size of the unsalted messages array of the request.
	HistoryBytes int64 `parquet:"history_bytes" json:"history_bytes"`
	// ISL is the input sequence length counted with the reference tokenizer over the
	// salted (repeat 1) messages and tools; nil when ingest ran without --tokenizer.
	ISL *int32 `parquet:"isl,optional" json:"isl,omitempty"`
}

// DatasetInput describes one input file of a dataset.
type DatasetInput struct {
	// Path is the input file relative to the dataset folder (forward slashes), AbsPath
	// its absolute path. Manifests without abs_path hold the path as given to ingest.
	Path    string `json:"path"`
	AbsPath string `json:"abs_path,omitempty"`
	Format  string `json:"format"` // flat or snapshot
	SHA256  string `json:"sha256"`
	Bytes   int64  `json:"bytes"`
	Lines   int64  `json:"lines"`
	// Metadata holds the `_type: dataset_metadata` records of the file, verbatim.
	Metadata []json.RawMessage `json:"metadata,omitempty"`
}

// DatasetCounts are a dataset's totals.
type DatasetCounts struct {
	Conversations  int `json:"conversations"`
	Coding         int `json:"coding"`
	Workflow       int `json:"workflow"`
	Rows           int `json:"rows"`
	ClientTurns    int `json:"client_turns"`
	AssistantTurns int `json:"assistant_turns"`
	Messages       int `json:"messages"`
}

// DatasetManifest is manifest.json of a dataset directory.
type DatasetManifest struct {
	SchemaVersion string         `json:"schema_version"`
	ToolVersion   string         `json:"tool_version"`
	CreatedAt     string         `json:"created_at"`
	Inputs        []DatasetInput `json:"inputs"`
	Counts        DatasetCounts  `json:"counts"`
	// ContentHash is a sha256 over the dataset's content (conversations, messages and
	// turns in order), independent of file names, formats and creation time.
	ContentHash string `json:"content_hash"`
	// OfficialDataset tells whether the dataset was ingested from the official
	// dataset's file unchanged (one input whose sha256 is the official one);
	// null in manifests written before ingest compared.
	OfficialDataset *bool `json:"official_dataset"`
	// Tokenizer names the tokenizer that filled Turn.ISL, "" when none.
	Tokenizer string `json:"tokenizer,omitempty"`
	// Warnings lists what ingest noted in the inputs that the reference client
	// accepts without checking or would treat otherwise (file:line: conversation
	// turn: message), up to a limit per file; WarningCount counts them all.
	Warnings     []string `json:"warnings,omitempty"`
	WarningCount int      `json:"warning_count,omitempty"`
}
