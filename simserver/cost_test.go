package simserver

import (
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestExpertsTouched: one token reads its 8 experts of 256 a layer; 64 tokens
// (16 sequences verifying 4 each) read about 222; a prefill chunk reads all.
func TestExpertsTouched(t *testing.T) {
	p, err := LookupHardware(DefaultHardware)
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

// TestDerivedProfiles checks what the hardware derive from their figures: the
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
		p, err := LookupHardware(tc.name)
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
	if _, err := LookupHardware("nope"); err == nil {
		t.Error("an unknown profile was found")
	}
	p, _ := LookupHardware(DefaultHardware)
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
		p := tinyHardware(t)
		p.Speculative = Speculative{Method: SpecMTP, DraftTokens: 3, Acceptance: 1}
		e := startEngine(t, p, 1)
		start := time.Now()
		s := newSeq(10, 9, nil)
		submitTogether(e, s)
		var ts []float64
		var wg sync.WaitGroup
		wg.Go(func() { ts = tokenTimes(s, start) })
		wg.Wait()
		// The tiny hardware: 1 ms a pass, 10 µs a token, 100 µs a sequence. Step 1:
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

// TestKimiProfiles checks what the Kimi hardware derive from the architecture:
// MLA's latent a token (61 layers × (512 + 64), one copy a device under TP8),
// the parameter totals, the EAGLE-3 draft's reads, and the drafts each refuses.
func TestKimiProfiles(t *testing.T) {
	for _, tc := range []struct {
		name            string
		kvBytes         float64 // a token, one copy
		draftKV         float64 // the draft's, a token
		total, active   float64 // parameters, billions
		weightsGB       float64
		spec, refused   string
		refusalMentions string
	}{
		{"8xh200-kimi-k2.6", 61 * 576 * 2, 2 * 64 * 128 * 2, 1026.4, 32.9, 596.6, SpecEAGLE3, SpecMTP, ""},
		{"8xb300-kimi-k3", 61 * 576 * 1, 0, 2800, 104, 1642.0, SpecOff, SpecEAGLE3, "DSpark"},
	} {
		p, err := LookupHardware(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Validate(); err != nil {
			t.Error(err)
		}
		if got := p.KVBytesPerToken(); got != tc.kvBytes {
			t.Errorf("%s: %v KV bytes a token, want %v (MLA latent)", tc.name, got, tc.kvBytes)
		}
		if got := p.DraftKVBytesPerToken(); got != tc.draftKV {
			t.Errorf("%s: %v draft KV bytes a token, want %v", tc.name, got, tc.draftKV)
		}
		perToken := 8*tc.kvBytes + tc.draftKV
		if want := int(p.CacheBytes() / perToken / 16); p.KVBlocks != want {
			t.Errorf("%s: %d KV blocks, want %d (cache memory over 8 copies of the latent and the draft's KV)", tc.name, p.KVBlocks, want)
		}
		a := p.Arch
		fixed := a.DenseParams + a.HeadParams + a.EmbeddingParams
		total := (fixed + float64(a.moeLayers()*a.Experts)*a.ExpertParams) / 1e9
		active := (fixed + float64(a.moeLayers()*a.ExpertsPerToken)*a.ExpertParams) / 1e9
		if math.Abs(total-tc.total) > 0.1 || math.Abs(active-tc.active) > 0.1 {
			t.Errorf("%s: %.1fB parameters, %.1fB active; want %.1fB and %.1fB", tc.name, total, active, tc.total, tc.active)
		}
		if got := p.WeightBytes() / 1e9; math.Abs(got-tc.weightsGB) > 0.1 {
			t.Errorf("%s: %.1f GB of weights, want %.1f", tc.name, got, tc.weightsGB)
		}
		if p.Speculative.Method != tc.spec || p.RunningLimit() != p.MaxNumSeqs {
			t.Errorf("%s: speculation %s, running limit %d; want %s and no state slots", tc.name, p.Speculative, p.RunningLimit(), tc.spec)
		}
		_, err = p.WithSpeculative(tc.refused, 0)
		if err == nil || !strings.Contains(err.Error(), tc.refusalMentions) {
			t.Errorf("%s --speculative %s: %v, want a refusal naming %q", tc.name, tc.refused, err, tc.refusalMentions)
		}
	}
	// The EAGLE-3 draft a draft pass reads: its layer and its 32,000-token head
	// in BF16, and 32 KB of KV a context token; the fusion once a round.
	p, _ := LookupHardware("8xh200-kimi-k2.6")
	c := newCostModel(p)
	layer := 3.0*2*7168*8192 + 8192*7168 + 3*7168*18432
	if want := 2 * (layer + 32000*7168); c.draftDense != want || c.draftKV != 32768 || c.draftFuse != 2*3*7168*7168 {
		t.Errorf("EAGLE-3 pass reads %.0f bytes + %.0f a context token, fusion %.0f; want %.0f, 32768, %d",
			c.draftDense, c.draftKV, c.draftFuse, want, 2*3*7168*7168)
	}
	if _, err := LookupHardware(DefaultHardware); err != nil {
		t.Fatal(err)
	}
}

// TestEAGLE3Steps: a separately trained draft on the tiny hardware (a layer of
// 1M parameters at one byte, a fusion of 1M, 32 bytes of its own KV a token).
// With every draft accepted a decoding sequence streams 4 tokens a step (k+1);
// with none accepted it streams one a step, each step paying the 3 draft passes:
// no speed-up, a slower decode than without speculation.
func TestEAGLE3Steps(t *testing.T) {
	const plain = 1e-3 + 10e-6 + 100e-6 // a decode step without speculation
	// The tiny hardware: 1 ms a pass, 10 µs a token, 100 µs a sequence, 1 TB/s
	// and 1 TFLOP/s. The prefill step adds the draft's extend over the 10 prompt
	// tokens: a pass, its layer and fusion read (2 µs), 2 × 2M FLOPs a token
	// (40 µs). A verify step of n tokens adds 3 draft passes, each reading the
	// layer (1 µs) and computing 2M FLOPs (2 µs), and the fusion once (1 µs, 2 µs).
	prefill := 2*1e-3 + 10*10e-6 + 100e-6 + 2e-6 + 40e-6
	verify := func(n int) float64 { return 4*1e-3 + float64(n)*10e-6 + 100e-6 + 4e-6 + 8e-6 }
	for _, tc := range []struct {
		acceptance float64
		steps      int64
		gaps       []float64 // between tokens 1..9 (0: in the same step)
	}{
		{1, 3, []float64{verify(4), 0, 0, 0, verify(4), 0, 0, 0}},
		{0, 9, []float64{verify(4), verify(4), verify(4), verify(4), verify(4), verify(3), verify(2), verify(1)}},
	} {
		synctest.Test(t, func(t *testing.T) {
			p := tinyHardware(t)
			p.Arch = withDraft(p.Arch, Architecture{DraftDenseParams: 1e6, DraftFuseParams: 1e6, DraftKVHeads: 1, DraftHeadDim: 8})
			p.Precision.DraftWeightBytes = 1
			p.Speculative = Speculative{Method: SpecEAGLE3, DraftTokens: 3, Acceptance: tc.acceptance}
			e := startEngine(t, p, 1)
			start := time.Now()
			s := newSeq(10, 9, nil)
			submitTogether(e, s)
			ts := tokenTimes(s, start)
			want := prefill
			if !near(ts[0], want) {
				t.Errorf("acceptance %v: first token at %.6f s, want %.6f", tc.acceptance, ts[0], want)
			}
			for i, g := range tc.gaps {
				want += g
				if !near(ts[i+1], want) {
					t.Errorf("acceptance %v: token %d at %.6f s, want %.6f", tc.acceptance, i+1, ts[i+1], want)
				}
			}
			if st := e.snapshot(); st.Steps != tc.steps {
				t.Errorf("acceptance %v: %d steps, want %d", tc.acceptance, st.Steps, tc.steps)
			}
			if tc.acceptance == 0 && (ts[8]-ts[0])/8 <= plain {
				t.Errorf("acceptance 0: %.6f s a token, not slower than %.6f without speculation", (ts[8]-ts[0])/8, plain)
			}
			if m := p.Speculative.MeanTokensPerStep(); m != 1+3*tc.acceptance {
				t.Errorf("acceptance %v: %.2f tokens a step on average, want %v", tc.acceptance, m, 1+3*tc.acceptance)
			}
		})
	}
}
