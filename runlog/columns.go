package runlog

import (
	"fmt"

	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// column binds one turn-log column to its TurnRecord field.
type column struct {
	name string
	typ  arrow.DataType
	put  func(b array.Builder, r *schemas.TurnRecord)
	get  func(a arrow.Array, i int, r *schemas.TurnRecord)
}

func strCol(name string, f func(r *schemas.TurnRecord) *string) column {
	return column{name, arrow.BinaryTypes.String,
		func(b array.Builder, r *schemas.TurnRecord) { b.(*array.StringBuilder).Append(*f(r)) },
		func(a arrow.Array, i int, r *schemas.TurnRecord) { *f(r) = a.(*array.String).Value(i) }}
}

func i32Col(name string, f func(r *schemas.TurnRecord) *int32) column {
	return column{name, arrow.PrimitiveTypes.Int32,
		func(b array.Builder, r *schemas.TurnRecord) { b.(*array.Int32Builder).Append(*f(r)) },
		func(a arrow.Array, i int, r *schemas.TurnRecord) { *f(r) = a.(*array.Int32).Value(i) }}
}

func i64Col(name string, f func(r *schemas.TurnRecord) *int64) column {
	return column{name, arrow.PrimitiveTypes.Int64,
		func(b array.Builder, r *schemas.TurnRecord) { b.(*array.Int64Builder).Append(*f(r)) },
		func(a arrow.Array, i int, r *schemas.TurnRecord) { *f(r) = a.(*array.Int64).Value(i) }}
}

// nullStrCol binds a string column that is null when the field is "" (missing:
// schemas.TurnLogMissing); a null reads as "".
func nullStrCol(name string, f func(r *schemas.TurnRecord) *string) column {
	return column{name, arrow.BinaryTypes.String,
		func(b array.Builder, r *schemas.TurnRecord) {
			if v := *f(r); v != "" {
				b.(*array.StringBuilder).Append(v)
			} else {
				b.AppendNull()
			}
		},
		func(a arrow.Array, i int, r *schemas.TurnRecord) { *f(r) = a.(*array.String).Value(i) }}
}

// nullI32Col binds an int32 column that is null when the field holds missing
// (schemas.TurnLogMissing); a null reads as missing.
func nullI32Col(name string, f func(r *schemas.TurnRecord) *int32) column {
	m, _ := schemas.TurnLogMissing(name)
	missing := m.(int32)
	return column{name, arrow.PrimitiveTypes.Int32,
		func(b array.Builder, r *schemas.TurnRecord) {
			if v := *f(r); v != missing {
				b.(*array.Int32Builder).Append(v)
			} else {
				b.AppendNull()
			}
		},
		func(a arrow.Array, i int, r *schemas.TurnRecord) {
			if a.IsNull(i) {
				*f(r) = missing
			} else {
				*f(r) = a.(*array.Int32).Value(i)
			}
		}}
}

// i64ListCol binds a list<int64> column; an empty or null list reads as nil.
func i64ListCol(name string, f func(r *schemas.TurnRecord) *[]int64) column {
	return column{name, arrow.ListOf(arrow.PrimitiveTypes.Int64),
		func(b array.Builder, r *schemas.TurnRecord) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			lb.ValueBuilder().(*array.Int64Builder).AppendValues(*f(r), nil)
		},
		func(a arrow.Array, i int, r *schemas.TurnRecord) {
			l := a.(*array.List)
			start, end := l.ValueOffsets(i)
			if l.IsNull(i) || end == start {
				*f(r) = nil
				return
			}
			vals := l.ListValues().(*array.Int64).Int64Values()
			*f(r) = append([]int64(nil), vals[start:end]...)
		}}
}

