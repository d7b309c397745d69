package sim

import (
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestExpertsTouched: one token reads its 8 experts of 256 a layer; 64 tokens
// (16 sequences verifying 4 each) read about 222; a prefill chunk reads all.
func TestExpertsTouched(t *testing.T) {
	p, err := LookupProfile(DefaultProfile)
	if err != nil {
		t.Fatal(err)
	}
	c := newCostModel(p)
	for _, tc := range []struct {
		tokens int
		want   float64
	}{{0, 0}, {1, 8}, {4, 30.5}, {64, 222.4}, {8192, 256}} {
		if got := c.touched(tc.tokens); math.Abs(got-tc.want) > 0.1 {
			t.Errorf("%d tokens touch %.2f experts a layer, want %.1f", tc.tokens, got, tc.want)
		}
	}
}

// TestDerivedProfiles checks what the profiles derive from their figures: the
// KV bytes a token, the state a sequence, the state slots that bound the batch
// and the KV pool, against the numbers the model's architecture gives.
func TestDerivedProfiles(t *testing.T) {
	for _, tc := range []struct {
		name          string
		kvBytes       float64
		slots         int
		poolMinTokens int
	}{
		{"h200-qwen3.6-35b-a3b", 10240, 93, 8e6},
		{"h200-qwen3.6-35b-a3b-bf16", 20480, 59, 2.5e6},
		{"b200-qwen3.6-35b-a3b", 10240, 119, 10e6},
	} {
		p, err := LookupProfile(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.KVBytesPerToken(); got != tc.kvBytes {
			t.Errorf("%s: %v KV bytes a token, want %v", tc.name, got, tc.kvBytes)
		}
		if got := p.StateBytesPerSeq(); got != 30*32*128*128*4 {
			t.Errorf("%s: %v state bytes a sequence, want 62,914,560 (fp32)", tc.name, got)
		}
		if got := p.RunningLimit(); got != tc.slots {
			t.Errorf("%s: running limit %d, want %d state slots", tc.name, got, tc.slots)
		}
		if got := p.KVBlocks * p.BlockSize; got < tc.poolMinTokens {
			t.Errorf("%s: KV pool of %d tokens, want >= %d", tc.name, got, tc.poolMinTokens)
		}
		off, err := p.WithSpeculative(SpecOff, 0)
		if err != nil {
			t.Fatal(err)
		}
		if off.Speculative.On() || off.RunningLimit() < p.RunningLimit() || off.WeightBytes() >= p.WeightBytes() {
			t.Errorf("%s without speculation: %s, limit %d, weights %.1f GB; want off, no fewer slots, no MTP layer",
				tc.name, off.Speculative, off.RunningLimit(), off.WeightBytes()/1e9)
		}
	}
	if _, err := LookupProfile("nope"); err == nil {
		t.Error("an unknown profile was found")
	}
	p, _ := LookupProfile(DefaultProfile)
	if _, err := p.WithSpeculative(SpecEAGLE3, 0); err == nil {
		t.Error("eagle3 accepted on a profile whose draft is MTP")
	}
	if _, err := p.WithSpeculative(SpecMTP, 1.5); err == nil {
		t.Error("acceptance 1.5 accepted")
	}
	if got := mtpQwen.MeanTokensPerStep(); math.Abs(got-2.952) > 0.001 {
		t.Errorf("MTP at 0.8 with 3 drafts: %.3f tokens a step, want 2.952", got)
	}
}

// TestSpeculativeSteps: with every draft accepted, a decoding sequence emits
// the last token's successor and its 3 drafts in one step, so its tokens
// arrive 4 at a time after the first; the verify step costs its 4 tokens and
// the 3 draft passes.
func TestSpeculativeSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := tinyProfile(t)
		p.Speculative = Speculative{Method: SpecMTP, DraftTokens: 3, Acceptance: 1}
		e := newEngine(p, 1, newMetrics(p, 1), 1)
		defer e.close()
		start := time.Now()
		s := newSeq(10, 9, nil)
		submitTogether(e, s)
		var ts []float64
		var wg sync.WaitGroup
		wg.Go(func() { ts = tokenTimes(s, start) })
		wg.Wait()
		// The tiny profile: 1 ms a pass, 10 µs a token, 100 µs a sequence. Step 1:
		// 10 prompt tokens and the draft layer's extend over them (2 passes), the
		// first token. Steps 2 and 3 verify 4 tokens each in 4 passes (the model's
		// and 3 drafts').
		prefill := 2*1e-3 + 10*10e-6 + 100e-6
		verify := 4*1e-3 + 4*10e-6 + 100e-6
		want := []float64{prefill}
		for k := 1; k <= 2; k++ {
			for range 4 {
				want = append(want, prefill+float64(k)*verify)
			}
		}
		for i := range want {
			if !near(ts[i], want[i]) {
				t.Errorf("token %d at %.6f s, want %.6f", i, ts[i], want[i])
			}
		}
		if st := e.snapshot(); st.Steps != 3 || st.GeneratedTokens != 9 {
			t.Errorf("%d steps, %d tokens; want 3 and 9", st.Steps, st.GeneratedTokens)
		}
	})
}
