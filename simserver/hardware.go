package simserver

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/agentrace/agentrace/datasets"
)

// Hardware is one simulated hardware/model pair and how it serves: the model
// names it answers to, the accelerators' figures, the model's architecture, the
// precision it is served at, a few efficiencies fitted to published runs, the
// scheduler's limits and speculative decoding. The step-time cost model (see
// costModel) derives every duration from these.
type Hardware struct {
	Name        string
	Description string
	// Model is the served model name reported by /v1/models; Aliases are other
	// names requests may use. Matching ignores case and an "org/" prefix.
	Model   string
	Aliases []string

	Accelerator  Accelerator
	Arch         Architecture
	Precision    Precision
	Efficiency   Efficiency
	Speculative  Speculative
	MemoryBudget MemoryBudget

	// BlockSize is the number of tokens per KV block (vLLM's --block-size).
	BlockSize int
	// KVBlocks is the capacity of the KV pool in blocks; 0 derives it from the
	// memory left once weights, the reserve and the linear-attention state pool
	// are taken (Derive).
	KVBlocks int
	// MaxModelLen bounds prompt plus output tokens (vLLM's --max-model-len); a
	// longer prompt is a 400. It must fit in the pool.
	MaxModelLen int
	// MaxBatchedTokens is the token budget of one step (vLLM's
	// --max-num-batched-tokens, SGLang's --chunked-prefill-size): decode tokens
	// (verify tokens with speculation) plus chunked-prefill tokens.
	MaxBatchedTokens int
	// MaxNumSeqs bounds the running sequences (vLLM's --max-num-seqs). A model
	// with linear-attention layers is bounded further by its state slots
	// (StateSlots): each running sequence holds one.
	MaxNumSeqs int
	// MaxWaiting bounds the waiting queue; a request beyond it is answered 429.
	MaxWaiting int
	// NoDraft says why the hardware has no speculative draft, where its model has
	// none the sim models (the refusal of --speculative names it).
	NoDraft string

	derivedKV bool // KVBlocks came from the memory budget (Derive)
}

// Accelerator holds one accelerator's published figures.
type Accelerator struct {
	Name string
	// HBMBytes is the memory the device reports; HBMBandwidth its peak in bytes
	// per second.
	HBMBytes     float64
	HBMBandwidth float64
	// DenseFLOPS8 and DenseFLOPS16 are the dense (not sparse) tensor-core peaks
	// in FLOP/s for FP8 and BF16.
	DenseFLOPS8, DenseFLOPS16 float64
	// Devices is the number of these devices the model is split over with
	// tensor parallelism (0 means 1): memory, bandwidth and peaks add up, and
	// every layer's two all-reduces cross the link.
	Devices int
	// LinkBandwidth is one device's NVLink bandwidth in one direction, bytes per
	// second; LinkLatency the fixed time of one all-reduce of a step's
	// activations (an assumption, not a published figure).
	LinkBandwidth, LinkLatency float64
}

// devices is the tensor-parallel width, at least 1.
func (h Accelerator) devices() float64 { return float64(max(h.Devices, 1)) }

// Architecture is the model's shape, as its published configuration gives it.
// Parameter counts are per layer where they say so.
type Architecture struct {
	Layers int
	// Hidden is the hidden size: what a tensor-parallel all-reduce carries per
	// token.
	Hidden int
	// FullAttentionLayers use softmax attention with a KV cache of KVHeads ×
	// HeadDim per token (keys and values), read in full by every step.
	FullAttentionLayers int
	QueryHeads, KVHeads int
	HeadDim             int
	// KVLoraRank and RopeDim, when set, make the full-attention layers MLA
	// (multi-head latent attention): a token's cache is one latent of
	// KVLoraRank + RopeDim values a layer (no separate keys and values), which
	// tensor parallelism cannot split: every device holds and reads all of it.
	KVLoraRank, RopeDim int
	// LinearLayers (Gated DeltaNet) keep a fixed state per sequence instead of a
	// KV cache: LinearHeads × LinearKeyDim × LinearValueDim values each.
	LinearLayers                              int
	LinearHeads, LinearKeyDim, LinearValueDim int
	// Experts routed per MoE layer, ExpertsPerToken of them per token,
	// ExpertParams parameters each; MoELayers is the number of layers with routed
	// experts (0: every layer).
	Experts, ExpertsPerToken int
	ExpertParams             float64
	MoELayers                int
	// DenseParams are the parameters every forward pass reads besides the routed
	// experts and the output head: attention and linear-attention projections,
	// shared experts, routers and norms. HeadParams is the output head (kept at
	// 16 bits in FP8 checkpoints); EmbeddingParams the input embedding (only one
	// row per token is read, so it costs memory, not bandwidth).
	DenseParams, HeadParams, EmbeddingParams float64
	// DraftDenseParams are the parameters of the speculative draft layer besides
	// its routed experts (MTP: one decoder layer; its experts are ExpertParams
	// each, Experts of them); DraftExperts is 0 for a dense draft (EAGLE-3).
	DraftDenseParams float64
	DraftExperts     int
	// A separately trained draft (EAGLE-3) has its own output head over a
	// reduced vocabulary, DraftHeadParams (0: the draft shares the target's head,
	// as MTP does); DraftFuseParams project the target's hidden states of three
	// layers into the draft's input, once a verify round; DraftKVHeads ×
	// DraftHeadDim is its own attention's KV a token, keys and values (0: one of
	// the target's full-attention layers, as MTP's), split by tensor parallelism.
	DraftHeadParams, DraftFuseParams float64
	DraftKVHeads, DraftHeadDim       int
}

