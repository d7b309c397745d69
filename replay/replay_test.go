package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/notice"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/runlog"
	"github.com/agentrace/agentrace/schemas"
)

// turnOf finds the client turn a request was for: the conversation from the
// session id, the turn from the number of messages (system + history).
func turnOf(t *testing.T, d *datasets.Dataset, s seen) (*schemas.Turn, int) {
	t.Helper()
	id, repeat := datasets.ParseSessionID(s.session)
	c, ok := d.Conversation(id)
	if !ok {
		t.Fatalf("request for unknown session %q", s.session)
	}
	for _, tr := range d.ConversationTurns(int(c.Index)) {
		if int(tr.MsgEnd)+1 == s.msgs {
			return &tr, repeat
		}
	}
	t.Fatalf("session %q: no client turn with %d messages", s.session, s.msgs)
	return nil, 0
}

func TestClosedLoopOnTheWire(t *testing.T) {
	before := runtime.NumGoroutine()
	d := makeDataset(t, chat("conv1", 3), chat("c1", 2), chat("sim_000001", 4))
	f := newFake(t)
	f.hold = func(seen) { time.Sleep(15 * time.Millisecond) }
	dir := filepath.Join(t.TempDir(), "run")
	opts := Options{
		Data: d, Dataset: "mem", Endpoint: f.srv.URL, Out: dir, Model: "test-model",
		Concurrency: 2, Trajectories: 6, NoDelays: true,
		RoutingHeaders: []string{"X-Session-ID", "x-route"}, Headers: []string{"X-Extra: 1", "X-Api-Key: sekret"},
		PublicHeaders: []string{"X-Extra"},
	}
	sum, err := Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(f.overlap) > 0 {
		t.Fatalf("two turns of one trajectory in flight at once: %v", f.overlap)
	}
	if f.maxInFlight != 2 {
		t.Fatalf("max in flight = %d, want exactly the concurrency 2", f.maxInFlight)
	}
	const rows = 2 * (3 + 2 + 4)
	if len(reqs) != rows {
		t.Fatalf("%d requests, want %d", len(reqs), rows)
	}
	// Sessions: each conversation twice, the second pass with the repeat suffix,
	// in every routing header; turns of a session in order.
	turnsBySession := map[string][]int{}
	for _, s := range reqs {
		if got := s.headers.Get("X-Route"); got != s.session {
			t.Fatalf("X-Route %q, X-Session-ID %q", got, s.session)
		}
		if s.headers.Get("X-Extra") != "1" || s.headers.Get("Accept") != "text/event-stream" || s.headers.Get("Content-Type") != "application/json" {
			t.Fatalf("headers %v", s.headers)
		}
		tr, repeat := turnOf(t, d, s)
		turnsBySession[s.session] = append(turnsBySession[s.session], int(tr.Turn))
		// The body is exactly what `agentrace prompt` prints: AppendBody's bytes.
		want := d.AppendBody(nil, tr, datasets.BodyOptions{Model: "test-model", Salt: true, Repeat: repeat, Stream: true})
		if !bytes.Equal(s.body, want) {
			t.Fatalf("session %s turn %d body:\n got %s\nwant %s", s.session, tr.Turn, s.body, want)
		}
	}
	wantSessions := []string{"c1", "c1__repeat_2", "conv1", "conv1__repeat_2", "sim_000001", "sim_000001__repeat_2"}
	if got := sortedKeys(turnsBySession); fmt.Sprint(got) != fmt.Sprint(wantSessions) {
		t.Fatalf("sessions %v, want %v", got, wantSessions)
	}
	for s, ts := range turnsBySession {
		for i := range ts {
			if ts[i] != 2*i+1 {
				t.Fatalf("session %s turns %v, want 1,3,5,...", s, ts)
			}
		}
	}
	// The salt vectors of spec §4 on the wire.
	for _, s := range reqs {
		if s.session == "conv1__repeat_2" {
			var body struct {
				Messages []struct{ Role, Content string } `json:"messages"`
			}
			if err := json.Unmarshal(s.body, &body); err != nil {
				t.Fatal(err)
			}
			want := "[salt: ba75]\n\nYou are agent conv1. Be \"helpful\".\n\n[salt: e643]"
			if body.Messages[0].Role != "system" || body.Messages[0].Content != want {
				t.Fatalf("salted system message %q, want %q", body.Messages[0].Content, want)
			}
		}
	}

	recs := readLog(t, dir)
	if len(recs) != rows {
		t.Fatalf("%d log rows, want %d", len(recs), rows)
	}
	got := byKey(t, recs)
	for _, s := range reqs {
		tr, repeat := turnOf(t, d, s)
		r, ok := got[fmt.Sprintf("%s#%d", s.session, tr.Turn)]
		if !ok {
			t.Fatalf("no row for %s turn %d", s.session, tr.Turn)
		}
		if r.Status != schemas.StatusOK || r.HTTPStatus != 200 || r.Repeat != int32(repeat) ||
			r.ConversationID != tr.ConversationID || r.ClientIndex != tr.ClientIndex || r.Domain != datasets.Domain(tr.ConversationID) {
			t.Fatalf("row %+v", r)
		}
		if r.OutputContent != "tok0 tok1 tok2 " || r.OutputReasoning != "think " || r.FinishReason != "stop" {
			t.Fatalf("output %q %q %q", r.OutputContent, r.OutputReasoning, r.FinishReason)
		}
		if r.Chunks != 4 || len(r.ChunkTimesNs) != 4 || r.ChunkTimesNs[0] != 0 || r.FirstReasoningBytes != 6 || r.FirstContentBytes != 5 || r.Warnings != "" {
			t.Fatalf("chunks %d %v first bytes %d/%d", r.Chunks, r.ChunkTimesNs, r.FirstContentBytes, r.FirstReasoningBytes)
		}
		if r.UsagePromptTokens != int32(s.msgs) || r.UsageCompletionTokens != 4 || r.UsageCachedTokens != 2 {
			t.Fatalf("usage %d %d %d", r.UsagePromptTokens, r.UsageCompletionTokens, r.UsageCachedTokens)
		}
		if r.RequestBytes != int64(len(s.body)) {
			t.Fatalf("request bytes %d, body %d", r.RequestBytes, len(s.body))
		}
		if !(0 < r.ScheduledNs && r.ScheduledNs <= r.IssuedNs && r.IssuedNs <= r.HeadersNs && r.HeadersNs <= r.FirstTokenNs && r.FirstTokenNs <= r.CompletedNs) {
			t.Fatalf("times not monotonic: %+v", r)
		}
		for i := 1; i < len(r.ChunkTimesNs); i++ {
			if r.ChunkTimesNs[i] < r.ChunkTimesNs[i-1] {
				t.Fatalf("chunk times %v", r.ChunkTimesNs)
			}
		}
	}
	// The next turn of a trajectory is scheduled at the previous one's completion.
	for _, r := range recs {
		if r.ClientIndex > 0 {
			prev := got[fmt.Sprintf("%s#%d", r.SessionID, r.Turn-2)]
			if r.ScheduledNs != prev.CompletedNs {
				t.Fatalf("%s turn %d scheduled %d, previous completed %d", r.SessionID, r.Turn, r.ScheduledNs, prev.CompletedNs)
			}
		}
	}

	m, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.State != schemas.RunComplete || m.Counts[schemas.StatusOK] != rows || m.DatasetHash != "test-hash" || m.DatasetSize != 3 {
		t.Fatalf("manifest %+v", m)
	}
	if m.WindowEndNs == 0 || m.Config.Official || !strings.Contains(strings.Join(m.Config.NonOfficial, ";"), "inter-turn delays off") {
		t.Fatalf("manifest window %d, official %v %v", m.WindowEndNs, m.Config.Official, m.Config.NonOfficial)
	}
	if m.Config.Headers["X-Api-Key"] != "<redacted>" || m.Config.Headers["X-Extra"] != "1" {
		t.Fatalf("manifest headers %v", m.Config.Headers)
	}
	for _, r := range recs {
		if r.InWindow != (r.IssuedNs < m.WindowEndNs) {
			t.Fatalf("in_window %v for a turn issued at %d, window end %d", r.InWindow, r.IssuedNs, m.WindowEndNs)
		}
	}
	if sum.Turns != rows || sum.Trajectories != 6 || sum.State != schemas.RunComplete {
		t.Fatalf("summary %+v", sum)
	}
	f.srv.Close()
	checkGoroutines(t, before)
}

