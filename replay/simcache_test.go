package replay

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentrace/agentrace/schemas"
	"github.com/agentrace/agentrace/simserver"
)

// TestClearGeneratedCache runs a conversation against the simulated endpoint,
// which answers each turn with the recorded assistant message verbatim and caches
// the tokens it generated. Without the flag, the next turn's history repeats the
// answer and hits the cache through it; with --clear-generated-cache the recorded
// assistant messages differ by a newline, so the generated tokens are never reused
// and fewer prompt tokens are cached.
func TestClearGeneratedCache(t *testing.T) {
	c := tconv{id: "conv-cache", system: "You are a careful agent. " + strings.Repeat("Follow the rules. ", 6)}
	for i := 0; i < 4; i++ {
		c.rows = append(c.rows,
			trow{role: schemas.RoleUser, content: fmt.Sprintf("Step %d: %s", i, strings.Repeat("look at the file and report. ", 4))},
			trow{role: schemas.RoleAssistant, content: fmt.Sprintf("Answer %d: %s", i, strings.Repeat("the file holds a function that parses input. ", 5))})
	}
	d := makeDataset(t, c)
	prof, err := simserver.LookupHardware("tiny")
	if err != nil {
		t.Fatal(err)
	}
	// cached returns the cached prompt tokens of turns 2.., their prompt tokens,
	// and the cached tokens beyond the previous turn's whole prompt: those can only
	// come from the tokens the sim generated for the previous turn.
	cached := func(clear bool) (hits, prompt, reuse int64) {
		s, err := simserver.New(simserver.Config{Hardware: prof, Speedup: 1000, Dataset: d, Fidelity: 1, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		srv := httptest.NewServer(s.Handler())
		defer srv.Close()
		dir := t.TempDir()
		if _, err := Run(context.Background(), Options{Data: d, Endpoint: srv.URL, Out: dir, Concurrency: 1, NoDelays: true, ClearGeneratedCache: clear, StreamUsage: true}); err != nil {
			t.Fatal(err)
		}
		recs := readLog(t, dir)
		// The log keeps a row when it is finished, which under load may be after a
		// later turn's: compare the turns in their order.
		slices.SortFunc(recs, func(a, b schemas.TurnRecord) int { return int(a.ClientIndex - b.ClientIndex) })
		for i, r := range recs {
			if r.Status != schemas.StatusOK || r.UsageCachedTokens < 0 {
				t.Fatalf("turn %d: %s %s (cached %d)", r.Turn, r.Status, r.Error, r.UsageCachedTokens)
			}
			if r.ClientIndex == 0 {
				continue
			}
			hits += int64(r.UsageCachedTokens)
			reuse += int64(max(0, r.UsageCachedTokens-recs[i-1].UsagePromptTokens))
			prompt += int64(r.UsagePromptTokens)
		}
		if r := recs[1]; !clear && !strings.HasPrefix(r.OutputContent, "Answer 1:") {
			t.Fatalf("the sim did not answer with the recorded message: %q", r.OutputContent)
		}
		return hits, prompt, reuse
	}
	hitsKeep, promptKeep, reuseKeep := cached(false)
	hitsClear, promptClear, reuseClear := cached(true)
	t.Logf("cached prompt tokens over turns 2..4: %d of %d without the flag (%d through generated tokens), %d of %d with it (%d)",
		hitsKeep, promptKeep, reuseKeep, hitsClear, promptClear, reuseClear)
	if reuseKeep == 0 {
		t.Fatal("without the flag the sim never reused generated tokens: the test shows nothing")
	}
	if reuseClear > 0 || hitsClear >= hitsKeep {
		t.Fatalf("with --clear-generated-cache %d cached tokens came through generated tokens (total %d, without the flag %d)", reuseClear, hitsClear, hitsKeep)
	}
}