// moeLayers is the number of layers with routed experts.
func (a Architecture) moeLayers() int {
	if a.MoELayers > 0 {
		return a.MoELayers
	}
	return a.Layers
}

// Precision is how the model is served.
type Precision struct {
	// WeightBytes per parameter (1 for FP8, 2 for BF16); FP8 compute when 1.
	// ExpertWeightBytes, when set, is the routed experts' own (0.5625 for INT4
	// in groups of 32 with a BF16 scale); DraftWeightBytes the draft's (0: as
	// the target's weights).
	WeightBytes, ExpertWeightBytes, DraftWeightBytes float64
	// KVBytes per cached key or value element; StateBytes per linear-attention
	// state element (fp32 in SGLang and vLLM).
	KVBytes, StateBytes float64
}

// Efficiency holds the fitted figures: what share of the hardware's peaks the
// serving stack reaches, and its fixed costs.
type Efficiency struct {
	// Bandwidth is the share of HBMBandwidth that weight, KV and state reads reach.
	Bandwidth float64
	// Compute is the share of the dense peak that prefill reaches.
	Compute float64
	// PassOverhead is the fixed time of one forward pass (the model's or a
	// draft's): kernel launches, sampling, the scheduler's own work.
	PassOverhead float64
	// StateShare is the share of the cache memory (MemoryBudget) the server gives
	// to linear-attention states; it sets the state slots, hence the running
	// batch.
	StateShare float64
}

// MemoryBudget says how the device's memory is split.
type MemoryBudget struct {
	// Utilization is the share of HBMBytes the server takes (vLLM's
	// --gpu-memory-utilization, SGLang's --mem-fraction-static).
	Utilization float64
	// Reserve is what activations, CUDA graphs and the runtime keep, in bytes a
	// device.
	Reserve float64
}

// Speculative decoding methods.
const (
	SpecOff    = "off"
	SpecMTP    = "mtp"    // the model's own multi-token-prediction layer (Qwen3.6)
	SpecEAGLE3 = "eagle3" // a separately trained EAGLE-3 draft model (Kimi K2.6)
)

// Speculative is a hardware's speculative decoding: Method off, mtp or eagle3;
// DraftTokens drafted per step (each one forward pass of the draft layer), and
// Acceptance, the chance that a draft token is accepted given the ones before it
// were. A verify step then yields 1 + accepted tokens: on average
// (1 - a^(k+1)) / (1 - a) for k drafts at acceptance a.
type Speculative struct {
	Method      string
	DraftTokens int
	Acceptance  float64
}

// On tells whether speculation is enabled.
func (s Speculative) On() bool { return s.Method != "" && s.Method != SpecOff && s.DraftTokens > 0 }

// MeanTokensPerStep is the expected number of tokens a verify step yields.
func (s Speculative) MeanTokensPerStep() float64 {
	if !s.On() {
		return 1
	}
	a, k := s.Acceptance, float64(s.DraftTokens)
	if a >= 1 {
		return k + 1
	}
	return (1 - math.Pow(a, k+1)) / (1 - a)
}

