package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/jsontext"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// tconv is a test conversation: a system prompt and alternating user and
// assistant rows (user rows are the client turns).
type tconv struct {
	id     string
	system string
	rows   []trow
}

type trow struct {
	role    string
	content string
	delay   float64 // seconds, user rows
}

// chat returns a conversation of turns user/assistant exchanges, the user rows
// with the given delays (cycled; none when empty).
func chat(id string, turns int, delays ...float64) tconv {
	c := tconv{id: id, system: "You are agent " + id + ". Be \"helpful\"."}
	for i := 0; i < turns; i++ {
		u := trow{role: schemas.RoleUser, content: fmt.Sprintf("%s asks %d: ünïcode \u2028 <tag>", id, i+1)}
		if len(delays) > 0 {
			u.delay = delays[i%len(delays)]
		}
		c.rows = append(c.rows, u, trow{role: schemas.RoleAssistant, content: fmt.Sprintf("%s answers %d", id, i+1)})
	}
	return c
}

// makeDataset builds a dataset in memory, as ingest would have written it.
func makeDataset(t testing.TB, convs ...tconv) *datasets.Dataset {
	t.Helper()
	var cs []schemas.Conversation
	var ms []schemas.Message
	var ts []schemas.Turn
	for ci, c := range convs {
		conv := schemas.Conversation{
			ConversationID: c.id, Index: int32(ci), Domain: datasets.Domain(c.id), Source: "test",
			HasSystem: c.system != "", System: c.system, Rows: int32(len(c.rows)),
		}
		if c.system != "" {
			esc := jsontext.AppendString(nil, c.system)
			conv.SystemEscaped = string(esc[1 : len(esc)-1])
		}
		var clientIdx int32
		for ri, r := range c.rows {
			content := r.content
			m := schemas.Message{ConversationID: c.id, Seq: int32(ri), Turn: int32(ri + 1), Role: r.role, Content: &content}
			m.Wire = datasets.AppendWire(nil, &m)
			ms = append(ms, m)
			conv.Messages++
			if r.role == schemas.RoleAssistant {
				conv.AssistantTurns++
				continue
			}
			conv.ClientTurns++
			conv.DelaySeconds += r.delay
			ts = append(ts, schemas.Turn{
				ConversationID: c.id, ConvIndex: int32(ci), Domain: conv.Domain, Turn: int32(ri + 1),
				ClientIndex: clientIdx, Role: r.role, MsgStart: int32(ri), MsgEnd: int32(ri + 1),
				DelaySeconds: r.delay,
			})
			if ri+1 < len(c.rows) && c.rows[ri+1].role == schemas.RoleAssistant {
				ts[len(ts)-1].ExpectedTurn = int32(ri + 2)
			}
			clientIdx++
		}
		cs = append(cs, conv)
	}
	m := schemas.DatasetManifest{SchemaVersion: schemas.DatasetVersion, ContentHash: "test-hash",
		Counts: schemas.DatasetCounts{Conversations: len(cs), ClientTurns: len(ts)}}
	d, err := datasets.New(m, cs, ms, ts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// seen is one request as the fake server saw it.
type seen struct {
	session string
	headers http.Header
	body    []byte
	msgs    int // messages in the request
	at      time.Time
	ctx     context.Context // the request's
}

// fake is an httptest OpenAI-compatible endpoint that records what it receives
// and checks the closed loop as it goes.
type fake struct {
	t   testing.TB
	srv *httptest.Server

	mu          sync.Mutex
	reqs        []seen
	inFlight    int
	maxInFlight int
	perSession  map[string]int
	overlap     []string // sessions with two turns in flight at once

	// hold, when set, is called while a request is counted in flight.
	hold func(s seen)
	// fault, when set, may write a faulty response and return true.
	fault func(w http.ResponseWriter, r *http.Request, s seen) bool
	// chunks is the content pieces streamed per turn (default 3).
	chunks int
}

func newFake(t testing.TB) *fake {
	f := &fake{t: t, perSession: map[string]int{}, chunks: 3}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		w.Header().Set("Content-Type", "application/json")
		// the names the tests' runs send (replay checks the run's model is listed)
		io.WriteString(w, `{"object":"list","data":[{"id":"test-model","object":"model"},{"id":"no-model-name","object":"model"},{"id":"Qwen/Qwen3.6-35B-A3B","object":"model"},{"id":"Qwen3.6-27B-Q4_K_M","object":"model"},{"id":"/models/Kimi-K3","object":"model"},{"id":"deepseek-ai/DeepSeek-V4-Pro-0813","object":"model"}]}`)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req struct {
		Messages []json.RawMessage `json:"messages"`
		Stream   bool              `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("request body is not JSON: %v", err)
		http.Error(w, "bad json", 400)
		return
	}
	s := seen{session: r.Header.Get("X-Session-ID"), headers: r.Header.Clone(), body: body, msgs: len(req.Messages), at: time.Now(), ctx: r.Context()}
	f.mu.Lock()
	f.reqs = append(f.reqs, s)
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.perSession[s.session]++
	if f.perSession[s.session] > 1 {
		f.overlap = append(f.overlap, s.session)
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.perSession[s.session]--
		f.mu.Unlock()
	}()
	if f.hold != nil {
		f.hold(s)
	}
	if f.fault != nil && f.fault(w, r, s) {
		return
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":%q,"reasoning_content":"hmm"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"prompt_tokens_details":{"cached_tokens":2}}}`,
			"reply to "+s.session, s.msgs, f.chunks)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	io.WriteString(w, ": keep-alive\n\n")
	fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"think \"}}]}\n\n")
	for i := 0; i < f.chunks; i++ {
		fmt.Fprintf(w, "data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"}}]}\n\n", i)
		fl.Flush()
	}
	io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"prompt_tokens_details\":{\"cached_tokens\":2}}}\n\n", s.msgs, f.chunks+1)
	io.WriteString(w, "data: [DONE]\n\n")
}

func (f *fake) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

// readLog reads RUNDIR/turns.arrows with a checked allocator.
func readLog(t testing.TB, dir string) []schemas.TurnRecord {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	fh, err := os.Open(filepath.Join(dir, schemas.TurnLogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	recs, err := runlog.Read(context.Background(), fh, mem)
	if err != nil {
		t.Fatalf("read turn log: %v", err)
	}
	return recs
}

// byKey indexes turn rows by session and turn, failing on duplicates.
func byKey(t testing.TB, recs []schemas.TurnRecord) map[string]schemas.TurnRecord {
	t.Helper()
	m := map[string]schemas.TurnRecord{}
	for _, r := range recs {
		k := fmt.Sprintf("%s#%d", r.SessionID, r.Turn)
		if _, dup := m[k]; dup {
			t.Fatalf("two rows for %s", k)
		}
		m[k] = r
	}
	return m
}

// checkGoroutines fails when goroutines started during the test are still alive
// after a settling period.
func checkGoroutines(t testing.TB, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines left, %d before the test:\n%s", n, before, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// cutConn writes part of a response and then drops the connection.
func cutConn(t testing.TB, w http.ResponseWriter, partial string) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		t.Error("response writer cannot hijack")
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close()
	// A chunked response whose stream stops mid-way.
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	fmt.Fprintf(buf, "%x\r\n%s\r\n", len(partial), partial)
	buf.Flush()
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}

func readFile(p string) ([]byte, error) { return os.ReadFile(p) }
