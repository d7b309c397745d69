package simserver

import "math"

// costModel turns a step's work into modelled seconds from the hardware's
// hardware, architecture, precision and efficiencies:
//
//	step = passes × PassOverhead
//	     + FLOPs / (dense peak × Compute)
//	     + bytes read / (HBM bandwidth × Bandwidth)
//	     + all-reduces × (LinkLatency + activation bytes / LinkBandwidth)
//
// passes is 1, plus the draft passes when a sequence of the step verifies drafts.
// FLOPs are 2 per active parameter per token computed (the routed experts' share
// included), the output head's for every sampled position, and causal attention
// over the full-attention layers (4 × query heads × head dimension per earlier
// position); the linear-attention layers' own compute (about 1% here) is left
// out. Bytes read are the weights — the dense part, and for the routed experts
// the expected number touched by the step's tokens, E × (1 - (1 - k/E)^T), so
// that a larger batch reads more experts until all are read — each scheduled
// sequence's KV (every token it attends to), and its linear-attention state,
// read and written once. A draft pass reads the draft layer (its experts touched
// by one token a decoding sequence), the output head and the draft layer's KV.
//
// A separately trained draft (EAGLE-3) reads its own layer and head over a
// reduced vocabulary each draft pass, and its own KV; its fusion of the
// target's hidden states once a verify round. Under tensor parallelism the
// peaks and bandwidth are the devices' sum, MLA's latent KV is read by every
// device (kvCopies), and each pass adds two all-reduces a layer (the draft's
// one layer: two), a fixed latency plus the activations over the link.
//
// Both terms add: a step that carries an 8k-token prefill chunk is as slow for
// the sequences decoding in it (chunked-prefill interference).
type costModel struct {
	overhead   float64
	flops      float64 // effective FLOP/s
	bandwidth  float64 // effective bytes/s
	tokenFlops float64 // per token computed, besides attention and head
	headFlops  float64 // per sampled position
	attnFlops  float64 // per (token, earlier position) pair
	dense      float64 // bytes read every pass of the model
	expert     float64 // bytes of one routed expert in one layer
	layers     float64 // layers with routed experts
	experts    float64
	perToken   float64 // routed experts per token
	kv         float64 // KV bytes read per context token, all full-attention layers and copies
	state      float64 // state bytes per sequence, read and written
	// tensor parallelism: two all-reduces a layer
	allReduces   float64 // of one pass of the model
	reduceFixed  float64 // seconds each
	reducePerTok float64 // seconds per token each
	// draft pass
	drafts          int
	draftDense      float64 // bytes read every draft pass (its layer and head)
	draftExpert     bool
	draftKV         float64 // KV bytes per context token of the draft layer
	draftFlops      float64 // per decoding sequence per draft pass
	draftHeadFlops  float64 // of those, the draft's head
	draftFuse       float64 // bytes read once a verify round (EAGLE-3's fusion of hidden states)
	draftFuseFlops  float64 // per sequence, once a round
	draftAllReduces float64 // of one draft pass
}

func newCostModel(p Hardware) costModel {
	a, pr, h, e := p.Arch, p.Precision, p.Accelerator, p.Efficiency
	n := h.devices()
	peak := h.DenseFLOPS16
	if pr.WeightBytes <= 1 {
		peak = h.DenseFLOPS8
	}
	headBytes := max(pr.WeightBytes, 2)
	if pr.WeightBytes == 0 {
		headBytes = 0
	}
	routedActive := float64(a.moeLayers()*a.ExpertsPerToken) * a.ExpertParams
	attn := float64(4 * a.QueryHeads * a.HeadDim * a.FullAttentionLayers)
	if a.KVLoraRank > 0 {
		// MLA with the up-projections absorbed: scores against the latent and
		// the rotary part, values from the latent.
		attn = float64(2 * a.QueryHeads * (2*a.KVLoraRank + a.RopeDim) * a.FullAttentionLayers)
	}
	c := costModel{
		overhead:   e.PassOverhead,
		flops:      n * peak * e.Compute,
		bandwidth:  n * h.HBMBandwidth * e.Bandwidth,
		tokenFlops: 2 * (a.DenseParams + routedActive),
		headFlops:  2 * a.HeadParams,
		attnFlops:  attn,
		dense:      a.DenseParams*pr.WeightBytes + a.HeadParams*headBytes,
		expert:     a.ExpertParams * pr.expertBytes(),
		layers:     float64(a.moeLayers()),
		experts:    float64(a.Experts),
		perToken:   float64(a.ExpertsPerToken),
		kv:         p.KVBytesPerToken() * p.kvCopies(),
		state:      2 * p.StateBytesPerSeq(),
	}
	if n > 1 && h.LinkBandwidth > 0 {
		// A ring all-reduce moves 2(n-1)/n of the activations (16-bit) over each
		// device's link.
		c.allReduces = 2 * float64(a.Layers)
		c.reduceFixed = h.LinkLatency
		c.reducePerTok = 2 * (n - 1) / n * float64(a.Hidden) * 2 / h.LinkBandwidth
	}
	if s := p.Speculative; s.On() {
		db := pr.draftBytes()
		c.drafts = s.DraftTokens
		head, headB := a.HeadParams, headBytes
		if a.DraftHeadParams > 0 {
			head, headB = a.DraftHeadParams, db
		}
		c.draftDense = a.DraftDenseParams*db + head*headB
		c.draftExpert = a.DraftExperts > 0
		switch {
		case a.DraftKVHeads > 0:
			c.draftKV = p.DraftKVBytesPerToken()
		case a.FullAttentionLayers > 0:
			c.draftKV = c.kv / float64(a.FullAttentionLayers)
		}
		draftActive := a.DraftDenseParams + head
		if c.draftExpert {
			draftActive += float64(a.ExpertsPerToken) * a.ExpertParams
		}
		c.draftFlops = 2 * draftActive
		c.draftHeadFlops = 2 * head
		c.draftFuse = a.DraftFuseParams * db
		c.draftFuseFlops = 2 * a.DraftFuseParams
		if c.allReduces > 0 {
			c.draftAllReduces = 2
		}
	}
	return c
}

