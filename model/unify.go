package model

// Unification is vLLM's hybrid block-size decision: the attention block
// size raised until one attention page holds one state page, and the
// state page padded to match, so every page in the shared pool has one
// size. It follows Platform._align_hybrid_block_size
// (vllm/platforms/interface.py; before PR #37467 the same arithmetic in
// HybridAttentionMambaModelConfig.verify_and_update_config,
// vllm/model_executor/models/config.py) for mamba_cache_mode "none"
// (no prefix caching, the mode statesim models).
type Unification struct {
	// AttnPage1 is one token's attention page (FullAttentionSpec or
	// MLAAttentionSpec with block_size 1); MambaPage the unpadded state page.
	AttnPage1 int64 `json:"attn_page_size_1_token"`
	MambaPage int64 `json:"mamba_page_size"`
	// Align is kernel_block_alignment_size: max(the backend's smallest
	// kernel block size, the requested block size).
	Align int `json:"kernel_block_alignment_size"`
	// Requested and BlockSize: the block size asked for and the one used.
	Requested int `json:"requested_block_size"`
	BlockSize int `json:"block_size"`
	// Raised: vLLM logs "Setting attention block size to N tokens".
	Raised bool `json:"raised"`
	// PageBytes is the unified page; PaddingPct the state page's padding
	// ("Padding mamba page size by x%"), 0 when none.
	PageBytes  int64   `json:"page_bytes"`
	PaddingPct float64 `json:"padding_pct"`
}

// KernelBlockAlignment is the attention backend's smallest kernel block
// size: the configured one, else 16 (FlashAttention's MultipleOf(16)) or
// 64 for MLA (the non-CUTLASS MLA backends).
func (s *Shape) KernelBlockAlignment() int {
	if a := s.Cache.KernelBlockAlignment; a > 0 {
		return a
	}
	if s.MLA() {
		return 64
	}
	return 16
}

func cdiv(a, b int64) int64 { return (a + b - 1) / b }

// Unify computes the block size and page for a requested block size.
func (s *Shape) Unify(blockSize int) Unification {
	u := Unification{AttnPage1: s.KVBytesPerToken(), MambaPage: s.MambaPageBytes(), Requested: blockSize, BlockSize: blockSize}
	switch {
	case u.MambaPage == 0: // attention only
		u.PageBytes = int64(blockSize) * u.AttnPage1
		return u
	case u.AttnPage1 == 0: // attention-free: state pages only
		u.PageBytes = u.MambaPage
		return u
	}
	u.Align = max(s.KernelBlockAlignment(), blockSize)
	a := int64(u.Align)
	attnBlock := int(a * cdiv(u.MambaPage, a*u.AttnPage1))
	if blockSize < attnBlock {
		u.BlockSize, u.Raised = attnBlock, true
	}
	u.PageBytes = int64(u.BlockSize) * u.AttnPage1
	if u.PageBytes > u.MambaPage {
		u.PaddingPct = 100 * float64(u.PageBytes-u.MambaPage) / float64(u.MambaPage)
	}
	return u
}
