package model

// Unification is vLLM's hybrid block-size decision: the attention block
// size raised until one attention page holds one state page, and the
// state page padded to match, so every page in the shared pool has one
// size. It follows Platform._align_hybrid_block_size
// (vllm/platforms/interface.py; before PR #37467 the same arithmetic in
// HybridAttentionMambaModelConfig.verify_and_update_config,
// vllm/model_executor/models/config.py @ 1936cf38, where the alignment was
// the backend's alone). Modes "none" and
// "align" take the smallest aligned block that holds a state; "all" a
// multiple of the Mamba kernel's chunk, so that every block boundary is
// a chunk boundary where the kernel can write the state (#25752; Mamba1,
// which has no chunk, takes 2048 tokens, #26377: ChunkSize).
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
	// Chunk is, in mode "all", lcm(mamba_block_size or the model's chunk,
	// Align), the multiple the block is rounded to (0 otherwise). Align
	// is at least the requested block size, so the rounded block is too:
	// the Mamba groups' block (cache_config.mamba_block_size) is the
	// attention groups'.
	Chunk int `json:"chunk,omitempty"`
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

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Chunk sizes when a config.json has no chunk key:
//   - mamba2Chunk: the Mamba2 config classes fill one in (transformers'
//     BambaConfig, GraniteMoeHybridConfig and FalconH1Config default
//     mamba_chunk_size to 256, vLLM's own NemotronHConfig chunk_size too);
//   - mamba1Chunk: get_mamba_chunk_size()'s fallback (vllm/config/model.py,
//     #26377, Mamba1 prefix caching): Mamba1 has no chunk, and 2048 is
//     its selective-scan kernel's.
const (
	mamba2Chunk = 256
	mamba1Chunk = 2048
)

// ChunkSize is vLLM's ModelConfig.get_mamba_chunk_size() for the shape:
// the config's mamba_chunk_size or chunk_size, else its config class's.
func (s *Shape) ChunkSize() int {
	switch {
	case s.MambaChunkSize > 0:
		return s.MambaChunkSize
	case s.StateKind() == Mamba2:
		return mamba2Chunk
	}
	return mamba1Chunk
}

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
	if s.MLA() && !s.Cache.Rules.MLANoAlign128 {
		// #50000 (aeeb36b1f, merged 2026-07-30: v0.27): the TRTLLM and
		// FlashInfer MLA decode kernels want the kernel blocks aligned to
		// 128 tokens, so a hybrid MLA model's block is a multiple of 128
		// (Platform._align_hybrid_block_size, interface.py @ 6adad0876).
		u.Align = max(u.Align, 128)
	}
	a := int64(u.Align)
	attnBlock := int(a * cdiv(u.MambaPage, a*u.AttnPage1))
	if s.Cache.MambaChunkAligned {
		base := s.Cache.MambaBlockSize
		if base <= 0 {
			base = s.ChunkSize()
		}
		u.Chunk = base / gcd(base, u.Align) * u.Align
		c := int64(u.Chunk)
		attnBlock = int(c * cdiv(cdiv(u.MambaPage, u.AttnPage1), c))
	}
	if blockSize < attnBlock {
		u.BlockSize, u.Raised = attnBlock, true
	}
	u.PageBytes = int64(u.BlockSize) * u.AttnPage1
	if u.PageBytes > u.MambaPage {
		u.PaddingPct = 100 * float64(u.PageBytes-u.MambaPage) / float64(u.MambaPage)
	}
	return u
}
