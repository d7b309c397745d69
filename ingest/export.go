package ingest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/internal/outguard"
	"github.com/agentrace/agentrace/schemas"
)

// ExportOptions configures Export.
type ExportOptions struct {
	Dataset string
	Out     string
	// Overwrite replaces an existing Out, only when it is a trace file agentrace
	// wrote (internal/outguard).
	Overwrite bool
}

// exportGenerator is the generator of the dataset_metadata record Export writes
// first: it marks the file as agentrace's (internal/outguard.FileKind).
const exportGenerator = outguard.TraceGenerator + " export"

// Export writes a dataset directory as flat JSONL (spec §1), one row a line: a
// dataset_metadata record of its own (generator "agentrace export", the dataset's
// content hash), then the inputs' dataset_metadata records, then the rows.
// Re-ingesting the file gives a dataset with the same content hash.
//
// It stops when ctx is done, leaving no file behind.
func Export(ctx context.Context, o ExportOptions) error {
	claim, err := outguard.Take(outguard.Output{Path: o.Out, Kind: outguard.Traces, Overwrite: o.Overwrite}, o.Dataset)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	defer claim.Release()
	d, err := datasets.Open(ctx, o.Dataset)
	if err != nil {
		return err
	}
	return claim.WriteFile(func(w io.Writer) error { return writeFlat(ctx, w, d) })
}

func writeFlat(ctx context.Context, w io.Writer, d *datasets.Dataset) error {
	b := []byte(`{"_type":"dataset_metadata","generator":`)
	b = jsontext.AppendString(b, exportGenerator)
	b = append(b, `,"version":`...)
	b = jsontext.AppendString(b, schemas.ToolVersion)
	b = append(b, `,"content_hash":`...)
	b = jsontext.AppendString(b, d.Manifest.ContentHash)
	b = append(b, "}\n"...)
	if _, err := w.Write(b); err != nil {
		return err
	}
	for _, in := range d.Manifest.Inputs {
		for _, m := range in.Metadata {
			if isExportRecord(m) {
				continue // an earlier export's own record: this one replaces it
			}
			b = append(jsontext.AppendCompact(b[:0], m), '\n')
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
	}
	for ci := range d.Conversations {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := &d.Conversations[ci]
		msgs := d.Messages(ci)
		turns := d.ConversationTurns(ci)
		firstTools := ""
		for k := range turns {
			if turns[k].Role == schemas.RoleUser {
				firstTools = turns[k].Tools
				break
			}
		}
		systemDone := !c.HasSystem
		ti := 0
		for k := 0; k < len(msgs); {
			m := &msgs[k]
			end := k + 1
			for end < len(msgs) && msgs[end].Turn == m.Turn {
				end++
			}
			var t *schemas.Turn
			if ti < len(turns) && turns[ti].Turn == m.Turn {
				t = &turns[ti]
				ti++
			}
			extra := objectFields([]byte(m.Extra))
			role := m.Role
			for _, f := range extra {
				if f.key == "row_role" {
					// A user or assistant row whose tool_results list is sent as
					// tool messages.
					role, _ = jsontext.DecodeString(f.val)
				}
			}
			b = b[:0]
			b = append(b, `{"conversation_id":`...)
			b = jsontext.AppendString(b, c.ConversationID)
			b = append(b, `,"turn":`...)
			b = strconv.AppendInt(b, int64(m.Turn), 10)
			b = append(b, `,"role":`...)
			b = jsontext.AppendString(b, role)
			switch m.Role {
			case schemas.RoleTool:
				b = append(b, `,"tool_results":[`...)
				for p := k; p < end; p++ {
					if p > k {
						b = append(b, ',')
					}
					r := &msgs[p]
					b = append(b, '{')
					if r.ToolCallID != nil {
						b = append(b, `"tool_call_id":`...)
						b = jsontext.AppendString(b, *r.ToolCallID)
						b = append(b, ',')
					}
					b = append(b, `"content":`...)
					b = appendContent(b, r)
					for _, f := range objectFields([]byte(r.Extra)) {
						if f.key == "tool_result_extra" {
							for _, g := range objectFields(f.val) {
								b = appendMember(b, g)
							}
						}
					}
					b = append(b, '}')
				}
				b = append(b, ']')
			default:
				if m.Content != nil {
					b = append(b, `,"content":`...)
					b = appendContent(b, m)
				}
				if m.ReasoningContent != nil {
					b = append(b, `,"reasoning_content":`...)
					b = jsontext.AppendString(b, *m.ReasoningContent)
				}
				if m.ToolCalls != "" {
					b = append(b, `,"tool_calls":`...)
					b = append(b, m.ToolCalls...)
				}
				if m.Name != nil {
					b = append(b, `,"name":`...)
					b = jsontext.AppendString(b, *m.Name)
				}
				if m.IntentCodesJSON != "" {
					b = append(b, `,"intent_codes":`...)
					b = append(b, m.IntentCodesJSON...)
				}
			}
			if !systemDone && !hasKey(extra, "system") {
				b = append(b, `,"system":`...)
				b = jsontext.AppendString(b, c.System)
				systemDone = true
			}
			if t != nil {
				if t.Tools != "" && (t.Role == schemas.RoleUser || t.Tools != firstTools) {
					b = append(b, `,"tools":`...)
					b = append(b, t.Tools...)
				}
				if t.DelaySeconds != 0 && !hasKey(extra, "delay_seconds") {
					b = append(b, `,"delay_seconds":`...)
					b = strconv.AppendFloat(b, t.DelaySeconds, 'g', -1, 64)
				}
			}
			for _, f := range extra {
				if f.key != "tool_result_extra" && f.key != "row_role" {
					b = appendMember(b, f)
				}
			}
			b = append(b, '}', '\n')
			if _, err := w.Write(b); err != nil {
				return err
			}
			k = end
		}
		if ti != len(turns) {
			return fmt.Errorf("export conversation %q: %d of its %d client turns have no messages", c.ConversationID, len(turns)-ti, len(turns))
		}
	}
	return nil
}

// isExportRecord reports whether a dataset_metadata record is one Export wrote.
func isExportRecord(m []byte) bool {
	gen := false
	_ = parseObject(bytes.TrimSpace(m), func(k, v []byte) {
		if keyString(k) == "generator" {
			s, ok := jsontext.DecodeString(v)
			gen = ok && s == exportGenerator
		}
	})
	return gen
}

func appendContent(b []byte, m *schemas.Message) []byte {
	switch {
	case m.Content == nil:
		return append(b, "null"...)
	case m.ContentJSON:
		return append(b, *m.Content...)
	default:
		return jsontext.AppendString(b, *m.Content)
	}
}

func appendMember(b []byte, f field) []byte {
	b = append(b, ',')
	b = jsontext.AppendString(b, f.key)
	b = append(b, ':')
	return append(b, f.val...)
}

// objectFields lists the members of a stored JSON object ("" gives none).
func objectFields(raw []byte) []field {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	var fs []field
	_ = parseObject(raw, func(k, v []byte) { fs = append(fs, field{keyString(k), v}) })
	return fs
}

func hasKey(fs []field, key string) bool {
	for _, f := range fs {
		if f.key == key {
			return true
		}
	}
	return false
}
