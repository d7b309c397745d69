package simserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/datasets"
	"github.com/agentrace/agentrace/internal/testenv"
	"github.com/agentrace/agentrace/tokens"
)

// held allocates n blocks and registers them under hashes base+1..base+n, as a
// finished prefill does.
func held(t *testing.T, p *kvPool, base uint64, n int) []blockID {
	t.Helper()
	var bs []blockID
	for i := range n {
		b := p.alloc()
		if b == 0 {
			t.Fatalf("alloc %d of %d: pool exhausted", i+1, n)
		}
		p.register(b, base+uint64(i)+1)
		bs = append(bs, b)
	}
	return bs
}

func TestPoolHitsAndRefcounts(t *testing.T) {
	p := newKVPool(4)
	a := held(t, p, 100, 2)
	if p.inUse != 2 || p.free() != 2 || p.usage() != 0.5 {
		t.Fatalf("in use %d free %d usage %v after 2 allocations", p.inUse, p.free(), p.usage())
	}
	// A second sequence shares the first block: a hit takes a reference.
	b := p.lookup(101)
	if b != a[0] {
		t.Fatalf("lookup(101) = %d, want the registered block %d", b, a[0])
	}
	p.acquire(b)
	if p.slab[b].ref != 2 || p.inUse != 2 {
		t.Fatalf("ref %d, in use %d after a shared hit", p.slab[b].ref, p.inUse)
	}
	// The first sequence finishes: the shared block stays in use, the other is
	// free but cached.
	p.release(a)
	if p.slab[b].ref != 1 || p.inUse != 1 || p.lruLen != 1 || p.lookup(102) == 0 {
		t.Fatalf("after release: ref %d, in use %d, lru %d", p.slab[b].ref, p.inUse, p.lruLen)
	}
	// A block in use is never evicted: allocating everything else leaves it.
	rest := []blockID{p.alloc(), p.alloc(), p.alloc()}
	for _, r := range rest {
		if r == 0 || r == b {
			t.Fatalf("alloc returned %d (shared block %d)", r, b)
		}
	}
	if p.alloc() != 0 {
		t.Fatal("alloc succeeded with every block in use")
	}
	if p.lookup(101) != b || p.lookup(102) != 0 {
		t.Fatal("the block in use lost its hash, or the evicted one kept it")
	}
	p.release([]blockID{b})
	p.release(rest)
	if p.inUse != 0 || p.free() != 4 {
		t.Fatalf("in use %d free %d after releasing all", p.inUse, p.free())
	}
}

func TestPoolEvictionOrder(t *testing.T) {
	p := newKVPool(4)
	a := held(t, p, 100, 2) // A: 101, 102
	b := held(t, p, 200, 2) // B: 201, 202
	p.release(a)            // freed first: oldest
	p.release(b)
	// Least recently freed first, and a sequence's tail before its prefix.
	for _, want := range []uint64{102, 101, 202, 201} {
		if p.lookup(want) == 0 {
			t.Fatalf("block %d evicted too early", want)
		}
		if p.alloc() == 0 {
			t.Fatal("alloc failed")
		}
		if p.lookup(want) != 0 {
			t.Fatalf("block %d still cached: wrong eviction order", want)
		}
	}
	if p.evictions != 4 {
		t.Errorf("%d evictions, want 4", p.evictions)
	}
}

func TestPoolHitRefreshesRecency(t *testing.T) {
	p := newKVPool(3)
	a := held(t, p, 100, 1)
	b := held(t, p, 200, 1)
	p.release(a)
	p.release(b)
	// Reusing A's block moves it out of the free list; freed again, it is newest.
	x := p.lookup(101)
	p.acquire(x)
	p.release([]blockID{x})
	p.alloc() // the never-used block
	p.alloc() // evicts 201, now the oldest
	if p.lookup(201) != 0 || p.lookup(101) == 0 {
		t.Error("a hit did not refresh the block's recency")
	}
}