// columns lists every column of schemas.TurnLogSchema with its field.
func columns() []column {
	return []column{
		strCol("session_id", func(r *schemas.TurnRecord) *string { return &r.SessionID }),
		strCol("conversation_id", func(r *schemas.TurnRecord) *string { return &r.ConversationID }),
		i32Col("repeat", func(r *schemas.TurnRecord) *int32 { return &r.Repeat }),
		i32Col("trajectory", func(r *schemas.TurnRecord) *int32 { return &r.Trajectory }),
		i32Col("turn", func(r *schemas.TurnRecord) *int32 { return &r.Turn }),
		i32Col("client_index", func(r *schemas.TurnRecord) *int32 { return &r.ClientIndex }),
		strCol("domain", func(r *schemas.TurnRecord) *string { return &r.Domain }),
		strCol("status", func(r *schemas.TurnRecord) *string { return &r.Status }),
		nullStrCol("error", func(r *schemas.TurnRecord) *string { return &r.Error }),
		nullI32Col("http_status", func(r *schemas.TurnRecord) *int32 { return &r.HTTPStatus }),
		nullStrCol("warnings", func(r *schemas.TurnRecord) *string { return &r.Warnings }),
		i64Col("scheduled_ns", func(r *schemas.TurnRecord) *int64 { return &r.ScheduledNs }),
		i64Col("issued_ns", func(r *schemas.TurnRecord) *int64 { return &r.IssuedNs }),
		i64Col("headers_ns", func(r *schemas.TurnRecord) *int64 { return &r.HeadersNs }),
		i64Col("first_token_ns", func(r *schemas.TurnRecord) *int64 { return &r.FirstTokenNs }),
		i64Col("completed_ns", func(r *schemas.TurnRecord) *int64 { return &r.CompletedNs }),
		i64Col("delay_ns", func(r *schemas.TurnRecord) *int64 { return &r.DelayNs }),
		i64ListCol("chunk_times", func(r *schemas.TurnRecord) *[]int64 { return &r.ChunkTimesNs }),
		{"in_window", arrow.FixedWidthTypes.Boolean,
			func(b array.Builder, r *schemas.TurnRecord) { b.(*array.BooleanBuilder).Append(r.InWindow) },
			func(a arrow.Array, i int, r *schemas.TurnRecord) { r.InWindow = a.(*array.Boolean).Value(i) }},
		strCol("output_content", func(r *schemas.TurnRecord) *string { return &r.OutputContent }),
		strCol("output_reasoning", func(r *schemas.TurnRecord) *string { return &r.OutputReasoning }),
		nullStrCol("output_tool_calls", func(r *schemas.TurnRecord) *string { return &r.OutputToolCalls }),
		nullStrCol("finish_reason", func(r *schemas.TurnRecord) *string { return &r.FinishReason }),
		i32Col("first_content_bytes", func(r *schemas.TurnRecord) *int32 { return &r.FirstContentBytes }),
		i32Col("first_reasoning_bytes", func(r *schemas.TurnRecord) *int32 { return &r.FirstReasoningBytes }),
		i32Col("chunks", func(r *schemas.TurnRecord) *int32 { return &r.Chunks }),
		nullI32Col("usage_prompt_tokens", func(r *schemas.TurnRecord) *int32 { return &r.UsagePromptTokens }),
		nullI32Col("usage_completion_tokens", func(r *schemas.TurnRecord) *int32 { return &r.UsageCompletionTokens }),
		nullI32Col("usage_cached_tokens", func(r *schemas.TurnRecord) *int32 { return &r.UsageCachedTokens }),
		i64Col("request_bytes", func(r *schemas.TurnRecord) *int64 { return &r.RequestBytes }),
		nullStrCol("tpot_tool_calls", func(r *schemas.TurnRecord) *string { return &r.TPOTToolCalls }),
		i64Col("output_truncated_bytes", func(r *schemas.TurnRecord) *int64 { return &r.OutputTruncatedBytes }),
		{"streamed", arrow.FixedWidthTypes.Boolean,
			func(b array.Builder, r *schemas.TurnRecord) { b.(*array.BooleanBuilder).Append(r.Streamed) },
			func(a arrow.Array, i int, r *schemas.TurnRecord) { r.Streamed = a.(*array.Boolean).Value(i) }},
		i64ListCol("tool_call_chunk_times", func(r *schemas.TurnRecord) *[]int64 { return &r.ToolCallChunkTimesNs }),
	}
}

// bindColumns orders the column bindings like the schema's fields and checks that
// every field has a binding of the right type.
func bindColumns(schema *arrow.Schema) ([]column, error) {
	byName := make(map[string]column)
	for _, c := range columns() {
		byName[c.name] = c
	}
	out := make([]column, schema.NumFields())
	for i, f := range schema.Fields() {
		c, ok := byName[f.Name]
		if !ok {
			return nil, fmt.Errorf("turn log column %q has no TurnRecord field bound in runlog", f.Name)
		}
		if !arrow.TypeEqual(c.typ, f.Type) {
			return nil, fmt.Errorf("turn log column %q: schema type %s, runlog binds %s", f.Name, f.Type, c.typ)
		}
		out[i] = c
	}
	return out, nil
}

// ColumnNames returns the turn log's column names in schema order.
func ColumnNames() []string {
	fs := schemas.TurnLogSchema().Fields()
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}
