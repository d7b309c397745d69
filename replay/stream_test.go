package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/ingest"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// TestPerTurnStreaming: each turn is sent streamed or not as its body's stream
// value says, as the reference client decides per request (worker.py: a request is
// read as a stream iff the sample's stream value is truthy), whatever the run's
// mode; the Accept header follows. Checked against the reference's own decisions
// recorded for the parity corpus (testdata/refparity, is_streaming of every turn):
// file 20 (stream false on one user row) in the Qwen variant (streaming on), files
// 19 and 21 (stream true on some rows) in the bare variant (streaming off). A turn
// not streamed is logged with no first-token or chunk times, as the reference
// publishes no first-chunk event for it (so it has no TTFT and no TPOT); the
// manifest counts the dataset's streamed and non-streamed turns and marks a mixed
// run unofficial; `agentrace prompt -v` prints the Accept header replay sends.
func TestPerTurnStreaming(t *testing.T) {
	for _, tc := range []struct {
		file, variant string
		opts          Options
		reason        string // a substring of the non-official reason about streaming
	}{
		{"20-bool-column-gaps-false", "qwen_salt", Options{Profile: "qwen3.6-35b-a3b"}, "turns streaming off on 1 of 5 client turns"},
		{"21-stream-all-user-rows", "bare", Options{NoStream: true, NoSalt: true, MaxTokens: -1}, "no first-token or per-token times for 1 of 5 client turns (the other 4 stream"},
		{"19-bool-column-gaps", "bare", Options{NoStream: true, NoSalt: true, MaxTokens: -1}, "for 3 of 5 client turns (the other 2 stream"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			root := testenv.RepoRoot(t)
			var v refVerdictTurns
			b, err := os.ReadFile(filepath.Join(root, "testdata", "refparity", tc.file+".verdict.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			refTurns := v.Variants[tc.variant].Turns
			ds := filepath.Join(t.TempDir(), "ds")
			if _, err := ingest.Run(context.Background(), ingest.Options{Out: ds, Inputs: []string{filepath.Join(root, "testdata", "refparity", tc.file+".jsonl")}}); err != nil {
				t.Fatal(err)
			}
			d, err := datasets.Open(context.Background(), ds)
			if err != nil {
				t.Fatal(err)
			}
			f := newFake(t)
			dir := filepath.Join(t.TempDir(), "run")
			o := tc.opts
			o.Data, o.Dataset, o.Endpoint, o.Out, o.Concurrency, o.NoDelays = d, ds, f.srv.URL, dir, 1, true
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			reqs := f.requests()
			if len(reqs) != len(refTurns) || len(reqs) != len(d.Turns) {
				t.Fatalf("%d requests, the reference issued %d, the dataset has %d client turns", len(reqs), len(refTurns), len(d.Turns))
			}
			// The reference's verdicts list its turns by conversation and turn;
			// each request is matched to the one of its own turn.
			refByTurn := map[string]int{} // conversation#turn -> index in refTurns
			for i, rt := range refTurns {
				refByTurn[fmt.Sprintf("%s#%d", rt.ConversationID, rt.Turn)] = i
			}
			want := map[string]bool{} // session#turn -> the reference streamed it
			streamedTurns := 0
			for i, s := range reqs {
				tr, _ := turnOf(t, d, s)
				ri, ok := refByTurn[fmt.Sprintf("%s#%d", tr.ConversationID, tr.Turn)]
				if !ok || s.session != tr.ConversationID {
					t.Fatalf("request %d: %s turn %d, not a turn the reference issued", i, s.session, tr.Turn)
				}
				rt := refTurns[ri]
				var body struct {
					Stream json.RawMessage `json:"stream"`
				}
				if err := json.Unmarshal(s.body, &body); err != nil {
					t.Fatal(err)
				}
				askStream := string(body.Stream) == "true"
				accept := s.headers.Get("Accept")
				if askStream != rt.IsStreaming || (accept == "text/event-stream") != rt.IsStreaming || (accept == "application/json") == rt.IsStreaming {
					t.Errorf("%s turn %d: sent stream %s with Accept %q; the reference streams it: %v", s.session, tr.Turn, body.Stream, accept, rt.IsStreaming)
				}
				if bo := (datasets.BodyOptions{Stream: !o.NoStream}); d.Streams(tr, bo) != rt.IsStreaming {
					t.Errorf("%s turn %d: Dataset.Streams %v, the reference %v", s.session, tr.Turn, d.Streams(tr, bo), rt.IsStreaming)
				}
				want[s.session+"#"+strconv.Itoa(int(tr.Turn))] = rt.IsStreaming
				if rt.IsStreaming {
					streamedTurns++
				}
			}
			if streamedTurns == 0 || streamedTurns == len(reqs) {
				t.Fatalf("the corpus file mixes nothing: %d of %d turns streamed", streamedTurns, len(reqs))
			}
			for _, r := range readLog(t, dir) {
				streamed := want[r.SessionID+"#"+strconv.Itoa(int(r.Turn))]
				if r.Status != schemas.StatusOK || r.Streamed != streamed || r.OutputContent == "" || r.CompletedNs <= r.IssuedNs {
					t.Errorf("%s turn %d: row %+v, want streamed %v", r.SessionID, r.Turn, r, streamed)
				}
				if streamed && (r.FirstTokenNs <= r.IssuedNs || len(r.ChunkTimesNs) == 0) {
					t.Errorf("%s turn %d streamed: first token %d, chunk times %v", r.SessionID, r.Turn, r.FirstTokenNs, r.ChunkTimesNs)
				}
				if !streamed && (r.FirstTokenNs != 0 || len(r.ChunkTimesNs) != 0) {
					t.Errorf("%s turn %d not streamed: first token %d, chunk times %v (the reference times neither)", r.SessionID, r.Turn, r.FirstTokenNs, r.ChunkTimesNs)
				}
			}
			m, err := runlog.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if m.Config.StreamedTurns != streamedTurns || m.Config.NonStreamedTurns != len(reqs)-streamedTurns || m.Config.Stream == o.NoStream ||
				m.Config.Official || !strings.Contains(strings.Join(m.Config.NonOfficial, "\n"), tc.reason) {
				t.Errorf("manifest config: stream %v, streamed %d, not streamed %d, official %v %q; want %d streamed and a reason %q",
					m.Config.Stream, m.Config.StreamedTurns, m.Config.NonStreamedTurns, m.Config.Official, m.Config.NonOfficial, streamedTurns, tc.reason)
			}
			// agentrace prompt -v prints the Accept header replay sent.
			for _, s := range reqs {
				tr, _ := turnOf(t, d, s)
				var out bytes.Buffer
				if err := ingest.Prompt(context.Background(), &out, ingest.PromptOptions{Dataset: ds, Conversation: tr.ConversationID, Turn: int(tr.Turn), Profile: o.Profile,
					NoSalt: o.NoSalt, NoStream: o.NoStream, MaxTokens: o.MaxTokens, Verbose: true}); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(out.String(), "\nAccept: "+s.headers.Get("Accept")+"\n") || !bytes.HasSuffix(out.Bytes(), append(s.body, '\n')) {
					t.Errorf("%s turn %d: prompt -v prints\n%s\nreplay sent Accept %q and body %s", tr.ConversationID, tr.Turn, out.String(), s.headers.Get("Accept"), s.body)
				}
			}
		})
	}
}

// refVerdictTurns is the part of a parity corpus verdict (testdata/refparity)
// this test reads: the reference's turns per variant.
type refVerdictTurns struct {
	Variants map[string]struct {
		Turns []struct {
			ConversationID string `json:"conversation_id"`
			Turn           int    `json:"turn"`
			IsStreaming    bool   `json:"is_streaming"`
		} `json:"turns"`
	} `json:"variants"`
}

// TestToolCallChunkTimes: chunk_times holds the
// chunks the reference's accumulator publishes a receive event for (the first
// output-bearing chunk, a pure tool-call one included, then each chunk carrying
// content or reasoning), so that ITL is measured over them; chunks carrying tool
// calls alone after the first go to tool_call_chunk_times, and chunks counts
// every output-bearing chunk.
func TestToolCallChunkTimes(t *testing.T) {
	d := makeDataset(t, chat("a", 1))
	f := newFake(t)
	frames := []string{
		`{"choices":[{"index":0,"delta":{"role":"assistant"}}]}`,                                                                                       // no output: no chunk
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"bash","arguments":""}}]}}]}`,         // first: published
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":"}}]}}]}`,                                      // tool calls alone
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"ls\"}"}}]}}]}`,                                           // tool calls alone
		`{"choices":[{"index":0,"delta":{"content":"Listing."}}]}`,                                                                                     // content: published
		`{"choices":[{"index":0,"delta":{"reasoning_content":"hm","tool_calls":[{"index":1,"id":"c2","function":{"name":"pwd","arguments":"{}"}}]}}]}`, // reasoning with a call: published
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	}
	f.fault = func(w http.ResponseWriter, r *http.Request, s seen) bool {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, fr := range frames {
			io.WriteString(w, "data: "+fr+"\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(3 * time.Millisecond)
		}
		io.WriteString(w, "data: [DONE]\n\n")
		return true
	}
	dir := t.TempDir()
	if _, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 1, NoSalt: true}); err != nil {
		t.Fatal(err)
	}
	recs := readLog(t, dir)
	if len(recs) != 1 {
		t.Fatalf("%d rows", len(recs))
	}
	r := recs[0]
	if r.Status != schemas.StatusOK || !r.Streamed || r.Chunks != 5 || len(r.ChunkTimesNs) != 3 || len(r.ToolCallChunkTimesNs) != 2 || r.ChunkTimesNs[0] != 0 {
		t.Fatalf("chunks %d, chunk_times %v, tool_call_chunk_times %v (row %+v)", r.Chunks, r.ChunkTimesNs, r.ToolCallChunkTimesNs, r)
	}
	// In arrival order: published, tool, tool, published, published.
	all := []int64{r.ChunkTimesNs[0], r.ToolCallChunkTimesNs[0], r.ToolCallChunkTimesNs[1], r.ChunkTimesNs[1], r.ChunkTimesNs[2]}
	for i := 1; i < len(all); i++ {
		if all[i] <= all[i-1] {
			t.Fatalf("chunk times out of arrival order: chunk_times %v, tool_call_chunk_times %v", r.ChunkTimesNs, r.ToolCallChunkTimesNs)
		}
	}
	if r.OutputContent != "Listing." || r.OutputReasoning != "hm" || !strings.Contains(r.OutputToolCalls, `"arguments":"{\"command\": \"ls\"}"`) {
		t.Fatalf("output %q %q %s", r.OutputContent, r.OutputReasoning, r.OutputToolCalls)
	}
}
