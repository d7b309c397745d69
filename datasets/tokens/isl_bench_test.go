package tokens

import (
	"encoding/json"
	"testing"
)

// BenchmarkCountISL counts the ISL of every client turn of the sample (each
// conversation's messages up to a user or tool message, with its tools and
// preserve_thinking), which is what ingest --tokenizer does.
func BenchmarkCountISL(b *testing.B) {
	tok := loadQwen3(b)
	type turn struct{ msgs, tools []byte }
	var turns []turn
	seen := map[string]bool{}
	for _, c := range sampleConversations(b) {
		var msgs []json.RawMessage
		if err := json.Unmarshal(c.Messages, &msgs); err != nil {
			b.Fatal(err)
		}
		for k := 1; k <= len(msgs); k++ {
			var m struct{ Role string }
			if err := json.Unmarshal(msgs[k-1], &m); err != nil {
				b.Fatal(err)
			}
			if m.Role != "user" && m.Role != "tool" {
				continue
			}
			data, _ := json.Marshal(msgs[:k])
			if !seen[string(data)] {
				seen[string(data)] = true
				turns = append(turns, turn{data, c.Tools})
			}
		}
	}
	kw := map[string]any{"preserve_thinking": true}
	for b.Loop() {
		n := 0
		for _, t := range turns {
			c, err := tok.CountISL(t.msgs, t.tools, kw)
			if err != nil {
				b.Fatal(err)
			}
			n += c
		}
		b.ReportMetric(float64(n), "tokens/op")
	}
	b.ReportMetric(float64(len(turns)), "turns")
}
