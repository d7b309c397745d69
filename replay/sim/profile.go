package sim

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agentrace/agentrace/datasets"
)

// Profile holds the serving parameters of one hardware/model pair: the model
// names it answers to, the KV pool, the scheduler's limits and the step-time cost
// model
//
//	step time = StepOverhead + PrefillPerToken × prefill tokens
//	          + DecodePerSeq × decoding sequences + AttendPerToken × context tokens
//
// where "context tokens" sums, over every sequence in the step, the tokens whose
// KV the step reads (its computed tokens plus the ones it computes now). All
// durations are in seconds of modelled time; Config.Speedup divides them.
type Profile struct {
	Name        string
	Description string
	// Model is the served model name reported by /v1/models; Aliases are other
	// names requests may use. Matching ignores case and an "org/" prefix.
	Model   string
	Aliases []string

	// BlockSize is the number of tokens per KV block (vLLM's --block-size).
	BlockSize int
	// KVBlocks is the capacity of the KV pool in blocks.
	KVBlocks int
	// MaxModelLen bounds prompt plus output tokens (vLLM's --max-model-len); a
	// longer prompt is a 400. It must fit in the pool.
	MaxModelLen int
	// MaxBatchedTokens is the token budget of one step (vLLM's
	// --max-num-batched-tokens): decode tokens plus chunked-prefill tokens.
	MaxBatchedTokens int
	// MaxNumSeqs bounds the running sequences (vLLM's --max-num-seqs).
	MaxNumSeqs int
	// MaxWaiting bounds the waiting queue; a request beyond it is answered 429.
	MaxWaiting int

	StepOverhead    float64 // seconds per step
	PrefillPerToken float64 // seconds per prompt token computed
	DecodePerSeq    float64 // seconds per sequence decoding one token
	AttendPerToken  float64 // seconds per context token read by attention
}

// The H200 / Qwen3.6-35B-A3B profile. Architecture figures are those of the
// published Qwen3.5-35B-A3B configuration, which Qwen3.6-35B-A3B keeps: 40
// layers, of which every fourth (10) uses full (gated) attention with 2 KV heads
// of dimension 256 and the rest Gated DeltaNet linear attention; 256 experts,
// 8 routed + 1 shared per token, about 3B active parameters of 35B.
const (
	// KV bytes per token: 10 full-attention layers × (K and V) × 2 heads × 256 ×
	// 2 bytes (BF16 KV cache) = 20,480 bytes. Linear-attention layers keep a fixed
	// state per sequence instead of per token; that state is not a cached prefix
	// and is modelled only as memory taken from the pool (below).
	h200KVBytesPerToken = 10 * 2 * 2 * 256 * 2
	// Pool bytes: an H200 has 141 GB of HBM3e; vLLM's default
	// --gpu-memory-utilization 0.9 gives 127 GB; FP8 weights take about 37 GB
	// (35B parameters at 1 byte, embeddings and norms in BF16); activations, CUDA
	// graphs and the linear-attention states of up to 1024 sequences take about
	// 20 GB more. About 70 GB are left for the KV pool: 70e9 / 20,480 B = 3.4M
	// tokens = 213,623 blocks of 16.
	h200KVPoolBytes = 70e9
)