// Published hardware figures (dense tensor-core peaks, i.e. half the "with
// sparsity" figures of the datasheets).
var (
	// NVIDIA H200 SXM datasheet: 141 GB HBM3e (nvidia-smi: 143,771 MiB), 4.8 TB/s,
	// FP8 3,958 TFLOPS and BF16 1,979 TFLOPS with sparsity.
	hwH200 = Accelerator{Name: "NVIDIA H200 SXM", HBMBytes: 143771 * (1 << 20), HBMBandwidth: 4.8e12,
		DenseFLOPS8: 1979e12, DenseFLOPS16: 989.5e12}
	// NVIDIA HGX B200 datasheet, per GPU: 180 GB HBM3e, 8 TB/s, FP8 72 PFLOPS and
	// BF16 36 PFLOPS with sparsity for eight GPUs (4.5 and 2.25 PFLOPS dense
	// each).
	hwB200 = Accelerator{Name: "NVIDIA B200", HBMBytes: 180e9, HBMBandwidth: 8e12,
		DenseFLOPS8: 4.5e15, DenseFLOPS16: 2.25e15}
	// NVIDIA HGX B300 (Blackwell Ultra), per GPU: 288 GB HBM3e, 8 TB/s; FP8 and
	// BF16 dense peaks as the B200's (4.5 and 2.25 PFLOPS; Blackwell Ultra adds
	// FP4, not used here); NVLink 5 at 1.8 TB/s both ways.
	hwB300 = Accelerator{Name: "NVIDIA B300", HBMBytes: 288e9, HBMBandwidth: 8e12,
		DenseFLOPS8: 4.5e15, DenseFLOPS16: 2.25e15}
)

// tensorParallel is n devices of hw in one NVLink domain, the model split over
// them. linkBytes is one device's NVLink bandwidth in one direction (NVLink 4
// on the H200: 900 GB/s both ways; NVLink 5: 1.8 TB/s). Each all-reduce also
// costs allReduceLatency: an assumption (SGLang's one-shot all-reduce of a
// decode batch's activations over NVLink takes microseconds), not a published
// or fitted figure.
func tensorParallel(hw Accelerator, n int, linkBytes float64) Accelerator {
	hw.Name = fmt.Sprintf("%d x %s", n, hw.Name)
	hw.Devices, hw.LinkBandwidth, hw.LinkLatency = n, linkBytes, allReduceLatency
	return hw
}

// allReduceLatency is the fixed time of one tensor-parallel all-reduce.
const allReduceLatency = 8e-6

// The Qwen3.6-35B-A3B architecture, from the published Qwen3.5-35B-A3B
// configuration that it keeps: hidden size 2048, 40 layers, every fourth (10) full
// gated attention (16 query heads, 2 KV heads of 256), the other 30 Gated
// DeltaNet (32 value heads, key and value dimension 128), every layer MoE with 256
// experts of intermediate size 512 (3 × 2048 × 512 parameters), 8 routed and one
// shared per token, a vocabulary of 248,320 with untied embeddings, and one MTP
// layer. Counted: routed experts 32.2B; attention 10 × 27M, DeltaNet 30 × 34M,
// shared experts 40 × 3.1M, routers 40 × 0.5M: 1.42B dense; head and embedding
// 0.51B each; about 34.7B in all and 2.9B active per token.
var archQwen36 = Architecture{
	Layers: 40, FullAttentionLayers: 10, QueryHeads: 16, KVHeads: 2, HeadDim: 256,
	LinearLayers: 30, LinearHeads: 32, LinearKeyDim: 128, LinearValueDim: 128,
	Experts: 256, ExpertsPerToken: 8, ExpertParams: 3 * 2048 * 512,
	DenseParams: 1.42e9, HeadParams: 248320 * 2048, EmbeddingParams: 248320 * 2048,
	// The MTP layer: full attention (27M), an input projection (2 × 2048 → 2048)
	// and a shared expert, with 256 routed experts of its own.
	DraftDenseParams: 27e6 + 8.4e6 + 3.1e6, DraftExperts: 256,
}

// The Kimi K2 architecture as published: NVIDIA Megatron-Bridge's KimiK2Provider
// (docs.nvidia.com, bridge.models.kimi.kimi_provider) gives 61 layers, hidden
// size 7168, FFN 18432, 64 heads, 384 experts of intermediate size 2048, a
// shared expert of 2048, 8 routed a token, untied embeddings; K2 keeps
// DeepSeek-V3's MLA (its config: query rank 1536, KV latent rank 512 plus 64
// rotary dimensions, 128 + 64 query and key head dimensions, values of 128)
// and its first layer dense, the other 60 MoE; Kimi's vocabulary is 163,840
// (vLLM's KimiLinearConfig default, the 163,584 + 256 ids of its tokenizer).
// Not read from Moonshot's own config.json here. Counted: MLA
// 61 × 101.1M, shared experts 60 × 44.0M, the dense layer's MLP 396M, routers
// 60 × 2.8M: 9.37B dense; routed experts 60 × 384 × 44.0M = 1,014.7B; head
// and embedding 1.17B each: 1.03T in all (published: 1.04T) and 32.9B active a
// token (published: 32B). Kimi K2.6 keeps this architecture (SGLang's K2.6
// tutorial: "1T total parameters and 32B active", continual pretraining atop
// Kimi-K2-Base).
var archKimiK2 = Architecture{
	Layers: 61, Hidden: 7168, FullAttentionLayers: 61, QueryHeads: 64,
	KVLoraRank: 512, RopeDim: 64,
	Experts: 384, ExpertsPerToken: 8, ExpertParams: 3 * 7168 * 2048, MoELayers: 60,
	DenseParams: 61*kimiMLAParams + 60*3*7168*2048 + 3*7168*18432 + 60*384*7168,
	HeadParams:  163840 * 7168, EmbeddingParams: 163840 * 7168,
}

