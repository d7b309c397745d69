package simserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/score/scoretest"
	"github.com/agentrace/agentrace/tokens"
)

// fixtureDataset ingests testdata/sim/answers.jsonl: a coding conversation with
// bash calls and a workflow conversation with intent codes.
func fixtureDataset(t *testing.T) *datasets.Dataset {
	t.Helper()
	return scoretest.Ingest(t, filepath.Join(t.TempDir(), "ds"), filepath.Join(testenv.RepoRoot(t), "testdata", "sim", "answers.jsonl"))
}

type gotMessage struct {
	Content   *string `json:"content"`
	Reasoning string  `json:"reasoning_content"`
	ToolCalls []struct {
		ID       string
		Function struct{ Name, Arguments string }
	} `json:"tool_calls"`
}

// ask sends client turn t of the dataset (repeat, salted) and returns the answer.
func ask(t *testing.T, s *Server, d *datasets.Dataset, turn *schemas.Turn, repeat int, session bool) gotMessage {
	t.Helper()
	body := d.AppendBody(nil, turn, datasets.BodyOptions{Model: s.prof.Model, Salt: true, Repeat: repeat})
	req := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body))
	if session {
		req.Header.Set("X-Session-ID", datasets.SessionID(turn.ConversationID, repeat))
	}
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("%s turn %d: status %d: %s", turn.ConversationID, turn.Turn, w.Code, w.Body.Bytes())
	}
	var out struct {
		Choices []struct{ Message gotMessage }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	return out.Choices[0].Message
}

// askStreamed sends a client turn streamed, with its session header and usage
// asked for, and returns the stream put back together.
func askStreamed(t *testing.T, s *Server, d *datasets.Dataset, turn *schemas.Turn) streamed {
	t.Helper()
	body := d.AppendBody(nil, turn, datasets.BodyOptions{Model: s.prof.Model, Salt: true, Stream: true, IncludeUsage: true})
	req := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("X-Session-ID", turn.ConversationID)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, req)
	return readStream(t, w.Body)
}

// recordedFor returns the recorded answer of a client turn through the sim's own
// index, checked against the fixture by the test below.
func recordedFor(t *testing.T, s *Server, turn *schemas.Turn, d *datasets.Dataset) Recorded {
	t.Helper()
	c, _ := d.Conversation(turn.ConversationID)
	n := int(turn.MsgEnd)
	if c.HasSystem {
		n++
	}
	rec, ok := s.rec.lookup(turn.ConversationID+"__repeat_3", n)
	if !ok {
		t.Fatalf("%s turn %d: no recorded answer", turn.ConversationID, turn.Turn)
	}
	return rec
}