// touched is the expected number of distinct routed experts a layer reads for
// tokens tokens.
func (c *costModel) touched(tokens int) float64 {
	if c.experts == 0 || tokens == 0 {
		return 0
	}
	return c.experts * (1 - math.Pow(1-c.perToken/c.experts, float64(tokens)))
}

// stepWork is what a step computes, summed by the scheduler.
type stepWork struct {
	tokens    int     // tokens computed (prefill chunks, decode and verify tokens)
	sampled   int     // positions whose logits are sampled
	attnPairs float64 // (token, attended position) pairs over the step
	context   float64 // KV tokens read, over the scheduled sequences
	seqs      int     // sequences scheduled
	verifying int     // sequences verifying drafts (speculative decode)
	verifyCtx float64 // their context tokens
	prefill   int     // prompt tokens computed (the draft layer extends over them too)
}

// add counts a sequence that computes n tokens after computed ones, sampling
// sampled positions.
func (w *stepWork) add(computed, n, sampled int, verify, prefill bool) {
	c, k := float64(computed), float64(n)
	w.tokens += n
	if prefill {
		w.prefill += n
	}
	w.sampled += sampled
	w.attnPairs += k*c + k*(k+1)/2
	w.context += c + k
	w.seqs++
	if verify {
		w.verifying++
		w.verifyCtx += c + k
	}
}

// seconds is the modelled duration of a step doing w.
func (c *costModel) seconds(w stepWork) float64 {
	if w.seqs == 0 {
		return 0
	}
	flops := c.tokenFlops*float64(w.tokens) + c.headFlops*float64(w.sampled) + c.attnFlops*w.attnPairs
	bytes := c.dense + c.layers*c.touched(w.tokens)*c.expert + c.kv*w.context + c.state*float64(w.seqs)
	passes := 1.0
	link := c.allReduces * (c.reduceFixed + c.reducePerTok*float64(w.tokens))
	if w.prefill > 0 && c.drafts > 0 {
		// The draft layer extends over the new prompt tokens (one pass).
		passes++
		bytes += c.draftDense + c.draftFuse
		if c.draftExpert {
			bytes += c.touched(w.prefill) * c.expert
		}
		flops += (c.draftFlops - c.draftHeadFlops + c.draftFuseFlops) * float64(w.prefill)
		link += c.draftAllReduces * (c.reduceFixed + c.reducePerTok*float64(w.prefill))
	}
	if w.verifying > 0 && c.drafts > 0 {
		// k draft passes, one token a verifying sequence each; the first fuses
		// the target's hidden states (EAGLE-3).
		d := float64(c.drafts)
		passes += d
		draft := c.draftDense + c.draftKV*w.verifyCtx
		if c.draftExpert {
			draft += c.touched(w.verifying) * c.expert
		}
		bytes += d*draft + c.draftFuse
		flops += (d*c.draftFlops + c.draftFuseFlops) * float64(w.verifying)
		link += d * c.draftAllReduces * (c.reduceFixed + c.reducePerTok*float64(w.verifying))
	}
	return passes*c.overhead + flops/c.flops + bytes/c.bandwidth + link
}