// kimiMLAParams are one MLA layer's projections: query down (7168 → 1536) and
// up (1536 → 64 × 192), KV down (7168 → 512 + 64) and up (512 → 64 × (128 +
// 128)), output (64 × 128 → 7168).
const kimiMLAParams = 7168*1536 + 1536*64*192 + 7168*576 + 512*64*256 + 64*128*7168

// eagle3Kimi is the EAGLE-3 draft of Kimi K2.x: the reference client allowed
// nvidia/Kimi-K2.6-Eagle3 for Kimi K2.6 (mlcommons/endpoints, examples/
// 10_Agentic_Inference/README.md before "Upgrade agentic Kimi model to K3",
// #450). Its shape is that of the published Kimi K2 EAGLE-3 drafts
// (AQ-MedAI/Kimi-K2-Instruct-eagle3 and Kimi-K25-eagle3 config.json), assumed
// the same for NVIDIA's: one Llama decoder layer of hidden size 7168, 64 query
// and 64 KV heads of 128 whose projections take the token's embedding and the
// fused hidden state (2 × 7168 in), an MLP of 18432, a fusion of the target's
// hidden states at three layers (3 × 7168 → 7168), and its own head over a
// draft vocabulary of 32,000; BF16.
var eagle3Kimi = Architecture{
	DraftDenseParams: 3*2*7168*64*128 + 64*128*7168 + 3*7168*18432,
	DraftFuseParams:  3 * 7168 * 7168,
	DraftHeadParams:  32000 * 7168,
	DraftKVHeads:     64, DraftHeadDim: 128,
}

// archKimiK3 stands in for Kimi K3, whose architecture is not published where
// this was written. The reference client lists Kimi K3 as "MoE + KDA/Gated MLA,
// 2.8T total / 104B active, 1,048,576 tokens" (mlcommons/endpoints, examples/
// 10_Agentic_Inference/README.md). ASSUMED: K2's architecture standing in for
// K3's (61 layers, hidden 7168, MLA of 512 + 64 in every layer, 384 experts, 8
// routed and one shared, 60 MoE layers, the vocabulary), with its parameters
// scaled to the published totals: routed experts 2.71x larger (119.5M each:
// 2,753B routed, 57.4B active) and the dense part 4.7x (44.3B), so that the
// weights take what 2.8T take and a token reads what 104B read. Not modelled:
// K3's KDA linear-attention layers (the hardware keeps MLA in every layer, so
// its KV a token, and the KV read, are an upper bound) and a larger hidden size
// (the all-reduces and the latent are K2's).
var archKimiK3 = func() Architecture {
	a := archKimiK2
	const routedActive, routedTotal = 60 * 8, 60 * 384 // experts a token, in all
	fixed := a.HeadParams + a.EmbeddingParams
	// total = routedTotal × e + dense + fixed, active = routedActive × e + dense + fixed
	a.ExpertParams = (2.8e12 - 104e9) / (routedTotal - routedActive)
	a.DenseParams = 104e9 - fixed - routedActive*a.ExpertParams
	return a
}()

