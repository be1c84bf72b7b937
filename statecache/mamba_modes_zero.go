package statecache

// ZeroKind is a KV cache group's kind as vLLM's block zeroing sees it.
type ZeroKind uint8

const (
	ZeroFullAttention  ZeroKind = iota // FullAttentionSpec, MLA
	ZeroOtherAttention                 // other AttentionSpecs: sliding window, chunked local
	ZeroMambaState                     // MambaSpec: every state kind
)

func (k ZeroKind) String() string {
	switch k {
	case ZeroFullAttention:
		return "full-attention"
	case ZeroOtherAttention:
		return "other-attention"
	case ZeroMambaState:
		return "mamba"
	}
	return "ZeroKind(?)"
}

var (
	// #35219 (2026-02-24): zero freshly allocated full-attention blocks
	// on hybrid models (stale fp32 Mamba bytes read as NaN in a smaller
	// KV dtype); v0.16.0 was out about 2026-03-04, so v0.17 is the first
	// release sure to have it.
	relZeroHybridAttention = Release{0, 17}
	// #47574 (2026-07-03): also when block-dropping attention (sliding
	// window, chunked local) shares the pool with a quantized KV cache.
	relZeroQuantizedWindow = Release{0, 25}
	// #51749 (2026-08-11): every AttentionSpec group is recorded and
	// zeroed, not just full attention.
	relZeroEveryAttention = Release{0, 28}
)

// ZeroedOnAllocation reports whether vLLM zeroes a block when the pool
// hands it to a group of kind k (the scheduler's new_block_ids_to_zero,
// cleared by the worker's KVBlockZeroer before the step). hybrid: the
// model has Mamba layers; quantizedWindow: a block-dropping attention
// group shares the pool with a quantized KV cache. Mamba state blocks are
// never zeroed, in any release: MambaSpec is no AttentionSpec (#54004
// corrects the docstring that said otherwise; #56524, open in September
// 2026, proposes zeroing them), so a state slot handed on keeps its last
// owner's bytes unless the prefill path ignores them (has_initial_state
// false). Blocks are never zeroed on free. Model Runner V2 zeroes the same
// way since #43990 (May 2026), before it became the hybrids' default
// runner (v0.29).
func ZeroedOnAllocation(k ZeroKind, r Release, hybrid, quantizedWindow bool) bool {
	needs := hybrid && r.AtLeast(relZeroHybridAttention) ||
		quantizedWindow && r.AtLeast(relZeroQuantizedWindow)
	switch {
	case !needs:
		return false
	case k == ZeroFullAttention:
		return true
	case k == ZeroOtherAttention:
		return r.AtLeast(relZeroEveryAttention)
	}
	return false
}