// Profiles returns the built-in profiles, sorted by name.
func Profiles() []Profile {
	ps := []Profile{
		{
			Name:        "h200-qwen3.6-35b-a3b",
			Description: "one NVIDIA H200 (141 GB HBM3e, 4.8 TB/s) serving Qwen3.6-35B-A3B with FP8 weights under vLLM",
			Model:       "Qwen/Qwen3.6-35B-A3B",
			Aliases:     []string{"qwen3.6-35b-a3b", "Qwen3.6-35B-A3B-FP8"},
			BlockSize:   16,
			KVBlocks:    int(int64(h200KVPoolBytes) / h200KVBytesPerToken / 16),
			// The model's native context length.
			MaxModelLen: 262144,
			// vLLM V1's defaults for the OpenAI server on a GPU of H100 class or
			// larger: 8192 batched tokens, 1024 sequences.
			MaxBatchedTokens: 8192,
			MaxNumSeqs:       1024,
			// vLLM has no bound; 4096 waiting requests is far above any sensible
			// closed-loop concurrency and keeps memory bounded.
			MaxWaiting: 4096,
			// Fixed cost of a step: launching 40 layers of kernels (CUDA graphs),
			// MoE routing and sampling. Public vLLM figures for the similar
			// Qwen3-30B-A3B on H100/H200 give 150-220 output tokens/s for a single
			// stream at short context, 4.5-6.5 ms per token; reading the ~3 GB of
			// active FP8 weights takes only 0.6 ms at 4.8 TB/s, so the rest is
			// overhead.
			StepOverhead: 4.5e-3,
			// Prefill is compute-bound: 2 × 3B FLOPs = 6 GFLOP per token; at
			// ~25% of the H200's 1979 FP8 TFLOPS (grouped MoE GEMMs and attention
			// run well below peak) that is 12 µs; public prefill rates for
			// Qwen3-30B-A3B are 30-50k tokens/s per GPU, so 25 µs per token.
			PrefillPerToken: 25e-6,
			// Each decoding sequence routes to 8 more experts: the batch touches
			// 256 × (1 - (1 - 8/256)^B) experts, nearly all of them by B = 64, so
			// expert weights read per step grow from ~3 GB toward ~35 GB (7 ms at
			// 4.8 TB/s) over the first ~64 sequences, about 0.1 ms per sequence,
			// flattening beyond; 60 µs per sequence is the linear compromise up to
			// a few hundred sequences.
			DecodePerSeq: 60e-6,
			// Attention reads 20,480 bytes of KV per context token per step; at
			// ~60% of 4.8 TB/s that is 7 ns per token.
			AttendPerToken: 7e-9,
		},
		{
			Name:             "tiny",
			Description:      "a small pool and round costs, for tests: 64 blocks of 16 tokens, 4 sequences, 8 waiting",
			Model:            "sim-tiny",
			BlockSize:        16,
			KVBlocks:         64,
			MaxModelLen:      1024,
			MaxBatchedTokens: 64,
			MaxNumSeqs:       4,
			MaxWaiting:       8,
			StepOverhead:     1e-3,
			PrefillPerToken:  10e-6,
			DecodePerSeq:     100e-6,
			AttendPerToken:   0,
		},
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	return ps
}

// DefaultProfile is the profile `agentrace sim` uses unless told otherwise.
const DefaultProfile = "h200-qwen3.6-35b-a3b"

// LookupProfile returns the built-in profile with the given name.
func LookupProfile(name string) (Profile, error) {
	var names []string
	for _, p := range Profiles() {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Profile{}, fmt.Errorf("unknown sim profile %q (known: %s)", name, strings.Join(names, ", "))
}

// Validate checks that the profile's parameters are usable.
func (p Profile) Validate() error {
	switch {
	case p.Model == "":
		return fmt.Errorf("profile %q: no model name", p.Name)
	case p.BlockSize <= 0:
		return fmt.Errorf("profile %q: block size %d, want > 0", p.Name, p.BlockSize)
	case p.MaxModelLen <= 0 || p.MaxModelLen > p.KVBlocks*p.BlockSize:
		return fmt.Errorf("profile %q: max model length %d must be positive and fit the pool of %d tokens", p.Name, p.MaxModelLen, p.KVBlocks*p.BlockSize)
	case p.MaxBatchedTokens <= 0 || p.MaxNumSeqs <= 0 || p.MaxWaiting < 0:
		return fmt.Errorf("profile %q: batched tokens %d, sequences %d and waiting %d must be positive", p.Name, p.MaxBatchedTokens, p.MaxNumSeqs, p.MaxWaiting)
	case p.StepOverhead < 0 || p.PrefillPerToken < 0 || p.DecodePerSeq < 0 || p.AttendPerToken < 0:
		return fmt.Errorf("profile %q: negative cost", p.Name)
	case p.StepOverhead+p.PrefillPerToken+p.DecodePerSeq == 0:
		return fmt.Errorf("profile %q: steps cost nothing", p.Name)
	}
	return nil
}

// servesModel tells whether the profile answers to a requested model name ("" is
// the default model).
func (p Profile) servesModel(name string) bool {
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