func TestPoolDuplicateStaysPrivate(t *testing.T) {
	p := newKVPool(2)
	a := held(t, p, 100, 1)
	dup := p.alloc()
	p.register(dup, 101) // same content computed twice: the index keeps the first
	if p.lookup(101) != a[0] || p.slab[dup].hashed {
		t.Fatal("a duplicate replaced the indexed block")
	}
	p.release([]blockID{dup})
	if p.unused != 1 || p.lruLen != 0 {
		t.Errorf("duplicate freed to unused %d / lru %d, want 1 / 0", p.unused, p.lruLen)
	}
}

func TestBlockHashesChain(t *testing.T) {
	toks := make([]uint64, 40)
	for i := range toks {
		toks[i] = uint64(i)
	}
	h := blockHashes(nil, 0, toks, 16)
	if len(h) != 2 {
		t.Fatalf("%d hashes for 40 tokens of blocks of 16, want 2", len(h))
	}
	other := append([]uint64(nil), toks...)
	other[3] = 99 // change the first block only
	h2 := blockHashes(nil, 0, other, 16)
	if h2[0] == h[0] || h2[1] == h[1] {
		t.Error("a change in block 0 must change every later block's hash")
	}
	if s := blockHashes(nil, 7, toks, 16); s[0] == h[0] {
		t.Error("a salt seed must change the hashes")
	}
}

// chat sends a non-streaming request and returns the usage and the assistant
// message as JSON for the next turn.
func chat(t *testing.T, url, session string, messages []string, extra string) (usage, string) {
	t.Helper()
	body := `{"model":"sim-tiny","max_completion_tokens":200` + extra + `,"messages":[` + strings.Join(messages, ",") + `]}`
	resp := post(t, url, body, "X-Session-ID", session)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var out struct {
		Choices []struct{ Message json.RawMessage }
		Usage   usage
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return out.Usage, string(out.Choices[0].Message)
}

func salted(salt, system string) string {
	return fmt.Sprintf(`{"role":"system","content":"[salt: %s]\n\n%s\n\n[salt: 1bd4]"}`, salt, system)
}

func TestSaltIsolation(t *testing.T) {
	_, hs := startServer(t, tinyConfig(t))
	system := strings.Repeat("You are a careful engineer. ", 12)
	user := `{"role":"user","content":"Fix the failing test in the parser module, please."}`
	first, _ := chat(t, hs.URL, "c", []string{salted("4461", system), user}, "")
	if first.PromptTokensDetails.CachedTokens != 0 {
		t.Fatalf("a cold cache hit %d tokens", first.PromptTokensDetails.CachedTokens)
	}
	tests := []struct {
		name     string
		messages []string
		extra    string
		hit      bool
	}{
		{"same salt", []string{salted("4461", system), user}, "", true},
		{"other pass salt", []string{salted("ba75", system), user}, "", false},
		{"cache_salt field", []string{salted("4461", system), user}, `,"cache_salt":"tenant-b"`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := chat(t, hs.URL, "c", tc.messages, tc.extra)
			got := u.PromptTokensDetails.CachedTokens
			if tc.hit && got < u.PromptTokens-16 || !tc.hit && got != 0 {
				t.Errorf("cached %d of %d prompt tokens; hit expected: %v", got, u.PromptTokens, tc.hit)
			}
		})
	}
}

// TestGeneratedTokensCached runs the same two-turn conversation on two fresh
// servers: echoing the first answer verbatim in the second turn hits the cache
// through the generated tokens; the same answer with whitespace inserted hits
// only up to the change.
func TestGeneratedTokensCached(t *testing.T) {
	t.Run("pseudo-tokenizer", func(t *testing.T) { testGeneratedTokensCached(t, nil) })
	t.Run("qwen3", func(t *testing.T) {
		tok, err := tokens.Load(context.Background(), testenv.Tokenizer(t))
		if err != nil {
			t.Fatal(err)
		}
		testGeneratedTokensCached(t, tok)
	})
}