// TestInFlightEqualsN holds every request until N are in flight at once: the
// closed loop keeps exactly N trajectories active.
func TestInFlightEqualsN(t *testing.T) {
	const n = 8
	convs := make([]tconv, 3*n)
	for i := range convs {
		convs[i] = chat(fmt.Sprintf("c%02d", i), 2)
	}
	d := makeDataset(t, convs...)
	f := newFake(t)
	reached := 0
	f.hold = func(seen) {
		// Wait (briefly) for the others: in the steady state N arrive together.
		deadline := time.Now().Add(200 * time.Millisecond)
		for time.Now().Before(deadline) {
			f.mu.Lock()
			in := f.inFlight
			if in == n {
				reached++
			}
			f.mu.Unlock()
			if in == n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	if _, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: t.TempDir(), Concurrency: n, NoDelays: true}); err != nil {
		t.Fatal(err)
	}
	if f.maxInFlight != n {
		t.Fatalf("max in flight %d, want %d", f.maxInFlight, n)
	}
	if reached == 0 {
		t.Fatal("never had N turns in flight at once")
	}
	if len(f.overlap) > 0 {
		t.Fatalf("overlapping turns: %v", f.overlap)
	}
}

func TestNonStreaming(t *testing.T) {
	d := makeDataset(t, chat("a", 2))
	f := newFake(t)
	dir := t.TempDir()
	if _, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL + "/v1/", Out: dir, Concurrency: 1, NoStream: true, NoSalt: true}); err != nil {
		t.Fatal(err)
	}
	for _, s := range f.requests() {
		if !bytes.Contains(s.body, []byte(`"stream":false`)) || bytes.Contains(s.body, []byte("stream_options")) || s.headers.Get("Accept") != "application/json" {
			t.Fatalf("non-streamed request %s %v", s.body, s.headers)
		}
		if bytes.Contains(s.body, []byte("[salt:")) {
			t.Fatal("salted with --no-salt")
		}
	}
	for _, r := range readLog(t, dir) {
		if r.Status != schemas.StatusOK || r.OutputContent != "reply to a" || r.OutputReasoning != "hmm" || r.Chunks != 1 || r.UsageCachedTokens != 2 ||
			r.Streamed || r.FirstTokenNs != 0 || len(r.ChunkTimesNs) != 0 || r.CompletedNs <= r.IssuedNs {
			t.Fatalf("row %+v", r)
		}
	}
}

