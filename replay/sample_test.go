package replay

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/replay/refconfig"
	"github.com/agentrace/agentrace/schemas"
)

// TestSampleBodiesAreThePrompts replays the real sample (one pass and the start
// of a second) and checks every request on the wire against AppendBody, and a
// spread of them against `agentrace prompt` (ingest.Prompt) itself.
func TestSampleBodiesAreThePrompts(t *testing.T) {
	d := sampleDataset(t)
	n := len(d.Conversations)
	f := newFake(t)
	f.chunks = 1
	dir := t.TempDir()
	const model = "Qwen/Qwen3.6-35B-A3B"
	if _, err := Run(context.Background(), Options{Data: d, Dataset: sample.dir, Endpoint: f.srv.URL, Out: dir, Concurrency: 8,
		Trajectories: n + 2, NoDelays: true, Profile: "qwen3.6-35b-a3b", Model: model}); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	want := 0
	order := datasets.NewStartOrder(n, big.NewInt(refconfig.DefaultSeed))
	for range n + 2 {
		want += len(d.ConversationTurns(order.Next()))
	}
	if len(reqs) != want {
		t.Fatalf("%d requests, want %d", len(reqs), want)
	}
	prof, _ := datasets.LookupProfile("qwen3.6-35b-a3b")
	for i, s := range reqs {
		tr, repeat := turnOf(t, d, s)
		body := d.AppendBody(nil, tr, datasets.BodyOptions{Model: model, Profile: &prof, Salt: true, Repeat: repeat, Stream: true})
		if !bytes.Equal(s.body, body) {
			t.Fatalf("%s turn %d: body differs from AppendBody's", s.session, tr.Turn)
		}
		if i%97 != 0 && !(repeat == 2 && tr.ClientIndex%10 == 0) {
			continue
		}
		var out bytes.Buffer
		if err := ingest.Prompt(context.Background(), &out, ingest.PromptOptions{Dataset: sample.dir, Conversation: tr.ConversationID, Turn: int(tr.Turn),
			Repeat: repeat, Model: model, Profile: "qwen3.6-35b-a3b"}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(append(s.body, '\n'), out.Bytes()) {
			t.Fatalf("%s turn %d: body differs from agentrace prompt's", s.session, tr.Turn)
		}
	}
	recs := readLog(t, dir)
	if len(recs) != want {
		t.Fatalf("%d rows, want %d", len(recs), want)
	}
	for _, r := range recs {
		if r.Status != schemas.StatusOK || r.Domain != datasets.Domain(r.ConversationID) || r.RequestBytes == 0 {
			t.Fatalf("row %s", fmt.Sprint(r))
		}
	}
}