func testGeneratedTokensCached(t *testing.T, tok Tokenizer) {
	run := func(edit func(m map[string]any)) (turn1, turn2 usage) {
		cfg := tinyConfig(t)
		cfg.Tokenizer = tok
		cfg.Output = OutputLength{Mean: 120, Min: 120, Max: 120}
		_, hs := startServer(t, cfg)
		system := `{"role":"system","content":"You are a careful engineer."}`
		user := `{"role":"user","content":"Fix the failing test in the parser module, please."}`
		u1, msg := chat(t, hs.URL, "c", []string{system, user}, "")
		var m map[string]any
		if err := json.Unmarshal([]byte(msg), &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		echo, _ := json.Marshal(m)
		u2, _ := chat(t, hs.URL, "c", []string{system, user, string(echo), `{"role":"user","content":"Thanks. Now run the tests."}`}, "")
		return u1, u2
	}
	p1, verbatim := run(func(map[string]any) {})
	_, edited := run(func(m map[string]any) {
		c, _ := m["content"].(string)
		m["content"] = "\n" + c
	})
	// The first turn's prompt and the answer, minus the partial last block.
	if want := p1.PromptTokens + p1.CompletionTokens - 16; verbatim.PromptTokensDetails.CachedTokens < want {
		t.Errorf("verbatim echo: %d cached tokens, want >= %d (prompt %d + answer %d)", verbatim.PromptTokensDetails.CachedTokens, want, p1.PromptTokens, p1.CompletionTokens)
	}
	if edited.PromptTokensDetails.CachedTokens > verbatim.PromptTokensDetails.CachedTokens-16 {
		t.Errorf("edited echo: %d cached tokens, want at least a block fewer than verbatim %d", edited.PromptTokensDetails.CachedTokens, verbatim.PromptTokensDetails.CachedTokens)
	}
	if edited.PromptTokensDetails.CachedTokens < p1.PromptTokens-16 {
		t.Errorf("edited echo: %d cached tokens, want at least the first prompt's %d", edited.PromptTokensDetails.CachedTokens, p1.PromptTokens-16)
	}
	t.Logf("turn 1: prompt %d, answer %d; turn 2 cached: verbatim %d of %d, with whitespace %d of %d",
		p1.PromptTokens, p1.CompletionTokens, verbatim.PromptTokensDetails.CachedTokens, verbatim.PromptTokens,
		edited.PromptTokensDetails.CachedTokens, edited.PromptTokens)
}

// TestClearGeneratedCache replays the fixture's conversations with the
// dataset's exact answers, with and without the body option replay's
// --clear-generated-cache sets: without it later turns hit through the tokens
// the sim generated; with it they miss from the changed message on.
func TestClearGeneratedCache(t *testing.T) {
	d := fixtureDataset(t)
	cached := func(clear bool) (total int) {
		cfg := tinyConfig(t)
		cfg.Dataset, cfg.Fidelity = d, 1
		s := newServer(t, cfg)
		for i := range d.Turns {
			turn := &d.Turns[i]
			body := d.AppendBody(nil, turn, datasets.BodyOptions{Model: s.prof.Model, Salt: true, ClearGeneratedCache: clear})
			req := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("X-Session-ID", turn.ConversationID)
			w := httptest.NewRecorder()
			s.Handler().ServeHTTP(w, req)
			var out struct{ Usage usage }
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != 200 {
				t.Fatalf("turn %d: %d %s", turn.Turn, w.Code, w.Body.Bytes())
			}
			if turn.ClientIndex > 0 {
				total += out.Usage.PromptTokensDetails.CachedTokens
			}
		}
		return total
	}
	kept, cleared := cached(false), cached(true)
	if cleared >= kept {
		t.Errorf("later turns cached %d tokens with the generated cache cleared, %d without; want fewer", cleared, kept)
	}
	t.Logf("later turns' cached tokens: %d verbatim, %d with --clear-generated-cache", kept, cleared)
}