// effSGLang are the efficiencies fitted to SGLang's published Qwen3.6-35B-A3B
// runs on one H200 (sgl-project/sglang, docs/src/snippets/configs/Qwen/
// qwen3.6-benchmarks.jsx, PR #32959: FP8, TP1, random data, ISL 8192, OSL 1024).
// The cells: MTP (3 drafts) at c=1 TTFT 138 ms, TPOT 1.98 ms, 481 output tok/s;
// at c=16 189 ms, 6.20 ms, 2,270 tok/s; no speculation at c=1024 TPOT 27.9 ms,
// 3,356 tok/s. How each was fitted (simulate's TestCalibration checks all three
// within 15%; fitted by hand, in this order):
//   - Compute 0.17: the c=1 TTFT is one 8,192-token prefill step of about
//     54 TFLOP (2 × 2.9B per token plus attention, plus the MTP layer's extend):
//     about 148 ms modelled at 17% of the FP8 peak.
//   - PassOverhead 0.85 ms: with 3 drafts a step is four forward passes; at c=1
//     the reads are small (about 6 GB), so TPOT fixes the overhead.
//   - Bandwidth 0.85: at c=16 the 64 verify tokens touch 222 of 256 experts a
//     layer (about 31 GB of reads a step), which fixes the bandwidth share.
//   - Acceptance 0.80 (the MTP default): 2.95 tokens a verify step, an accept
//     length near the 3 usually reported for this model's MTP.
//   - StateShare 0.0625: at c=1024 the output rate × TPOT says about 94
//     sequences decode at once; the fp32 DeltaNet state is 63 MB a sequence, so
//     94 slots are 5.9 GB of the 94 GB of cache memory.
//
// Modelled (TestCalibration): c=1 148 ms, 1.99 ms, 464 tok/s; c=16 171 ms (p50),
// 6.82 ms, 2,251 tok/s; c=1024 27.9 ms, 3,313 tok/s.
var effSGLang = Efficiency{Bandwidth: 0.85, Compute: 0.17, PassOverhead: 0.85e-3, StateShare: 0.0625}

// memSGLang: SGLang's --mem-fraction-static for a 141 GB GPU is about 0.9; the
// reserve covers activations of an 8k-token chunk and CUDA graphs.
var memSGLang = MemoryBudget{Utilization: 0.9, Reserve: 5e9}

// mtpQwen is Qwen3.6's MTP as the published runs configure it (3 steps, top-k 1,
// 4 draft tokens counting the verified one: 3 drafts).
var mtpQwen = Speculative{Method: SpecMTP, DraftTokens: 3, Acceptance: 0.80}

// eagle3KimiDefault: 3 drafts (the Qwen runs' steps) at acceptance 0.65, 2.35
// tokens a verify step. An assumption, not a measurement: accept lengths of about
// 2 to 3 are reported for Kimi K2.x EAGLE-3 drafts (about 1.9 for a K2.6 head
// on a mismatched target).
var eagle3KimiDefault = Speculative{Method: SpecEAGLE3, DraftTokens: 3, Acceptance: 0.65}

// kimi is a Kimi model served on one node, the model split over its devices with
// tensor parallelism (TP8, the reference's SGLang command), with the Qwen
// hardware's fitted efficiencies unchanged (no fit of its own) and the reserve
// per device.
func kimi(name, desc, model string, hw Accelerator, arch Architecture, prec Precision, spec Speculative, maxLen int) Hardware {
	return Hardware{
		Name: name, Description: desc, Model: model,
		Accelerator: hw, Arch: arch, Precision: prec, Efficiency: effSGLang,
		Speculative: spec, MemoryBudget: memSGLang,
		BlockSize: 16, MaxModelLen: maxLen,
		MaxBatchedTokens: 16384, MaxNumSeqs: 1024, MaxWaiting: 4096,
	}
}

