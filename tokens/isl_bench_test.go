package tokens

import (
	"encoding/json"
	"testing"
)

// islBenchTurns returns the sample's conversations as message fragments and
// tools, with the message count of each client turn.
func islBenchTurns(b *testing.B) (convs []islConv, ends [][]int, turns int) {
	for i, c := range sampleConversations(b) {
		var frags []json.RawMessage
		if err := json.Unmarshal(c.Messages, &frags); err != nil {
			b.Fatal(err)
		}
		e := clientTurnEnds(b, frags)
		convs = append(convs, islConv{name: string(rune('a' + i)), frags: frags, tools: c.Tools})
		ends = append(ends, e)
		turns += len(e)
	}
	return convs, ends, turns
}

// BenchmarkCountISL counts the ISL of every client turn of the sample (each
// conversation's messages up to a user or tool message, with its tools and
// preserve_thinking) the naive way: a full render and encode per turn.
func BenchmarkCountISL(b *testing.B) { benchCountISL(b, loadQwen3(b)) }

// BenchmarkISLCounter counts the same turns with one ISLCounter per
// conversation, as ingest does.
func BenchmarkISLCounter(b *testing.B) { benchISLCounter(b, loadQwen3(b)) }

// BenchmarkISLCounterQwen36 is BenchmarkISLCounter with the Qwen3.6-shaped
// folder (Qwen3.6's template, which the counter has no native build of).
func BenchmarkISLCounterQwen36(b *testing.B) { benchISLCounter(b, loadQwen36(b)) }

// BenchmarkCountISLQwen36 is BenchmarkCountISL with the Qwen3.6-shaped folder.
func BenchmarkCountISLQwen36(b *testing.B) { benchCountISL(b, loadQwen36(b)) }

// islCount counts one client turn's ISL: its conversation's first messages and
// its tools.
type islCount func(messages [][]byte, tools []byte) (int, error)

func benchCountISL(b *testing.B, tok *Tokenizer) {
	kw := map[string]any{"preserve_thinking": true}
	benchISL(b, func() islCount {
		return func(messages [][]byte, tools []byte) (int, error) {
			return tok.CountISL(joinMessages(messages), tools, kw)
		}
	})
}

func benchISLCounter(b *testing.B, tok *Tokenizer) {
	kw := map[string]any{"preserve_thinking": true}
	benchISL(b, func() islCount { return tok.NewISLCounter(kw).Count })
}

// benchISL counts every client turn of the sample, with a counter made afresh
// for each conversation.
func benchISL(b *testing.B, perConversation func() islCount) {
	convs, ends, turns := islBenchTurns(b)
	for b.Loop() {
		n := 0
		for i, c := range convs {
			frags := make([][]byte, len(c.frags))
			for j, f := range c.frags {
				frags[j] = f
			}
			count := perConversation()
			for _, k := range ends[i] {
				v, err := count(frags[:k], c.tools)
				if err != nil {
					b.Fatal(err)
				}
				n += v
			}
		}
		b.ReportMetric(float64(n), "tokens/op")
	}
	b.ReportMetric(float64(turns), "turns")
}