func TestFaults(t *testing.T) {
	chunk := func(s string) string {
		return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", s)
	}
	for _, tc := range []struct {
		name     string
		fault    func(t *testing.T, w http.ResponseWriter, r *http.Request)
		status   string
		http     int32
		errHas   string
		partial  string
		timeout  time.Duration
		noStream bool
		strict   bool
	}{
		{name: "500", status: schemas.StatusError, http: 500, errHas: "HTTP 500",
			fault: func(t *testing.T, w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) }},
		{name: "429", status: schemas.StatusError, http: 429, errHas: "HTTP 429",
			fault: func(t *testing.T, w http.ResponseWriter, r *http.Request) { http.Error(w, "slow down", 429) }},
		{name: "stream cut", status: schemas.StatusError, http: 200, errHas: "read stream", partial: "half",
			fault: func(t *testing.T, w http.ResponseWriter, r *http.Request) { cutConn(t, w, chunk("half")) }},
		{name: "stream ends early", strict: true, status: schemas.StatusError, http: 200, errHas: "finish reason", partial: "half",
			fault: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, chunk("half"))
			}},
		{name: "malformed chunk", strict: true, status: schemas.StatusError, http: 200, errHas: "malformed", partial: "ok",
			fault: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, chunk("ok")+"data: {\"choices\":[{\"delta\":\n\n"+chunk("never"))
			}},
		{name: "error event", strict: true, status: schemas.StatusError, http: 200, errHas: "overloaded",
			fault: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server\"}}\n\n")
			}},
		{name: "stall past timeout", status: schemas.StatusTimeout, errHas: "turn timeout", timeout: 300 * time.Millisecond,
			fault: func(t *testing.T, w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }},
		{name: "stall mid-stream", status: schemas.StatusTimeout, http: 200, errHas: "turn timeout", timeout: 300 * time.Millisecond, partial: "slow",
			fault: func(t *testing.T, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, chunk("slow"))
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}},
		{name: "malformed body", status: schemas.StatusError, http: 200, errHas: "malformed", noStream: true,
			fault: func(t *testing.T, w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"choices":[`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			d := makeDataset(t, chat("good", 3), chat("bad", 3))
			f := newFake(t)
			f.fault = func(w http.ResponseWriter, r *http.Request, s seen) bool {
				if s.session == "bad" && s.msgs == 4 { // the second client turn (turn 3)
					tc.fault(t, w, r)
					return true
				}
				return false
			}
			dir := t.TempDir()
			_, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 2, TurnTimeout: tc.timeout, NoStream: tc.noStream, StrictStream: tc.strict})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range f.requests() {
				if s.session == "bad" && s.msgs > 4 {
					t.Fatal("a turn after the failure was sent")
				}
			}
			recs := readLog(t, dir)
			if len(recs) != 6 {
				t.Fatalf("%d rows, want one per client turn (6)", len(recs))
			}
			rows := byKey(t, recs)
			for _, k := range []string{"good#1", "good#3", "good#5", "bad#1"} {
				if rows[k].Status != schemas.StatusOK {
					t.Fatalf("%s: %+v", k, rows[k])
				}
			}
			bad := rows["bad#3"]
			if bad.Status != tc.status || bad.HTTPStatus != tc.http || !strings.Contains(bad.Error, tc.errHas) || bad.OutputContent != tc.partial {
				t.Fatalf("failed turn: status %q http %d error %q content %q", bad.Status, bad.HTTPStatus, bad.Error, bad.OutputContent)
			}
			if bad.IssuedNs == 0 || bad.CompletedNs < bad.IssuedNs {
				t.Fatalf("failed turn times %+v", bad)
			}
			if tc.timeout > 0 {
				if d := time.Duration(bad.CompletedNs - bad.IssuedNs); d < tc.timeout || d > tc.timeout+time.Second {
					t.Fatalf("timed out after %v, timeout %v", d, tc.timeout)
				}
			}
			ab := rows["bad#5"]
			if ab.Status != schemas.StatusAborted || ab.IssuedNs != 0 || !strings.Contains(ab.Error, "turn 3 failed") {
				t.Fatalf("aborted turn: %+v", ab)
			}
			m, err := runlog.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if m.Counts[schemas.StatusOK] != 4 || m.Counts[tc.status] != 1 || m.Counts[schemas.StatusAborted] != 1 || m.State != schemas.RunComplete {
				t.Fatalf("manifest counts %v state %s", m.Counts, m.State)
			}
			if *m.Trajectories != (schemas.TrajectoryCounts{Started: 2, Finished: 1, Failed: 1}) {
				t.Fatalf("trajectories %+v", *m.Trajectories)
			}
			f.srv.Close()
			checkGoroutines(t, before)
		})
	}
}

// TestStreamTolerance: by default a turn whose stream has what the reference
// client tolerates (a malformed frame, an error object in a 200 stream, an end
// without a finish reason or [DONE]) completes as the reference's does, its
// trajectory goes on, and the warnings column, the manifest and the summary say
// what was tolerated.
func TestStreamTolerance(t *testing.T) {
	chunk := func(s string) string {
		return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", s)
	}
	for _, tc := range []struct {
		name, body, content, warn, kind string
	}{
		{"stream ends early", chunk("half"), "half", "no [DONE]", "no_done"},
		{"malformed chunk", chunk("ok") + "data: {\"choices\":[{\"delta\":\n\n" + chunk("then") + "data: [DONE]\n\n", "okthen",
			`malformed_frame x1 (first: "{\"choices\":[{\"delta\":": invalid JSON at byte 22: unexpected end of input)`, "malformed_frame"},
		{"error event", "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server\"}}\n\n" + chunk("x") + "data: [DONE]\n\n", "x",
			"error_frame: server: overloaded", "error_frame"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := makeDataset(t, chat("good", 3), chat("bad", 3))
			f := newFake(t)
			f.fault = func(w http.ResponseWriter, r *http.Request, s seen) bool {
				if s.session == "bad" && s.msgs == 4 {
					w.Header().Set("Content-Type", "text/event-stream")
					io.WriteString(w, tc.body)
					return true
				}
				return false
			}
			dir := t.TempDir()
			sum, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 2})
			if err != nil {
				t.Fatal(err)
			}
			rows := byKey(t, readLog(t, dir))
			bad := rows["bad#3"]
			if bad.Status != schemas.StatusOK || bad.OutputContent != tc.content || bad.Warnings != tc.warn || bad.Error != "" {
				t.Fatalf("tolerated turn: status %q content %q warnings %q error %q", bad.Status, bad.OutputContent, bad.Warnings, bad.Error)
			}
			if r := rows["bad#5"]; r.Status != schemas.StatusOK || r.Warnings != "" {
				t.Fatalf("the trajectory did not go on: %+v", r)
			}
			m, err := runlog.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if m.Counts[schemas.StatusOK] != 6 || len(m.StreamWarnings) != 1 || m.StreamWarnings[tc.kind] != 1 || m.Config.StrictStream {
				t.Fatalf("manifest counts %v, stream warnings %v", m.Counts, m.StreamWarnings)
			}
			want := "in 1 turn"
			if s := sum.String(); !strings.Contains(s, "stream warnings (tolerated as the reference client does; a strict stream fails them)") || !strings.Contains(s, want) {
				t.Fatalf("summary does not count the warning:\n%s", s)
			}
		})
	}
}

func TestStartupErrors(t *testing.T) {
	d := makeDataset(t, chat("a", 1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	dir := filepath.Join(t.TempDir(), "run")
	_, err = Run(context.Background(), Options{Data: d, Endpoint: refused, Out: dir, Concurrency: 1})
	if err == nil || !strings.Contains(err.Error(), "not reachable") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("connection refused: err = %v", err)
	}
	if _, statErr := runlog.ReadManifest(dir); statErr == nil {
		t.Fatal("a run directory was written for an unreachable endpoint")
	}

	f := newFake(t)
	noSys := makeDataset(t, tconv{id: "nosys", rows: []trow{{role: "user", content: "hi"}}})
	_, err = Run(context.Background(), Options{Data: noSys, Endpoint: f.srv.URL, Out: t.TempDir(), Concurrency: 1})
	if err == nil || !strings.Contains(err.Error(), "nosys") || !slices.Contains(notice.Options(err), "no-salt") {
		t.Fatalf("no system prompt: err = %v", err)
	}
	if len(f.requests()) != 0 {
		t.Fatal("requests were sent for a dataset that cannot be salted")
	}
	for _, o := range []Options{
		{Concurrency: 0},
		{Concurrency: 1, Endpoint: "ftp://x"},
		{Concurrency: 1, DelayScale: -1},
		{Concurrency: 1, Headers: []string{"no colon"}},
		{Concurrency: 1, APIKeyEnv: "AGENTRACE_TEST_UNSET_KEY"},
		{Concurrency: 1, Profile: "nope"},
	} {
		o.Data, o.Out = d, t.TempDir()
		if o.Endpoint == "" {
			o.Endpoint = f.srv.URL
		}
		if _, err := Run(context.Background(), o); err == nil {
			t.Fatalf("options %+v: want an error", o)
		}
	}
	// A directory that holds a run is refused unless Overwrite.
	dir = t.TempDir()
	if _, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 1}); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Fatalf("rerun into the same directory: err = %v", err)
	}
	if _, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 1, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
}

func TestAPIKeyNeverWritten(t *testing.T) {
	d := makeDataset(t, chat("a", 1))
	f := newFake(t)
	t.Setenv("AGENTRACE_TEST_KEY", "sk-very-secret")
	dir := t.TempDir()
	if _, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Concurrency: 1, APIKeyEnv: "AGENTRACE_TEST_KEY", Headers: []string{"Authorization: Bearer other-secret"}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range f.requests() {
		if s.headers.Get("Authorization") != "Bearer sk-very-secret" {
			t.Fatalf("Authorization %q", s.headers.Get("Authorization"))
		}
	}
	for _, name := range []string{schemas.RunManifestFile, schemas.TurnLogFile} {
		b, err := readFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("very-secret")) || bytes.Contains(b, []byte("other-secret")) {
			t.Fatalf("%s holds the API key", name)
		}
	}
}

func TestSweep(t *testing.T) {
	d := makeDataset(t, chat("a", 2), chat("b", 1))
	f := newFake(t)
	dir := t.TempDir()
	var log bytes.Buffer
	if err := Sweep(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: dir, Events: eventLines(&log)}, []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []int{1, 2} {
		m, err := runlog.ReadManifest(filepath.Join(dir, fmt.Sprintf("c%d", c)))
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.Concurrency != c || m.Counts[schemas.StatusOK] != 3 || m.State != schemas.RunComplete {
			t.Fatalf("c%d manifest %+v", c, m)
		}
	}
	if !strings.Contains(log.String(), "concurrency 2") || strings.Count(log.String(), "replay complete") != 2 {
		t.Fatalf("sweep output:\n%s", log.String())
	}
	// the second point's line says how long the first took and the time left
	if !regexp.MustCompile(`sweep point 2/2: concurrency 2 -> \S+ \(1 point took \d+s; at that pace the sweep has (about \S+|under 1s) left\)`).MatchString(log.String()) {
		t.Errorf("sweep output has no pace:\n%s", log.String())
	}
}

func TestProgressLines(t *testing.T) {
	d := makeDataset(t, chat("a", 3), chat("b", 3))
	f := newFake(t)
	f.hold = func(seen) { time.Sleep(30 * time.Millisecond) }
	var out testenv.SyncBuffer
	if _, err := Run(context.Background(), Options{Data: d, Endpoint: f.srv.URL, Out: t.TempDir(), Concurrency: 2, Progress: &out, ProgressEvery: 40 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("want periodic plain lines, got %q", out.String())
	}
	last := lines[len(lines)-1]
	for _, want := range []string{"trajectories 2/2", "turns 6/6", "in flight 0", "output tok/s over the run", "errors 0"} {
		if !strings.Contains(last, want) {
			t.Fatalf("final status %q lacks %q", last, want)
		}
	}
	if strings.Contains(last, "left") {
		t.Errorf("final status %q still estimates time left", last)
	}
	// Once a turn is settled, the lines before the last say the time left.
	eta := false
	for _, l := range lines[:len(lines)-1] {
		eta = eta || strings.Contains(l, "/6, ") && strings.Contains(l, " left")
	}
	if !eta {
		t.Errorf("no status line estimates the time left:\n%s", out.String())
	}
}

// TestStartOrderOnTheWire: one trajectory at a time, the conversations start in
// the order CPython draws: r = random.Random(dataloader seed); x = list(range(n));
// r.shuffle(x) before each pass. The published seed set A's dataloader seed over
// five conversations, two passes: [4, 2, 0, 1, 3] then [3, 1, 2, 0, 4].
func TestStartOrderOnTheWire(t *testing.T) {
	d := makeDataset(t, chat("c0", 1), chat("c1", 1), chat("c2", 1), chat("c3", 1), chat("c4", 1))
	f := newFake(t)
	dir := filepath.Join(t.TempDir(), "run")
	seeds := &schemas.RunSeeds{Scheduler: "10487924139932647040", Dataloader: "586478644936801402", Warmup: "586478644936801402"}
	if _, err := Run(context.Background(), Options{Data: d, Dataset: "mem", Endpoint: f.srv.URL, Out: dir, Model: "test-model",
		Concurrency: 1, Trajectories: 10, NoDelays: true, Seeds: seeds}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range f.requests() {
		got = append(got, s.session)
	}
	want := []string{"c4", "c2", "c0", "c1", "c3", "c3__repeat_2", "c1__repeat_2", "c2__repeat_2", "c0__repeat_2", "c4__repeat_2"}
	if !slices.Equal(got, want) {
		t.Errorf("sessions %v, want %v", got, want)
	}
	m, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.StartOrder != datasets.StartOrderRule || m.Config.Seeds == nil || m.Config.Seeds.Dataloader != "586478644936801402" {
		t.Errorf("manifest records start order %q, seeds %+v", m.Config.StartOrder, m.Config.Seeds)
	}
	for _, r := range readLog(t, dir) {
		if want[r.Trajectory] != r.SessionID {
			t.Errorf("trajectory %d: session %s, want %s", r.Trajectory, r.SessionID, want[r.Trajectory])
		}
	}
}

// A dataloader seed that is not an integer is refused before anything is sent.
func TestStartOrderBadSeed(t *testing.T) {
	d := makeDataset(t, chat("c0", 1))
	f := newFake(t)
	_, err := Run(context.Background(), Options{Data: d, Dataset: "mem", Endpoint: f.srv.URL, Out: filepath.Join(t.TempDir(), "run"),
		Model: "test-model", Concurrency: 1, NoDelays: true, Seeds: &schemas.RunSeeds{Scheduler: "1", Dataloader: "4.2", Warmup: "1"}})
	if err == nil || !strings.Contains(err.Error(), "dataloader_random_seed") || len(f.requests()) != 0 {
		t.Errorf("err %v, %d requests", err, len(f.requests()))
	}
}

// A config that binds the current ruleset orders the starts by its seed set's
// sample_index_rng_seed: the same sessions as TestStartOrderOnTheWire.
func TestStartOrderFromRuleset(t *testing.T) {
	d := makeDataset(t, chat("c0", 1), chat("c1", 1), chat("c2", 1), chat("c3", 1), chat("c4", 1))
	f := newFake(t)
	y := minimalConfig("", "submission_ref:\n  ruleset: mlperf-endpoints-current\n")
	cr, err := fromYAML(t, y, map[string]string{"DATASET": "mem", "ENDPOINT": f.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	o := cr.Options
	o.Data, o.Out, o.Concurrency, o.NoSalt, o.Trajectories = d, filepath.Join(t.TempDir(), "run"), 1, true, 5
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range f.requests() {
		got = append(got, s.session)
	}
	if want := []string{"c4", "c2", "c0", "c1", "c3"}; !slices.Equal(got, want) {
		t.Errorf("sessions %v, want %v", got, want)
	}
}

// eventLines is a sink that writes each event to w on a line: a note or warning
// as "KIND [OPTION]: TEXT" (no brackets without an option), progress as its text.
func eventLines(w io.Writer) notice.Sink {
	return func(e notice.Event) {
		kind := map[notice.Kind]string{notice.Note: "note", notice.Warning: "warning"}[e.Kind]
		switch {
		case kind == "":
			fmt.Fprintln(w, e.Text)
		case e.Option != "":
			fmt.Fprintf(w, "%s [%s]: %s\n", kind, e.Option, e.Text)
		default:
			fmt.Fprintf(w, "%s: %s\n", kind, e.Text)
		}
	}
}