// AllHardware returns the built-in hardware, sorted by name.
func AllHardware() []Hardware {
	qwen := func(name, desc string, hw Accelerator, prec Precision) Hardware {
		return Hardware{
			Name: name, Description: desc,
			Model:       "Qwen/Qwen3.6-35B-A3B",
			Aliases:     []string{"qwen3.6-35b-a3b", "Qwen3.6-35B-A3B-FP8"},
			Accelerator: hw, Arch: archQwen36, Precision: prec, Efficiency: effSGLang,
			Speculative: mtpQwen, MemoryBudget: memSGLang,
			BlockSize: 16,
			// The model's native context length.
			MaxModelLen: 262144,
			// SGLang's chunked-prefill size and vLLM V1's batched-token default on
			// large GPUs: 8192.
			MaxBatchedTokens: 16384,
			MaxNumSeqs:       1024,
			// No bound in the servers; 4096 is far above any sensible closed-loop
			// concurrency and keeps memory bounded.
			MaxWaiting: 4096,
		}
	}
	fp8 := Precision{WeightBytes: 1, KVBytes: 1, StateBytes: 4}
	bf16 := Precision{WeightBytes: 2, KVBytes: 2, StateBytes: 4}
	ps := []Hardware{
		qwen("h200-qwen3.6-35b-a3b", "one NVIDIA H200 (141 GB HBM3e, 4.8 TB/s) serving Qwen3.6-35B-A3B with FP8 weights and KV, MTP; fitted to SGLang's published runs",
			hwH200, fp8),
		qwen("h200-qwen3.6-35b-a3b-bf16", "one NVIDIA H200 serving Qwen3.6-35B-A3B in BF16 (weights and KV), MTP; derived from the FP8 hardware's efficiencies, not fitted",
			hwH200, bf16),
		qwen("b200-qwen3.6-35b-a3b", "one NVIDIA B200 (180 GB HBM3e, 8 TB/s) serving Qwen3.6-35B-A3B with FP8 weights and KV, MTP; derived from the H200 efficiencies, not fitted",
			hwB200, fp8),
		// Kimi K2.6 as published: INT4 routed experts (quantization-aware
		// training, groups of 32 with a BF16 scale: 0.5625 bytes a parameter; the
		// rest BF16, so BF16 compute), BF16 KV, the EAGLE-3 draft in BF16: 595 GB of
		// weights on 8 H200s.
		kimi("8xh200-kimi-k2.6", "8 NVIDIA H200 (TP8) serving Kimi K2.6 (K2's architecture: 1T, 32B active, MLA) with INT4 experts, BF16 KV, EAGLE-3; the Qwen fit's efficiencies, not fitted",
			"moonshotai/Kimi-K2.6", tensorParallel(hwH200, 8, 450e9), withDraft(archKimiK2, eagle3Kimi),
			Precision{WeightBytes: 2, ExpertWeightBytes: 0.5625, DraftWeightBytes: 2, KVBytes: 2}, eagle3KimiDefault, 262144),
		// Kimi K3 at 2.8T parameters fits one node only at 4 bits on B300s (2.3 TB):
		// INT4 experts as K2.6's (assumed), the rest BF16, FP8 KV (BF16 KV would
		// not hold one 1M-token context). Its allowed draft is not modelled.
		func() Hardware {
			p := kimi("8xb300-kimi-k3", "8 NVIDIA B300 (TP8) serving Kimi K3 as K2's architecture scaled to 2.8T, 104B active (assumed) with INT4 experts, FP8 KV, no speculation; the Qwen fit's efficiencies, not fitted",
				"moonshotai/Kimi-K3", tensorParallel(hwB300, 8, 900e9), archKimiK3,
				Precision{WeightBytes: 2, ExpertWeightBytes: 0.5625, KVBytes: 1}, Speculative{Method: SpecOff}, 1048576)
			p.NoDraft = "the reference client allows only DSpark drafts for Kimi K3 (RadixArk/Kimi-K3-DSpark, Inferact/Kimi-K3-DSpark), whose architecture the sim does not model; no EAGLE-3 or MTP head is allowed"
			return p
		}(),
		{
			// Round costs for tests: a step is 1 ms, plus 10 µs per token computed
			// (2 × 5M parameters at 1 TFLOP/s), plus 100 µs per sequence scheduled
			// (its 50 MB state read and written at 1 TB/s).
			Name:        "tiny",
			Description: "a small pool and round costs, for tests: 64 blocks of 16 tokens, 4 sequences, 8 waiting; a step is 1 ms + 10 µs a token + 100 µs a sequence",
			Model:       "sim-tiny",
			Accelerator: Accelerator{Name: "test device", HBMBytes: 1e12, HBMBandwidth: 1e12, DenseFLOPS8: 1e12, DenseFLOPS16: 1e12},
			Arch:        Architecture{Layers: 1, DenseParams: 5e6, LinearLayers: 1, LinearHeads: 1, LinearKeyDim: 5000, LinearValueDim: 5000},
			Precision:   Precision{WeightBytes: 0, KVBytes: 2, StateBytes: 2},
			Efficiency:  Efficiency{Bandwidth: 1, Compute: 1, PassOverhead: 1e-3},
			BlockSize:   16, KVBlocks: 64, MaxModelLen: 1024,
			MaxBatchedTokens: 64, MaxNumSeqs: 4, MaxWaiting: 8,
		},
	}
	for i := range ps {
		ps[i] = ps[i].Derive()
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	return ps
}

// withDraft adds a separately trained draft's shape to a target architecture.
func withDraft(a, draft Architecture) Architecture {
	a.DraftDenseParams, a.DraftFuseParams, a.DraftHeadParams = draft.DraftDenseParams, draft.DraftFuseParams, draft.DraftHeadParams
	a.DraftKVHeads, a.DraftHeadDim = draft.DraftKVHeads, draft.DraftHeadDim
	return a
}

// DefaultHardware is the hardware `agentrace sim` and `agentrace simulate` use
// unless told otherwise.
const DefaultHardware = "h200-qwen3.6-35b-a3b"

// LookupHardware returns the built-in hardware with the given name.
func LookupHardware(name string) (Hardware, error) {
	var names []string
	for _, p := range AllHardware() {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Hardware{}, fmt.Errorf("unknown simulated hardware %q (known: %s)", name, strings.Join(names, ", "))
}

// KVBytesPerToken is the KV cache one token takes: keys and values of every
// full-attention layer, or with MLA its latent in every layer (one copy).
func (p Hardware) KVBytesPerToken() float64 {
	a := p.Arch
	if a.KVLoraRank > 0 {
		return float64(a.FullAttentionLayers*(a.KVLoraRank+a.RopeDim)) * p.Precision.KVBytes
	}
	return float64(a.FullAttentionLayers*2*a.KVHeads*a.HeadDim) * p.Precision.KVBytes
}

// kvCopies is how many copies of a token's KV the devices hold and read: MLA's
// latent is on every tensor-parallel device, keys and values are split by head.
func (p Hardware) kvCopies() float64 {
	if p.Arch.KVLoraRank > 0 {
		return p.Accelerator.devices()
	}
	return 1
}

// DraftKVBytesPerToken is the KV cache of a separately trained draft (EAGLE-3)
// per token, when speculation is on: its own attention's keys and values. An
// MTP layer's (one of the target's full-attention layers) is not counted.
func (p Hardware) DraftKVBytesPerToken() float64 {
	if !p.Speculative.On() {
		return 0
	}
	return float64(2*p.Arch.DraftKVHeads*p.Arch.DraftHeadDim) * p.Precision.KVBytes
}

// StateBytesPerSeq is the linear-attention state one sequence holds.
func (p Hardware) StateBytesPerSeq() float64 {
	a := p.Arch
	return float64(a.LinearLayers*a.LinearHeads*a.LinearKeyDim*a.LinearValueDim) * p.Precision.StateBytes
}

// expertBytes and draftBytes are the bytes per parameter of the routed experts
// and of the draft.
func (pr Precision) expertBytes() float64 {
	if pr.ExpertWeightBytes > 0 {
		return pr.ExpertWeightBytes
	}
	return pr.WeightBytes
}

func (pr Precision) draftBytes() float64 {
	if pr.DraftWeightBytes > 0 {
		return pr.DraftWeightBytes
	}
	return pr.WeightBytes
}

// WeightBytes is the memory the weights take (the draft included when
// speculation is on), over all devices.
func (p Hardware) WeightBytes() float64 {
	a, pr := p.Arch, p.Precision
	b := a.DenseParams*pr.WeightBytes + float64(a.moeLayers()*a.Experts)*a.ExpertParams*pr.expertBytes() + (a.HeadParams+a.EmbeddingParams)*max(pr.WeightBytes, 2)
	if p.Speculative.On() {
		b += (a.DraftDenseParams+a.DraftFuseParams+a.DraftHeadParams)*pr.draftBytes() + float64(a.DraftExperts)*a.ExpertParams*pr.expertBytes()
	}
	return b
}

// CacheBytes is the memory left for the KV pool and the linear-attention states,
// over all devices.
func (p Hardware) CacheBytes() float64 {
	n := p.Accelerator.devices()
	return n*(p.Accelerator.HBMBytes*p.MemoryBudget.Utilization-p.MemoryBudget.Reserve) - p.WeightBytes()
}

// StateSlots is the number of sequences whose linear-attention state fits in the
// state pool (0: no linear-attention layers, no bound).
func (p Hardware) StateSlots() int {
	sb := p.StateBytesPerSeq()
	if sb == 0 || p.Efficiency.StateShare == 0 {
		return 0
	}
	return int(p.Efficiency.StateShare * p.CacheBytes() / sb)
}

// Derive fills the KV pool when KVBlocks is 0: the cache memory less the state
// pool, in blocks of every copy of the model's KV and the draft's.
func (p Hardware) Derive() Hardware {
	perToken := p.KVBytesPerToken()*p.kvCopies() + p.DraftKVBytesPerToken()
	if (p.KVBlocks == 0 || p.derivedKV) && perToken > 0 {
		kv := p.CacheBytes()
		if p.StateBytesPerSeq() > 0 {
			kv *= 1 - p.Efficiency.StateShare
		}
		p.KVBlocks = int(kv / perToken / float64(p.BlockSize))
		p.derivedKV = true
	}
	return p
}

// RunningLimit is the most sequences that run at once: MaxNumSeqs, or fewer
// when the linear-attention state slots run out first.
func (p Hardware) RunningLimit() int {
	if s := p.StateSlots(); s > 0 && s < p.MaxNumSeqs {
		return s
	}
	return p.MaxNumSeqs
}

// WithSpeculative returns the hardware with speculation set: method off, or the
// hardware's method (mtp, eagle3) with acceptance a (0 keeps the hardware's).
func (p Hardware) WithSpeculative(method string, acceptance float64) (Hardware, error) {
	switch method {
	case "":
	case SpecOff:
		p.Speculative.Method = SpecOff
	case SpecMTP, SpecEAGLE3:
		if p.Speculative.Method != method || p.Speculative.DraftTokens == 0 {
			why := ""
			if p.NoDraft != "" {
				why = ": " + p.NoDraft
			}
			return p, fmt.Errorf("hardware %q has no %s draft (its speculation: %s)%s", p.Name, method, p.Speculative.String(), why)
		}
	default:
		return p, fmt.Errorf("speculative %q: want off, mtp or eagle3", method)
	}
	if acceptance != 0 {
		if acceptance < 0 || acceptance > 1 || math.IsNaN(acceptance) {
			return p, fmt.Errorf("acceptance %v is not in [0, 1]", acceptance)
		}
		p.Speculative.Acceptance = acceptance
	}
	return p.Derive(), nil
}

// String says what speculation a hardware does.
func (s Speculative) String() string {
	if !s.On() {
		return SpecOff
	}
	return fmt.Sprintf("%s, %d drafts at acceptance %.2f (%.2f tokens a step)", s.Method, s.DraftTokens, s.Acceptance, s.MeanTokensPerStep())
}

// Validate checks that the hardware's parameters are usable.
func (p Hardware) Validate() error {
	e, h := p.Efficiency, p.Accelerator
	switch {
	case p.Model == "":
		return fmt.Errorf("hardware %q: no model name", p.Name)
	case p.BlockSize <= 0:
		return fmt.Errorf("hardware %q: block size %d, want > 0", p.Name, p.BlockSize)
	case p.KVBlocks <= 0:
		return fmt.Errorf("hardware %q: no KV pool (%d blocks; the weights take %.1f GB of %.1f GB)", p.Name, p.KVBlocks, p.WeightBytes()/1e9, h.HBMBytes/1e9)
	case p.MaxModelLen <= 0 || p.MaxModelLen > p.KVBlocks*p.BlockSize:
		return fmt.Errorf("hardware %q: max model length %d must be positive and fit the pool of %d tokens", p.Name, p.MaxModelLen, p.KVBlocks*p.BlockSize)
	case p.MaxBatchedTokens <= 0 || p.MaxNumSeqs <= 0 || p.MaxWaiting < 0:
		return fmt.Errorf("hardware %q: batched tokens %d, sequences %d and waiting %d must be positive", p.Name, p.MaxBatchedTokens, p.MaxNumSeqs, p.MaxWaiting)
	case h.HBMBandwidth <= 0 || h.DenseFLOPS8 <= 0 || h.DenseFLOPS16 <= 0:
		return fmt.Errorf("hardware %q: hardware figures must be positive", p.Name)
	case e.Bandwidth <= 0 || e.Bandwidth > 1 || e.Compute <= 0 || e.Compute > 1 || e.PassOverhead < 0:
		return fmt.Errorf("hardware %q: efficiencies must be in (0, 1] and the overhead >= 0", p.Name)
	case p.Speculative.On() && (p.Speculative.Acceptance < 0 || p.Speculative.Acceptance > 1):
		return fmt.Errorf("hardware %q: acceptance %v is not in [0, 1]", p.Name, p.Speculative.Acceptance)
	case p.Speculative.On() && p.Speculative.DraftTokens+1 > p.MaxBatchedTokens:
		return fmt.Errorf("hardware %q: %d drafts do not fit a step of %d tokens", p.Name, p.Speculative.DraftTokens, p.MaxBatchedTokens)
	}
	return nil
}

// Serves tells whether the hardware answers to a requested model name ("" and
// the reference client's placeholder are the default model).
func (p Hardware) Serves(name string) bool {
	if name == "" || name == datasets.DefaultModelName {
		return true // no model named: the reference client's placeholder
	}
	norm := func(s string) string {
		if i := strings.LastIndexByte(s, '/'); i >= 0 {
			s = s[i+1:]
		}
		return strings.ToLower(s)
	}
	n := norm(name)
	if n == norm(p.Model) {
		return true
	}
	for _, a := range p.Aliases {
		if n == norm(a) {
			return true
		}
	}
	return false
}