func program(args string) string {
	var a struct{ Command string }
	json.Unmarshal([]byte(args), &a)
	f := strings.Fields(a.Command)
	if len(f) >= 4 && f[0] == "cd" && f[2] == "&&" {
		f = f[3:]
	}
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func TestDatasetAnswers(t *testing.T) {
	d := fixtureDataset(t)
	newServer := func(fidelity float64) *Server {
		cfg := tinyConfig(t)
		cfg.Dataset, cfg.Fidelity = d, fidelity
		return newServer(t, cfg)
	}
	exact, wrong := newServer(1), newServer(0)

	// The index finds what the fixture recorded.
	want := map[string]string{
		"demo__demo-1/1": `ls -la`, "demo__demo-1/3": `cd /testbed && python -m pytest -x test_parser.py`,
		"demo__demo-1/5": "The test passes now.\nDone.", "sim_000001/1": "intent: I042", "sim_000001/3": "intent: I007",
	}
	for i := range d.Turns {
		turn := &d.Turns[i]
		key := turn.ConversationID + "/" + itoa(int(turn.Turn))
		rec := recordedFor(t, exact, turn, d)
		got := rec.Content
		if len(rec.ToolCalls) > 0 {
			var a struct{ Command string }
			json.Unmarshal([]byte(rec.ToolCalls[0].Arguments), &a)
			got = a.Command
		}
		if got != want[key] {
			t.Errorf("%s: recorded %q, want %q", key, got, want[key])
		}

		// Fidelity 1: the recorded message, exactly.
		m := ask(t, exact, d, turn, 1, true)
		content := ""
		if m.Content != nil {
			content = *m.Content
		}
		if content != rec.Content || m.Reasoning != rec.Reasoning || len(m.ToolCalls) != len(rec.ToolCalls) {
			t.Errorf("%s at fidelity 1: got %+v, want %+v", key, m, rec)
		}
		for j, c := range m.ToolCalls {
			if c.Function.Arguments != rec.ToolCalls[j].Arguments || c.ID != rec.ToolCalls[j].ID {
				t.Errorf("%s call %d: %+v, want %+v", key, j, c, rec.ToolCalls[j])
			}
		}

		// Streamed, the same message comes back piece by piece.
		st := askStreamed(t, exact, d, turn)
		if st.content != rec.Content || st.reasoning != rec.Reasoning || len(st.toolArgs) != len(rec.ToolCalls) {
			t.Errorf("%s streamed: content %q reasoning %q calls %q; want %+v", key, st.content, st.reasoning, st.toolArgs, rec)
		}
		for j := range st.toolArgs {
			if st.toolArgs[j] != rec.ToolCalls[j].Arguments || st.toolNames[j] != rec.ToolCalls[j].Name || st.toolIDs[j] != rec.ToolCalls[j].ID {
				t.Errorf("%s streamed call %d: %s %s %s, want %+v", key, j, st.toolIDs[j], st.toolNames[j], st.toolArgs[j], rec.ToolCalls[j])
			}
		}

		// Fidelity 0: plausibly wrong — another program, another intent code, or
		// other content.
		p := ask(t, wrong, d, turn, 1, true)
		switch {
		case len(rec.ToolCalls) > 0:
			if len(p.ToolCalls) != 1 || p.ToolCalls[0].Function.Name != "bash" || program(p.ToolCalls[0].Function.Arguments) == program(rec.ToolCalls[0].Arguments) {
				t.Errorf("%s at fidelity 0: %+v keeps the program of %q", key, p.ToolCalls, rec.ToolCalls[0].Arguments)
			}
		case strings.Contains(rec.Content, "intent:"):
			if p.Content == nil || !strings.HasPrefix(*p.Content, "intent: I") || *p.Content == rec.Content {
				t.Errorf("%s at fidelity 0: content %v, want another intent code than %q", key, p.Content, rec.Content)
			}
		default:
			if p.Content == nil || *p.Content == rec.Content {
				t.Errorf("%s at fidelity 0: content unchanged", key)
			}
		}

		// Without a session header the turn cannot be found: a synthetic answer.
		if s := ask(t, exact, d, turn, 1, false); s.Content != nil && *s.Content == rec.Content {
			t.Errorf("%s without X-Session-ID: got the recorded answer", key)
		}
	}
}

// TestFidelityRate checks that the share of exact answers follows Fidelity over
// many trajectory instances (each repeat is another session, another draw).
func TestFidelityRate(t *testing.T) {
	d := fixtureDataset(t)
	cfg := tinyConfig(t)
	cfg.Dataset, cfg.Fidelity = d, 0.7
	s := newServer(t, cfg)
	exact, total := 0, 0
	for repeat := 1; repeat <= 40; repeat++ {
		for i := range d.Turns {
			turn := &d.Turns[i]
			rec := recordedFor(t, s, turn, d)
			m := ask(t, s, d, turn, repeat, true)
			same := m.Reasoning == rec.Reasoning && len(m.ToolCalls) == len(rec.ToolCalls)
			if m.Content != nil {
				same = same && *m.Content == rec.Content
			}
			for j := range m.ToolCalls {
				same = same && m.ToolCalls[j].Function.Arguments == rec.ToolCalls[j].Arguments
			}
			if same {
				exact++
			}
			total++
		}
	}
	if rate := float64(exact) / float64(total); rate < 0.6 || rate > 0.8 {
		t.Errorf("%d of %d answers exact (%.2f), want about 0.7", exact, total, rate)
	}
}

// TestStreamRealTokenizer streams the fixture's recorded answers with the Qwen3
// tokenizer: the pseudo-tokens' text spread over the real tokens reassembles to
// the recorded message, and completion_tokens is the real count of the rendering.
func TestStreamRealTokenizer(t *testing.T) {
	tok, err := tokens.Load(context.Background(), testenv.Tokenizer(t))
	if err != nil {
		t.Fatal(err)
	}
	d := fixtureDataset(t)
	cfg := tinyConfig(t)
	cfg.Dataset, cfg.Fidelity, cfg.Tokenizer = d, 1, tok
	s := newServer(t, cfg)
	for i := range d.Turns {
		turn := &d.Turns[i]
		rec := recordedFor(t, s, turn, d)
		st := askStreamed(t, s, d, turn)
		if st.content != rec.Content || st.reasoning != rec.Reasoning || len(st.toolArgs) != len(rec.ToolCalls) {
			t.Errorf("turn %d: content %q reasoning %q calls %q; want %+v", turn.Turn, st.content, st.reasoning, st.toolArgs, rec)
		}
		for j := range st.toolArgs {
			if st.toolArgs[j] != rec.ToolCalls[j].Arguments {
				t.Errorf("turn %d call %d: %s, want %s", turn.Turn, j, st.toolArgs[j], rec.ToolCalls[j].Arguments)
			}
		}
		a := answer{Reasoning: rec.Reasoning, Content: rec.Content, ToolCalls: rec.ToolCalls}
		rendered, _ := a.render()
		if want := len(tok.Encode(rendered, false)); st.usage == nil || st.usage.CompletionTokens != want {
			t.Errorf("turn %d: usage %+v, want %d completion tokens", turn.Turn, st.usage, want)
		}
	}
}
